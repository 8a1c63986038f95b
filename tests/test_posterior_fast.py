"""The scaled (probability-space) forward-backward against the log-space reference.

``homalign.dp.posterior`` runs the scaled kernels by default and falls back to the log-space ones
when their a-posteriori underflow bound is not negligible. These tests call the scaled kernels
directly (``scaled_forward_backward``) to check that they, not the fallback, produced the result,
and the public functions to check that the fallback is seamless.
"""

from __future__ import annotations

import numpy as np
import pytest

from homalign.dp import GapCosts
from homalign.dp.modes import mode_code
from homalign.dp.posterior import forward_backward, log_partition, posterior_matrix
from homalign.dp.posterior_scaled import scaled_forward_backward

MODES = ["local", "global", "glocal", "semiglobal"]
SIZES = {"q_ins": 0, "t_ins": 1, "t_del": 0, "q_del": 1}
NAMES = ["q_ins_open", "q_ins_ext", "t_ins_open", "t_ins_ext",
         "t_del_open", "t_del_ext", "q_del_open", "q_del_ext"]


def random_gaps(rng: np.random.Generator, lq: int, lt: int, scale: float = 2.0,
                low: float = 0.0) -> GapCosts:
    """All eight vectors position-specific and non-zero (uniform in [low, scale))."""
    vecs = {}
    for name in NAMES:
        n = (lq if name.startswith("q") else lt) + SIZES[name[:5]]
        vecs[name] = rng.uniform(low, scale, n).astype(np.float32)
    return GapCosts(**vecs)


def kernel_vectors64(gaps: GapCosts, temperature: float) -> tuple[np.ndarray, ...]:
    """The float64 kernel vectors exactly as ``homalign.dp.posterior`` prepares them."""
    g = {n: getattr(gaps, n).astype(np.float64) for n in NAMES}
    return tuple(v / temperature for v in (
        g["q_ins_open"] + g["q_ins_ext"], g["q_ins_ext"], g["t_ins_open"] + g["t_ins_ext"],
        g["t_ins_ext"], g["t_del_open"] + g["t_del_ext"], g["t_del_ext"],
        g["q_del_open"] + g["q_del_ext"], g["q_del_ext"]))


def scaled(S: np.ndarray, gaps: GapCosts, mode: str, temperature: float = 1.0):
    """The scaled kernels alone: (P, log Z, ok)."""
    return scaled_forward_backward(S, kernel_vectors64(gaps, temperature), mode_code(mode),
                                   temperature)


