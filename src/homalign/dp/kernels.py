"""Compiled three-state Gotoh kernels (numba) for the exact DP of :mod:`homalign.dp`.

States: M (pair), I (query residue vs gap), D (target residue vs gap), plus the begin state B,
worth 0 at the start cells of the mode (see :mod:`homalign.dp.modes`). All scores are float32
and accumulated in float32; integer-valued inputs (BLOSUM, integer gap costs) are exact.

Recurrences, for prefix cell (i, j), costs from :meth:`GapCosts.kernel_vectors`::

    M(i,j) = S[i-1,j-1] + max(BM(i-1,j-1), M, I, D at (i-1,j-1))
    I(i,j) = max(max(BG, M, D at (i-1,j)) - (qio[i-1] + tio[j]), I(i-1,j) - (qie[i-1] + tie[j]))
    D(i,j) = max(max(BG, M, I at (i,j-1)) - (tdo[j-1] + qdo[i]), D(i,j-1) - (tde[j-1] + qde[i]))

BM = BG = B for global/glocal/semiglobal; in local mode BM = 0 everywhere and BG = -inf (local
alignments begin with a pair). Traceback ties prefer, in this order: B (start here), M, I, D;
the end cell is the first best cell in row-major order (states compared B, M, I, D; in local
mode only M cells count and the empty alignment wins ties at 0).

Traceback code per cell (uint8): bits 0-1 the first argmax of (BM, M, I, D) - the predecessor
of an M in the next diagonal cell; bits 2-3 the first argmax of (BG, M, D) - where an I run
below opens from; bits 4-5 the first argmax of (BG, M, I) - where a D run to the right opens
from; bit 6 set if I extends, bit 7 if D extends (0 = B, 1 = M, 2 = I, 3 = D). A tie between
extending I and opening from the state of bits 2-3 goes to the earlier of the two in the order
B, M, I, D (ties among the open sources are decided on their values before the shared open cost
is subtracted).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from homalign.dp.modes import GLOBAL, GLOCAL, LOCAL, SEMIGLOBAL

NEG = np.float32(-np.inf)
ZERO = np.float32(0.0)
U0 = np.uint8(0)
U1 = np.uint8(1)
U2 = np.uint8(2)
U3 = np.uint8(3)


@njit(cache=True, nogil=True, inline="always")
def cell_max(a: np.float32, b: np.float32) -> np.float32:
    """max(a, b) as a compare-and-select (compiles to maxss/maxps; inputs are never NaN)."""
    return a if a > b else b


@njit(cache=True, nogil=True, inline="always")
def begin_cell(mode: int, i: int, j: int) -> np.float32:
    """Value of the begin state B at prefix cell (i, j) for gap transitions (BG)."""
    if mode == GLOBAL:
        return ZERO if (i == 0 and j == 0) else NEG
    if mode == GLOCAL:
        return ZERO if i == 0 else NEG
    if mode == SEMIGLOBAL:
        return ZERO if (i == 0 or j == 0) else NEG
    return NEG


@njit(cache=True, nogil=True, inline="always")
def is_end_cell(mode: int, i: int, j: int, lq: int, lt: int) -> bool:
    """Whether (i, j) is an end cell of a non-local mode."""
    if mode == GLOBAL:
        return i == lq and j == lt
    if mode == GLOCAL:
        return i == lq
    return i == lq or j == lt


@njit(cache=True, nogil=True)
def gotoh_rows(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode, i0, i1, h, g, e, prev_in, blk,  # noqa: ANN001, ANN201, PLR0913, PLR0915
          ck_every, ck_h, ck_g, ck_e, ck_p):
    """Rows i0 + 1 .. i1 of :func:`gotoh` (row 0 too when ``i0 == 0``) from the state of row
    i0: ``h``, ``g``, ``e`` (updated in place) and its codes ``prev_in``. The codes of rows
    i0 .. i1 go to rows 0 .. i1 - i0 of ``blk`` when it has that many rows and Lt + 1 columns
    (else none are kept); with
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
    keep = blk.shape[0] > i1 - i0 and blk.shape[1] == lt + 1
    if keep:
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
        if keep:
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


