"""The learned search's batched path: stored target embeddings, one compiled pass per batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from tests.proteins import mutate, random_protein

from homalign.dp import GapCosts
from homalign.dp.forward_batch import local_forward_batch
from homalign.dp.posterior import log_partition
from homalign.errors import InputError
from homalign.io import FastaRecord, write_fasta
from homalign.methods.learned import ranking_model
from homalign.model import load_bundled
from homalign.model.homology import ranking_score
from homalign.search import SequenceDB, makedb, open_database, search
from homalign.search.embeddings import STORE_JSON, compute_embeddings, store_for
from homalign.sequence import Sequence


def _fasta(tmp_path: Path, proteins: list[Sequence]) -> Path:
    path = tmp_path / "p.fa"
    write_fasta(path, [FastaRecord(s.id, "", s.residues) for s in proteins])
    return path


def _reference(S, qo, qe, to, te) -> float:
    g = GapCosts.from_vectors(S.shape[0], S.shape[1], q_ins_open=qo, q_ins_ext=qe,
                              t_del_open=to, t_del_ext=te)
    return log_partition(S, g, mode="local", method="log")


@pytest.mark.parametrize("n_targets", [1, 3, 8, 13])
def test_forward_batch_equals_the_log_space_reference(n_targets: int) -> None:
    rng = np.random.default_rng(n_targets)
    lq = int(rng.integers(1, 40))
    lts = rng.integers(1, 50, n_targets)
    lts[0] = 1  # a one-residue target
    S = [rng.normal(-0.5, 2.0, (lq, lt)).astype(np.float32) for lt in lts]
    S[-1][0, 0] = 25.0  # an extreme cell
    qo, qe = rng.uniform(0.2, 4, lq), rng.uniform(0.01, 1, lq)
    to = [rng.uniform(0.2, 4, lt) for lt in lts]
    te = [rng.uniform(0.01, 1, lt) for lt in lts]
    ref = np.array([_reference(s, qo.astype(np.float32), qe.astype(np.float32),
                               a.astype(np.float32), b.astype(np.float32))
                    for s, a, b in zip(S, to, te, strict=True)])
    starts = np.concatenate(([0], np.cumsum(lts)[:-1]))
    got = local_forward_batch(np.exp(np.concatenate(S, axis=1)), starts, lts,
                              qo.astype(np.float32), qe.astype(np.float32),
                              np.concatenate(to).astype(np.float32),
                              np.concatenate(te).astype(np.float32))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_forward_batch_of_hopeless_pairs_is_the_empty_alignment() -> None:
    S = np.full((4, 5), -60.0, dtype=np.float32)
    got = local_forward_batch(np.exp(S), np.array([0]), np.array([5]), np.ones(4), np.ones(4),
                              np.ones(5), np.ones(5))
    assert got[0] == pytest.approx(np.log1p(20 * np.exp(-60.0)), abs=1e-12)


@pytest.fixture(scope="module")
def proteins() -> list[Sequence]:
    rng = np.random.default_rng(5)
    base = [random_protein(rng, int(rng.integers(30, 160))) for _ in range(12)]
    seqs = [Sequence(f"p{i}", s) for i, s in enumerate(base)]
    seqs += [Sequence(f"m{i}", mutate(rng, s, 0.5)) for i, s in enumerate(base[:6])]
    seqs.append(Sequence("tiny", "MK"))
    return seqs


def test_batched_scores_equal_the_one_pair_path(proteins: list[Sequence]) -> None:
    rm = ranking_model()
    assert rm is not None
    model, meta = load_bundled("learned_search")
    q = proteins[0]
    ref = np.array([ranking_score(model, meta, q.codes, model.embed(q.codes), t.codes,
                                  model.embed(t.codes)) for t in proteins])
    E = rm.embed_many([t.codes for t in proteins])
    for k, t in enumerate(proteins):  # padded batches embed each sequence as alone
        np.testing.assert_allclose(E[k], model.embed(t.codes)[0].numpy(), atol=1e-5)
    args = (np.concatenate([t.codes for t in proteins]), np.concatenate(E),
            np.array([len(t) for t in proteins]))
    got = rm.scores(rm.query(q.codes), *args)
    np.testing.assert_allclose(got, ref, rtol=1e-4)
    got16 = rm.scores(rm.query(q.codes), args[0], args[1].astype(np.float16), args[2])
    np.testing.assert_allclose(got16, ref, rtol=1e-3)


def test_search_scores_are_the_one_pair_scores_at_any_thread_count(proteins) -> None:
    model, meta = load_bundled("learned_search")
    db = SequenceDB.from_sequences(proteins)
    q = proteins[1]
    by_threads = []
    old = numba.get_num_threads()
    try:
        for n in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(n)
            hits = search(q, db, method="learned", evalue=1e9, prefilter=False, traceback=False)
            by_threads.append([(h.target_id, h.score, h.evalue) for h in hits])
    finally:
        numba.set_num_threads(old)
    assert by_threads[0] == by_threads[1]
    e_q = model.embed(q.codes)
    for tid, score, _ in by_threads[0]:
        t = db.sequence(db.index_of(tid))
        ref = ranking_score(model, meta, q.codes, e_q, t.codes, model.embed(t.codes))
        assert score == pytest.approx(ref, rel=1e-4)


def test_search_hits_are_traced_back_as_align_does_pair_by_pair(proteins) -> None:
    from homalign.methods.learned import LearnedRep, _align_prepared

    db = SequenceDB.from_sequences(proteins)
    q = proteins[0]
    hits = search(q, db, method="learned", evalue=1e9, prefilter=False)
    assert len(hits) == len(proteins)  # every target, "tiny" included
    smodel, _meta = load_bundled("learned_search")
    for h in hits:
        t = db.sequence(h.target_index)
        reps = (LearnedRep(q.codes, smodel.embed(q.codes)),
                LearnedRep(t.codes, smodel.embed(t.codes)))
        ref = _align_prepared(q, t, *reps)
        if not len(ref.pairs):  # no pair beats the threshold: a hit takes threshold 0's path
            ref.pairs = _align_prepared(q, t, *reps, threshold=0.0).pairs
            assert len(ref.pairs), h.target_id
        assert np.array_equal(h.alignment.pairs, ref.pairs), h.target_id
        assert h.alignment.score == pytest.approx(ref.score, rel=1e-5)
        assert h.alignment.extra.keys() == ref.extra.keys()
        # homology_score is the hit's ranking score (what search ranked it by)
        assert h.alignment.extra["homology_score"] == h.score
        assert h.score == pytest.approx(ref.extra["homology_score"], rel=1e-4)
        assert h.alignment.extra["homology_probability"] == pytest.approx(
            ref.extra["homology_probability"], rel=1e-3, abs=1e-6)
        assert (h.alignment.evalue, h.alignment.bits) == (h.evalue, h.bits)
    viterbi = search(q, db, method="learned", evalue=1e9, prefilter=False, decode="viterbi")
    h = viterbi[0]
    ref = _align_prepared(q, db.sequence(h.target_index), None, None, decode="viterbi")
    assert np.array_equal(h.alignment.pairs, ref.pairs)


def test_model_embed_many_equals_embedding_each_alone(proteins) -> None:
    model, _meta = load_bundled("learned")  # the ensemble: its members' embeddings side by side
    many = model.embed_many([p.codes for p in proteins])
    for p, e in zip(proteins, many, strict=True):
        alone = model.embed(p.codes)
        assert e.shape == alone.shape
        np.testing.assert_allclose(e.numpy(), alone.numpy(), atol=1e-5)


def test_makedb_stores_embeddings_that_search_reads(proteins, tmp_path: Path) -> None:
    fasta = _fasta(tmp_path, proteins)
    out = makedb(fasta, tmp_path / "db")
    meta = json.loads((out / STORE_JSON).read_text())
    rm = ranking_model()
    assert meta["weights"] == rm.fingerprint and meta["dtype"] == "float16"
    disk = open_database(out)
    store = store_for(disk, rm)
    assert isinstance(store.residues, np.memmap) and store.residues.dtype == np.float16
    mem = compute_embeddings(SequenceDB.from_fasta(fasta), rm, dtype="float32")
    np.testing.assert_allclose(np.asarray(store.residues, dtype=np.float32), mem, atol=2e-2)
    # a FASTA database ranks with the float16 numbers makedb stores: the same hits exactly
    fasta_db = SequenceDB.from_fasta(fasta)
    assert np.array_equal(store_for(fasta_db, rm).residues, store.residues)
    a = search(proteins[2], disk, method="learned", evalue=1e9, traceback=False)
    b = search(proteins[2], fasta_db, method="learned", evalue=1e9, traceback=False)
    assert [(h.target_id, h.score, h.evalue) for h in a] == [
        (h.target_id, h.score, h.evalue) for h in b]


def test_a_store_of_other_weights_is_refused_naming_both(proteins, tmp_path: Path) -> None:
    fasta = _fasta(tmp_path, proteins)
    out = makedb(fasta, tmp_path / "db")
    meta = json.loads((out / STORE_JSON).read_text())
    meta["weights"] = "0123456789abcdef"
    (out / STORE_JSON).write_text(json.dumps(meta))
    with pytest.raises(InputError, match="0123456789abcdef.*" + ranking_model().fingerprint):
        search(proteins[0], open_database(out), method="learned")
    (out / "learned_residues.npy").write_bytes(b"short")
    with pytest.raises(InputError, match="cut short"):
        search(proteins[0], open_database(out), method="learned")
    (out / STORE_JSON).unlink()  # makedb's manifest lists the store: missing is damage
    with pytest.raises(InputError, match="embeddings are missing"):
        search(proteins[0], open_database(out), method="learned")


def test_a_killed_makedb_leaves_nothing_a_later_run_does_not_clean(proteins, tmp_path) -> None:
    fasta = _fasta(tmp_path, proteins)
    code = ("import os, sys; from homalign.search import database as d\n"
            "orig = d._write_file\n"
            "def boom(path, *a, **k):\n"
            "    if path.name == 'manifest.json': os.kill(os.getpid(), 9)\n"
            "    return orig(path, *a, **k)\n"
            "d._write_file = boom\n"
            f"d.makedb({str(fasta)!r}, {str(tmp_path / 'db')!r})\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert r.returncode == -9
    assert not (tmp_path / "db").exists()
    assert list(tmp_path.glob(".db.tmp-*"))  # the killed build's leftovers
    makedb(fasta, tmp_path / "db")
    assert not list(tmp_path.glob(".db.tmp-*"))
    assert (tmp_path / "db" / "manifest.json").exists()
    assert os.path.isdir(tmp_path / "db")


def test_cli_learned_search_is_the_same_at_one_and_two_threads(proteins, tmp_path) -> None:
    from homalign.cli import main

    fasta = _fasta(tmp_path, proteins)
    assert main(["makedb", str(fasta), str(tmp_path / "db"), "-j", "1", "--no-progress"]) == 0
    q = tmp_path / "q.fa"
    write_fasta(q, [FastaRecord(s.id, "", s.residues) for s in proteins[:3]])
    outs = []
    for n in ("1", "2"):
        out = tmp_path / f"hits{n}.tsv"
        assert main(["search", str(q), str(tmp_path / "db"), "--method", "learned", "-j", n,
                     "--no-progress", "-o", str(out)]) == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    first = outs[0].splitlines()[0].split("\t")
    assert first[0] == first[1] == proteins[0].id  # the self hit ranks first


def test_overflowing_cells_take_the_exact_path(proteins) -> None:
    import dataclasses

    rm = ranking_model()
    big = dataclasses.replace(rm, W=rm.W * 40.0)  # cells far above MAX_CELL_SCORE
    q, ts = proteins[0], proteins[1:5]
    E = big.embed_many([t.codes for t in ts])
    qr = big.query(q.codes)
    got = big.scores(qr, np.concatenate([t.codes for t in ts]), np.concatenate(E),
                     np.array([len(t) for t in ts]))
    for k, t in enumerate(ts):
        S = (qr.A @ E[k].T + qr.profile[:, t.codes.astype(np.int64)]).astype(np.float32)
        o, x = big.gap_costs(E[k])
        ref = _reference(S, qr.open, qr.extend, o, x)
        assert np.isfinite(got[k]) and got[k] == pytest.approx(ref, rel=1e-5)


@pytest.mark.parametrize("two_hit", [True, False])
@pytest.mark.parametrize("k", [3, 2, 4])  # 3: the default (its own k-mer loop), 2 and 4: generic
def test_the_database_scan_prefilter_equals_the_indexed_one(proteins, two_hit: bool,
                                                            k: int) -> None:
    from homalign.search.prefilter import prefilter_scores

    db = SequenceDB.from_sequences(proteins, k=k)
    threshold = {2: 8.0, 3: 11.0, 4: 15.0}[k]
    for q in proteins[:6] + [proteins[-1]]:
        a = prefilter_scores(q.codes, db, two_hit=two_hit, threshold=threshold)
        b = prefilter_scores(q.codes, db, two_hit=two_hit, threshold=threshold, index=True)
        np.testing.assert_array_equal(a, b)
        assert a[db.index_of(q.id)] > 0 or len(q) < k


@pytest.mark.parametrize("two_hit", [True, False])
def test_the_index_walk_at_another_word_length_equals_the_scan_at_it(proteins,
                                                                     two_hit: bool) -> None:
    """``k=4`` on a database made with k = 3: the walk over a 4-mer index and the scan give the
    same scores, for a sequence and for a profile; a 4-mer index is built once and never
    pickled with the database."""
    from homalign.matrices import substitution_matrix
    from homalign.search.prefilter import prefilter_scores

    db = SequenceDB.from_sequences(proteins)
    assert db.k == 3
    M = np.asarray(substitution_matrix("BLOSUM62"), dtype=np.float32)
    rng = np.random.default_rng(2)
    for q in proteins[:5] + [proteins[-1]]:
        profile = M[q.codes] + rng.normal(0.0, 1.0, (len(q), M.shape[1])).astype(np.float32)
        for prof in (None, profile):
            a = prefilter_scores(q.codes, db, k=4, threshold=16.0, two_hit=two_hit,
                                 profile=prof)
            b = prefilter_scores(q.codes, db, k=4, threshold=16.0, two_hit=two_hit,
                                 profile=prof, index=True)
            np.testing.assert_array_equal(a, b)
            assert (a > 0).any() or len(q) < 4
    assert not db.has_kmer_index(5)
    index = db.kmer_index(4)
    assert db.has_kmer_index(4) and db.kmer_index(4) is index and index.k == 4
    assert db.__getstate__()["cache"] == {}
    with pytest.raises(ValueError, match="word length"):
        prefilter_scores(proteins[0].codes, db, k=6)


def test_the_scan_skips_k_mers_with_ambiguous_residues_as_the_index_does(proteins) -> None:
    """k-mers holding B, Z or X are never looked up (the index does not hold them)."""
    from homalign.search.prefilter import prefilter_scores
    from homalign.sequence import Sequence

    rng = np.random.default_rng(11)
    seqs = []
    for p in proteins:
        r = np.array(list(p.residues))
        r[rng.random(len(r)) < 0.08] = rng.choice(list("BZX"))
        seqs.append(Sequence(p.id, "".join(r)))
    for k in (3, 4):
        db = SequenceDB.from_sequences(seqs, k=k)
        for q in seqs[:5]:
            np.testing.assert_array_equal(prefilter_scores(q.codes, db),
                                          prefilter_scores(q.codes, db, index=True))


@pytest.mark.parametrize("k", [3, 2])
def test_a_profile_of_matrix_rows_seeds_as_the_sequence_does(proteins, k: int) -> None:
    """The seeds of a sequence's own matrix rows as a profile are the sequence's, word for word,
    and the scan with that profile gives the sequence scan's scores."""
    from homalign.matrices import substitution_matrix
    from homalign.search.prefilter import prefilter_scores, seed_table

    M = np.asarray(substitution_matrix("BLOSUM62"), dtype=np.float32)
    db = SequenceDB.from_sequences(proteins, k=k)
    threshold = {2: 8.0, 3: 11.0}[k]
    for q in proteins[:5] + [proteins[-1]]:
        codes = np.asarray(q.codes, dtype=np.uint8)
        start, pos = seed_table(codes, k, threshold, profile=M[codes])
        ref_start, ref_pos = seed_table(codes, k, threshold)
        np.testing.assert_array_equal(start, ref_start)
        np.testing.assert_array_equal(pos, ref_pos)
        np.testing.assert_array_equal(
            prefilter_scores(codes, db, threshold=threshold, profile=M[codes]),
            prefilter_scores(codes, db, threshold=threshold))


