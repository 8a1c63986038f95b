"""Extreme-value statistics: published parameters, length adjustment, fits and calibration."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from homalign import stats
from homalign.search import SequenceDB, calibration, search
from homalign.search.calibration import calibrate
from homalign.sequence import Sequence
from homalign.stats import (
    EVDParams,
    bit_score,
    evalue,
    fit_gumbel,
    fit_regression_tail,
    karlin_altschul,
    length_adjustment,
    pair_pvalues,
    random_sequences,
    search_space,
)


def test_published_blosum62_values():
    p = karlin_altschul("BLOSUM62", 11, 1)
    assert (p.lam, p.K, p.H, p.alpha, p.beta) == (0.267, 0.041, 0.14, 1.9, -30)
    assert karlin_altschul("blosum62", 14, 2) is None  # not a published combination
    assert karlin_altschul("BLOSUM80", 10, 1).lam == 0.299
    assert karlin_altschul("NOPE", 11, 1) is None


def test_length_adjustment_matches_blast():
    # blastp 2.x, query d1asha_ (147 aa) against the 11,487-sequence SCOPe trainval database
    # (2,159,704 letters), BLOSUM62 11/1: "Effective search space used: 89264350".
    p = karlin_altschul("BLOSUM62", 11, 1)
    assert length_adjustment(p, 147, 2_159_704, 11_487) == 77
    assert search_space(p, 147, 2_159_704, 11_487) == 89_264_350
    # bits and E-value of a raw score 296 (BLAST reports 118 bits)
    assert bit_score(296, p) == pytest.approx(118.6, abs=0.05)
    e = evalue(296, p, 147, 2_159_704, 11_487)
    assert e == pytest.approx(89_264_350 * 0.041 * math.exp(-0.267 * 296))


def test_length_adjustment_without_finite_size_constants_is_zero():
    assert length_adjustment(EVDParams(0.3, 0.1), 100, 10_000, 50) == 0


def test_fit_gumbel_recovers_parameters():
    rng = np.random.default_rng(0)
    lam, K = 0.3, 0.05
    m = rng.integers(50, 500, size=4000).astype(float)
    n = rng.integers(50, 500, size=4000).astype(float)
    s = (np.log(K * m * n) - np.log(-np.log(rng.random(4000)))) / lam
    fit = fit_gumbel(s, m, n)
    assert fit.lam == pytest.approx(lam, rel=0.05)
    assert fit.K == pytest.approx(K, rel=0.3)


def _gumbel_sample(rng, lam, K, gamma, size=4000):
    m = rng.integers(50, 500, size=size).astype(float)
    n = rng.integers(50, 500, size=size).astype(float)
    s = (np.log(K) + gamma * np.log(m * n) - np.log(-np.log(rng.random(size)))) / lam
    return s, m, n


def test_fit_gumbel_recovers_a_length_exponent():
    rng = np.random.default_rng(1)
    s, m, n = _gumbel_sample(rng, 0.8, 0.004, 1.75)
    fit = fit_gumbel(s, m, n, length_exponent=True)
    assert fit.gamma == pytest.approx(1.75, rel=0.05)
    assert fit.lam == pytest.approx(0.8, rel=0.05)
    # Karlin-Altschul data give gamma near 1, and a fit with gamma fixed at 1 misses the drift
    s1, m1, n1 = _gumbel_sample(rng, 0.3, 0.05, 1.0)
    assert fit_gumbel(s1, m1, n1, length_exponent=True).gamma == pytest.approx(1.0, abs=0.08)
    assert fit_gumbel(s, m, n).lam < 0.7
    with pytest.raises(ValueError, match="different lengths"):
        fit_gumbel(s, np.full(s.size, 100.0), np.full(s.size, 100.0), length_exponent=True)


def test_length_exponent_evalues_bits_and_pvalues_agree():
    p = EVDParams(0.8, 0.004, gamma=1.75)
    scores, tlen = np.array([20.0, 30.0, 30.0]), np.array([100, 100, 400])
    ev = stats.db_evalues(scores, p, 150, tlen, db_length=10_000, db_count=50)
    want = 50 * 0.004 * (150.0 * tlen) ** 1.75 * np.exp(-0.8 * scores)
    np.testing.assert_allclose(ev, want, rtol=1e-12)
    assert ev[2] > ev[1]  # the longer target needs a higher score: the fitted drift
    # E of one pair = m n 2^-bits, as for Karlin-Altschul scores
    bits = bit_score(scores, p, 150, tlen)
    np.testing.assert_allclose(150.0 * tlen * 2.0 ** -bits, want / 50, rtol=1e-12)
    pv = pair_pvalues(scores, p, 150, tlen)
    np.testing.assert_allclose(pv, -np.expm1(-want / 50), rtol=1e-12)
    with pytest.raises(ValueError, match="lengths"):
        bit_score(30.0, p)
    with pytest.raises(ValueError, match="local model"):
        EVDParams(0.8, 0.004, gamma=0.0)


def test_a_method_null_law_replaces_the_iid_fit(tmp_path, monkeypatch):
    from homalign.methods import get_method

    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path))
    m = get_method("learned")
    shipped = m.null_params()
    assert shipped is not None and shipped.gamma is not None and shipped.gamma > 1.2
    assert "cross-fold" in shipped.source
    assert calibration.evd_params("learned") == shipped
    assert not list(tmp_path.rglob("*.json"))  # no i.i.d. calibration was run
    rng = np.random.default_rng(5)
    seqs = [Sequence(f"t{i}", s) for i, s in enumerate(random_sequences(12, rng, 60, 200))]
    db = SequenceDB.from_sequences(seqs)
    q = Sequence("q", random_sequences(1, rng, 120, 121)[0])
    hits = search(q, db, "learned", evalue=1e9, prefilter=False, traceback=False,
                  calibrated=False)
    tlen = np.array([len(db.sequence(h.target_index)) for h in hits])
    want = stats.db_evalues(np.array([h.score for h in hits]), shipped, len(q), tlen,
                            db.total_length, len(db))
    np.testing.assert_allclose([h.evalue for h in hits], want, rtol=1e-9)
    # what search reports by default: those values as counts of the database's chance hits
    # over its lengths (the score's law over all lengths), then the empirical tail calibration
    from homalign.search.tail_calibration import calibration_for

    tail, law = calibration_for("learned"), m.chance_params()
    assert tail is not None and law is not None and law.model == "gumbel-regression"
    chance = stats.chance_evalues(want, shipped, law, len(q), len(db),
                                  stats.length_histogram(db.lengths))
    cal = {h.target_index: h.evalue for h in search(q, db, "learned", evalue=1e9,
                                                     prefilter=False, traceback=False)}
    np.testing.assert_allclose([cal[h.target_index] for h in hits],
                               tail.evalues(chance, len(db)), rtol=1e-9)
    order = np.argsort(want, kind="stable")  # the same ranking
    assert (np.diff(np.asarray([cal[h.target_index] for h in hits])[order]) >= 0).all()


def test_fit_gumbel_rejects_degenerate_input():
    with pytest.raises(ValueError):
        fit_gumbel(np.ones(50), np.full(50, 100), np.full(50, 100))
    with pytest.raises(ValueError):
        fit_gumbel(np.arange(5.0), np.full(5, 100), np.full(5, 100))


def test_regression_tail_pvalues_are_calibrated():
    rng = np.random.default_rng(1)

    def draw(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        m = rng.integers(50, 400, size=k).astype(float)
        n = rng.integers(50, 400, size=k).astype(float)
        noise = rng.gumbel(size=k) * np.sqrt(4 + 0.05 * m)
        return -1.0 * m - 0.2 * n + 5 + noise, m, n

    s, m, n = draw(20_000)
    fit = fit_regression_tail(s, m, n)
    s2, m2, n2 = draw(20_000)
    p = pair_pvalues(s2, fit, m2, n2)
    for x in (0.02, 0.005):
        assert (p <= x).mean() == pytest.approx(x, rel=0.35)


def _decoys(seed: int, n_db: int, n_q: int, lo: int = 80, hi: int = 400):
    rng = np.random.default_rng(seed)
    db = SequenceDB.from_sequences(
        [Sequence(f"d{i}", s) for i, s in enumerate(random_sequences(n_db, rng, lo, hi))])
    qs = [Sequence(f"q{i}", s) for i, s in enumerate(random_sequences(n_q, rng, lo, hi))]
    return db, qs


def _mean_hits(db, qs, method, params=None, **options) -> dict[float, float]:
    ev = []
    for q in qs:
        ev += [h.evalue for h in search(q, db, method, evalue=10.0, prefilter=False,
                                        max_hits=None, params=params, **options)]
    ev = np.array(ev)
    return {x: float((ev <= x).sum()) / len(qs) for x in (1.0, 5.0, 10.0)}


def test_karlin_altschul_evalues_are_calibrated_on_decoys():
    """On unrelated (random) sequences the number of hits with E <= x is close to x."""
    db, qs = _decoys(7, 200, 25, 80, 300)
    for x, observed in _mean_hits(db, qs, "sw").items():
        assert x / 2.5 <= observed <= 2.5 * x, (x, observed)


def test_fitted_evalues_are_calibrated_on_decoys(tmp_path, monkeypatch):
    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path))
    opts = {"gap_open": 14.0, "gap_extend": 2.0}  # not in the published tables
    assert karlin_altschul("BLOSUM62", 14, 2) is None
    params = calibrate("sw", opts, n_pairs=600, seed=11)
    assert params.model == "local" and 0.2 < params.lam < 0.45
    db, qs = _decoys(8, 300, 30)  # fresh decoys, not the calibration pairs
    for x, observed in _mean_hits(db, qs, "sw", params=params, **opts).items():
        assert x / 2.5 <= observed <= 2.5 * x, (x, observed)


def test_glocal_fit_is_roughly_calibrated(tmp_path, monkeypatch):
    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path))
    params = calibrate("glocal", {}, n_pairs=500, seed=2)
    assert params.model == "regression"
    db, qs = _decoys(9, 200, 20, 60, 200)
    observed = _mean_hits(db, qs, "glocal", params=params)[10.0]
    assert 10.0 / 4 <= observed <= 10.0 * 2.5, observed


def test_calibrate_caches_its_fit(tmp_path, monkeypatch):
    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path))
    first = calibrate("sw", {"gap_open": 9.0, "gap_extend": 3.0}, n_pairs=100, seed=5)
    files = list((tmp_path / "evd").glob("sw-*.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    assert data["params"]["lam"] == first.lam

    def boom(*_a, **_k):
        raise AssertionError("a cached fit must not be recomputed")

    monkeypatch.setattr(calibration, "pair_scores", boom)
    assert calibrate("sw", {"gap_open": 9.0, "gap_extend": 3.0}, n_pairs=100, seed=5) == first
    with pytest.raises(AssertionError):
        calibrate("sw", {"gap_open": 9.0, "gap_extend": 3.0}, n_pairs=100, seed=5, refit=True)


def test_unrelated_pairs_sources():
    rng = np.random.default_rng(0)
    seqs = [Sequence(f"s{i}", s) for i, s in enumerate(random_sequences(20, rng))]
    labels = ["a"] * 10 + ["b"] * 10
    qs, ts, kind = stats.unrelated_pairs(50, sequences=seqs, labels=labels, seed=1)
    assert kind == "cross-fold"
    lab = {s.id: label for s, label in zip(seqs, labels, strict=True)}
    assert all(lab[q.id] != lab[t.id] for q, t in zip(qs, ts, strict=True))
    qs, ts, kind = stats.unrelated_pairs(10, sequences=seqs, seed=1)
    assert kind == "shuffled"
    by_id = {s.id: s for s in seqs}
    for t in ts:
        orig = by_id[t.id.split("_", 1)[1]]
        assert sorted(t.residues) == sorted(orig.residues)


def test_calibration_cache_follows_the_method_fingerprint(tmp_path, monkeypatch):
    """A learned method's new weights must not reuse the E-value fit of the old ones."""
    import dataclasses

    from homalign.methods import METHODS, get_method

    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path))
    version = {"v": "weights-1"}
    fake = dataclasses.replace(get_method("sw"), name="sw-fp",
                               fingerprint=lambda: version["v"])
    monkeypatch.setitem(METHODS, "sw-fp", fake)
    calibrate("sw-fp", {}, n_pairs=60, seed=1)
    calibrate("sw-fp", {}, n_pairs=60, seed=1)  # same weights: cached
    assert len(list((tmp_path / "evd").glob("sw-fp-*.json"))) == 1
    version["v"] = "weights-2"
    calibrate("sw-fp", {}, n_pairs=60, seed=1)  # new weights: a new fit
    assert len(list((tmp_path / "evd").glob("sw-fp-*.json"))) == 2


