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
    pssm = {h.target_index: h.evalue for h in profile_round.pssm_round(query, db, cand)}
    assert set(pssm) == set(range(len(db)))  # 34 targets: the PSSM scores them all
    best = [t for t in sorted(pssm, key=lambda t: (pssm[t], t)) if t not in set(cand.tolist())]
    extra = np.array(best[:3])
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
