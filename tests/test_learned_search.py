"""``search(method="learned")``: ranks by the bundled homology adapter's local forward score."""

from __future__ import annotations

import numpy as np
import pytest

import homalign
from homalign.model import load_bundled
from homalign.model.homology import (
    homology_probability,
    ranking_score,
    ranking_scores,
    standardized_score,
)
from homalign.score.pair_scores import score_values
from homalign.search import SequenceDB, search
from homalign.sequence import Sequence
from proteins import mutate, random_protein


@pytest.fixture(scope="module")
def db_and_query() -> tuple[SequenceDB, Sequence]:
    rng = np.random.default_rng(11)
    query = random_protein(rng, 120)
    seqs = [Sequence("homolog", mutate(rng, query, 0.35))]
    seqs += [Sequence(f"random{k}", random_protein(rng, int(rng.integers(80, 200)))) for k in range(30)]
    return SequenceDB.from_sequences(seqs), Sequence("query", query)


def test_ranking_weights_carry_a_trained_adapter() -> None:
    model, meta = load_bundled("learned_search")
    assert meta["homology_score"]["score"] == "forward-local"
    assert float(model.homology.W.detach().abs().sum()) > 0
    assert "homology" in meta and {"a", "c"} <= set(meta["homology"])
    assert meta["chance"]["params"]["model"] == "gumbel-regression"


def test_search_ranks_by_the_adapter_forward_score(db_and_query) -> None:
    db, query = db_and_query
    hits = search(query, db, "learned", evalue=1e9, prefilter=False, traceback=False)
    assert hits[0].target_id == "homolog"
    model, meta = load_bundled("learned_search")  # search ranks with the ranking weights
    eq = model.embed(query.codes)
    for h in hits[:5]:  # the database's embeddings are float16, as makedb stores them
        t = db.sequence(h.target_index)
        want = ranking_score(model, meta, query.codes, eq, t.codes, model.embed(t.codes))
        assert h.score == pytest.approx(want, rel=1e-4, abs=1e-4)
        ps = ranking_scores(model, meta, query.codes, eq, t.codes, model.embed(t.codes))
        assert ps.kind == "forward" and ps.mode == "local"
        assert h.score == pytest.approx(float(score_values([ps])[0]), rel=1e-4, abs=1e-4)
    assert all(a.evalue <= b.evalue for a, b in zip(hits, hits[1:], strict=False))
    assert hits[0].evalue < 1e-3 < hits[1].evalue  # only the homolog is significant
    # ... not with the aligner's weights, which score differently
    am, ameta = load_bundled("learned")
    t = db.sequence(hits[0].target_index)
    other = ranking_score(am, ameta, query.codes, am.embed(query.codes), t.codes, am.embed(t.codes))
    assert abs(other - hits[0].score) > 1e-3


def test_align_reports_the_same_score_and_a_probability(db_and_query) -> None:
    db, query = db_and_query
    homolog = db.sequence(db.index_of("homolog"))
    unrelated = db.sequence(db.index_of("random0"))
    a = homalign.align(query, homolog, method="learned")
    b = homalign.align(query, unrelated, method="learned")
    # the score and probability are those of the ranking weights (what search ranks by)
    model, meta = load_bundled("learned_search")
    want = ranking_score(model, meta, query.codes, model.embed(query.codes), homolog.codes,
                         model.embed(homolog.codes))
    assert a.extra["homology_score"] == pytest.approx(want, rel=1e-5, abs=1e-4)
    assert a.extra["homology_probability"] == pytest.approx(
        homology_probability(meta["homology"],
                             standardized_score(meta, want, len(query), len(homolog))), rel=1e-6)
    assert 0.0 <= b.extra["homology_probability"] < a.extra["homology_probability"] <= 1.0
    assert a.extra["homology_probability"] > 0.5


def test_search_hits_carry_the_learned_mea_alignment(db_and_query) -> None:
    db, query = db_and_query
    hits = search(query, db, "learned", evalue=1e9, max_hits=3, prefilter=False)
    for h in hits:
        want = homalign.align(query, db.sequence(h.target_index), method="learned")
        assert h.alignment is not None
        np.testing.assert_array_equal(h.alignment.pairs, want.pairs)
        # the hits' embeddings come from one packed encoder call: equal to float rounding
        assert h.alignment.score == pytest.approx(want.score, rel=1e-5)
        assert h.alignment.extra["expected_correct"] == pytest.approx(
            want.extra["expected_correct"], rel=1e-5)
        # from the hit's ranking score, which reads the database's float16 embeddings
        assert h.alignment.extra["homology_probability"] == pytest.approx(
            want.extra["homology_probability"], rel=1e-3)
        assert h.alignment.evalue == h.evalue


