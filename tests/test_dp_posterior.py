"""Posteriors (homalign.dp.posterior) against brute-force enumeration of all alignments."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from homalign.dp import GapCosts, align, align_score
from homalign.dp.posterior import forward_backward, log_partition, mac_align, posterior_matrix
from test_dp_bruteforce import brute_posterior, random_gap_vectors

MODES = ["local", "global", "glocal", "semiglobal"]


def tiny_problem(seed: int):
    rng = np.random.default_rng(seed)
    lq, lt = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    S = rng.normal(0.0, 1.5, size=(lq, lt)).astype(np.float32)
    vecs = random_gap_vectors(rng, lq, lt)
    return S, vecs, GapCosts(**vecs)


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), temperature=st.sampled_from([0.5, 1.0, 2.0]))
def test_posterior_equals_brute_force(mode, seed, temperature):
    S, vecs, gaps = tiny_problem(seed)
    P_ref, log_z_ref = brute_posterior(S, vecs, mode, temperature)
    P, log_z = forward_backward(S, gaps, mode=mode, temperature=temperature)
    assert P.dtype == np.float32 and P.shape == S.shape
    np.testing.assert_allclose(P, P_ref, rtol=1e-4, atol=1e-6)
    assert log_z == pytest.approx(log_z_ref, rel=1e-9, abs=1e-9)
    assert log_partition(S, gaps, mode, temperature) == pytest.approx(log_z)


@pytest.mark.parametrize("mode", MODES)
def test_posterior_is_a_probability(mode):
    rng = np.random.default_rng(3)
    S = rng.normal(0.0, 2.0, size=(40, 55)).astype(np.float32)
    P = posterior_matrix(S, GapCosts.uniform(40, 55, open=2.0, extend=0.5), mode=mode)
    assert np.all(P >= 0.0)
    assert np.all(P.sum(axis=1) <= 1.0 + 1e-5)
    assert np.all(P.sum(axis=0) <= 1.0 + 1e-5)
    assert P.max() > 0.05


@pytest.mark.parametrize("mode", MODES)
def test_low_temperature_recovers_viterbi(mode):
    rng = np.random.default_rng(11)
    S = rng.normal(0.0, 3.0, size=(25, 30)).astype(np.float32)
    gaps = GapCosts.uniform(25, 30, open=4.0, extend=1.0)
    best = align_score(S, gaps, mode)
    # T log Z = best + T log(#near-optimal alignments) >= best
    approx = 0.01 * log_partition(S, gaps, mode, temperature=0.01)
    assert best - 1e-4 <= approx <= best + 0.05
    # and the posterior concentrates on the optimal path
    res = align(S, gaps, mode)
    P = posterior_matrix(S, gaps, mode, temperature=0.01)
    if len(res.pairs):
        assert P[res.pairs[:, 0], res.pairs[:, 1]].min() > 0.9


def test_mac_align_on_diagonal():
    P = np.full((6, 8), 0.01, np.float32)
    for k in range(6):
        P[k, k + 1] = 0.9
    res = mac_align(P, threshold=0.3)
    assert res.pairs.tolist() == [[k, k + 1] for k in range(6)]
    assert res.cigar == "6M"
    assert res.score == pytest.approx(6 * 0.6, rel=1e-6)


def test_mac_align_skips_low_posteriors_and_bridges_gaps():
    P = np.zeros((5, 5), np.float32)
    P[0, 0] = P[1, 1] = 0.8
    P[3, 2] = P[4, 4] = 0.7  # free gaps between confident pairs
    P[2, 2] = 0.2  # below threshold: not aligned
    res = mac_align(P, threshold=0.3)
    assert res.pairs.tolist() == [[0, 0], [1, 1], [3, 2], [4, 4]]
    assert res.score == pytest.approx(0.5 + 0.5 + 0.4 + 0.4, rel=1e-6)


def _mac_reference(P: np.ndarray, threshold: float):
    """MAC as its definition: the Gotoh DP on P - threshold with zero gap costs."""
    arr = np.asarray(P, np.float32)
    return align(np.ascontiguousarray(arr - np.float32(threshold)), GapCosts.zeros(*arr.shape))


@pytest.mark.parametrize("seed", range(6))
def test_mac_align_equals_the_gotoh_dp_ties_included(seed):
    # local MAC visits only the cells above the threshold (and those within rounding of it):
    # the same score, pairs, CIGAR and spans as the full DP, on matrices built to tie (a few
    # repeated values, cells exactly at or within an ulp of the threshold, empty rows) and on
    # thresholds whose cells are too many for the sparse path
    rng = np.random.default_rng(seed)
    values = [np.float32([0, 0.3, 0.5, 0.8, 0.9]), np.float32([0, 0.6, 0.9]),
              np.float32([0, np.nextafter(np.float32(0.3), 1), 0.3, 0.9, 100.0])]
    for trial in range(600):
        lq, lt = (int(x) for x in rng.integers(1, 25, 2))
        if trial % 4 == 3:
            P = (rng.random((lq, lt)) ** 3).astype(np.float32)
        else:
            v = values[trial % 3]
            p = np.full(len(v), 0.4 / (len(v) - 1))
            p[0] = 0.6
            P = rng.choice(v, size=(lq, lt), p=p)
        threshold = float(rng.choice([0.3, 0.3, 0.05, 0.0, -0.1, 0.7]))
        got, want = mac_align(P, threshold), _mac_reference(P, threshold)
        assert (got.score, got.cigar, got.q_start, got.q_end, got.t_start, got.t_end) == (
            want.score, want.cigar, want.q_start, want.q_end, want.t_start, want.t_end), (P, threshold)
        np.testing.assert_array_equal(got.pairs, want.pairs)
        assert got.pairs.dtype == want.pairs.dtype


def test_mac_align_with_crowded_columns_runs_the_gotoh_dp():
    # more cells above the threshold in one column than the sparse walk takes (not a posterior
    # matrix: its columns sum past 1): the DP's result all the same
    P = np.zeros((60, 12), np.float32)
    P[:, 3] = P[:, 4] = 0.9
    P[10, 7] = P[50, 9] = 0.7
    got, want = mac_align(P), _mac_reference(P, 0.3)
    assert (got.score, got.cigar) == (want.score, want.cigar)
    np.testing.assert_array_equal(got.pairs, want.pairs)


def test_mac_align_ties_follow_the_traceback_order():
    # equal chains: the end is the first best cell in row-major order, a predecessor the one
    # the traceback's walk (up, then left) reaches first
    P = np.zeros((6, 6), np.float32)
    P[0, 1] = P[1, 0] = P[3, 3] = 0.9
    assert mac_align(P).pairs.tolist() == [[0, 1], [3, 3]]
    P = np.zeros((6, 6), np.float32)
    P[0, 1] = P[1, 1] = P[2, 2] = 0.9  # (1, 1) is the diagonal predecessor of (2, 2)
    assert mac_align(P).pairs.tolist() == [[1, 1], [2, 2]]
    P = np.zeros((6, 6), np.float32)
    P[0, 0] = P[3, 5] = 0.9
    assert mac_align(P).cigar == "1M4D2I1M"  # the target's residues against gaps first


def test_mac_align_rejects_what_is_not_finite_and_empty_matrices():
    P = np.full((3, 3), 0.5, np.float32)
    for bad in (np.nan, np.inf, -np.inf):
        Q = P.copy()
        Q[1, 2] = bad
        with pytest.raises(ValueError, match="finite"):
            mac_align(Q)
    with pytest.raises(ValueError, match="threshold"):
        mac_align(P, threshold=float("nan"))
    with pytest.raises(ValueError, match="non-empty"):
        mac_align(np.zeros((0, 4), np.float32))
    nothing = mac_align(np.full((3, 4), 0.2, np.float32))  # no pair above the threshold
    assert (nothing.score, nothing.cigar, nothing.pairs.shape) == (0.0, "", (0, 2))


def test_mac_align_on_real_posteriors_has_high_accuracy():
    # a target that is the query with two insertions; the posterior decoding recovers the pairs
    rng = np.random.default_rng(5)
    base = rng.normal(-1.0, 1.0, size=(30, 32)).astype(np.float32)
    truth = [(i, i + (i >= 10) + (i >= 20)) for i in range(30)]
    for i, j in truth:
        base[i, j] = 4.0
    P = posterior_matrix(base, GapCosts.uniform(30, 32, open=3.0, extend=1.0), "local")
    res = mac_align(P, threshold=0.3)
    assert set(map(tuple, res.pairs.tolist())) == set(truth)


def test_bad_temperature():
    S = np.zeros((2, 2), np.float32)
    with pytest.raises(ValueError, match="temperature"):
        posterior_matrix(S, GapCosts.uniform(2, 2), temperature=0.0)
    with pytest.raises(ValueError, match="2-D"):
        mac_align(np.zeros(3, np.float32))
