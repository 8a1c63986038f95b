"""Local log-partition (forward score) of one query against many targets, in parallel.

The same three-state model and alignment set as :func:`homalign.dp.posterior.log_partition` in
local mode at temperature 1, for the gap structure of the learned aligner: position-specific
costs on the query's residues against gaps (``q_ins_*``) and on the target's residues against
gaps (``t_del_*``), the other four vectors zero. Each target ``k`` is a column block
``X[:, start[k]:start[k] + length[k]]`` of one packed matrix; the *match weight* of a cell is
``exp(S[i, j]) = X[i, j] R[i, c_j]``, a context term times a residue table ``R`` looked up by
the target residue code ``c_j`` (the caller computes ``X`` for all candidates with one matrix
product and one vectorised ``exp``), so this kernel only runs the recurrences, in probability space with one scale factor per row:

    m[i, j] = X[i-1, j-1] R[i-1, c_j] (1 + m[i-1, j-1] + x[i-1, j-1] + y[i-1, j-1])
    x[i, j] = a_i (m[i-1, j] + y[i-1, j]) + b_i x[i-1, j]          (query residue vs gap)
    y[i, j] = c_j (m[i, j-1] + x[i, j-1]) + d_j y[i, j-1]          (target residue vs gap)
    Z = 1 + sum_{i, j} m[i, j]

with ``a_i = exp(-(q_open_i + q_ext_i))``, ``b_i = exp(-q_ext_i)``, ``c_j = exp(-(t_open_j +
t_ext_j))``, ``d_j = exp(-t_ext_j)``; the ``1`` is the begin weight (and the empty alignment).
Each row is rescaled by a power of two near its largest entry (exact: the scale is an integer
exponent, the partial sums of ``Z`` are kept in float64 relative to it), so neither overflow nor
underflow can occur for finite inputs.

Layout (inter-sequence, SWIPE-style): targets are sorted by length and taken ``LANES`` (16) at a
time; the group runs as one DP whose cells are vectors of 16 lanes, one target per lane, shorter
targets padded with zero weights (a padded cell adds exactly 0 to every sum and maximum). All the
per-cell state of a column lives in one buffer at fixed offsets (``_Q*``), so LLVM proves the
lane loop free of aliasing and turns it into whole-vector (AVX-512 / AVX2) arithmetic, ``y``'s
recurrence along the row included (each lane carries its own). Each row's match weights are
moved into the lanes by :func:`homalign.dp.simd.pack_lanes16` (16 x 16 transposes in registers
and a vector table lookup of ``R``: explicit LLVM vector code). The arithmetic of a lane is the
same IEEE operations whatever the other lanes hold (no fast-math), so a target's score does not
depend on its group, on the batch or on the thread count. ``_forward_many_scalar`` (one target
at a time, three row passes) is the reference the tests compare with; both are checked against
the float64 log-space reference and the brute-force enumeration.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from homalign.dp.simd import TABLE, pack_lanes16


@njit(cache=True, nogil=True, fastmath=True)
def _forward_one(X, start, lt, qa, qb, tc, td, codes, R):  # noqa: ANN001, ANN201
    lq = X.shape[0]
    f0 = np.float32(0.0)
    mp = np.zeros(lt + 1, dtype=np.float32)
    xp = np.zeros(lt + 1, dtype=np.float32)
    yp = np.zeros(lt + 1, dtype=np.float32)
    m = np.zeros(lt + 1, dtype=np.float32)
    x = np.zeros(lt + 1, dtype=np.float32)
    y = np.zeros(lt + 1, dtype=np.float32)
    c = tc[start:start + lt]
    d = td[start:start + lt]
    cj = codes[start:start + lt]
    log_scale = 0.0  # log of the factor that turns the previous row's values into true weights
    log_z = 0.0  # log(1): the empty alignment
    for i in range(lq):
        begin = np.float32(math.exp(-log_scale)) if log_scale < 80.0 else f0
        a = qa[i]
        b = qb[i]
        row = X[i, start:start + lt]
        r = R[i]
        for j in range(1, lt + 1):
            m[j] = row[j - 1] * r[cj[j - 1]] * (begin + mp[j - 1] + xp[j - 1] + yp[j - 1])
            x[j] = a * (mp[j] + yp[j]) + b * xp[j]
        yv = f0
        for j in range(1, lt + 1):
            yv = c[j - 1] * (m[j - 1] + x[j - 1]) + d[j - 1] * yv
            y[j] = yv
        total = f0
        top = f0
        for j in range(1, lt + 1):
            total += m[j]
            top = max(top, max(m[j], max(x[j], y[j])))
        if total > f0:
            v = log_scale + math.log(total)
            hi = max(v, log_z)
            log_z = hi + math.log(math.exp(v - hi) + math.exp(log_z - hi))
        if top > f0:
            inv = np.float32(1.0) / top
            for j in range(1, lt + 1):
                m[j] *= inv
                x[j] *= inv
                y[j] *= inv
            log_scale += math.log(top)
        mp, m = m, mp
        xp, x = x, xp
        yp, y = y, yp
    return log_z


@njit(cache=True, parallel=True)
def _forward_many_scalar(X, starts, lengths, qa, qb, tc, td, codes, R):  # noqa: ANN001, ANN201
    out = np.empty(len(starts))
    for k in prange(len(starts)):
        out[k] = _forward_one(X, starts[k], lengths[k], qa, qb, tc, td, codes, R)
    return out


LANES = 16  # targets per group (one vector of float32 lanes)
# slots of a column block of the group buffer, LANES floats each
_QW, _QC, _QD, _QM, _QX, _QY, _QO, _QS, _QT, _QI, _QB = (k * LANES for k in range(11))
_QL = 11 * LANES
# W: match weight; C, D: the target's gap factors c_j, d_j; M, X, Y: the states (row i-1 until
# overwritten by row i); O: row i-1's m + x + y of this column (the next column's diagonal);
# S, T: running sum of m and running max of m, x, y along the row; I, B: the lane's rescaling
# factor and begin weight, copied along the row


@njit(cache=True, nogil=True, error_model="numpy")
def _forward_group(X, gstarts, glens, qa, qb, tc, td, codes, R, out):  # noqa: ANN001, ANN201
    """log Z of the (up to) LANES targets ``gstarts[u]:gstarts[u] + glens[u]`` into ``out``."""
    lq = X.shape[0]
    T = 0
    for u in range(LANES):
        T = max(T, glens[u])
    f0 = np.float32(0.0)
    tp = (T + LANES - 1) // LANES * LANES  # columns packed 16 at a time
    S = np.zeros((tp + 1) * _QL, dtype=np.float32)
    gcode = np.zeros(tp * LANES, dtype=np.int32)  # residue code of each (j, lane)
    pad = R.shape[1] - 1  # a zero column of R
    for u in range(LANES):
        s = gstarts[u]
        n = glens[u]
        for j in range(tp):
            if j < n:
                gcode[j * LANES + u] = codes[s + j]
                S[j * _QL + (_QL + _QC) + u] = tc[s + j]
                S[j * _QL + (_QL + _QD) + u] = td[s + j]
            else:
                gcode[j * LANES + u] = pad
    for u in range(LANES):
        S[_QI + u] = 1.0
        S[_QB + u] = 1.0
    E = np.zeros(LANES, dtype=np.int64)  # the row's scale is 2**E (E >= 0)
    acc = np.ones(LANES, dtype=np.float64)  # Z so far / 2**E (the 1: the empty alignment)
    for i in range(lq):
        a = qa[i]
        b = qb[i]
        xr = X[i]
        r = R[i]
        for j0 in range(0, T, LANES):  # W = X * R[code] of 16 columns: transpose + lookup
            pack_lanes16(S, j0 * _QL + (_QL + _QW), _QL, xr, gstarts, glens, j0, r, gcode,
                         j0 * LANES, f0)
        for jj in range(T):
            pb = jj * _QL  # column jj (done for row i), base: column jj + 1
            base = pb + _QL
            for u in range(LANES):
                inv = S[pb + _QI + u]
                beg = S[pb + _QB + u]
                S[base + _QI + u] = inv
                S[base + _QB + u] = beg
                mo = S[base + _QM + u]
                xo = S[base + _QX + u]
                yo = S[base + _QY + u]
                diag = S[pb + _QO + u]
                S[base + _QO + u] = mo + xo + yo
                mn = S[base + _QW + u] * (beg + inv * diag)
                xn = inv * (a * (mo + yo) + b * xo)
                yn = (S[base + _QC + u] * (S[pb + _QM + u] + S[pb + _QX + u])
                      + S[base + _QD + u] * S[pb + _QY + u])
                S[base + _QM + u] = mn
                S[base + _QX + u] = xn
                S[base + _QY + u] = yn
                S[base + _QS + u] = S[pb + _QS + u] + mn
                t = S[pb + _QT + u]
                t = mn if mn > t else t
                t = xn if xn > t else t
                t = yn if yn > t else t
                S[base + _QT + u] = t
        last = T * _QL
        for u in range(LANES):
            top = S[last + _QT + u]
            kk = 0
            if top > f0:
                kk = math.frexp(top)[1]  # top * 2**-kk in [0.5, 1)
                if E[u] + kk < 0:
                    kk = -E[u]  # never scale up past 1: the begin weight stays <= 1
            acc[u] = math.ldexp(acc[u] + S[last + _QS + u], -kk)
            E[u] += kk
            S[_QI + u] = math.ldexp(1.0, -kk)
            S[_QB + u] = math.ldexp(1.0, -E[u])
    ln2 = math.log(2.0)
    for u in range(LANES):
        out[u] = math.log(acc[u]) + E[u] * ln2


@njit(cache=True, parallel=True)
def _forward_many(X, starts, lengths, qa, qb, tc, td, codes, R):  # noqa: ANN001, ANN201
    """All targets, LANES at a time in order of length, the groups in parallel. A group runs
    as long as its longest target, so the part-filled group is the shortest one."""
    nt = len(starts)
    order = np.argsort(lengths, kind="mergesort")
    ng = (nt + LANES - 1) // LANES
    skip = ng * LANES - nt  # empty lanes, all in group 0
    out = np.zeros(nt)
    for p0 in prange(ng):
        # shortest and longest groups alternate, so that each thread's contiguous share of the
        # range gets a mix (prange splits it statically)
        g = p0 // 2 if p0 % 2 == 0 else ng - 1 - p0 // 2
        gs = np.zeros(LANES, dtype=np.int64)
        gl = np.zeros(LANES, dtype=np.int64)
        for u in range(LANES):
            p = g * LANES + u - skip
            if p >= 0:
                gs[u] = starts[order[p]]
                gl[u] = lengths[order[p]]
        o = np.zeros(LANES)
        _forward_group(X, gs, gl, qa, qb, tc, td, codes, R, o)
        for u in range(LANES):
            p = g * LANES + u - skip
            if p >= 0:
                out[order[p]] = o[u]
    return out


def local_forward_batch(X: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                        q_open: np.ndarray, q_ext: np.ndarray, t_open: np.ndarray,
                        t_ext: np.ndarray, codes: np.ndarray | None = None,
                        R: np.ndarray | None = None, *, scalar: bool = False) -> np.ndarray:
    """float64 local log-partition of each target block of ``X`` (see the module docstring).

    With ``codes`` (N,) (residue codes of the packed targets) and ``R`` (Lq, K) the match weight
    of cell (i, j) is ``X[i, j] * R[i, codes[j]]``: a residue-pair table times a context term,
    so that ``X`` can be the exp of a plain matrix product.

    ``X`` float32 (Lq, N): match weights ``exp(S)`` of all targets side by side; target ``k`` is
    columns ``starts[k]:starts[k] + lengths[k]``. ``q_open``/``q_ext`` (Lq,) and
    ``t_open``/``t_ext`` (N,) are the gap costs (positive, subtracted; BLAST convention: a run
    of k residues costs ``open + k * extend``), ``t_*`` packed like the columns of ``X``.
    ``X`` must be finite and non-negative (not checked here: a pass over it costs as much as
    the DP's first pass). Targets run in parallel over numba's threads; the result does not
    depend on their number, nor on the other targets of the batch. ``scalar=True`` runs the
    one-target-at-a-time reference kernel instead of the 16-lane one (tests, benchmarks).
    """
    X = np.ascontiguousarray(X, dtype=np.float32)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    lq, n = X.shape
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if starts.shape != lengths.shape:
        raise ValueError("starts and lengths differ in shape")
    if len(starts) and (starts.min() < 0 or (starts + lengths).max() > n or lengths.min() < 0):
        raise ValueError("a target block lies outside X")
    vec = [np.ascontiguousarray(v, dtype=np.float64) for v in (q_open, q_ext, t_open, t_ext)]
    if vec[0].shape != (lq,) or vec[1].shape != (lq,):
        raise ValueError(f"query gap vectors must have length {lq}")
    if vec[2].shape != (n,) or vec[3].shape != (n,):
        raise ValueError(f"target gap vectors must have length {n}")
    if codes is None or R is None:
        codes = np.zeros(n, dtype=np.uint8)
        R = np.ones((lq, 1), dtype=np.float32)
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    R = np.ascontiguousarray(R, dtype=np.float32)
    if codes.shape != (n,) or R.ndim != 2 or R.shape[0] != lq or (
            n and int(codes.max()) >= R.shape[1]):
        raise ValueError("codes must have one entry per column of X, each a column of R")
    qa, qb, tc, td = (np.exp(-v).astype(np.float32) for v in (
        vec[0] + vec[1], vec[1], vec[2] + vec[3], vec[3]))
    if scalar or R.shape[1] >= TABLE:
        return _forward_many_scalar(X, starts, lengths, qa, qb, tc, td, codes, R)
    R0 = np.zeros((lq, TABLE), dtype=np.float32)  # the lookup table; zero columns for padding
    R0[:, :R.shape[1]] = R
    return _forward_many(X, starts, lengths, qa, qb, tc, td, codes, R0)


__all__ = ["local_forward_batch"]
