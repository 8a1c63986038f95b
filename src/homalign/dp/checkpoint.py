"""Traceback in less memory: checkpointed rows (:func:`align_checkpointed`).

:func:`homalign.dp.kernels.gotoh` keeps one uint8 code per cell, (Lq + 1) * (Lt + 1) bytes. For
long sequences :func:`align_checkpointed` keeps instead the row state (H, G, I and the codes of
the row: 13 bytes a column) every K rows, K ~ sqrt(13 * Lq), and during the traceback recomputes
the codes of one block of K rows at a time from its checkpoint: about 2 * sqrt(13 * Lq) * (Lt + 1)
bytes and one extra pass over the cells. :func:`_rows` is :func:`gotoh`'s code line for line,
started at a checkpoint instead of row 0, so every value and code, hence the path, is identical
(tests check it).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from homalign.dp.kernels import NEG, U0, U1, U2, U3, ZERO, begin_cell, cell_max, is_end_cell
from homalign.dp.modes import LOCAL, SEMIGLOBAL

__all__ = ["align_checkpointed", "block_rows"]


@njit(cache=True, nogil=True)
def _rows(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode, i0, i1, h, g, e, prev_in, blk,  # noqa: ANN001, ANN201, PLR0913, PLR0915
          ck_every, ck_h, ck_g, ck_e, ck_p):
    """Rows i0 + 1 .. i1 of :func:`homalign.dp.kernels.gotoh` (row 0 too when ``i0 == 0``)
    from the state of row i0: ``h``, ``g``, ``e`` (updated in place) and its codes ``prev_in``.
    The codes of rows i0 .. i1 go to ``blk`` (if it has more than one row); with
    ``ck_every`` > 0 the state after every row i with i % ck_every == 0 goes to row
    i // ck_every of ``ck_*``. Returns gotoh's ``(score, end_i, end_j, end_state)``, meaningful
    for a pass over all rows."""
    lq, lt = S.shape
    local = mode == LOCAL
    z = ZERO if local else NEG
    m = np.empty(lt + 1, np.float32)
    t = np.empty(lt + 1, np.float32)  # max(BG, M, I)
    d = np.empty(lt + 1, np.float32)
    ie = np.zeros(lt + 1, np.uint8)
    de = np.zeros(lt + 1, np.uint8)
    ts = np.zeros(lt + 1, np.uint8)
    gs = np.zeros(lt + 1, np.uint8)
    hs = np.zeros(lt + 1, np.uint8)
    code = np.zeros(lt + 1, np.uint8)
    t[:] = NEG
    d[:] = NEG
    prev = prev_in.copy()
    best = ZERO if local else NEG
    bi, bj, bs = 0, 0, 0 if local else -1
    if i0 == 0:
        # row 0: B and D only
        dv = NEG
        for j in range(lt + 1):
            b = begin_cell(mode, 0, j)
            if j > 0:
                xo = t[j - 1] - (tdo[j - 1] + qdo[0])
                xe = dv - (tde[j - 1] + qde[0])
                c = xe > xo
                dv = xe if c else xo
                de[j] = U1 if c else U0
            d[j] = dv
            m[j] = NEG
            e[j] = NEG
            t[j] = b
            bm = ZERO if local else b
            # g = max(BG, D), h = max(BM, D); ties prefer B
            cg = dv > b
            g[j] = dv if cg else b
            ch = dv > bm
            h[j] = dv if ch else bm
            prev[j] = (U3 if ch else U0) | ((U3 if cg else U0) << 2) | (de[j] << 7)
        if ck_every > 0:
            ck_h[0, :] = h
            ck_g[0, :] = g
            ck_e[0, :] = e
            ck_p[0, :] = prev
        if mode == SEMIGLOBAL:
            b = begin_cell(mode, 0, lt)
            if b > best:
                best, bi, bj, bs = b, 0, lt, 0
            if d[lt] > best:
                best, bi, bj, bs = d[lt], 0, lt, 3
    if blk.shape[0] > 1:
        blk[0, :] = prev
    for i in range(i0 + 1, i1 + 1):
        row = S[i - 1]
        a_go = qio[i - 1]
        a_ge = qie[i - 1]
        r_go = qdo[i]
        r_ge = qde[i]
        b0 = begin_cell(mode, i, 0)
        # pass 1a: M (h is the previous row here)
        for k in range(lt):
            m[k + 1] = h[k] + row[k]
        # pass 1b: I, from g (previous row) or extending e; a tie goes to the open unless the
        # open's state is D (order B, M, I, D)
        for k in range(lt + 1):
            xo = g[k] - (a_go + tio[k])
            xe = e[k] - (a_ge + tie[k])
            c = (xe > xo) | ((xe == xo) & ((prev[k] >> 2) & U3 == U3))
            e[k] = xe if c else xo
            ie[k] = U1 if c else U0
        # pass 1c: t = max(BG, M, I) (BG only in column 0)
        m[0] = NEG
        for k in range(lt + 1):
            mk = m[k]
            ek = e[k]
            c = ek > mk
            t[k] = ek if c else mk
            ts[k] = U2 if c else U1
        c = not (t[0] > b0)
        if c:
            t[0] = b0
            ts[0] = U0
        # pass 2 (sequential): D
        dv = NEG
        d[0] = NEG
        de[0] = U0
        for k in range(lt):
            xo = t[k] - (tdo[k] + r_go)
            xe = dv - (tde[k] + r_ge)
            c = xe > xo
            dv = xe if c else xo
            d[k + 1] = dv
            de[k + 1] = U1 if c else U0
        # pass 3: g = max(BG, M, D), h = max(BM, M, I, D) and the cell codes
        for k in range(lt + 1):
            mk = m[k]
            dk = d[k]
            c = dk > mk
            g[k] = dk if c else mk
            gs[k] = U3 if c else U1
        for k in range(lt + 1):
            v = z
            s = U0
            mk = m[k]
            c = mk > v
            v = mk if c else v
            s = U1 if c else s
            ek = e[k]
            c = ek > v
            v = ek if c else v
            s = U2 if c else s
            dk = d[k]
            c = dk > v
            v = dk if c else v
            s = U3 if c else s
            h[k] = v
            hs[k] = s
        # column 0 with its begin state
        if not (g[0] > b0):
            g[0] = b0
            gs[0] = U0
        bm0 = ZERO if local else b0
        if not (h[0] > bm0):
            h[0] = bm0
            hs[0] = U0
        for k in range(lt + 1):
            code[k] = hs[k] | (gs[k] << 2) | (ts[k] << 4) | (ie[k] << 6) | (de[k] << 7)
        if blk.shape[0] > 1:
            blk[i - i0, :] = code
        prev, code = code, prev
        if ck_every > 0 and i % ck_every == 0:
            c = i // ck_every
            ck_h[c, :] = h
            ck_g[c, :] = g
            ck_e[c, :] = e
            ck_p[c, :] = prev
        # end cells
        if local:
            rmax = NEG
            for k in range(1, lt + 1):
                rmax = cell_max(rmax, m[k])
            if rmax > best:
                for k in range(1, lt + 1):
                    if m[k] == rmax:
                        best, bi, bj, bs = rmax, i, k, 1
                        break
        else:
            if mode == SEMIGLOBAL and i < lq:
                lo = lt
            elif i == lq:
                lo = 0
            else:
                lo = lt + 1
            for j in range(lo, lt + 1):
                if not is_end_cell(mode, i, j, lq, lt):
                    continue
                b = b0 if j == 0 else NEG
                if b > best:
                    best, bi, bj, bs = b, i, j, 0
                if m[j] > best:
                    best, bi, bj, bs = m[j], i, j, 1
                if e[j] > best:
                    best, bi, bj, bs = e[j], i, j, 2
                if d[j] > best:
                    best, bi, bj, bs = d[j], i, j, 3
    return best, bi, bj, bs


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
            _rows(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode, r0, r1, ck_h[c].copy(),
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
    score, ei, ej, es = _rows(arr, *vecs, mode, 0, lq, st, st.copy(), st.copy(),
                              np.zeros(lt + 1, np.uint8), no_blk, K, ck_h, ck_g, ck_e, ck_p)
    ops = np.empty(lq + lt, np.uint8)
    n, si, sj = _trace(arr, *vecs, mode, K, ck_h, ck_g, ck_e, ck_p, ei, ej, es, ops)
    return float(score), ops[:n], si, sj
