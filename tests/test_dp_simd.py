"""The vectorised DP kernels against their scalar references and the brute-force enumeration."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from tests.test_dp_bruteforce import brute_posterior

from homalign.dp.forward_batch import LANES, local_forward_batch


def _batch(rng: np.random.Generator, lq: int, lts: np.ndarray, k: int = 4, sd: float = 2.0):
    """Random packed inputs of local_forward_batch for targets of lengths ``lts``."""
    n = int(lts.sum())
    X = np.exp(rng.normal(-0.5, sd, (lq, n))).astype(np.float32)
    starts = np.concatenate(([0], np.cumsum(lts)[:-1])).astype(np.int64)
    gaps = (rng.uniform(0.2, 4, lq), rng.uniform(0.01, 1, lq), rng.uniform(0.2, 4, n),
            rng.uniform(0.01, 1, n))
    codes = rng.integers(0, k, n).astype(np.uint8)
    R = np.exp(rng.normal(0, 0.5, (lq, k))).astype(np.float32)
    return X, starts, lts, *gaps, codes, R


@pytest.mark.parametrize("n_targets", [1, 2, LANES - 1, LANES, LANES + 1, 2 * LANES + 5])
def test_lane_kernel_equals_the_scalar_kernel_for_every_lane_remainder(n_targets: int) -> None:
    rng = np.random.default_rng(n_targets)
    lq = int(rng.integers(1, 30))
    lts = rng.integers(0, 40, n_targets)
    lts[0] = 1  # a one-residue target
    if n_targets > 2:
        lts[1] = 0  # an empty one: only the empty alignment
    args = _batch(rng, lq, lts)
    ref = local_forward_batch(*args, scalar=True)
    got = local_forward_batch(*args)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)
    if n_targets > 2:
        assert got[1] == 0.0


def test_lane_kernel_with_extreme_and_hopeless_cells() -> None:
    rng = np.random.default_rng(7)
    lq, lts = 25, np.array([30, 3, 17, 1, 40, 22])
    X, *rest = _batch(rng, lq, lts)
    X[:, :30] = np.exp(np.float32(-80.0))  # hopeless target (subnormal-free weights near 0)
    X[3, 31] = np.exp(np.float32(55.0))  # one huge cell
    X[:, 50] = np.exp(np.float32(40.0))  # a column of large ones
    args = (X, *rest)
    ref = local_forward_batch(*args, scalar=True)
    got = local_forward_batch(*args)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-12)
    assert np.all(np.isfinite(got))


def test_lane_kernel_scores_do_not_depend_on_batch_or_threads() -> None:
    rng = np.random.default_rng(3)
    lq, lts = 20, rng.integers(1, 35, 37)
    args = _batch(rng, lq, lts)
    full = local_forward_batch(*args)
    old = numba.get_num_threads()
    try:
        for n in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(n)
            assert np.array_equal(local_forward_batch(*args), full)
    finally:
        numba.set_num_threads(old)
    X, starts, _, qo, qe, to, te, codes, R = args
    for k in (0, 5, 36):  # each target alone: the same bits as in its group of 16
        a, b = starts[k], starts[k] + lts[k]
        alone = local_forward_batch(X[:, a:b], [0], [lts[k]], qo, qe, to[a:b], te[a:b],
                                    codes[a:b], R)
        assert alone[0] == full[k]


@pytest.mark.parametrize("seed", range(4))
def test_lane_kernel_equals_brute_force_log_partition(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    lq = int(rng.integers(1, 4))
    lts = rng.integers(1, 4, 3)
    X, starts, _, qo, qe, to, te, codes, R = _batch(rng, lq, lts, sd=1.0)
    got = local_forward_batch(X, starts, lts, qo, qe, to, te, codes, R)
    for k, lt in enumerate(lts):
        a = starts[k]
        S = np.log(X[:, a:a + lt].astype(np.float64) * R[:, codes[a:a + lt]])
        z = np.zeros
        gaps = {"q_ins_open": qo, "q_ins_ext": qe, "t_del_open": to[a:a + lt],
                "t_del_ext": te[a:a + lt], "t_ins_open": z(lt + 1), "t_ins_ext": z(lt + 1),
                "q_del_open": z(lq + 1), "q_del_ext": z(lq + 1)}
        _, log_z = brute_posterior(S, gaps, "local", 1.0)
        assert got[k] == pytest.approx(log_z, rel=1e-5, abs=1e-6)
