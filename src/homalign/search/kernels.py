"""Compiled score-only Smith–Waterman of one query against many packed database sequences.

The search engine's fast path for substitution-matrix local alignment (method ``sw``): no
(Lq, Lt) score matrix or GapCosts object is built per target; a query profile (23, Lq) is looked
up while the DP runs over the packed database codes, in parallel over targets. Gap costs follow
BLAST's convention (a gap of length k costs ``open + k * extend``), the same recurrences as
:func:`homalign.dp.align_score` in local mode with uniform gaps, so the scores are identical
(tests check this).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from homalign.matrices import substitution_matrix


@njit(cache=True)
def _sw_one(prof: np.ndarray, t: np.ndarray, go: np.float32, ge: np.float32) -> np.float32:
    Lq = prof.shape[1]
    H = np.zeros(Lq + 1, dtype=np.float32)
    E = np.full(Lq + 1, np.float32(-1e30), dtype=np.float32)
    best = np.float32(0.0)
    zero = np.float32(0.0)
    neg = np.float32(-1e30)
    for j in range(len(t)):
        row = prof[t[j]]
        diag = zero  # H[i-1, j-1]
        F = neg
        hleft = zero  # H[i-1, j] (current column, previous i)
        for i in range(1, Lq + 1):
            # E: target residue j against a gap (moving along j), F: query residue against a gap
            e = max(H[i] - go, E[i] - ge)
            E[i] = e
            F = max(hleft - go, F - ge)
            h = diag + row[i - 1]
            if e > h:
                h = e
            if F > h:
                h = F
            if h < zero:
                h = zero
            diag = H[i]
            H[i] = h
            hleft = h
            if h > best:
                best = h
    return best


@njit(cache=True, parallel=True)
def _sw_many(prof: np.ndarray, codes: np.ndarray, offsets: np.ndarray, targets: np.ndarray,
             go: np.float32, ge: np.float32) -> np.ndarray:
    out = np.empty(len(targets), dtype=np.float32)
    for n in prange(len(targets)):
        t = targets[n]
        out[n] = _sw_one(prof, codes[offsets[t]:offsets[t + 1]], go, ge)
    return out


def query_profile(query_codes: np.ndarray, matrix: str = "BLOSUM62") -> np.ndarray:
    """float32 (23, Lq): row ``a`` holds the score of residue ``a`` against each query position."""
    M = substitution_matrix(matrix)
    return np.ascontiguousarray(M[:, query_codes], dtype=np.float32)


def sw_scores(query_codes: np.ndarray, codes: np.ndarray, offsets: np.ndarray,
              targets: np.ndarray, *, matrix: str = "BLOSUM62", gap_open: float = 11.0,
              gap_extend: float = 1.0) -> np.ndarray:
    """float32 local alignment scores of the query against ``targets`` (indices into offsets)."""
    prof = query_profile(np.asarray(query_codes), matrix)
    tg = np.ascontiguousarray(targets, dtype=np.int64)
    return _sw_many(prof, codes, offsets, tg, np.float32(gap_open + gap_extend),
                    np.float32(gap_extend))
