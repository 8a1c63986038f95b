"""Search engine: fast SW kernel, prefilter, ranking, E-values and output formats."""

from __future__ import annotations

import io

import numpy as np
import pytest

import homalign
from homalign.dp import GapCosts, align_score, lanes_int
from homalign.errors import InputError
from homalign.matrices import score_matrix
from homalign.search import SequenceDB, rank_hits, search, search_many, write_hits
from homalign.search.prefilter import build_kmer_index, exact_matches, kmer_ids, prefilter
from homalign.search.sw_scores import sw_scores
from homalign.sequence import Sequence
from homalign.stats import random_sequences

AA = "ARNDCQEGHILKMFPSTWYV"


def mutate(seq: str, rng: np.random.Generator, identity: float, indel: float = 0.03) -> str:
    """A homolog: substitutions at rate 1 - identity, short insertions/deletions."""
    out = []
    for c in seq:
        r = rng.random()
        if r < indel / 2:
            continue  # deletion
        out.append(c if rng.random() < identity else AA[rng.integers(20)])
        if r > 1 - indel / 2:
            out.append("".join(AA[x] for x in rng.integers(0, 20, size=rng.integers(1, 4))))
    return "".join(out)


def make_db(n_families: int = 6, per_family: int = 5, n_random: int = 120,
            seed: int = 0) -> tuple[SequenceDB, dict[str, int]]:
    """Families of mutated copies of random seeds plus unrelated random sequences."""
    rng = np.random.default_rng(seed)
    seqs, family = [], {}
    for f, seed_seq in enumerate(random_sequences(n_families, rng, 120, 300)):
        for m in range(per_family):
            sid = f"fam{f}_{m}"
            seqs.append(Sequence(sid, seed_seq if m == 0 else mutate(seed_seq, rng, 0.6)))
            family[sid] = f
    for r, s in enumerate(random_sequences(n_random, rng, 60, 400)):
        seqs.append(Sequence(f"rand{r}", s))
        family[f"rand{r}"] = -1 - r
    order = rng.permutation(len(seqs))
    return SequenceDB.from_sequences([seqs[i] for i in order]), family


@pytest.fixture(scope="module")
def small_db():
    return make_db()


def test_fast_sw_equals_dp_align_score():
    rng = np.random.default_rng(1)
    seqs = [Sequence(f"s{i}", s) for i, s in enumerate(random_sequences(12, rng, 5, 150))]
    seqs.append(Sequence("amb", "ACDXXBZWWYKLXBZ"))
    db = SequenceDB.from_sequences(seqs)
    for gap_open, gap_extend in ((11.0, 1.0), (5.0, 2.0), (0.0, 3.0)):
        for q in seqs[:4] + seqs[-1:]:
            fast = sw_scores(q.codes, db.codes, db.offsets, np.arange(len(db)),
                             gap_open=gap_open, gap_extend=gap_extend)
            for t in range(len(db)):
                tc = db.codes_of(t)
                ref = align_score(score_matrix(q.codes, tc),
                                  GapCosts.uniform(len(q), len(tc), gap_open, gap_extend))
                assert fast[t] == pytest.approx(ref, abs=1e-4)
            # with its database: every target's layout is kept (int8 kernel), the same scores
            kept = sw_scores(q.codes, db.codes, db.offsets, np.arange(len(db)),
                             gap_open=gap_open, gap_extend=gap_extend, db=db)
            some = sw_scores(q.codes, db.codes, db.offsets, np.arange(3, 9),
                             gap_open=gap_open, gap_extend=gap_extend, db=db)
            assert np.array_equal(kept, fast) and np.array_equal(some, fast[3:9])
    assert (("int8_layout", lanes_int.INT8_LANES) in db.cache) == bool(lanes_int.INT8_LANES)


def test_kmer_index_postings_are_the_kmers():
    db, _ = make_db(2, 2, 5)
    idx = build_kmer_index(db.codes, db.offsets, 3)
    assert idx.start[-1] == idx.n_postings
    rng = np.random.default_rng(0)
    for h in rng.integers(0, idx.n_postings, size=200):
        w = int(np.searchsorted(idx.start, h, side="right") - 1)
        t, p = int(idx.seq[h]), int(idx.pos[h])
        assert kmer_ids(db.codes_of(t)[p:p + 3], 3)[0] == w
    # each word's postings in database order: by sequence, then position
    for w in np.flatnonzero(np.diff(idx.start) > 1)[:500]:
        a, b = idx.start[w], idx.start[w + 1]
        key = idx.seq[a:b].astype(np.int64) * 100_000 + idx.pos[a:b]
        assert (np.diff(key) > 0).all()
    # every indexable k-mer is indexed exactly once
    expected = sum(int((kmer_ids(db.codes_of(t), 3) >= 0).sum()) for t in range(len(db)))
    assert idx.n_postings == expected