@pytest.mark.parametrize("k", [2, 3])
def test_a_profiles_seeds_are_the_full_enumeration(k: int) -> None:
    """Every word scoring at least the threshold against a random profile at each position
    (sums taken position by position), and the query's own word, and nothing else."""
    import itertools

    from homalign.search.prefilter import N_AA, seed_table

    rng = np.random.default_rng(k)
    codes = rng.integers(0, 23, 9).astype(np.uint8)  # B, Z and X too (no own word there)
    profile = rng.normal(0.0, 3.0, (len(codes), 23)).astype(np.float32)
    threshold = 6.0 if k == 2 else 9.0
    start, pos = seed_table(codes, k, threshold, profile=profile)
    got = {(int(w), int(p)) for w in range(N_AA ** k) for p in pos[start[w]:start[w + 1]]}
    want = set()
    S = profile.astype(np.float64)
    for i in range(len(codes) - k + 1):
        own = None if any(codes[i + s] >= N_AA for s in range(k)) else tuple(codes[i:i + k])
        for word in itertools.product(range(N_AA), repeat=k):
            total = 0.0
            for s, b in enumerate(word):
                total += S[i + s, b]
            if total >= threshold or word == own:
                want.add((int(np.ravel_multi_index(word, (N_AA,) * k)), i))
    assert got == want and len(got) > 0
    for w in range(N_AA ** k):  # positions ascending within a word
        assert np.all(np.diff(pos[start[w]:start[w + 1]]) > 0)


