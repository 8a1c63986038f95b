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
Each row is rescaled by its largest entry and the logs of the factors are summed, so neither
overflow nor underflow can occur for finite inputs; ``y`` runs as a second, sequential pass over
the row and everything else vectorises. Tests check it against the float64 log-space reference.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


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
def _forward_many(X, starts, lengths, qa, qb, tc, td, codes, R):  # noqa: ANN001, ANN201
    out = np.empty(len(starts))
    for k in prange(len(starts)):
        out[k] = _forward_one(X, starts[k], lengths[k], qa, qb, tc, td, codes, R)
    return out


def local_forward_batch(X: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                        q_open: np.ndarray, q_ext: np.ndarray, t_open: np.ndarray,
                        t_ext: np.ndarray, codes: np.ndarray | None = None,
                        R: np.ndarray | None = None) -> np.ndarray:
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
    depend on their number.
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
    return _forward_many(X, starts, lengths, qa, qb, tc, td, codes, R)


__all__ = ["local_forward_batch"]
