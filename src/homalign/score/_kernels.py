"""Compiled kernels for the profile column scores.

COMPASS's float64 products (inner dimension 20) and PROF_SIM's fused entropies (no
temporaries); the HHsearch column sums are a float32 BLAS product
(:func:`homalign.score.profile_scores.hhsearch_scores`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, fastmath=True)
def abt(A, B):  # noqa: ANN001, ANN201 - compiled
    """float64 ``A @ B.T`` for (n, k) and (m, k) float64 C-contiguous arrays."""
    n, k = A.shape
    m = B.shape[0]
    out = np.empty((n, m), dtype=np.float64)
    for i in range(n):
        for j in range(m):
            s = 0.0
            for a in range(k):
                s += A[i, a] * B[j, a]
            out[i, j] = s
    return out


@njit(cache=True, fastmath=True)
def _xlog2x(x):  # noqa: ANN001, ANN201
    return x * math.log2(x) if x > 0.0 else 0.0


@njit(cache=True, fastmath=True)
def prof_sim(P, Q, bg):  # noqa: ANN001, ANN201 - compiled
    """float32 (n, m) PROF_SIM similarity ``(1 - JS(p, q)) (1 + JS(r, bg)) / 2`` in bits."""
    n, k = P.shape
    m = Q.shape[0]
    hp = np.zeros(n)
    hq = np.zeros(m)
    for i in range(n):
        for a in range(k):
            hp[i] -= _xlog2x(P[i, a])
    for j in range(m):
        for a in range(k):
            hq[j] -= _xlog2x(Q[j, a])
    hbg = 0.0
    for a in range(k):
        hbg -= _xlog2x(bg[a])
    out = np.empty((n, m), dtype=np.float32)
    for i in range(n):
        for j in range(m):
            hr = 0.0
            hr0 = 0.0
            for a in range(k):
                r = 0.5 * (P[i, a] + Q[j, a])
                hr -= _xlog2x(r)
                hr0 -= _xlog2x(0.5 * (r + bg[a]))
            d_pq = hr - 0.5 * (hp[i] + hq[j])
            d_r0 = hr0 - 0.5 * (hr + hbg)
            out[i, j] = 0.5 * (1.0 - d_pq) * (1.0 + d_r0)
    return out