def assert_agrees(S: np.ndarray, gaps: GapCosts, mode: str, temperature: float = 1.0,
                  atol: float = 1e-6) -> tuple[np.ndarray, float]:
    """The scaled kernels run without fallback and match the log-space reference."""
    P_ref, z_ref = forward_backward(S, gaps, mode, temperature, method="log")
    P, z, ok = scaled(S, gaps, mode, temperature)
    assert ok, "the scaled kernels refused a case they should handle"
    assert P.dtype == np.float32 and P.shape == S.shape
    np.testing.assert_allclose(P, P_ref, rtol=0, atol=atol)
    assert z == pytest.approx(z_ref, rel=1e-9, abs=1e-9)
    return P, z


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_scaled_matches_log_space_on_random_problems(mode: str, temperature: float) -> None:
    rng = np.random.default_rng([7, MODES.index(mode), int(temperature * 10)])
    for lq, lt in ((1, 1), (1, 9), (9, 1), (23, 31), (64, 48)):
        S = rng.normal(0.0, 1.5, (lq, lt)).astype(np.float32)
        P, _ = assert_agrees(S, random_gaps(rng, lq, lt), mode, temperature)
        assert np.all(P >= 0.0) and np.all(P.sum(axis=1) <= 1.0 + 1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_scaled_matches_on_long_sequences_with_large_scores(mode: str) -> None:
    # log Z ~ 1400 nats while float64 ends at exp(709): without the per-row scaling the
    # forward values would overflow halfway down the matrix
    rng = np.random.default_rng([11, MODES.index(mode)])
    lq, lt = 500, 470
    S = rng.normal(0.0, 4.0, (lq, lt)).astype(np.float32)
    P, z = assert_agrees(S, random_gaps(rng, lq, lt, scale=1.5), mode)
    assert z > 1000.0
    assert P.max() > 0.5


@pytest.mark.parametrize("mode", MODES)
def test_scaled_matches_on_a_homologous_pair_and_self_alignment(mode: str) -> None:
    # a strong diagonal (what real homologs and self-alignments look like): large log Z,
    # sharply peaked posteriors
    rng = np.random.default_rng([13, MODES.index(mode)])
    L = 400
    S = rng.normal(-1.0, 1.0, (L, L + 20)).astype(np.float32)
    for i in range(L):
        S[i, i + 10] = 5.0
    gaps = GapCosts.uniform(L, L + 20, open=3.8, extend=0.35)
    P, z = assert_agrees(S, gaps, mode)
    assert z > 1800.0
    assert np.all(P[np.arange(L), np.arange(L) + 10] > 0.95)


@pytest.mark.parametrize("mode", MODES)
def test_scaled_matches_with_forbidden_pairs_and_negative_gap_costs(mode: str) -> None:
    rng = np.random.default_rng([17, MODES.index(mode)])
    lq, lt = 40, 57
    S = rng.normal(0.0, 1.0, (lq, lt)).astype(np.float32)
    S[rng.random((lq, lt)) < 0.3] = -np.inf
    P, _ = assert_agrees(S, random_gaps(rng, lq, lt, scale=1.0, low=-0.2), mode)
    np.testing.assert_array_equal(P[np.isneginf(S)], 0.0)


@pytest.mark.parametrize("mode", MODES)
def test_extreme_inputs_fall_back_to_log_space_seamlessly(mode: str) -> None:
    # scores of +-60 nats per cell at T = 0.3: the row ranges exceed float64's, the scaled
    # kernels must refuse, and the public functions return the log-space result
    rng = np.random.default_rng([19, MODES.index(mode)])
    lq, lt = 60, 70
    S = rng.normal(0.0, 20.0, (lq, lt)).astype(np.float32)
    gaps = random_gaps(rng, lq, lt, scale=10.0)
    assert not scaled(S, gaps, mode, 0.3)[2]
    P_ref, z_ref = forward_backward(S, gaps, mode, 0.3, method="log")
    P, z = forward_backward(S, gaps, mode, 0.3)
    np.testing.assert_array_equal(P, P_ref)
    assert z == z_ref
    assert log_partition(S, gaps, mode, 0.3) == pytest.approx(z_ref, rel=1e-12)


def test_underflow_that_would_change_the_answer_is_caught() -> None:
    # local mode: alignment A (rows 0-199, columns 300-499) makes every row's maximum ~e^800,
    # so alignment B, which starts at (100, 0) with weight e^10, underflows to zero in the
    # scaled rows; yet B ends up dominating (log Z = 1000). The scaled forward pass alone gets
    # log Z wrong; the scaled kernels must refuse, and the public result is the reference.
    from homalign.dp.posterior_scaled import _forward_scaled, gap_factors
    from homalign.dp.vexp import exp_scaled

    S = np.full((200, 500), -1.0, np.float32)
    k = np.arange(100)
    S[k, 300 + k] = 8.0
    S[100 + k, 400 + k] = 0.0
    S[100 + k, k] = 10.0
    gaps = GapCosts.uniform(200, 500, open=4.0, extend=1.0)
    P_ref, z_ref = forward_backward(S, gaps, "local", method="log")
    assert z_ref == pytest.approx(1000.0, abs=0.01) and P_ref[100 + k, k].min() > 0.99

    E = exp_scaled(S, 1.0, np.empty(S.shape), np.empty(S.size))
    facs, _ = gap_factors(kernel_vectors64(gaps, 1.0))
    fm = np.empty((201, 501))
    raw_z, _ = _forward_scaled(E, *facs, mode_code("local"), fm, np.empty(201), np.empty(201))
    assert raw_z < 900.0  # B was lost

    assert not scaled(S, gaps, "local")[2]
    P, z = forward_backward(S, gaps, "local")
    np.testing.assert_array_equal(P, P_ref)
    assert z == z_ref


def test_accepted_results_are_accurate_across_hard_random_inputs() -> None:
    # the bound's promise: whenever the scaled kernels accept, they agree with the reference;
    # inputs range from ordinary to absurd (huge scores and gap costs, low temperature)
    rng = np.random.default_rng(23)
    accepted = refused = 0
    for trial in range(48):
        mode = MODES[trial % 4]
        lq, lt = (int(x) for x in rng.integers(5, 60, 2))
        sd = float(rng.choice([0.5, 3.0, 10.0, 30.0]))
        S = rng.normal(float(rng.choice([-1.0, 0.0, 1.0])) * sd, sd, (lq, lt)).astype(np.float32)
        gaps = random_gaps(rng, lq, lt, scale=float(rng.choice([0.1, 2.0, 50.0, 500.0])))
        temperature = float(rng.choice([0.2, 1.0]))
        P, z, ok = scaled(S, gaps, mode, temperature)
        if not ok:
            refused += 1
            continue
        accepted += 1
        P_ref, z_ref = forward_backward(S, gaps, mode, temperature, method="log")
        np.testing.assert_allclose(P, P_ref, rtol=0, atol=1e-6)
        assert z == pytest.approx(z_ref, rel=1e-9, abs=1e-9)
    assert accepted >= 10 and refused >= 5


@pytest.mark.parametrize("mode", MODES)
def test_log_partition_scaled_equals_log(mode: str) -> None:
    rng = np.random.default_rng([29, MODES.index(mode)])
    S = rng.normal(0.0, 2.0, (33, 21)).astype(np.float32)
    gaps = random_gaps(rng, 33, 21)
    ref = log_partition(S, gaps, mode, 0.7, method="log")
    assert log_partition(S, gaps, mode, 0.7) == pytest.approx(ref, rel=1e-12)
    assert log_partition(S, gaps, mode, 0.7) == pytest.approx(scaled(S, gaps, mode, 0.7)[1])


def test_unknown_method_is_rejected() -> None:
    S = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="posterior method"):
        posterior_matrix(S, GapCosts.uniform(2, 3), method="float16")