def test_profile_seeds_find_the_family_word_the_query_lacks() -> None:
    """A PSSM that scores the family's residues high seeds on their words, so a target that
    shares the family's segment but no word of the query is found, as in PSI-BLAST's later
    rounds; the query's own sequence seeds miss it."""
    from homalign.alphabet import encode
    from homalign.matrices import substitution_matrix
    from homalign.search.prefilter import prefilter_scores

    query = "MKTAYIAKQRQISFVKSHFSRQAGSTW"
    family = "MKTAYIAKQRQWWWWWWWWWRQAGSTW"  # the family has W where the query has ISFVKSHFS
    target = "GGGGGPWWWWWWWWWPGGGG"
    db = SequenceDB.from_sequences([Sequence("t", target), Sequence("other", "ACDEFGHIKL" * 3)])
    q = np.asarray(encode(query), dtype=np.uint8)
    M = np.asarray(substitution_matrix("BLOSUM62"), dtype=np.float32)
    profile = M[np.asarray(encode(family), dtype=np.uint8)]
    assert prefilter_scores(q, db, two_hit=False)[0] == 0.0
    assert prefilter_scores(q, db, two_hit=False, profile=profile)[0] > 50.0
    with pytest.raises(ValueError, match="profile"):
        prefilter_scores(q, db, profile=profile[:-1])