def test_search_ranks_family_members_first(small_db):
    db, family = small_db
    q = db.sequence(db.index_of("fam2_0"))
    hits = search(q, db, method="sw", evalue=10.0)
    assert hits[0].target_id == "fam2_0" and hits[0].evalue < 1e-30
    fam_hits = [h for h in hits if family[h.target_id] == 2]
    assert len(fam_hits) == 5  # all members found
    top = [family[h.target_id] for h in hits[:5]]
    assert top == [2] * 5
    keys = [(h.evalue, -h.score) for h in hits]
    assert keys == sorted(keys)
    for h in hits:
        assert h.alignment is not None
        assert h.alignment.score == pytest.approx(h.score)
        assert h.alignment.evalue == h.evalue and h.alignment.bits == h.bits
        assert h.evalue <= 10.0


@pytest.mark.parametrize("method", ["sw", "glocal"])
def test_sequence_search_hits_carry_the_alignment_align_gives(small_db, method):
    """A sequence method traces its hits back in one batched call (dp.align_codes): the same
    alignment, score and path, as the method's own pairwise align."""
    from homalign.methods import get_method

    db, _ = small_db
    m = get_method(method)
    q = db.sequence(db.index_of("fam3_1"))
    hits = search(q, db, method=method, evalue=1e3, gap_open=10.0, gap_extend=2.0)
    assert len(hits) >= 5
    for h in hits:
        ref = m.align(q, db.sequence(h.target_index), gap_open=10.0, gap_extend=2.0)
        assert h.alignment.score == ref.score
        assert np.array_equal(h.alignment.pairs, ref.pairs)
        assert h.alignment.method == method and h.alignment.target_id == h.target_id


def test_evalue_threshold_and_max_hits(small_db):
    db, _ = small_db
    q = db.sequence(db.index_of("fam1_0"))
    loose = search(q, db, evalue=100.0, prefilter=False)
    strict = search(q, db, evalue=1e-5, prefilter=False)
    assert all(h.evalue <= 1e-5 for h in strict)
    assert [h.target_id for h in strict] == [h.target_id for h in loose[:len(strict)]]
    capped = search(q, db, evalue=100.0, max_hits=3, prefilter=False)
    assert [h.target_id for h in capped] == [h.target_id for h in loose[:3]]


def test_prefilter_results_agree_with_exhaustive(small_db):
    db, _ = small_db
    for name in ("fam0_1", "fam3_2", "rand5"):
        q = db.sequence(db.index_of(name))
        full = {h.target_id: h for h in search(q, db, prefilter=False, evalue=1.0)}
        fast = {h.target_id: h for h in search(q, db, prefilter=True, evalue=1.0)}
        assert set(fast) <= set(full)
        strong = {t for t, h in full.items() if h.evalue < 1e-5}
        assert strong <= set(fast)
        for t, h in fast.items():
            assert h.score == full[t].score and h.evalue == pytest.approx(full[t].evalue)


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 6, 7, 10, 25, 80])
def test_prefilter_never_drops_an_exact_match(length):
    rng = np.random.default_rng(length)
    decoys = random_sequences(150, rng, 20, 200)
    q = "".join(AA[i] for i in rng.integers(0, 20, size=length))
    if length >= 10:
        q = q[:4] + "XX" + q[6:]  # ambiguity codes are not indexed
    seqs = [Sequence(f"d{i}", s) for i, s in enumerate(decoys)]
    seqs.insert(int(rng.integers(0, 150)), Sequence("copy", q))
    # decoys that contain the query: they compete with the copy for the max_seqs slots
    seqs += [Sequence(f"super{i}", s[:30] + q + s[30:]) for i, s in enumerate(decoys[:20])]
    db = SequenceDB.from_sequences(seqs)
    cand = prefilter(Sequence("q", q).codes, db, max_seqs=5)
    assert db.index_of("copy") in set(cand.tolist())
    assert exact_matches(Sequence("q", q).codes, db).tolist() == [db.index_of("copy")]


