"""Traceback in less memory: checkpointed rows (:func:`align_checkpointed`).

:func:`homalign.dp.kernels.gotoh` keeps one uint8 code per cell, (Lq + 1) * (Lt + 1) bytes. For
long sequences :func:`align_checkpointed` keeps instead the row state (H, G, I and the codes of
the row: 13 bytes a column) every K rows, K ~ sqrt(13 * Lq), and during the traceback recomputes
the codes of one block of K rows at a time from its checkpoint: about 2 * sqrt(13 * Lq) * (Lt + 1)
bytes and one extra pass over the cells. The rows are recomputed by
:func:`homalign.dp.kernels.gotoh_rows`, which :func:`gotoh` itself runs from row 0, started at
a checkpoint instead, so every value and code, hence the path, is identical (tests check it).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from homalign.dp.kernels import gotoh_rows

__all__ = ["align_checkpointed", "block_rows"]


def block_rows(lq: int) -> int:
    """Rows between checkpoints: about sqrt(13 * Lq) (checkpoints and one block of codes then
    take about the same memory)."""
    return max(1, math.isqrt(13 * lq))


@njit(cache=True, nogil=True)
def _trace(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode, K, ck_h, ck_g, ck_e, ck_p,  # noqa: ANN001, ANN201, PLR0913
           end_i, end_j, end_state, ops):
    """:func:`homalign.dp.kernels.traceback`, its codes recomputed a block of K rows at a time
    from the checkpoints (the block of rows r0 .. r0 + K holds the current cell with
    r0 < i, or i = r0 = 0)."""
    lq, lt = S.shape
    blk = np.zeros((K + 1, lt + 1), np.uint8)
    r0 = -1
    i = end_i
    j = end_j
    state = end_state
    n = 0
    while state != 0:
        want = ((i - 1) // K) * K if i > 0 else 0
        if want != r0:
            r0 = want
            r1 = min(r0 + K, lq)
            c = r0 // K
            gotoh_rows(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode, r0, r1, ck_h[c].copy(),
                  ck_g[c].copy(), ck_e[c].copy(), ck_p[c], blk, 0, ck_h, ck_g, ck_e, ck_p)
        code = blk[i - r0, j]
        ops[n] = state
        n += 1
        if state == 1:
            i -= 1
            j -= 1
            state = blk[i - r0, j] & 3
        elif state == 2:
            i -= 1
            state = 2 if (code >> 6) & 1 else (blk[i - r0, j] >> 2) & 3
        else:
            j -= 1
            state = 3 if (code >> 7) & 1 else (blk[i - r0, j] >> 4) & 3
    for k in range(n // 2):
        ops[k], ops[n - 1 - k] = ops[n - 1 - k], ops[k]
    return n, i, j


def align_checkpointed(arr: np.ndarray, vecs, mode: int, K: int | None = None):  # noqa: ANN001, ANN201
    """``(score, ops, start_i, start_j)`` of :func:`homalign.dp.kernels.gotoh` + ``traceback``
    on the float32 matrix ``arr`` with the kernel vectors ``vecs``, in O(sqrt(Lq) * Lt)
    memory: checkpoints every ``K`` rows (default :func:`block_rows`)."""
    lq, lt = arr.shape
    K = block_rows(lq) if K is None else max(1, int(K))
    nck = lq // K + 1
    ck_h = np.empty((nck, lt + 1), np.float32)
    ck_g = np.empty((nck, lt + 1), np.float32)
    ck_e = np.empty((nck, lt + 1), np.float32)
    ck_p = np.zeros((nck, lt + 1), np.uint8)
    st = np.empty(lt + 1, np.float32)
    no_blk = np.zeros((1, 1), np.uint8)
    score, ei, ej, es = gotoh_rows(arr, *vecs, mode, 0, lq, st, st.copy(), st.copy(),
                              np.zeros(lt + 1, np.uint8), no_blk, K, ck_h, ck_g, ck_e, ck_p)
    ops = np.empty(lq + lt, np.uint8)
    n, si, sj = _trace(arr, *vecs, mode, K, ck_h, ck_g, ck_e, ck_p, ei, ej, es, ops)
    return float(score), ops[:n], si, sj