def _gumbel_regression_sample(rng, k: int, longest: float = stats.REGRESSION_MAX_LENGTH):
    """Scores of a known ``"gumbel-regression"`` law at lengths 30-``longest``."""
    m = np.exp(rng.uniform(np.log(30), np.log(longest), k))
    n = np.exp(rng.uniform(np.log(30), np.log(longest), k))
    true = stats.EVDParams(1.0, 1.0, model="gumbel-regression",
                           coef=(20.0, -3.0, 0.2, 10.0, -11.0), scale_coef=(-2.0, 0.25),
                           min_log_mn=float(np.log(m * n).min()))
    X, Z = stats._gumbel_regression_design(m, n, true.min_log_mn)
    mu, beta = X @ np.array(true.coef), np.exp(Z @ np.array(true.scale_coef))
    return mu - beta * np.log(-np.log(rng.random(k))), m, n, true


def test_gumbel_regression_recovers_its_law_and_its_pvalues_are_uniform():
    rng = np.random.default_rng(11)
    s, m, n, true = _gumbel_regression_sample(rng, 30_000)
    fit = stats.fit_gumbel_regression(s, m, n, censor=1.0)
    np.testing.assert_allclose(fit.scale_coef, true.scale_coef, atol=0.05)
    s2, m2, n2, _ = _gumbel_regression_sample(np.random.default_rng(12), 30_000)
    for law in (fit, stats.fit_gumbel_regression(s, m, n)):  # whole and upper-fifth fits
        p = stats.pair_pvalues(s2, law, m2, n2)
        long = np.minimum(m2, n2) > 600
        for sel in (~long, long):  # the same calibration at every length
            assert 0.07 < np.mean(p[sel] <= 0.1) < 0.13
            assert 0.005 < np.mean(p[sel] <= 0.01) < 0.016
    # bits: log2(m n / P), without underflow far out
    b = stats.bit_score(np.array([30.0, 3000.0]), fit, 300, 300)
    assert b[0] == pytest.approx(np.log2(9e4 / stats.pair_pvalues(30.0, fit, 300, 300)))
    assert np.isfinite(b[1]) and b[1] > 1000