def test_every_learned_hit_has_an_alignment(db_and_query) -> None:
    """Where no pair's posterior beats the MEA threshold, a search hit takes the path of the
    most expected correct pairs (threshold 0) instead of an empty alignment: every hit, the
    unrelated ones too, has aligned pairs (tab output lists what JSON lists). ``align`` keeps
    the threshold's meaning: such a pair has no alignment there."""
    db, query = db_and_query
    hits = search(query, db, "learned", evalue=1e9, prefilter=False, threshold=0.99)
    assert len(hits) == len(db)
    for h in hits:
        assert h.alignment is not None and h.alignment.length > 0
    unrelated = next(h for h in hits if h.target_id != "homolog")
    target = db.sequence(unrelated.target_index)
    assert homalign.align(query, target, method="learned", threshold=0.99).length == 0
    np.testing.assert_array_equal(
        unrelated.alignment.pairs,
        homalign.align(query, target, method="learned", threshold=0.0).pairs)
    # a threshold some pair beats keeps its own path: the homologue's high-confidence pairs
    homolog = next(h for h in hits if h.target_id == "homolog")
    strict = homalign.align(query, db.sequence(homolog.target_index), method="learned",
                            threshold=0.99)
    assert 0 < strict.length
    np.testing.assert_array_equal(homolog.alignment.pairs, strict.pairs)


def test_learned_iterative_search_fuses_the_pssm_round(db_and_query) -> None:
    """``iterative_search(method="learned")``: over the same candidates, each target's E-value is
    the geometric mean of its learned and last-PSSM-round E-values; hits keep learned alignments."""
    import math

    from homalign.search.iterative import iterative_search

    db, query = db_and_query
    fused = iterative_search(query, db, 2, "learned", evalue=1e9, max_hits=None, prefilter=False)
    # the fusion combines the learned null law's values (calibrated=False); with 2 rounds no
    # empirical calibration is shipped, so the fused values are the geometric means counted as
    # the database's chance hits (a monotone map: the geometric means' ranking)
    from homalign.search.tail_calibration import reported_evalues

    own = {h.target_id: h for h in search(query, db, "learned", evalue=math.inf, max_hits=None,
                                          prefilter=False, traceback=False, calibrated=False)}
    pssm = {h.target_id: h.evalue for h in iterative_search(query, db, 2, "pssm", evalue=math.inf,
                                                            max_hits=None, prefilter=False,
                                                            traceback=False)}
    assert {h.target_id for h in fused} == set(own) == set(pssm)
    means = [math.sqrt(own[h.target_id].evalue * pssm[h.target_id]) for h in fused]
    assert means == sorted(means)
    np.testing.assert_allclose([h.evalue for h in fused],
                               reported_evalues(means, "learned@2", "learned", len(query), db),
                               rtol=1e-9)
    for h in fused:
        assert h.score == own[h.target_id].score
    assert fused[0].target_id == "homolog"
    assert all(a.evalue <= b.evalue for a, b in zip(fused, fused[1:], strict=False))
    top = iterative_search(query, db, 2, "learned", evalue=1e9, max_hits=2, prefilter=False)
    assert [h.target_id for h in top] == [h.target_id for h in fused[:2]]
    want = homalign.align(query, db.sequence(top[0].target_index), method="learned")
    np.testing.assert_array_equal(top[0].alignment.pairs, want.pairs)
    assert top[0].alignment.evalue == top[0].evalue


def test_public_homalign_search_is_the_engine_and_the_iterative_search(db_and_query) -> None:
    import subprocess
    import sys

    from homalign.search.iterative import iterative_search

    db, query = db_and_query
    plain = homalign.search(query, db, "sw", evalue=1e9, prefilter=False)
    want = search(query, db, "sw", evalue=1e9, prefilter=False)
    assert [(h.target_id, h.evalue) for h in plain] == [(h.target_id, h.evalue) for h in want]
    fused = homalign.search(query.residues, db, "learned", iterations=2, evalue=1e9,
                            prefilter=False, traceback=False)
    ref = iterative_search(Sequence("query", query.residues), db, 2, "learned", evalue=1e9,
                           prefilter=False, traceback=False)
    assert [(h.target_id, h.evalue) for h in fused] == [(h.target_id, h.evalue) for h in ref]
    assert fused[0].target_id == "homolog"
    with pytest.raises(ValueError, match="iterations"):
        homalign.search(query, db, "sw", iterations=0)
    # a fresh interpreter: ``homalign.search`` is reachable (and callable) after ``import homalign``
    code = "import homalign; print(callable(homalign.search), homalign.search.SequenceDB.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "SequenceDB"]