def test_a_repeated_scan_gives_the_same_scores_in_a_new_array(proteins, monkeypatch) -> None:
    """The last scans are reused (an iterative search prefilters one query every round): the
    same scores as a new scan, a fresh array each time, and any other query, option or database
    scanned anew."""
    from homalign.search import prefilter as pf

    calls = []
    scan = pf._scan
    monkeypatch.setattr(pf, "_scan", lambda *a: calls.append(a[2:]) or scan(*a))
    db = SequenceDB.from_sequences(proteins)
    q = proteins[2]
    a = pf.prefilter_scores(q.codes, db)
    a[:] = -1.0  # a caller may write into its array
    b = pf.prefilter_scores(q.codes, db)
    np.testing.assert_array_equal(b, pf.prefilter_scores(q.codes, db, index=True))
    assert len(calls) == 1
    pf.prefilter_scores(q.codes, db, threshold=12.0)
    pf.prefilter_scores(q.codes, SequenceDB.from_sequences(proteins))
    pf.prefilter_scores(proteins[3].codes, db)
    assert len(calls) == 4
    np.testing.assert_array_equal(pf.prefilter_scores(q.codes, db, threshold=12.0),
                                  pf.prefilter_scores(q.codes, db, threshold=12.0, index=True))
    assert len(calls) == 5  # three scans since: the oldest was dropped


