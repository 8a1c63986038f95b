"""score.bilinear: the learned ranking's A E^T and its exp, batch-independent and accurate."""

from __future__ import annotations

import numpy as np
import pytest

from homalign.score.bilinear import EXP_MAX, EXP_MIN, bilinear_exp, exp_inplace


def test_exp_is_within_one_and_a_half_ulp_of_the_exact_value() -> None:
    x = np.concatenate([np.linspace(EXP_MIN, EXP_MAX, 400_003),
                        np.random.default_rng(0).normal(0, 5, 100_000),
                        [0.0, -0.0, 1.0, -1.0, 1e-30, 60.0]]).astype(np.float32)
    got = exp_inplace(x.copy())
    ref = np.exp(x.astype(np.float64))
    ulp = np.spacing(ref.astype(np.float32)).astype(np.float64)
    assert (np.abs(got - ref) / ulp).max() < 1.5
    assert got[-6] == 1.0 and got[-5] == 1.0


def test_exp_clamps_out_of_range_inputs_and_keeps_nan() -> None:
    x = np.array([-1e4, -200.0, 200.0, 1e30, np.nan, -np.inf, np.inf], np.float32)
    got = exp_inplace(x.copy())
    lo, hi = np.exp(np.float32(EXP_MIN)), np.exp(np.float64(EXP_MAX))
    assert np.allclose(got[[0, 1, 5]], lo, rtol=1e-6)
    assert np.allclose(got[[2, 3, 6]], hi, rtol=1e-6)
    assert np.isnan(got[4])


@pytest.mark.parametrize("n", [1, 15, 16, 17, 33, 1000])
def test_exp_of_every_length_equals_the_values_one_at_a_time(n: int) -> None:
    x = np.random.default_rng(n).normal(0, 3, n).astype(np.float32)
    whole = exp_inplace(x.copy())
    for k in range(n):
        assert exp_inplace(x[k:k + 1].copy())[0] == whole[k]


def test_bilinear_exp_of_a_target_does_not_depend_on_the_batch() -> None:
    """A target's columns are the same bits alone as in any batch, at any offset."""
    rng = np.random.default_rng(3)
    lq, d = 37, 32
    A = rng.normal(0, 0.4, (lq, d)).astype(np.float32)
    lens = rng.integers(1, 90, 40)
    E = rng.normal(0, 0.5, (int(lens.sum()), d)).astype(np.float32)
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    ref = A.astype(np.float64) @ E.T.astype(np.float64)
    for exp in (False, True):
        whole = bilinear_exp(A, E, exp=exp)
        want = np.exp(ref) if exp else ref
        assert np.allclose(whole, want, rtol=2e-6, atol=1e-6)
        for k in (0, 7, 39):
            s, n = starts[k], lens[k]
            alone = bilinear_exp(A, E[s:s + n], exp=exp)
            assert np.array_equal(alone, whole[:, s:s + n])
            pair = bilinear_exp(A, np.concatenate([E[:5], E[s:s + n]]), exp=exp)
            assert np.array_equal(pair[:, 5:], whole[:, s:s + n])
            rows = bilinear_exp(A[3:], E[s:s + n], exp=exp)  # other row tiles: the same bits
            assert np.array_equal(rows, whole[3:, s:s + n])


def test_the_fused_exp_equals_the_exp_of_the_product() -> None:
    rng = np.random.default_rng(4)
    A = rng.normal(0, 1, (9, 32)).astype(np.float32)
    E = rng.normal(0, 1, (77, 32)).astype(np.float32)
    assert np.array_equal(exp_inplace(bilinear_exp(A, E, exp=False)), bilinear_exp(A, E))


def test_bilinear_exp_checks_its_shapes() -> None:
    z = np.zeros
    with pytest.raises(ValueError, match="must agree"):
        bilinear_exp(z((3, 4), np.float32), z((5, 3), np.float32))
    assert bilinear_exp(z((0, 4), np.float32), z((5, 4), np.float32)).shape == (0, 5)
    assert bilinear_exp(z((2, 4), np.float32), z((0, 4), np.float32)).shape == (2, 0)
    assert (bilinear_exp(z((2, 0), np.float32), z((3, 0), np.float32)) == 1.0).all()