def test_learned_fusion_scores_the_best_pssm_and_sw_candidates(db_and_query, monkeypatch) -> None:
    """With more candidates than ``FUSION_RESCORE``, the learned ranking of ``learned@N`` scores
    the PSSM round's best ones and its own best by SW only; a fused target keeps the geometric
    mean of its two E-values, and any other takes the learned list's worst."""
    import math

    from homalign.search import iterative
    from homalign.search.engine import best_by_sw

    db, query = db_and_query
    monkeypatch.setattr(iterative, "FUSION_RESCORE", 5)
    monkeypatch.setattr("homalign.search.engine.LEARNED_RESCORE", 4)
    cand = np.arange(len(db), dtype=np.int64)
    pssm = iterative.iterative_search(query, db, 2, "pssm", evalue=math.inf, max_hits=None,
                                      prefilter=False, traceback=False)
    own = best_by_sw(query, db, cand, 4)
    chosen = iterative.fusion_candidates(cand, pssm, own)
    want = np.union1d([h.target_index for h in pssm[:5]], own)
    np.testing.assert_array_equal(chosen, want)
    assert 5 <= len(chosen) < len(db)
    np.testing.assert_array_equal(iterative.fusion_candidates(cand, pssm, None),
                                  cand)  # no batched ranking: every candidate
    fused = iterative.iterative_search(query, db, 2, "learned", evalue=math.inf, max_hits=None,
                                       prefilter=False, traceback=False)
    from homalign.search.tail_calibration import reported_evalues

    own = {h.target_index: h.evalue
           for h in search(query, db, "learned", evalue=math.inf, max_hits=None,
                           candidates=chosen, traceback=False, calibrated=False)}
    p = {h.target_index: h.evalue for h in pssm}
    worst = max(own.values())
    assert len(fused) == len(db) and fused[0].target_id == "homolog"
    means = [math.sqrt(own.get(h.target_index, worst) * p[h.target_index]) for h in fused]
    np.testing.assert_allclose([h.evalue for h in fused],
                               reported_evalues(means, "learned@2", "learned", len(query), db),
                               rtol=1e-9)
    traced = iterative.iterative_search(query, db, 2, "learned", evalue=math.inf, max_hits=None,
                                        prefilter=False)
    learned = {h.target_index: h.score for h in search(query, db, "learned", evalue=math.inf,
                                                       max_hits=None, prefilter=False)}
    assert all(h.score == learned[h.target_index] for h in traced)  # the method's own scores


@pytest.mark.parametrize("method", ["pssm", "learned"])
def test_the_last_round_seeds_with_the_query_pssm(db_and_query, monkeypatch, method) -> None:
    """``iterative_search``'s MSA rounds score the database's best ``max_candidates`` by
    Smith-Waterman (no k-mer scan), its last round prefilters with the query's PSSM (PSI-BLAST's
    seeding); ``PROFILE_SEEDS = False`` keeps the sequence, ``SW_CANDIDATES = False`` gives the
    MSA rounds the sequence's k-mer prefilter."""
    from homalign.search import iterative
    from homalign.search import prefilter as pf

    db, query = db_and_query
    seen = []
    scan = pf.prefilter_scores
    monkeypatch.setattr(pf, "prefilter_scores",
                        lambda *a, **k: seen.append(k.get("profile")) or scan(*a, **k))
    hits = iterative.iterative_search(query, db, 3, method, evalue=1e9, traceback=False)
    assert hits[0].target_id == "homolog"
    assert len(seen) == 1 and seen[0] is not None and seen[0].shape == (len(query), 23)
    seen.clear()
    monkeypatch.setattr(iterative, "PROFILE_SEEDS", False)
    iterative.iterative_search(query, db, 3, method, evalue=1e9, traceback=False)
    assert seen == [None]
    seen.clear()
    monkeypatch.setattr(iterative, "SW_CANDIDATES", False)
    iterative.iterative_search(query, db, 3, method, evalue=1e9, traceback=False)
    assert len(seen) >= 2 and all(p is None for p in seen)


def test_the_msa_rounds_score_the_databases_best_by_smith_waterman(db_and_query,
                                                                   monkeypatch) -> None:
    """Each MSA round of an iterative search scores the database's best ``max_candidates`` by
    SW score, from one pass over every target that the learned fusion's own candidates reuse."""
    from homalign.search import engine, iterative, msa_build
    from homalign.search.sw_scores import sw_scores

    db, query = db_and_query
    every = np.arange(len(db), dtype=np.int64)
    sw = sw_scores(query.codes, db.codes, db.offsets, every, **engine.candidate_sw())
    want = sorted(np.argsort(-sw, kind="stable")[:5].tolist())
    got, passes = [], []
    real_build, real_sw = msa_build.build_msa, engine.sw_scores

    def build(*a, candidates=None, **k):  # noqa: ANN002, ANN003, ANN202
        got.append(None if candidates is None else candidates.tolist())
        return real_build(*a, candidates=candidates, **k)

    def counted(*a, **k):  # noqa: ANN002, ANN003, ANN202
        passes.append(len(a[3]))
        return real_sw(*a, **k)

    monkeypatch.setattr(iterative, "build_msa", build)
    monkeypatch.setattr(engine, "sw_scores", counted)
    monkeypatch.setattr(engine, "LEARNED_RESCORE", 6)  # the learned search's own 6 by SW
    db.cache.pop("sw-pass", None)
    iterative.iterative_search(query, db, 3, "learned", evalue=1e9, traceback=False,
                               max_candidates=5)
    assert got == [want]
    assert passes.count(len(db)) == 1  # one pass over every target for both
    iterative.iterative_search(query, db, 3, "learned", evalue=1e9, traceback=False,
                               prefilter=False)  # exhaustive: every target, no SW selection
    assert got[-1] is None