def test_rescore_keeps_the_best_smith_waterman_candidates_and_the_self_hit(proteins) -> None:
    from homalign.search.engine import best_by_sw, candidate_sw
    from homalign.search.sw_scores import sw_scores

    db = SequenceDB.from_sequences(proteins)
    q = proteins[3]
    cand = np.arange(len(db))
    kept = best_by_sw(q, db, cand, 4)
    assert len(kept) == 4 and db.index_of(q.id) in kept
    sw = sw_scores(q.codes, db.codes, db.offsets, cand, **candidate_sw())
    others = np.setdiff1d(cand, kept)
    assert sw[kept].min() >= sw[others].max()
    all_hits = search(q, db, method="learned", evalue=1e9, traceback=False, rescore=None,
                      prefilter_options={"min_score": 0.0})
    few = search(q, db, method="learned", evalue=1e9, traceback=False, rescore=3,
                 prefilter_options={"min_score": 0.0})
    assert len(few) == 3 and len(all_hits) > 3
    by_id = {h.target_id: h.score for h in all_hits}
    assert all(h.score == pytest.approx(by_id[h.target_id], rel=1e-6) for h in few)


@pytest.mark.parametrize("matrix,go,ge", [("BLOSUM62", 11, 1), ("BLOSUM45", 15, 2),
                                          ("PAM250", 10, 1), ("BLOSUM62", 0, 1)])
