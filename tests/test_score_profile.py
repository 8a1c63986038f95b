"""Vectorised profile column scores against straightforward per-pair formulas."""

from __future__ import annotations

import numpy as np
import pytest

from homalign.alphabet import BACKGROUND
from homalign.score.profile_scores import (
    compass_scores,
    hhsearch_scores,
    prof_sim_scores,
    pssm_sequence_scores,
)
from homalign.score.profile_scores import prof_sim_similarity as sim


def _rand(n, seed):
    return np.random.default_rng(seed).dirichlet(np.ones(20) * 0.5, size=n)


def _js(p, q):
    r = (p + q) / 2
    kl = lambda a, b: float(np.sum(np.where(a > 0, a * np.log2(a / b), 0.0)))  # noqa: E731
    return 0.5 * kl(p, r) + 0.5 * kl(q, r)


def test_prof_sim_matches_pairwise_formula():
    p, q = _rand(5, 1), _rand(7, 2)
    S = sim(p, q, BACKGROUND)
    for i in range(5):
        for j in range(7):
            r = (p[i] + q[j]) / 2
            want = 0.5 * (1 - _js(p[i], q[j])) * (1 + _js(r, BACKGROUND))
            assert S[i, j] == pytest.approx(want, abs=1e-5)
    assert S.min() >= 0.0 and S.max() <= 1.0
    np.testing.assert_allclose(prof_sim_scores(p, q, BACKGROUND, shift=0.4, scale=5.0),
                               5.0 * (S - 0.4), atol=1e-5)


def test_prof_sim_kernel_equals_numpy_blocks(monkeypatch):
    import homalign.score.profile_scores as ps

    p, q = _rand(33, 3), _rand(9, 4)
    full = sim(p, q, BACKGROUND)
    monkeypatch.setattr(ps, "_BLOCK_CELLS", 20 * 9 * 4)  # 4 rows per block
    np.testing.assert_allclose(ps.prof_sim_similarity_numpy(p, q, BACKGROUND), full, atol=1e-5)


def test_hhsearch_column_score():
    p, q = _rand(4, 5), _rand(6, 6)
    S = hhsearch_scores(p, q, BACKGROUND, shift=-0.1)
    for i in range(4):
        for j in range(6):
            want = np.log2(np.sum(p[i] * q[j] / BACKGROUND)) - 0.1
            assert S[i, j] == pytest.approx(want, abs=1e-5)
    # identical background columns score exactly the shift
    bgm = np.tile(BACKGROUND, (2, 1))
    np.testing.assert_allclose(hhsearch_scores(bgm, bgm, BACKGROUND), 0.0, atol=1e-6)


def test_hhsearch_scores_equal_the_float64_formula_on_long_profiles():
    """The float32 scores (one BLAS product, then log2) against numpy's float64 on shapes past
    one vector of lanes, with scale and shift."""
    p, q = _rand(37, 11), _rand(53, 12)
    S = hhsearch_scores(p, q, BACKGROUND, shift=0.25, scale=0.7)
    want = 0.7 * (np.log2((p / BACKGROUND) @ q.T) + 0.25)
    assert S.dtype == np.float32 and S.shape == (37, 53)
    np.testing.assert_allclose(S, want, rtol=1e-5, atol=1e-5)

def test_hhsearch_scores_on_a_threaded_blas_round_within_2e6():
    """A threaded BLAS may round the column product otherwise than one thread (OpenBLAS on an
    AMD EPYC: one float32 ulp in ~3% of cells), which is why a search scores its pairs on one
    BLAS thread; the difference stays at rounding, within 2e-6 bits."""
    from threadpoolctl import threadpool_limits

    for seed, (n, m) in enumerate(((700, 900), (1500, 333), (257, 1200))):
        p, q = _rand(n, 20 + seed), _rand(m, 30 + seed)
        with threadpool_limits(1, user_api="blas"):
            one = hhsearch_scores(p, q, BACKGROUND, shift=-0.03)
        with threadpool_limits(2, user_api="blas"):
            threaded = hhsearch_scores(p, q, BACKGROUND, shift=-0.03)
        np.testing.assert_allclose(threaded, one, rtol=0, atol=2e-6)


def test_compass_formula_and_symmetry():
    fa, pa, fb, pb = _rand(3, 7), _rand(3, 8), _rand(4, 9), _rand(4, 10)
    na, nb = np.array([1.0, 2.0, 5.0]), np.array([1.0, 3.0, 1.5, 7.0])
    S = compass_scores(fa, pa, na, fb, pb, nb, BACKGROUND, lam=0.5)
    for i in range(3):
        for j in range(4):
            want = (na[i] * fa[i] @ np.log(pb[j] / BACKGROUND)
                    + nb[j] * fb[j] @ np.log(pa[i] / BACKGROUND)) / (na[i] + nb[j]) / 0.5
            assert S[i, j] == pytest.approx(want, rel=1e-5)
    St = compass_scores(fb, pb, nb, fa, pa, na, BACKGROUND, lam=0.5)
    np.testing.assert_allclose(S, St.T, rtol=1e-5)


def test_pssm_sequence_lookup():
    pssm = np.arange(3 * 23, dtype=np.float32).reshape(3, 23)
    S = pssm_sequence_scores(pssm, np.array([0, 22, 5], dtype=np.uint8))
    assert S.dtype == np.float32 and S.flags.c_contiguous
    np.testing.assert_array_equal(S, pssm[:, [0, 22, 5]])