def test_learned_candidates_are_the_databases_best_by_smith_waterman(db_and_query) -> None:
    from homalign.search.engine import candidate_sw, candidates_of
    from homalign.search.prefilter import prefilter
    from homalign.search.sw_scores import sw_scores

    db, query = db_and_query
    every = np.arange(len(db), dtype=np.int64)
    sw = sw_scores(query.codes, db.codes, db.offsets, every, **candidate_sw())
    cand = candidates_of(query, db, "learned", rescore=6)
    assert cand.tolist() == sorted(np.argsort(-sw, kind="stable")[:6].tolist())
    # the k-mer prefilter would keep fewer: its candidates are ranked only with explicit options
    kmer = prefilter(query.codes, db, max_seqs=1000)
    assert len(kmer) < len(db)
    chosen = candidates_of(query, db, "learned", rescore=6, prefilter_options={"max_seqs": 1000})
    assert set(chosen.tolist()) <= set(kmer.tolist())
    # compiled sw scores every target; with prefilter options, or another method, the k-mer's
    assert candidates_of(query, db, "sw").tolist() == every.tolist()
    assert candidates_of(query, db, "sw", prefilter_options={"max_seqs": 1000}).tolist() == \
        kmer.tolist()
    assert candidates_of(query, db, "glocal").tolist() == kmer.tolist()
    hits = search(query, db, "learned", evalue=1e9, traceback=False, rescore=6)
    assert sorted(h.target_index for h in hits) == cand.tolist()


def test_best_by_sw_breaks_ties_at_the_cut_in_candidate_order() -> None:
    from homalign.search.engine import best_by_sw, candidate_sw
    from homalign.search.sw_scores import sw_scores

    rng = np.random.default_rng(5)
    query = random_protein(rng, 60)
    homolog = mutate(rng, query, 0.3)
    seqs = [Sequence(f"s{k}", homolog if k % 3 == 0 else random_protein(rng, 50))
            for k in range(24)]  # eight equal best scores
    db = SequenceDB.from_sequences(seqs)
    cand = np.arange(2, 24, dtype=np.int64)
    q = Sequence("q", query)
    sw = sw_scores(q.codes, db.codes, db.offsets, cand, **candidate_sw())
    for n in (1, 3, 7, 8, 9, 22, 30):
        want = np.sort(cand[np.argsort(-sw, kind="stable")[:n]])
        assert best_by_sw(q, db, cand, n).tolist() == want.tolist()
    assert best_by_sw(q, db, cand, 3).tolist() == [3, 6, 9]  # the first three of the tie


def test_the_pssm_round_of_learned_at_n_scores_the_learned_searchs_candidates(
        db_and_query, monkeypatch) -> None:
    """``learned@N`` with the prefilter: the PSSM round's candidates hold the plain learned
    search's (the database's best by SW), whatever the k-mer prefilter kept."""
    from homalign.search import engine, iterative

    db, query = db_and_query
    monkeypatch.setattr("homalign.search.prefilter.prefilter",
                        lambda codes, db_, **kw: np.array([0], dtype=np.int64))  # keeps one
    seen: list[tuple[str, np.ndarray]] = []
    real = engine.search

    def spy(q, d, method="sw", *args, **kw):  # noqa: ANN001, ANN202
        if kw.get("candidates") is not None:
            seen.append((method, np.asarray(kw["candidates"])))
        return real(q, d, method, *args, **kw)

    monkeypatch.setattr(engine, "search", spy)
    iterative.iterative_search(query, db, 1, "learned", evalue=1e9, max_hits=None,
                               traceback=False)
    own = engine.candidates_of(query, db, "learned")
    assert len(own) > 1
    pssm = [c for m, c in seen if m == "pssm"]
    assert len(pssm) == 1 and set(own.tolist()) <= set(pssm[0].tolist())
    assert set(pssm[0].tolist()) == set(own.tolist()) | {0}