def test_pyopal_and_lane_scores_equal_the_numba_kernel(proteins, matrix: str, go: int,
                                                       ge: int) -> None:
    from homalign.search.sw_scores import _opal_scores, _sw_many, query_profile, sw_scores

    db = SequenceDB.from_sequences(proteins)
    targets = np.array([5, 0, 17, 3, len(db) - 1, 3])
    for q in (proteins[0], proteins[-1], proteins[7]):
        ref = _sw_many(query_profile(q.codes, matrix), db.codes, db.offsets, targets,
                       np.float32(go + ge), np.float32(ge))
        lanes = sw_scores(q.codes, db.codes, db.offsets, targets, matrix=matrix, gap_open=go,
                          gap_extend=ge, db=db)  # int16 lanes on AVX-512BW, else pyopal
        opal = _opal_scores(q.codes, db, targets, matrix, go, ge)
        np.testing.assert_array_equal(lanes, ref)
        np.testing.assert_array_equal(opal, ref)
    assert len(sw_scores(proteins[0].codes, db.codes, db.offsets, np.zeros(0, int),
                         db=db)) == 0
    assert len(_opal_scores(proteins[0].codes, db, np.zeros(0, int), "BLOSUM62", 11, 1)) == 0


def test_batches_are_whole_groups_within_the_budget() -> None:
    from homalign.search.engine import _batches

    rng = np.random.default_rng(5)
    for _ in range(300):
        lengths = np.sort(rng.integers(1, 1500, int(rng.integers(1, 120))))
        budget = int(rng.integers(1, 30_000))
        parts = _batches(lengths, budget)
        assert np.array_equal(np.concatenate(parts), np.arange(len(lengths)))
        for k, part in enumerate(parts):
            assert len(part) == 1 or lengths[part].sum() <= budget
            if k < len(parts) - 1 and len(part) > 16:
                assert len(part) % 16 == 0  # only the last batch has a part-filled group


def test_learned_scores_do_not_depend_on_the_batch_budget(proteins, monkeypatch) -> None:
    from homalign.search import engine

    db = SequenceDB.from_sequences(proteins)
    q = proteins[1]
    whole = search(q, db, method="learned", evalue=1e9, prefilter=False, traceback=False)
    monkeypatch.setattr(engine, "BATCH_CELLS", len(q) * 60)  # a target or two a batch
    split = search(q, db, method="learned", evalue=1e9, prefilter=False, traceback=False)
    assert [(h.target_id, h.score) for h in split] == [(h.target_id, h.score) for h in whole]


def test_pyopal_scores_are_the_same_on_one_and_two_threads_with_a_kept_pool(proteins) -> None:
    import numba

    from homalign.search import sw_scores as mod

    db = SequenceDB.from_sequences(proteins)
    targets = np.arange(len(db))[::-1].copy()
    q = proteins[3]
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = mod._opal_scores(q.codes, db, targets, "BLOSUM62", 11, 1)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = mod._opal_scores(q.codes, db, targets, "BLOSUM62", 11, 1)
        again = mod._opal_scores(q.codes, db, targets, "BLOSUM62", 11, 1)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(two, again)
    if numba.config.NUMBA_NUM_THREADS >= 2:  # the pool is made once and kept
        assert mod._opal_pool(2) is mod._opal_pool(2)
    assert mod._opal_pool(1) is None


def test_the_kept_pool_is_stopped_at_exit() -> None:
    """At exit, before the interpreter is torn down (a running pool's ``__del__`` then printed
    a traceback after the tests)."""
    import subprocess
    import sys

    code = ("import atexit, sys\n"
            "from homalign.search import sw_scores as mod\n"
            "pools = []\n"
            "atexit.register(lambda: sys.stdout.write(repr([p._state for p in pools])))\n"
            "pools.append(mod._opal_pool(2))\n"
            "assert pools[0].map(abs, [-1, -2]) == [1, 2]\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "['TERMINATE']" and "Traceback" not in out.stderr