def test_past_its_longest_length_a_regression_law_is_the_maximum_over_stretches():
    """A sequence k times the longest length is k stretches of it: the chance law of the best
    of k independent scores (P ≈ k P_L far out), not the regression extrapolated (whose
    location drifts down: long random queries got tiny E-values)."""
    rng = np.random.default_rng(5)
    _, _, _, law = _gumbel_regression_sample(rng, 10)
    L = stats.REGRESSION_MAX_LENGTH
    mu_l, beta_l = stats.location_scale(law, L, 150)
    for k in (2, 8, 20):
        mu, beta = stats.location_scale(law, k * L, 150)
        assert beta == pytest.approx(beta_l) and mu == pytest.approx(mu_l + beta_l * np.log(k))
        # the best of k draws at length L has exactly this law
        draws = mu_l - beta_l * np.log(-np.log(rng.random((20_000, k))))
        p = stats.pair_pvalues(draws.max(axis=1), law, k * L, 150)
        assert 0.08 < np.mean(p <= 0.1) < 0.12 and 0.006 < np.mean(p <= 0.01) < 0.014
    both, _ = stats.location_scale(law, 4 * L, 3 * L)
    at_l, _ = stats.location_scale(law, L, L)
    assert both == pytest.approx(at_l + stats.location_scale(law, L, L)[1] * np.log(12))
    inside = stats.location_scale(law, [300.0, L], [150.0, 150.0])[0]  # as fitted up to L
    X, _ = stats._gumbel_regression_design(np.array([300.0, L]), np.array([150.0, 150.0]),
                                           law.min_log_mn)
    np.testing.assert_array_equal(inside, X @ np.array(law.coef))