def test_prefilter_reduces_candidates_on_a_random_query(small_db):
    db, _ = small_db
    q = db.sequence(db.index_of("fam4_0"))
    cand = prefilter(q.codes, db)
    assert 5 <= len(cand) < len(db)


def test_search_many_and_query_rep(small_db):
    db, _ = small_db
    qs = [db.sequence(db.index_of(n)) for n in ("fam0_0", "fam5_3")]
    many = search_many(qs, db, method="sw", progress=False, evalue=1.0)
    assert [q.id for q, _ in many] == ["fam0_0", "fam5_3"]
    for q, hits in many:
        single = search(q, db, method="sw", evalue=1.0)
        assert [(h.target_id, h.score) for h in hits] == [(h.target_id, h.score) for h in single]
    # the generic DP path (query_rep given) gives the same scores as the fast SW path
    q = qs[0]
    generic = search(q, db, method="sw", evalue=1.0, query_rep=q.codes)
    fast = search(q, db, method="sw", evalue=1.0)
    assert [(h.target_id, h.score) for h in generic] == [(h.target_id, h.score) for h in fast]


def test_other_dp_method_runs_through_align_batch(small_db, monkeypatch, tmp_path):
    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path))
    db, family = small_db
    q = db.sequence(db.index_of("fam3_0"))
    from homalign.search.calibration import calibrate

    params = calibrate("glocal", {}, n_pairs=200, seed=3)
    hits = search(q, db, method="glocal", evalue=1e-3, params=params)
    assert hits and hits[0].target_id == "fam3_0"
    assert {family[h.target_id] for h in hits} == {3}


def test_query_too_long_is_an_input_error(small_db):
    from homalign.errors import InputError

    db, _ = small_db
    with pytest.raises(InputError, match="limit"):
        search(Sequence("long", "A" * 50), db, max_query_length=40)


def test_tab_a3m_pair_output(small_db, tmp_path):
    from homalign.io import read_a3m

    db, _ = small_db
    q = db.sequence(db.index_of("fam1_0"))
    hits = search(q, db, evalue=1e-3)
    buf = io.StringIO()
    write_hits(buf, [(q, hits)], fmt="tab", extra=("qaln", "taln"))
    rows = [line.split("\t") for line in buf.getvalue().splitlines()]
    assert len(rows) == len(hits) and all(len(r) == 14 for r in rows)
    for r, h in zip(rows, hits, strict=True):
        assert r[0] == q.id and r[1] == h.target_id
        qa, ta = r[12], r[13]
        assert len(qa) == len(ta) == int(r[3])
        assert qa.replace("-", "") == q.residues[int(r[6]) - 1:int(r[7])]
        assert ta.replace("-", "") == h.alignment.target[int(r[8]) - 1:int(r[9])]
        ident = sum(a == b for a, b in zip(qa, ta, strict=True) if a != "-")
        assert float(r[2]) == pytest.approx(100 * ident / len(qa), abs=1e-3)
        assert float(r[11]) == pytest.approx(h.bits, abs=1.0)  # BLAST truncates > 99.9
    out = tmp_path / "q.a3m"
    write_hits(out, [(q, hits)], fmt="a3m")
    msa = read_a3m(out)
    assert msa.ids == [q.id] + [h.target_id for h in hits]
    assert msa.rows[0] == q.residues
    for r, h in enumerate(hits, start=1):
        # match columns + insertions give back the aligned target segment
        ins = msa.insertions[r]
        rebuilt = "".join(ins[k] + (msa.rows[r][k] if msa.rows[r][k] != "-" else "")
                          for k in range(msa.n_cols)) + ins[msa.n_cols]
        s, e = h.alignment.target_span
        assert rebuilt.upper() == h.alignment.target[s:e]
    buf = io.StringIO()
    write_hits(buf, [(q, hits[:2])], fmt="pair")
    text = buf.getvalue()
    assert text.count(f"# {q.id} (L={len(q)}) vs ") == 2
    # the hit's own ranking score, bits and E-value, as in tab and JSON output
    assert f"# score={hits[0].score:.2f}" in text and f"bits={hits[0].bits:.1f}" in text
    # several queries: one <id>.a3m each in the directory; an id that cannot be a file name in
    # it (a path, a Pfam-style range) is refused before anything is written
    many = tmp_path / "many"
    two = [(q, hits), (Sequence("other", q.residues), hits[:1])]
    write_hits(many, two, fmt="a3m")
    assert sorted(p.name for p in many.iterdir()) == sorted([f"{q.id}.a3m", "other.a3m"])
    for bad in ("../escaped", "sp|P1|X/1-100"):
        with pytest.raises(InputError, match="cannot name an MSA file"):
            write_hits(tmp_path / "none", [(q, hits), (Sequence(bad, q.residues), hits)],
                       fmt="a3m")
    assert not (tmp_path / "none").exists() and not (tmp_path / "escaped.a3m").exists()
    write_hits(f"{tmp_path / 'one'}/", [(q, hits)], fmt="a3m")  # a directory by its slash
    write_hits(many, [(q, hits[:1])], fmt="a3m")  # an existing directory
    assert [p.name for p in (tmp_path / "one").iterdir()] == [f"{q.id}.a3m"]
    assert read_a3m(many / f"{q.id}.a3m").ids == [q.id, hits[0].target_id]