@pytest.mark.parametrize("inv_t", [1.0, 1 / 0.37, 0.5])
def test_vectorised_exp_matches_libm(inv_t: float) -> None:
    from homalign.dp.vexp import exp_scaled

    rng = np.random.default_rng(31)
    S = np.concatenate([
        rng.normal(0.0, 3.0, 5000), rng.uniform(-800.0, 800.0, 5000),
        [0.0, -0.0, -np.inf, -708.0, -708.5, -745.0, -746.0, -740.0, 709.0, 709.5, 710.0, 1e-30],
    ]).astype(np.float32).reshape(-1, 1)
    got = exp_scaled(S, inv_t, np.empty(S.shape), np.empty(S.size + 7))
    with np.errstate(over="ignore", under="ignore"):
        want = np.exp(S.astype(np.float64) * inv_t)
    normal = (want > 2.3e-308) & np.isfinite(want)
    np.testing.assert_allclose(got[normal], want[normal], rtol=5e-16, atol=0)
    np.testing.assert_array_equal(got[~normal], want[~normal])  # 0, subnormals, inf: libm's


def test_vectorised_exp_rejects_bad_buffers() -> None:
    from homalign.dp.vexp import exp_scaled

    S = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match="out"):
        exp_scaled(S, 1.0, np.empty((3, 4), np.float32), np.empty(12))
    with pytest.raises(ValueError, match="scratch"):
        exp_scaled(S, 1.0, np.empty((3, 4)), np.empty(11))
