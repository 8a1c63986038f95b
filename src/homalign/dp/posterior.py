"""Pair posteriors over all alignments (forward-backward) and maximum-accuracy decoding.

The model is the same three-state Gotoh model and the same set of alignments as
:func:`homalign.dp.align` (see :mod:`homalign.dp.modes`): each alignment ``a`` gets weight
``exp(score(a) / T)``, so ``log_partition`` is ``log sum_a exp(score(a) / T)`` (``T *
log_partition`` tends to the optimal score as T -> 0) and ``P[i, j]`` is the total weight of the
alignments that pair query i with target j divided by the partition function. In local mode the
empty alignment (weight 1) is one of the alignments.

Computed in float64 log space with compiled (numba) forward and backward passes; memory is one
float64 (Lq + 1, Lt + 1) matrix plus the float32 result.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from homalign.dp.gaps import GapCosts
from homalign.dp.modes import GLOBAL, GLOCAL, LOCAL, SEMIGLOBAL, mode_code
from homalign.dp.pairwise import align, check_scores
from homalign.dp.result import DPResult

__all__ = ["forward_backward", "log_partition", "mac_align", "posterior_matrix"]

NEG = -np.inf


@njit(cache=True, nogil=True, inline="always")
def _lse2(a: float, b: float) -> float:
    """log(exp(a) + exp(b))."""
    if a < b:
        a, b = b, a
    if b == NEG:
        return a
    return a + math.log1p(math.exp(b - a))


@njit(cache=True, nogil=True, inline="always")
def _lse3(a: float, b: float, c: float) -> float:
    """log(exp(a) + exp(b) + exp(c))."""
    m = max(a, b, c)
    if m == NEG:
        return NEG
    return m + math.log(math.exp(a - m) + math.exp(b - m) + math.exp(c - m))


@njit(cache=True, nogil=True, inline="always")
def _begin(mode: int, i: int, j: int) -> float:
    """log weight of the begin state at (i, j) for gap transitions (0 at start cells)."""
    if mode == GLOBAL:
        return 0.0 if (i == 0 and j == 0) else NEG
    if mode == GLOCAL:
        return 0.0 if i == 0 else NEG
    if mode == SEMIGLOBAL:
        return 0.0 if (i == 0 or j == 0) else NEG
    return NEG


@njit(cache=True, nogil=True, inline="always")
def _is_end(mode: int, i: int, j: int, lq: int, lt: int) -> bool:
    if mode == GLOBAL:
        return i == lq and j == lt
    if mode == GLOCAL:
        return i == lq
    if mode == SEMIGLOBAL:
        return i == lq or j == lt
    return True


@njit(cache=True, nogil=True)
def _forward(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode, fm):  # noqa: ANN001, ANN201
    """Forward pass; fills fm (float64 (Lq+1, Lt+1)) with log F_M and returns log Z."""
    lq, lt = S.shape
    local = mode == LOCAL
    ip = np.full(lt + 1, NEG)
    dp = np.full(lt + 1, NEG)
    ic = np.full(lt + 1, NEG)
    dc = np.full(lt + 1, NEG)
    log_z = 0.0 if local else NEG
    fm[0, :] = NEG
    for j in range(1, lt + 1):
        go = tdo[j - 1] + qdo[0]
        ge = tde[j - 1] + qde[0]
        dp[j] = _lse2(_begin(mode, 0, j - 1) - go, dp[j - 1] - ge)
    if not local:
        for j in range(lt + 1):
            if _is_end(mode, 0, j, lq, lt):
                log_z = _lse3(log_z, _begin(mode, 0, j), dp[j])
    for i in range(1, lq + 1):
        a_go = qio[i - 1]
        a_ge = qie[i - 1]
        r_go = qdo[i]
        r_ge = qde[i]
        fm[i, 0] = NEG
        dc[0] = NEG
        ic[0] = _lse2(_lse3(_begin(mode, i - 1, 0), fm[i - 1, 0], dp[0]) - (a_go + tio[0]),
                      ip[0] - (a_ge + tie[0]))
        for j in range(1, lt + 1):
            bm = 0.0 if local else _begin(mode, i - 1, j - 1)
            m = S[i - 1, j - 1] + _lse2(_lse2(bm, fm[i - 1, j - 1]), _lse2(ip[j - 1], dp[j - 1]))
            fm[i, j] = m
            ic[j] = _lse2(_lse3(_begin(mode, i - 1, j), fm[i - 1, j], dp[j]) - (a_go + tio[j]),
                          ip[j] - (a_ge + tie[j]))
            dc[j] = _lse2(_lse3(_begin(mode, i, j - 1), fm[i, j - 1], ic[j - 1])
                          - (tdo[j - 1] + r_go), dc[j - 1] - (tde[j - 1] + r_ge))
            if local:
                log_z = _lse2(log_z, m)
        if not local:
            for j in range(lt + 1):
                if _is_end(mode, i, j, lq, lt):
                    log_z = _lse2(_lse3(log_z, _begin(mode, i, j), fm[i, j]),
                                  _lse2(ic[j], dc[j]))
        ip, ic = ic, ip
        dp, dc = dc, dp
    return log_z


@njit(cache=True, nogil=True)
def _backward(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode, fm, log_z, post):  # noqa: ANN001
    """Backward pass; writes P[i, j] = exp(F_M + B_M - log Z) into post (float32 (Lq, Lt))."""
    lq, lt = S.shape
    local = mode == LOCAL
    bm_n = np.full(lt + 2, NEG)  # row i + 1
    bi_n = np.full(lt + 2, NEG)
    bm_c = np.full(lt + 2, NEG)  # row i
    bi_c = np.full(lt + 2, NEG)
    bd_c = np.full(lt + 2, NEG)
    for i in range(lq, -1, -1):
        bd_c[lt + 1] = NEG
        for j in range(lt, -1, -1):
            to_m = S[i, j] + bm_n[j + 1] if (i < lq and j < lt) else NEG
            if i < lq:
                i_open = bi_n[j] - (qio[i] + tio[j])
                i_ext = bi_n[j] - (qie[i] + tie[j])
            else:
                i_open = NEG
                i_ext = NEG
            if j < lt:
                d_open = bd_c[j + 1] - (tdo[j] + qdo[i])
                d_ext = bd_c[j + 1] - (tde[j] + qde[i])
            else:
                d_open = NEG
                d_ext = NEG
            end = 0.0 if (local or _is_end(mode, i, j, lq, lt)) else NEG
            end_gap = NEG if local else end
            bm = _lse2(_lse2(end, to_m), _lse2(i_open, d_open))
            bm_c[j] = bm
            bi_c[j] = _lse2(_lse2(end_gap, to_m), _lse2(i_ext, d_open))
            bd_c[j] = _lse2(_lse2(end_gap, to_m), _lse2(i_open, d_ext))
            if i >= 1 and j >= 1:
                post[i - 1, j - 1] = math.exp(fm[i, j] + bm - log_z)
        bm_n, bm_c = bm_c, bm_n
        bi_n, bi_c = bi_c, bi_n


def _prepared(
    S: np.ndarray, gaps: GapCosts, mode: str, temperature: float
) -> tuple[np.ndarray, tuple[np.ndarray, ...], int]:
    """Validated float64 scores and kernel cost vectors, divided by the temperature."""
    code = mode_code(mode)
    arr = check_scores(S, gaps)
    t = float(temperature)
    if not (math.isfinite(t) and t > 0.0):
        raise ValueError(f"temperature must be a positive finite number, got {temperature!r}")
    scores = arr.astype(np.float64) / t
    g = {name: getattr(gaps, name).astype(np.float64) for name in (
        "q_ins_open", "q_ins_ext", "t_ins_open", "t_ins_ext",
        "t_del_open", "t_del_ext", "q_del_open", "q_del_ext")}
    vecs = tuple(v / t for v in (
        g["q_ins_open"] + g["q_ins_ext"], g["q_ins_ext"], g["t_ins_open"] + g["t_ins_ext"],
        g["t_ins_ext"], g["t_del_open"] + g["t_del_ext"], g["t_del_ext"],
        g["q_del_open"] + g["q_del_ext"], g["q_del_ext"]))
    return scores, vecs, code


def forward_backward(
    S: np.ndarray, gaps: GapCosts, mode: str = "local", temperature: float = 1.0
) -> tuple[np.ndarray, float]:
    """``(P, log Z)``: pair posteriors (float32 (Lq, Lt)) and the log partition function."""
    scores, vecs, code = _prepared(S, gaps, mode, temperature)
    lq, lt = scores.shape
    fm = np.empty((lq + 1, lt + 1), dtype=np.float64)
    log_z = _forward(scores, *vecs, code, fm)
    post = np.empty((lq, lt), dtype=np.float32)
    _backward(scores, *vecs, code, fm, log_z, post)
    return post, float(log_z)


def posterior_matrix(
    S: np.ndarray, gaps: GapCosts, mode: str = "local", temperature: float = 1.0
) -> np.ndarray:
    """P[i, j] = posterior probability that query i and target j are aligned (float32)."""
    return forward_backward(S, gaps, mode, temperature)[0]


def log_partition(
    S: np.ndarray, gaps: GapCosts, mode: str = "local", temperature: float = 1.0
) -> float:
    """``log sum over alignments of exp(score / T)`` (forward pass only)."""
    scores, vecs, code = _prepared(S, gaps, mode, temperature)
    lq, lt = scores.shape
    fm = np.empty((lq + 1, lt + 1), dtype=np.float64)
    return float(_forward(scores, *vecs, code, fm))


def mac_align(P: np.ndarray, threshold: float = 0.3, mode: str = "local") -> DPResult:
    """Maximum-accuracy alignment (HHsearch's MAC): maximise ``sum (P[i, j] - threshold)`` over
    the aligned pairs, gaps free. ``score`` is that sum; ties follow :func:`align`'s rules."""
    arr = np.asarray(P, dtype=np.float32)
    if arr.ndim != 2:
        raise ValueError(f"posterior matrix must be 2-D, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("posterior matrix must be finite")
    shifted = np.ascontiguousarray(arr - np.float32(threshold))
    return align(shifted, GapCosts.zeros(*arr.shape), mode=mode)