def test_rank_hits_orders_by_evalue_then_score():
    from homalign.search import Hit

    hits = [Hit("q", "a", 0, 10, 5, 1.0), Hit("q", "b", 1, 20, 9, 1.0),
            Hit("q", "c", 2, 50, 20, 1e-5)]
    assert [h.target_id for h in rank_hits(hits)] == ["c", "b", "a"]


def test_peer_methods_align_each_candidate_and_keep_their_own_evalues(small_db, monkeypatch):
    """A method without prepare/score (a peer) is called per target; its pairwise E-value is
    scaled from the target's length to the database size."""
    from homalign.api import align
    from homalign.methods import METHODS, Method

    calls = []

    def peer_align(query, target, **_):
        calls.append(target.id)
        aln = align(query, target, method="sw")
        aln.evalue = 1e-3 * 2.0 ** (-aln.score / 10)
        aln.bits = aln.score / 2
        return aln

    monkeypatch.setitem(METHODS, "fakepeer", Method("fakepeer", "peer", "test peer", peer_align))
    db, _ = small_db
    q = db.sequence(db.index_of("fam0_0"))
    hits = search(q, db, method="fakepeer", evalue=1e9, max_hits=None, prefilter=False)
    assert sorted(calls) == sorted(db.ids)
    assert len(hits) == len(db)
    for h in hits:
        n_t = int(db.lengths[h.target_index])
        assert h.evalue == pytest.approx(1e-3 * 2.0 ** (-h.score / 10) * db.total_length / n_t)
        assert h.bits == h.score / 2
    assert hits[0].target_id == "fam0_0"


