"""Pair posteriors over all alignments (forward-backward) and maximum-accuracy decoding.

The model is the same three-state Gotoh model and the same set of alignments as
:func:`homalign.dp.align` (see :mod:`homalign.dp.modes`): each alignment ``a`` gets weight
``exp(score(a) / T)``, so ``log_partition`` is ``log sum_a exp(score(a) / T)`` (``T *
log_partition`` tends to the optimal score as T -> 0) and ``P[i, j]`` is the total weight of the
alignments that pair query i with target j divided by the partition function. In local mode the
empty alignment (weight 1) is one of the alignments.

Two compiled (numba) implementations of the same recurrences, chosen by ``method``:

* ``"scaled"`` (default): probability space with per-row scaling
  (:mod:`homalign.dp.posterior_scaled`), about ten times faster. It proves its own accuracy: an
  a-posteriori bound on underflow losses must be below 1e-10, otherwise (extreme scores or
  temperatures) the call silently runs the log-space reference instead.
* ``"log"``: the float64 log-space reference (log-sum-exp per cell and state).

Memory is two float64 (Lq + 1, Lt + 1) matrices (scaled; one for ``log``) plus the float32 result.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from homalign.dp.gaps import GapCosts
from homalign.dp.modes import GLOBAL, GLOCAL, LOCAL, SEMIGLOBAL, mode_code
from homalign.dp.pairwise import align, check_scores
from homalign.dp.posterior_scaled import scaled_forward_backward
from homalign.dp.result import OP_D, OP_I, OP_M, DPResult, from_ops

__all__ = ["METHODS", "forward_backward", "log_partition", "mac_align", "posterior_matrix"]

METHODS = ("scaled", "log")
"""Implementations of the forward-backward (same results; ``scaled`` is faster)."""

NEG = -np.inf


@njit(cache=True, nogil=True, inline="always")
def _lse4(a: float, b: float, c: float, d: float) -> float:
    """log(exp(a) + exp(b) + exp(c) + exp(d)); -inf terms cost nothing, the largest term no exp.

    ``m + log1p(sum of exp(x - m) over the other terms)``, so a state with few reachable
    predecessors (the common case at borders and for the begin/end terms) is cheap.
    """
    m = max(max(a, b), max(c, d))
    if m == NEG:
        return NEG
    rest = -1.0  # the first term equal to m contributes exp(0) = 1, counted here
    for x in (a, b, c, d):
        if x == m:
            rest += 1.0
        elif x > NEG:
            rest += math.exp(x - m)
    return m + math.log1p(rest)


@njit(cache=True, nogil=True)
def _begin_rows(mode: int, lq: int, lt: int) -> tuple[np.ndarray, np.ndarray]:
    """log weights of the begin state B for gap transitions: row 0 (length Lt + 1) and column 0
    (length Lq + 1); B is -inf everywhere else (and everywhere in local mode)."""
    row0 = np.full(lt + 1, NEG)
    col0 = np.full(lq + 1, NEG)
    if mode == GLOBAL:
        row0[0] = 0.0
        col0[0] = 0.0
    elif mode == GLOCAL:
        row0[:] = 0.0
        col0[0] = 0.0
    elif mode == SEMIGLOBAL:
        row0[:] = 0.0
        col0[:] = 0.0
    return row0, col0


@njit(cache=True, nogil=True)
def _end_rows(mode: int, lq: int, lt: int) -> tuple[np.ndarray, np.ndarray]:
    """log weights (0 or -inf) of ending in any state at row Lq (by column) and at column Lt
    (by row), for the non-local modes."""
    last_row = np.full(lt + 1, NEG)
    last_col = np.full(lq + 1, NEG)
    if mode == GLOBAL:
        last_row[lt] = 0.0
        last_col[lq] = 0.0
    elif mode == GLOCAL:
        last_row[:] = 0.0
        last_col[lq] = 0.0
    elif mode == SEMIGLOBAL:
        last_row[:] = 0.0
        last_col[:] = 0.0
    return last_row, last_col


@njit(cache=True, nogil=True)
def _forward(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode, fm):  # noqa: ANN001, ANN201
    """Forward pass; fills fm (float64 (Lq+1, Lt+1)) with log F_M and returns log Z."""
    lq, lt = S.shape
    local = mode == LOCAL
    b_row0, b_col0 = _begin_rows(mode, lq, lt)
    e_row, e_col = _end_rows(mode, lq, lt)
    ip = np.full(lt + 1, NEG)
    dp = np.full(lt + 1, NEG)
    ic = np.full(lt + 1, NEG)
    dc = np.full(lt + 1, NEG)
    bp = b_row0.copy()  # B of the previous row
    log_z = 0.0 if local else NEG  # local: the empty alignment
    fm[0, :] = NEG
    for j in range(1, lt + 1):
        dp[j] = _lse4(bp[j - 1] - (tdo[j - 1] + qdo[0]), dp[j - 1] - (tde[j - 1] + qde[0]),
                      NEG, NEG)
    if not local and lq == 0:
        for j in range(lt + 1):
            if e_row[j] == 0.0:
                log_z = _lse4(log_z, bp[j], dp[j], NEG)
    elif mode == SEMIGLOBAL:
        log_z = _lse4(log_z, bp[lt], dp[lt], NEG)
    for i in range(1, lq + 1):
        a_go = qio[i - 1]
        a_ge = qie[i - 1]
        r_go = qdo[i]
        r_ge = qde[i]
        b0 = b_col0[i]
        fm[i, 0] = NEG
        dc[0] = NEG
        go = a_go + tio[0]
        ic[0] = _lse4(bp[0] - go, fm[i - 1, 0] - go, dp[0] - go, ip[0] - (a_ge + tie[0]))
        ml = NEG
        il = ic[0]
        dl = NEG
        bl = b0
        for j in range(1, lt + 1):
            bm = 0.0 if local else bp[j - 1]
            m = S[i - 1, j - 1] + _lse4(bm, fm[i - 1, j - 1], ip[j - 1], dp[j - 1])
            go = a_go + tio[j]
            iv = _lse4(bp[j] - go, fm[i - 1, j] - go, dp[j] - go, ip[j] - (a_ge + tie[j]))
            go = tdo[j - 1] + r_go
            dv = _lse4(bl - go, ml - go, il - go, dl - (tde[j - 1] + r_ge))
            fm[i, j] = m
            ic[j] = iv
            dc[j] = dv
            ml = m
            il = iv
            dl = dv
            bl = NEG
        if local:
            for j in range(1, lt + 1):
                log_z = _lse4(log_z, fm[i, j], NEG, NEG)
        else:
            if e_col[i] == 0.0 and i < lq:  # last column (semiglobal)
                log_z = _lse4(log_z, fm[i, lt], ic[lt], dc[lt])
            if i == lq:
                for j in range(lt + 1):
                    if e_row[j] == 0.0:
                        bj = b0 if j == 0 else NEG
                        log_z = _lse4(log_z, _lse4(bj, fm[i, j], ic[j], dc[j]), NEG, NEG)
        ip, ic = ic, ip
        dp, dc = dc, dp
        bp[:] = NEG
        bp[0] = b0
    return log_z


@njit(cache=True, nogil=True)
def _backward(  # noqa: ANN202
    S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode, fm, log_z, post  # noqa: ANN001
):
    """Backward pass; writes P[i, j] = exp(F_M + B_M - log Z) into post (float32 (Lq, Lt))."""
    lq, lt = S.shape
    local = mode == LOCAL
    e_row, e_col = _end_rows(mode, lq, lt)
    bm_n = np.full(lt + 2, NEG)  # row i + 1
    bi_n = np.full(lt + 2, NEG)
    bm_c = np.full(lt + 2, NEG)  # row i
    bi_c = np.full(lt + 2, NEG)
    for i in range(lq, -1, -1):
        bdl = NEG  # B_D at (i, j + 1)
        for j in range(lt, -1, -1):
            to_m = S[i, j] + bm_n[j + 1] if (i < lq and j < lt) else NEG
            if i < lq:
                i_open = bi_n[j] - (qio[i] + tio[j])
                i_ext = bi_n[j] - (qie[i] + tie[j])
            else:
                i_open = NEG
                i_ext = NEG
            if j < lt:
                d_open = bdl - (tdo[j] + qdo[i])
                d_ext = bdl - (tde[j] + qde[i])
            else:
                d_open = NEG
                d_ext = NEG
            if local:
                end = 0.0
                end_gap = NEG
            else:
                end = 0.0 if (i == lq and e_row[j] == 0.0) or (j == lt and e_col[i] == 0.0) else NEG
                end_gap = end
            bm = _lse4(end, to_m, i_open, d_open)
            bm_c[j] = bm
            bi_c[j] = _lse4(end_gap, to_m, i_ext, d_open)
            bdl = _lse4(end_gap, to_m, i_open, d_ext)
            if i >= 1 and j >= 1:
                post[i - 1, j - 1] = math.exp(fm[i, j] + bm - log_z)
        bm_n, bm_c = bm_c, bm_n
        bi_n, bi_c = bi_c, bi_n


def _prepared(
    S: np.ndarray, gaps: GapCosts, mode: str, temperature: float, method: str
) -> tuple[np.ndarray, tuple[np.ndarray, ...], int, float]:
    """Validated float32 scores, float64 kernel cost vectors divided by the temperature, the mode
    code and the temperature."""
    if method not in METHODS:
        raise ValueError(f"unknown posterior method {method!r}; expected one of {list(METHODS)}")
    code = mode_code(mode)
    arr = check_scores(S, gaps)
    t = float(temperature)
    if not (math.isfinite(t) and t > 0.0):
        raise ValueError(f"temperature must be a positive finite number, got {temperature!r}")
    g = {name: getattr(gaps, name).astype(np.float64) for name in (
        "q_ins_open", "q_ins_ext", "t_ins_open", "t_ins_ext",
        "t_del_open", "t_del_ext", "q_del_open", "q_del_ext")}
    vecs = tuple(v / t for v in (
        g["q_ins_open"] + g["q_ins_ext"], g["q_ins_ext"], g["t_ins_open"] + g["t_ins_ext"],
        g["t_ins_ext"], g["t_del_open"] + g["t_del_ext"], g["t_del_ext"],
        g["q_del_open"] + g["q_del_ext"], g["q_del_ext"]))
    return arr, vecs, code, t


def _log_forward_backward(
    arr: np.ndarray, vecs: tuple[np.ndarray, ...], code: int, t: float, want_post: bool
) -> tuple[np.ndarray | None, float]:
    """The log-space reference: ``(P or None, log Z)``."""
    scores = arr.astype(np.float64) / t
    lq, lt = scores.shape
    fm = np.empty((lq + 1, lt + 1), dtype=np.float64)
    log_z = _forward(scores, *vecs, code, fm)
    if not want_post:
        return None, float(log_z)
    post = np.empty((lq, lt), dtype=np.float32)
    _backward(scores, *vecs, code, fm, log_z, post)
    return post, float(log_z)


def _run(
    S: np.ndarray, gaps: GapCosts, mode: str, temperature: float, method: str, want_post: bool
) -> tuple[np.ndarray | None, float]:
    arr, vecs, code, t = _prepared(S, gaps, mode, temperature, method)
    if method == "scaled":
        post, log_z, ok = scaled_forward_backward(arr, vecs, code, t, want_post)
        if ok:
            return post, log_z
    return _log_forward_backward(arr, vecs, code, t, want_post)


def forward_backward(
    S: np.ndarray, gaps: GapCosts, mode: str = "local", temperature: float = 1.0,
    method: str = "scaled",
) -> tuple[np.ndarray, float]:
    """``(P, log Z)``: pair posteriors (float32 (Lq, Lt)) and the log partition function."""
    post, log_z = _run(S, gaps, mode, temperature, method, True)
    assert post is not None
    return post, log_z


def posterior_matrix(
    S: np.ndarray, gaps: GapCosts, mode: str = "local", temperature: float = 1.0,
    method: str = "scaled",
) -> np.ndarray:
    """P[i, j] = posterior probability that query i and target j are aligned (float32)."""
    return forward_backward(S, gaps, mode, temperature, method)[0]


def log_partition(
    S: np.ndarray, gaps: GapCosts, mode: str = "local", temperature: float = 1.0,
    method: str = "scaled",
) -> float:
    """``log sum over alignments of exp(score / T)`` (``scaled`` runs both passes: the backward
    one proves the forward one exact; ``log`` runs the forward pass only)."""
    return _run(S, gaps, mode, temperature, method, False)[1]


def mac_align(P: np.ndarray, threshold: float = 0.3, mode: str = "local") -> DPResult:
    """Maximum-accuracy alignment (HHsearch's MAC): maximise ``sum (P[i, j] - threshold)`` over
    the aligned pairs, gaps free. ``score`` is that sum; ties follow :func:`align`'s rules.

    In local mode (the default) an optimal path with free gaps is a chain of cells with
    ``P - threshold > 0``, each below and right of the one before, and a posterior matrix has
    fewer than ``1 / threshold`` of them a row; :func:`_mac_local` visits only those (and the
    ones within float32 rounding of 0) and returns what :func:`align` returns on
    ``P - threshold`` with zero gap costs: the same float32 sums, end cell and ties. A matrix
    with many such cells (a threshold near 0, or more than :data:`MAC_COLUMN_CELLS` in one
    column) runs that Gotoh DP."""
    arr = np.asarray(P, dtype=np.float32)
    if arr.ndim != 2:
        raise ValueError(f"posterior matrix must be 2-D, got shape {arr.shape}")
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be finite, got {threshold!r}")
    cut = np.float32(threshold)
    top, bottom = (float(arr.max()), float(arr.min())) if arr.size else (0.0, 0.0)
    if not (math.isfinite(top) and math.isfinite(bottom)):  # NaN propagates through both
        raise ValueError("posterior matrix must be finite")
    if mode_code(mode) == LOCAL and arr.size:
        # a chain's sum stays below min(Lq, Lt) * max(w): a cell whose w is below minus twice
        # that bound's float32 spacing can neither join a best path nor tie one
        _, e2 = math.frexp(max(top - float(cut), 1.0) * min(arr.shape))
        low = -(2.0 ** (e2 - 23))
        # every cell with w > low has P > cut + 2 low (exact), so P > loose
        loose = np.nextafter(np.float32(float(cut) + 2.0 * low), np.float32(-np.inf))
        found = _mac_local(np.ascontiguousarray(arr), cut, np.float32(low), loose,
                           4 * (arr.shape[0] + arr.shape[1]))
        if found[0]:
            return from_ops(found[1], found[2], found[3], found[4], "local")
    return align(np.ascontiguousarray(arr - cut), GapCosts.zeros(*arr.shape), mode=mode)


#: local MAC runs the Gotoh DP instead when a column holds more cells above the threshold (a
#: posterior column sums to at most 1; the sparse walk scans a column's cells per cell)
MAC_COLUMN_CELLS = 32


@njit(cache=True, nogil=True)
def _mac_tree_better(v, r, c, v2, r2, c2):  # noqa: ANN001, ANN202
    """Whether (value, row, column) ``v, r, c`` comes before ``v2, r2, c2``: the higher value,
    then the smaller row, then the larger column."""
    return v > v2 or (v == v2 and (r < r2 or (r == r2 and c > c2)))


@njit(cache=True, nogil=True)
def _mac_insert_best(tree, start, stop, val, ci, cj):  # noqa: ANN001, ANN202
    """Cells ``start .. stop - 1`` into ``_mac_local``'s Fenwick tree of prefix best cells."""
    for e in range(start, stop):
        x = cj[e] + 1
        while x < len(tree):
            t = tree[x]
            if t < 0 or _mac_tree_better(val[e], ci[e], cj[e], val[t], ci[t], cj[t]):
                tree[x] = e
            x += x & (-x)


@njit(cache=True, nogil=True)
def _mac_local(P, cut, low, loose, limit):  # noqa: ANN001, ANN202, PLR0912, PLR0915
    """The local MAC path over ``P`` (float32, C-contiguous, finite): ``(ok, score, column
    codes, q_start, t_start)`` (:func:`homalign.dp.result.from_ops`); not ok (nothing
    computed) if more than ``limit`` cells need a visit, or more than :data:`MAC_COLUMN_CELLS`
    in one column. ``loose``: a value below every ``P`` whose ``w`` is above ``low``.

    The Gotoh DP with zero gap costs gives cell (i, j) the value ``max(0, v) + w``, ``w = P[i,
    j] - cut`` and ``v`` the best value in rows < i and columns < j (0 if none), and ends at the
    first best cell in row-major order. A chain's sum stays below ``min(Lq, Lt) * max(w)``, so
    a cell with ``w`` below minus twice that bound's float32 spacing is never on a path nor
    ties one (``v + w < v``); only the others are visited, row by row. ``v`` comes from a
    Fenwick tree of prefix maxima over the columns (rows < i). Among the cells holding ``v``,
    the traceback, which prefers M, then I (up), then D (left), takes (i - 1, j - 1); else, if
    a row < i - 1 holds one, the bottom one in column j - 1 (the largest row), or failing that the
    rightmost one of the smallest such row (a second tree over rows < i - 1, in the order of
    :func:`_mac_tree_better`); else the rightmost one of row i - 1."""
    lq, lt = P.shape
    zero = np.float32(0.0)
    ci = np.empty(limit, np.int64)
    cj = np.empty(limit, np.int64)
    per_column = np.zeros(lt, np.int64)  # a column's list is walked: keep it short
    n = 0
    for i in range(lq):
        row = P[i]
        count = 0
        for j in range(lt):  # vectorised; most rows hold one or two such cells
            count += row[j] > loose
        for j in range(lt):
            if count == 0:
                break
            if row[j] > loose:
                count -= 1
                if row[j] - cut > low:
                    per_column[j] += 1
                    if n == limit or per_column[j] > MAC_COLUMN_CELLS:
                        return False, 0.0, np.zeros(0, np.uint8), 0, 0
                    ci[n] = i
                    cj[n] = j
                    n += 1
    val = np.empty(n, np.float32)
    pred = np.full(n, -1, np.int64)
    col_next = np.full(n, -1, np.int64)  # the cell above in the same column
    col_head = np.full(lt, -1, np.int64)  # the lowest cell of a column so far
    tree_v = np.full(lt + 1, zero)  # prefix maxima of values > 0, rows < i
    tree_b = np.full(lt + 1, -1, np.int64)  # prefix best cells, rows < i - 1
    best = -1
    prev0 = 0  # cells prev0 .. row0 - 1: the last row done (row i - 1 once checked below)
    row0 = 0
    while row0 < n:
        i = ci[row0]
        if prev0 < row0 and ci[prev0] != i - 1:  # row i - 1 holds no cell
            _mac_insert_best(tree_b, prev0, row0, val, ci, cj)
            prev0 = row0
        row1 = row0
        while row1 < n and ci[row1] == i:
            row1 += 1
        for k in range(row0, row1):
            j = cj[k]
            w = P[i, j] - cut
            v = zero
            x = j
            while x > 0:
                v = max(v, tree_v[x])
                x -= x & (-x)
            p = -1
            if v > zero:
                for e in range(prev0, row0):
                    if cj[e] == j - 1 and val[e] == v:
                        p = e
                if p < 0:
                    b = -1
                    x = j
                    while x > 0:
                        e = tree_b[x]
                        if e >= 0 and (b < 0 or _mac_tree_better(val[e], ci[e], cj[e],
                                                                 val[b], ci[b], cj[b])):
                            b = e
                        x -= x & (-x)
                    if b >= 0 and val[b] == v:
                        e = col_head[j - 1]
                        while e >= 0:
                            if ci[e] < i - 1 and val[e] == v:
                                p = e
                                break
                            e = col_next[e]
                        if p < 0:
                            p = b
                    else:
                        for e in range(prev0, row0):
                            if cj[e] < j and val[e] == v:
                                p = e
            if p >= 0:
                pred[k] = p
                val[k] = v + w
            else:
                val[k] = zero + w
            if val[k] > zero and (best < 0 or val[k] > val[best]):
                best = k
        _mac_insert_best(tree_b, prev0, row0, val, ci, cj)  # row i - 1: above the next row's
        for e in range(row0, row1):
            x = cj[e] + 1
            while x < len(tree_v):
                tree_v[x] = max(tree_v[x], val[e])
                x += x & (-x)
            col_next[e] = col_head[cj[e]]
            col_head[cj[e]] = e
        prev0 = row0
        row0 = row1
    if best < 0:
        return True, 0.0, np.zeros(0, np.uint8), 0, 0
    m = 0
    e = best
    while e >= 0:
        m += 1
        e = pred[e]
    chain = np.empty(m, np.int64)
    e = best
    for a in range(m - 1, -1, -1):
        chain[a] = e
        e = pred[e]
    first, last = chain[0], chain[m - 1]
    ops = np.empty(ci[last] - ci[first] + cj[last] - cj[first] + 1, np.uint8)
    o = 0
    for a in range(m):
        if a > 0:  # between two pairs: the target's residues against gaps, then the query's
            for _ in range(cj[chain[a]] - cj[chain[a - 1]] - 1):
                ops[o] = OP_D
                o += 1
            for _ in range(ci[chain[a]] - ci[chain[a - 1]] - 1):
                ops[o] = OP_I
                o += 1
        ops[o] = OP_M
        o += 1
    return True, float(val[best]), ops[:o], ci[first], cj[first]
