"""``homalign.search(..., method="learned")``: the learned ranking fused with one light PSSM
round (:mod:`homalign.search.profile_round`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import homalign
from homalign.cli import main as cli
from homalign.search import SequenceDB, engine, profile_round, search
from homalign.sequence import Sequence
from proteins import mutate, random_protein


@pytest.fixture(scope="module")
def db_and_query() -> tuple[SequenceDB, Sequence]:
    rng = np.random.default_rng(5)
    query = random_protein(rng, 110)
    seqs = [Sequence(f"homolog{k}", mutate(rng, query, 0.3 + 0.1 * k)) for k in range(4)]
    seqs += [Sequence(f"random{k}", random_protein(rng, int(rng.integers(70, 180))))
             for k in range(30)]
    return SequenceDB.from_sequences(seqs), Sequence("query", query)


def test_profile_round_fuses_learned_and_pssm_evalues_and_adds_the_pssm_best(
        db_and_query, monkeypatch) -> None:
    """Each hit's value is the fusion of its learned E-value (from its own pair) and the PSSM
    round's; the PSSM's best targets outside the learned candidates join the ranking."""
    db, query = db_and_query
    monkeypatch.setattr(engine, "LEARNED_RESCORE", 8)
    monkeypatch.setattr(profile_round, "EXTRA_CANDIDATES", 3)
    hits = homalign.search(query, db, "learned", profile_round=True, evalue=math.inf,
                           max_hits=None, traceback=False, calibrated=False)
    cand = engine.candidates_of(query, db, "learned")
    assert len(cand) == 8
    hits1, extra = profile_round.pssm_round(query, db, cand)
    pssm = {h.target_index: h.evalue for h in hits1}
    assert set(pssm) == set(range(len(db)))  # 34 targets: the PSSM scores them all
    monkeypatch.setattr(profile_round, "SECOND_ROUND", False)
    first = {h.target_index: h.evalue for h in profile_round.pssm_round(query, db, cand)[0]}
    best = [t for t in sorted(first, key=lambda t: (first[t], t)) if t not in set(cand.tolist())]
    np.testing.assert_array_equal(extra, best[:3])  # the first round's best outside the 80
    own = search(query, db, "learned", candidates=np.concatenate((cand, extra)),
                 evalue=math.inf, max_hits=None, traceback=False, calibrated=False)
    w = profile_round.WEIGHT
    want = {h.target_index: math.exp(w * math.log(h.evalue)
                                     + (1 - w) * math.log(pssm[h.target_index])) for h in own}
    assert len(want) == 11
    assert {h.target_index for h in hits} == set(want)  # not the PSSM-only targets
    for h in hits:
        assert h.evalue == pytest.approx(want[h.target_index], rel=1e-12)
    assert all(a.evalue <= b.evalue for a, b in zip(hits, hits[1:], strict=False))
    assert hits[0].target_id.startswith("homolog")


def test_profile_round_hits_keep_learned_alignments_and_consistent_bits(db_and_query) -> None:
    from homalign.search.tail_calibration import bits_from_evalue

    db, query = db_and_query
    hits = homalign.search(query, db, "learned", evalue=10.0, max_hits=3)
    plain = {h.target_id: h for h in search(query, db, "learned", evalue=math.inf,
                                            max_hits=None)}  # the engine: plain ranking
    assert hits
    for h in hits:
        assert h.alignment is not None and h.alignment.method == "learned"
        np.testing.assert_array_equal(h.alignment.pairs, plain[h.target_id].alignment.pairs)
        assert h.alignment.evalue == h.evalue
        assert h.bits == pytest.approx(float(bits_from_evalue(
            np.array([h.evalue]), len(query), db.total_length)[0]))


def test_a_learned_search_runs_the_round_by_default(db_and_query) -> None:
    db, query = db_and_query
    default = homalign.search(query, db, "learned", evalue=math.inf, max_hits=None,
                              traceback=False)
    fused = homalign.search(query, db, "learned", profile_round=True, evalue=math.inf,
                            max_hits=None, traceback=False)
    plain = homalign.search(query, db, "learned", profile_round=False, evalue=math.inf,
                            max_hits=None, traceback=False)
    assert [(h.target_index, h.evalue) for h in default] == [
        (h.target_index, h.evalue) for h in fused]
    assert [h.evalue for h in default] != [h.evalue for h in plain]
    # the engine is one pass: the plain ranking, as a fusion's own list (candidates=) is too
    engine_hits = search(query, db, "learned", evalue=math.inf, max_hits=None, traceback=False)
    assert [(h.target_index, h.evalue) for h in engine_hits] == [
        (h.target_index, h.evalue) for h in plain]
    idx = np.array(sorted(h.target_index for h in plain))
    listed = homalign.search(query, db, "learned", candidates=idx, evalue=math.inf,
                             max_hits=None, traceback=False)
    assert [(h.target_index, h.evalue) for h in listed] == [
        (h.target_index, h.evalue) for h in plain]


def test_profile_round_is_for_a_learned_ranking_on_its_own_candidates(db_and_query) -> None:
    db, query = db_and_query
    with pytest.raises(ValueError, match="profile_round"):
        homalign.search(query, db, "sw", profile_round=True)
    with pytest.raises(ValueError, match="profile_round"):
        homalign.search(query, db, "learned", profile_round=True, candidates=np.arange(5))
    with pytest.raises(ValueError, match="profile_round"):
        homalign.search(query, db, "learned", profile_round=True, iterations=2)
    assert homalign.search(query, db, "sw", profile_round=False)  # the plain engine


def test_cli_profile_round_matches_the_api_and_refuses_iterations(db_and_query, tmp_path,
                                                                   capsys) -> None:
    db, query = db_and_query
    qf, dbf = tmp_path / "q.fa", tmp_path / "db.fa"
    qf.write_text(f">query\n{query.residues}\n")
    dbf.write_text("".join(f">{db.ids[k]}\n{db.sequence(k).residues}\n" for k in range(len(db))))
    assert cli(["search", str(qf), str(dbf), "--method", "learned", "--profile-round",
                "--outfmt", "6 qseqid sseqid evalue", "-o", str(tmp_path / "out.tsv"),
                "--no-progress"]) == 0
    lines = [ln.split("\t") for ln in (tmp_path / "out.tsv").read_text().splitlines()]
    api = homalign.search(query, SequenceDB.from_fasta(dbf), "learned", traceback=False)
    assert [r[1] for r in lines] == [h.target_id for h in api]
    # (E-values printed with two significant digits, as BLAST does)
    assert [float(r[2]) for r in lines] == pytest.approx([h.evalue for h in api], rel=0.03)
    assert cli(["search", str(qf), str(dbf), "--method", "learned", "--profile-round",
                "--iterations", "2"]) == 2
    assert "profile-round is for --method learned" in capsys.readouterr().err


def test_homology_benchmark_runs_learned_with_and_without_the_round(tmp_path) -> None:
    """``benchmark homology``: ``learned`` is the default search (its PSSM round), and
    ``--no-profile-round`` ranks with the learned scores alone (the engine's one pass)."""
    from homalign.evaluate.homology import run_homalign_method

    rng = np.random.default_rng(3)
    base = random_protein(rng, 100)
    seqs = [Sequence(f"q{k}", mutate(rng, base, 0.3)) for k in range(3)]
    seqs += [Sequence(f"r{k}", random_protein(rng, 90)) for k in range(20)]
    db = SequenceDB.from_sequences(seqs)
    ids = ["q0", "q1"]
    default = run_homalign_method("learned", ids, db, progress=False)
    plain = run_homalign_method("learned", ids, db, progress=False, profile_round=False)
    for q in ids:
        want_default = homalign.search(db.sequence(db.index_of(q)), db, "learned",
                                       evalue=1e9, max_hits=2000, traceback=False)
        want_plain = search(db.sequence(db.index_of(q)), db, "learned", evalue=1e9,
                            max_hits=2000, traceback=False)
        assert [(t, e) for t, _s, e in default[q]] == [(h.target_id, h.evalue)
                                                       for h in want_default]
        assert [(t, e) for t, _s, e in plain[q]] == [(h.target_id, h.evalue) for h in want_plain]
    assert default != plain


@pytest.fixture(scope="module")
def family_and_query() -> tuple[SequenceDB, Sequence]:
    """Four members that keep the query's conserved core (45% of its positions) and a remote one
    that keeps 45% of that core: SW finds it at E 0.7, a PSSM of the four at E 2e-6."""
    rng = np.random.default_rng(0)
    query = random_protein(rng, 150)
    core = rng.random(150) < 0.45

    def member(keep: float) -> str:
        other = random_protein(rng, 150)
        kept = core & (rng.random(150) < keep)
        return "".join(q if k else o for q, o, k in zip(query, other, kept, strict=True))

    seqs = [Sequence(f"member{k}", member(1.0)) for k in range(4)]
    seqs += [Sequence("remote", member(0.45))]
    seqs += [Sequence(f"random{k}", random_protein(rng, int(rng.integers(70, 180))))
             for k in range(30)]
    return SequenceDB.from_sequences(seqs), Sequence("query", query)


def test_a_second_round_runs_where_the_first_includes_new_sequences(family_and_query,
                                                                    monkeypatch) -> None:
    """PSI-BLAST's rule: the first PSSM's new inclusions join the SW MSA, and that profile
    scores the learned candidates and the added targets again; the rest keep the first
    round's values, and a round that includes nothing new changes nothing."""
    from homalign.methods.profile import ProteinRep
    from homalign.profile.profile import Profile
    from homalign.search.msa_build import hit_alignments, msa_from_alignments
    from homalign.stats import karlin_altschul

    db, query = family_and_query
    monkeypatch.setattr(engine, "LEARNED_RESCORE", 8)
    monkeypatch.setattr(profile_round, "EXTRA_CANDIDATES", 3)
    cand = engine.candidates_of(query, db, "learned")
    sw = dict(matrix="BLOSUM62", gap_open=11.0, gap_extend=1.0)
    inc = search(query, db, "sw", candidates=cand, evalue=profile_round.INCLUSION_EVALUE,
                 max_hits=None, **sw)
    monkeypatch.setattr(profile_round, "SECOND_ROUND", False)
    first, extra = profile_round.pssm_round(query, db, cand)
    known = {h.target_id for h in inc}
    new = [h.target_index for h in first if h.evalue <= profile_round.INCLUSION_EVALUE
           and h.target_id not in known]
    assert [db.ids[t] for t in new] == ["remote"]
    monkeypatch.setattr(profile_round, "SECOND_ROUND", True)
    second, extra2 = profile_round.pssm_round(query, db, cand)
    np.testing.assert_array_equal(extra2, extra)
    kw = dict(params=karlin_altschul("BLOSUM62", 11.0, 1.0), **sw)
    rep = ProteinRep(query, source=Profile.from_msa(msa_from_alignments(
        query, hit_alignments(query, inc)), pseudocounts="matrix", matrix="BLOSUM62"))
    traced = search(query, db, "pssm", candidates=np.array(sorted(new)), query_rep=rep,
                    evalue=math.inf, max_hits=None, **kw)
    rep2 = ProteinRep(query, source=Profile.from_msa(msa_from_alignments(
        query, hit_alignments(query, inc) + hit_alignments(query, traced)),
        pseudocounts="matrix", matrix="BLOSUM62"))
    scored = np.concatenate((cand, extra))
    want = {h.target_index: h.evalue for h in search(
        query, db, "pssm", candidates=scored, query_rep=rep2, evalue=math.inf, max_hits=None,
        traceback=False, **kw)}
    was = {h.target_index: h.evalue for h in first}
    got = {h.target_index: h.evalue for h in second}
    assert set(got) == set(was)
    for t, e in got.items():
        assert e == (want[t] if t in want else was[t])
    remote = db.index_of("remote")
    assert remote in want and got[remote] < was[remote]  # now in the profile's MSA
    monkeypatch.setattr(profile_round, "INCLUSION_EVALUE", 1e-300)  # nothing included
    none1 = profile_round.pssm_round(query, db, cand)[0]
    monkeypatch.setattr(profile_round, "SECOND_ROUND", False)
    none0 = profile_round.pssm_round(query, db, cand)[0]
    assert [(h.target_index, h.evalue) for h in none1] == [(h.target_index, h.evalue)
                                                           for h in none0]