@pytest.mark.parametrize(("k", "threshold"), [(2, 8.0), (3, 11.0), (3, 13.0), (2, 30.0)])
def test_a_sequences_seeds_are_its_k_mers_neighbourhoods(k: int, threshold: float) -> None:
    """At each position, every word whose matrix score against the query's k-mer there reaches
    the threshold, and that k-mer itself; nothing at a k-mer holding B, Z or X."""
    from homalign.alphabet import N_AA, encode
    from homalign.matrices import substitution_matrix
    from homalign.search.prefilter import seed_words

    M = substitution_matrix("BLOSUM62")[:N_AA, :N_AA].astype(np.float64)
    n = N_AA ** k
    digits = np.array([[(w // N_AA ** (k - 1 - r)) % N_AA for r in range(k)] for w in range(n)])
    S = sum(M[digits[:, r]][:, digits[:, r]] for r in range(k))
    keep = (S >= threshold) | np.eye(n, dtype=bool)  # a k-mer is always its own neighbour
    q = np.asarray(encode("MKWVTFIXSLLFLFSSAYBCRGDH"), dtype=np.uint8)
    words, poss = seed_words(q, k, threshold)
    want_w, want_p = [], []
    for i in range(len(q) - k + 1):
        if (q[i:i + k] >= N_AA).any():
            continue
        own = int(sum(int(q[i + r]) * N_AA ** (k - 1 - r) for r in range(k)))
        nb = np.flatnonzero(keep[own])
        want_w += nb.tolist()
        want_p += [i] * len(nb)
    np.testing.assert_array_equal(words, want_w)
    np.testing.assert_array_equal(poss, want_p)


def test_best_n_keeps_the_first_n_of_a_stable_descending_sort() -> None:
    """The prefilter's cut to ``max_seqs``: a partition that picks exactly what a stable sort
    would, ties at the cut going to the earliest targets."""
    from homalign.search.prefilter import best_n

    rng = np.random.default_rng(4)
    for _ in range(200):
        values = rng.integers(0, 6, size=int(rng.integers(1, 40))).astype(np.float32)
        values[rng.random(len(values)) < 0.1] = np.inf
        n = int(rng.integers(0, len(values) + 3))
        ref = np.zeros(len(values), dtype=bool)
        ref[np.argsort(-values, kind="stable")[:n]] = True
        np.testing.assert_array_equal(best_n(values, n), ref)


def test_traced_hits_of_a_pair_scoring_method_equal_per_pair_alignments(monkeypatch) -> None:
    """A method that scores pairs (``pssm`` with a query profile) has its hits traced back in
    batches of ``align_batch`` calls: each equals ``dp.align`` of that pair's scores."""
    from homalign.dp import align
    from homalign.methods import get_method
    from homalign.methods.profile import ProteinRep
    from homalign.profile.profile import Profile
    from homalign.search import engine

    rng = np.random.default_rng(8)
    seqs = [Sequence(f"t{k}", r) for k, r in enumerate(random_sequences(40, rng, 60, 160))]
    query = Sequence("q", seqs[0].residues[10:120])
    db = SequenceDB.from_sequences(seqs)
    rep = ProteinRep(query, source=Profile.from_sequence(query, pseudocounts="matrix",
                                                         matrix="BLOSUM62"))
    monkeypatch.setattr(engine, "TRACE_BATCH", 7)  # several batches
    hits = search(query, db, method="pssm", evalue=1e9, max_hits=None, prefilter=False,
                  query_rep=rep)
    assert len(hits) > 14
    m = get_method("pssm")
    for h in hits:
        ps = m.score(rep, m.prepare(db.sequence(h.target_index), role="target"))
        want = align(ps.S, ps.gaps, mode=ps.mode)
        np.testing.assert_array_equal(h.alignment.pairs, want.pairs)
        assert h.alignment.score == pytest.approx(float(want.score))


@pytest.mark.parametrize("method", ["sw", "nw", "glocal", "semiglobal"])
def test_bit_scores_and_evalues_rank_hits_alike(method, tmp_path, monkeypatch):
    """A worse E-value never has more bits: a method whose null law depends on the lengths
    reports BLAST's bits of its E-value, log2(m n / E); Karlin-Altschul methods keep BLAST's
    (length-free) bits, whose order is the E-values' already."""
    from homalign import examples

    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path / "cache"))
    db = SequenceDB.from_fasta(examples.path("db.fa"))
    for q in homalign.read_sequences(examples.path("queries.fa")):
        hits = search(q, db, method=method, evalue=10.0, traceback=False)
        assert len(hits) > 3
        for a, b in zip(hits, hits[1:], strict=False):
            assert b.evalue >= a.evalue and b.bits <= a.bits + 1e-9, (a, b)


@pytest.mark.parametrize("method", ["phmmer", "blastp"])
def test_a_peer_search_runs_pairs_on_threads_with_the_same_hits(method, monkeypatch) -> None:
    """A peer aligns the candidates ``--threads`` pairs at a time; the hits do not change."""
    import threading
    import time

    from homalign.methods import get_method
    from homalign.search import engine
    from homalign.threads import get_threads, set_threads

    db, _ = make_db(n_families=2, per_family=3, n_random=10, seed=4)
    query = db.sequence(0)
    before = get_threads()
    try:
        set_threads(1)
        one = search(query, db, method=method, evalue=1e3)
        m = get_method(method)
        running, most, lock = [0], [0], threading.Lock()

        def counted(q, t, **opts):  # noqa: ANN001, ANN202
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            try:
                time.sleep(0.01)  # long enough for the other thread to start its pair
                return m.align(q, t, **opts)
            finally:
                with lock:
                    running[0] -= 1

        set_threads(2)
        monkeypatch.setattr(engine, "get_method", lambda name: replace_align(m, counted))
        two = search(query, db, method=method, evalue=1e3)
    finally:
        set_threads(before)
    assert most[0] == 2
    assert [(h.target_id, h.score, h.evalue) for h in two] == \
        [(h.target_id, h.score, h.evalue) for h in one]
    assert one


def replace_align(m, align):  # noqa: ANN001, ANN201
    """``m`` with another ``align`` (a frozen dataclass)."""
    import dataclasses

    return dataclasses.replace(m, align=align)