@njit(cache=True, nogil=True)
def gotoh(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode, dirs):  # noqa: ANN001, ANN201
    """General-cost Gotoh; fills ``dirs`` (uint8 (Lq+1, Lt+1), the cell codes described in the
    module docstring) if it has that shape, else computes the score only.

    Values are kept as running rows of M, I, D and the three maxima H = max(BM, M, I, D),
    G = max(BG, M, D), T = max(BG, M, I) (each with its first argmax); every row is done in
    short vectorisable passes except the D recurrence. Valid for any finite costs.
    Returns ``(score, end_i, end_j, end_state)`` with end_state 0 = B (empty path), 1..3 = M/I/D.
    """
    lq, lt = S.shape
    none = np.zeros((0, 0), np.float32)
    return gotoh_rows(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode, 0, lq,
                      np.empty(lt + 1, np.float32), np.empty(lt + 1, np.float32),
                      np.empty(lt + 1, np.float32), np.zeros(lt + 1, np.uint8), dirs, 0, none,
                      none, none, np.zeros((0, 0), np.uint8))


@njit(cache=True, nogil=True)
def traceback(dirs, end_i, end_j, end_state, ops):  # noqa: ANN001, ANN201
    """Walk the cell codes of :func:`gotoh` back from the end cell; write column codes (1 M,
    2 I, 3 D) to ``ops`` in forward order. Returns ``(n_ops, start_i, start_j)``."""
    i = end_i
    j = end_j
    state = end_state
    n = 0
    while state != 0:
        code = dirs[i, j]
        ops[n] = state
        n += 1
        if state == 1:
            i -= 1
            j -= 1
            state = dirs[i, j] & 3
        elif state == 2:
            i -= 1
            state = 2 if (code >> 6) & 1 else (dirs[i, j] >> 2) & 3
        else:
            j -= 1
            state = 3 if (code >> 7) & 1 else (dirs[i, j] >> 4) & 3
    for k in range(n // 2):
        ops[k], ops[n - 1 - k] = ops[n - 1 - k], ops[k]
    return n, i, j


@njit(cache=True, nogil=True, inline="always")
def _pass1(row, h, e, t, go_i, ge_i, z, b0):  # noqa: ANN001
    """Row i, vectorisable part: e <- I(i, .), t <- max(M, I, B)(i, .) from h = H(i-1, .)."""
    lt = t.shape[0] - 1
    e0 = cell_max(h[0] - go_i, e[0] - ge_i)
    t[0] = cell_max(b0, e0)
    for k in range(lt):
        m = cell_max(h[k], z) + row[k]
        ej = cell_max(h[k + 1] - go_i, e[k + 1] - ge_i)
        e[k + 1] = ej
        t[k + 1] = cell_max(m, ej)
    e[0] = e0


@njit(cache=True, nogil=True, inline="always")
def _pass2(h, t, go_d, ge_d):  # noqa: ANN001
    """Row i, sequential part: h <- H(i, .) = max(t, D) along the row; returns max H(i, .)."""
    lt = t.shape[0] - 1
    h[0] = t[0]
    d = NEG
    tprev = t[0]
    rb = t[0]
    for k in range(lt):
        d = cell_max(tprev - go_d, d - ge_d)
        tj = t[k + 1]
        hk = cell_max(tj, d)
        h[k + 1] = hk
        rb = cell_max(rb, hk)
        tprev = tj
    return rb


@njit(cache=True, nogil=True, inline="always")
def _pass2_pair(row2, h, e, t, go_i, ge_i, go_d, ge_d, z, b0):  # noqa: ANN001
    """Finish row i (D chain over ``t``) while computing row i + 1 one column behind it.

    The two D recurrences are independent, so the CPU overlaps their latency chains. On return
    ``h`` holds H(i + 1, .) and ``e`` I(i + 1, .); returns (H(i, Lt), max_j H(i, j)).
    """
    lt = t.shape[0] - 1
    hi0 = t[0]
    e20 = cell_max(hi0 - go_i, e[0] - ge_i)
    e[0] = e20
    t2prev = cell_max(b0, e20)
    h[0] = t2prev
    d2 = NEG
    # row i, column 1
    t1prev = t[1]
    d1 = hi0 - go_d
    h1 = cell_max(t1prev, d1)
    hd2 = hi0
    hu2 = h1
    rb = cell_max(hi0, h1)
    # iteration k: row i at column k + 2, row i + 1 at column k + 1
    for k in range(lt - 1):
        d1 = cell_max(t1prev - go_d, d1 - ge_d)
        tj = t[k + 2]
        h1 = cell_max(tj, d1)
        rb = cell_max(rb, h1)
        t1prev = tj
        m2 = cell_max(hd2, z) + row2[k]
        e2 = cell_max(hu2 - go_i, e[k + 1] - ge_i)
        e[k + 1] = e2
        tt = cell_max(m2, e2)
        d2 = cell_max(t2prev - go_d, d2 - ge_d)
        h[k + 1] = cell_max(tt, d2)
        t2prev = tt
        hd2 = hu2
        hu2 = h1
    # row i + 1, column lt
    m2 = cell_max(hd2, z) + row2[lt - 1]
    e2 = cell_max(hu2 - go_i, e[lt] - ge_i)
    e[lt] = e2
    tt = cell_max(m2, e2)
    d2 = cell_max(t2prev - go_d, d2 - ge_d)
    h[lt] = cell_max(tt, d2)
    return hu2, rb


@njit(cache=True, nogil=True, inline="always")
def _row0(h, e, go_d, ge_d, mode):  # noqa: ANN001
    """H(0, .) = max(B, D) along row 0; I(0, .) = -inf."""
    lt = h.shape[0] - 1
    h[0] = begin_cell(mode, 0, 0)
    e[0] = NEG
    d = NEG
    for j in range(1, lt + 1):
        d = cell_max(h[j - 1] - go_d, d - ge_d)
        h[j] = cell_max(begin_cell(mode, 0, j), d)
        e[j] = NEG


@njit(cache=True, nogil=True, inline="always")
def _row_end(best, h, i, lq, mode):  # noqa: ANN001
    """Fold the end cells of row i (H values in ``h``) into ``best`` (non-local modes)."""
    lt = h.shape[0] - 1
    if mode == SEMIGLOBAL and i < lq:
        return cell_max(best, h[lt])
    if (mode == GLOCAL or mode == SEMIGLOBAL) and i == lq:
        for j in range(lt + 1):
            best = cell_max(best, h[j])
        return best
    if mode == GLOBAL and i == lq:
        return h[lt]
    return best


@njit(cache=True, nogil=True)
def score_constant(S, go_i, ge_i, go_d, ge_d, mode):  # noqa: ANN001, ANN201
    """Score-only Gotoh for position-independent costs with go >= ge >= 0, linear memory.

    H = max over M, I, D and B: opening from H equals opening from M/D because go >= ge, and
    float subtraction is monotone, so every cell value is bit-identical to :func:`gotoh`'s; in
    local mode max H = max M because gap costs are >= 0. Rows go in pairs: a vectorisable pass
    computes M and I of row i, then one loop runs row i's sequential D recurrence and all of
    row i + 1 one column behind, so the CPU overlaps the two latency chains.
    """
    lq, lt = S.shape
    local = mode == LOCAL
    z = ZERO if local else NEG
    h = np.empty(lt + 1, np.float32)
    e = np.empty(lt + 1, np.float32)
    t = np.empty(lt + 1, np.float32)
    best = ZERO if local else NEG
    _row0(h, e, go_d, ge_d, mode)
    if mode == SEMIGLOBAL:
        best = cell_max(best, h[lt])
    i = 1
    while i <= lq:
        _pass1(S[i - 1], h, e, t, go_i, ge_i, z, begin_cell(mode, i, 0))
        if i < lq:
            h_i_end, h_i_max = _pass2_pair(
                S[i], h, e, t, go_i, ge_i, go_d, ge_d, z, begin_cell(mode, i + 1, 0)
            )
            if local:
                best = cell_max(best, h_i_max)
                for j in range(lt + 1):  # row i + 1 (vectorised max over the stored row)
                    best = cell_max(best, h[j])
            elif mode == SEMIGLOBAL:
                best = cell_max(best, h_i_end)
            i += 1
        else:
            row_max = _pass2(h, t, go_d, ge_d)
            if local:
                best = cell_max(best, row_max)
        if not local:
            best = _row_end(best, h, i, lq, mode)
        i += 1
    return best


@njit(cache=True, nogil=True, inline="always")
def _pass2_offset(h, t, u, jge, go_d):  # noqa: ANN001
    """Row i, D and H via a running maximum: D(j) + j*ge = max_{k <= j} (t[k-1] - go + k*ge).

    Exact only when every value involved is an integer below 2**24 in magnitude (see
    :func:`score_integral`); the only sequential operation left is one max per cell.
    """
    lt = t.shape[0] - 1
    h[0] = t[0]
    for k in range(lt):
        u[k + 1] = (t[k] - go_d) + jge[k + 1]
    run = NEG
    rb = t[0]
    for k in range(lt):
        run = cell_max(run, u[k + 1])
        hk = cell_max(t[k + 1], run - jge[k + 1])
        h[k + 1] = hk
        rb = cell_max(rb, hk)
    return rb


@njit(cache=True, nogil=True)
def score_integral(S, go_i, ge_i, go_d, ge_d, mode):  # noqa: ANN001, ANN201
    """Score-only Gotoh for integer-valued scores and constant integer costs (go >= ge >= 0).

    Returns ``(score, ok)``; ``ok`` is False (and the score meaningless) as soon as a row with a
    fractional entry is met. Callers guarantee integer costs and a bound on |S| such that every
    partial score is an integer of magnitude < 2**24, so float32
    arithmetic is exact, any summation order gives the same number, and the result equals
    :func:`gotoh`'s bit for bit. That lets the D recurrence become a running maximum of
    offset values (one max per cell on the critical path instead of a subtract and a max).
    """
    lq, lt = S.shape
    local = mode == LOCAL
    z = ZERO if local else NEG
    h = np.empty(lt + 1, np.float32)
    e = np.empty(lt + 1, np.float32)
    t = np.empty(lt + 1, np.float32)
    u = np.empty(lt + 1, np.float32)
    jge = np.arange(lt + 1).astype(np.float32) * ge_d
    best = ZERO if local else NEG
    _row0(h, e, go_d, ge_d, mode)
    if mode == SEMIGLOBAL:
        best = cell_max(best, h[lt])
    for i in range(1, lq + 1):
        row = S[i - 1]
        n_frac = 0
        for k in range(lt):
            n_frac += np.floor(row[k]) != row[k]
        if n_frac:
            return best, False
        _pass1(row, h, e, t, go_i, ge_i, z, begin_cell(mode, i, 0))
        row_max = _pass2_offset(h, t, u, jge, go_d)
        if local:
            best = cell_max(best, row_max)
        else:
            best = _row_end(best, h, i, lq, mode)
    return best, True


@njit(cache=True, nogil=True)
def score_general(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode):  # noqa: ANN001, ANN201
    """Score-only Gotoh for position-specific costs whose eight vectors are all >= 0.

    Then every open cost is >= the matching extend cost and every gap cost >= 0, so (as in
    :func:`score_constant`) two running rows H = max(M, I, D, B) and I suffice, local mode's
    best M is the best H, and all values are bit-identical to :func:`gotoh`'s. Per row: a
    vectorisable pass for M and I, then the sequential D recurrence.
    """
    lq, lt = S.shape
    local = mode == LOCAL
    z = ZERO if local else NEG
    h = np.empty(lt + 1, np.float32)
    e = np.empty(lt + 1, np.float32)
    t = np.empty(lt + 1, np.float32)
    best = ZERO if local else NEG
    # row 0: H = max(B, D)
    h[0] = begin_cell(mode, 0, 0)
    e[0] = NEG
    d = NEG
    r_go = qdo[0]
    r_ge = qde[0]
    for j in range(1, lt + 1):
        d = cell_max(h[j - 1] - (tdo[j - 1] + r_go), d - (tde[j - 1] + r_ge))
        h[j] = cell_max(begin_cell(mode, 0, j), d)
        e[j] = NEG
    if mode == SEMIGLOBAL:
        best = cell_max(best, h[lt])
    for i in range(1, lq + 1):
        row = S[i - 1]
        a_go = qio[i - 1]
        a_ge = qie[i - 1]
        e0 = cell_max(h[0] - (a_go + tio[0]), e[0] - (a_ge + tie[0]))
        t[0] = cell_max(begin_cell(mode, i, 0), e0)
        for k in range(lt):
            m = cell_max(h[k], z) + row[k]
            ej = cell_max(h[k + 1] - (a_go + tio[k + 1]), e[k + 1] - (a_ge + tie[k + 1]))
            e[k + 1] = ej
            t[k + 1] = cell_max(m, ej)
        e[0] = e0
        r_go = qdo[i]
        r_ge = qde[i]
        h[0] = t[0]
        d = NEG
        tprev = t[0]
        rb = t[0]
        for k in range(lt):
            d = cell_max(tprev - (tdo[k] + r_go), d - (tde[k] + r_ge))
            tj = t[k + 1]
            hk = cell_max(tj, d)
            h[k + 1] = hk
            rb = cell_max(rb, hk)
            tprev = tj
        if local:
            best = cell_max(best, rb)
        else:
            best = _row_end(best, h, i, lq, mode)
    return best