def test_gumbel_regression_refuses_lengths_it_cannot_separate():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="too alike"):
        stats.fit_gumbel_regression(rng.normal(size=100), np.full(100, 200), np.full(100, 300))
    with pytest.raises(ValueError, match="at least 50"):
        stats.fit_gumbel_regression(np.ones(10), np.arange(1, 11), np.arange(1, 11))


def test_chance_evalues_count_the_database_lengths_and_keep_the_ranking():
    rng = np.random.default_rng(3)
    _, _, _, law = _gumbel_regression_sample(rng, 100)
    key = stats.EVDParams(0.74, 0.003, gamma=1.7)
    lengths = np.array([100] * 50 + [1500] * 50)
    hist = stats.length_histogram(lengths)
    assert hist[1].sum() == 100 and len(hist[0]) == 2
    np.testing.assert_allclose(sorted(hist[0]), [100, 1500])
    s = np.linspace(10, 80, 30)
    v = stats.db_evalues(s, key, 200, np.full(30, 100), 0, 100)
    e = stats.chance_evalues(v, key, law, 200, 100, hist)
    assert (np.diff(e) <= 0).all()  # higher scores, fewer chance hits: the key's ranking
    # each length class contributes its own chance hits at the key's rank
    v50 = stats.db_evalues(s, key, 200, np.full(30, 100), 0, 50)  # the same scores, 50 targets
    short = stats.chance_evalues(v50, key, law, 200, 50, stats.length_histogram(lengths[:50]))
    np.testing.assert_allclose(short, 50 * stats.pair_pvalues(s, law, 200, 100), rtol=1e-9)
    assert (e > short).all()  # the long targets hold more chance hits at the same rank
    with pytest.raises(ValueError):
        stats.chance_evalues(v, law, law, 200, 100, hist)
