"""Inter-sequence alignment with traceback: 16 pairs at a time, one per lane, every mode.

The pairs of a group run as one three-state Gotoh DP over the group's largest query and target
length, each cell a vector of ``LANES`` float32 values (one pair per lane), with the state of a
column at fixed offsets of one buffer (``_T*``) as in :mod:`homalign.dp.lanes`. Each row's
scores come from the pairs' score matrices (:func:`homalign.dp.lanes.pack_row`) or, for code
sequences and one plain matrix, are looked up in registers
(:func:`homalign.dp.simd.lookup_lanes16`); the row then runs as LLVM IR on ``<16 x float>``
(the ``_row_*`` intrinsics: the values one column hands the next stay in registers). Every lane
performs, cell by cell, the same float32 operations in the same order as
:func:`homalign.dp.kernels.gotoh` (position-specific costs, any finite values, all four modes)
and writes the same uint8 cell code (see the kernels module) into a lane-interleaved direction
matrix, ``dirs[(i * W + j) * LANES + u]``: one byte per cell, 16 lanes in one 16-byte line. A
pair's cells outside its own matrix never feed a cell inside it (paths only go down and right),
and its end cells are taken only inside it, in the same row-major order and state order as
``gotoh``, so score, end cell, codes and therefore the path the unchanged
:func:`homalign.dp.kernels.traceback` walk returns are identical to the per-pair kernel's.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from llvmlite import ir
from numba import get_num_threads, get_thread_id, njit, prange, types
from numba.extending import intrinsic

from homalign.dp.lanes import CODE_TABLE, pack_row
from homalign.dp.modes import GLOBAL, GLOCAL, LOCAL, SEMIGLOBAL
from homalign.dp.simd import (
    TABLE,
    array_data,
    column_loop,
    lookup_lanes16,
    prefetch,
    splat,
    vload,
    vstore,
)

__all__ = ["LANES", "MAX_GROUP_CELLS", "MIN_FILL", "trace_lanes"]

LANES = 16
NEG = np.float32(-np.inf)
# slots of a column block (LANES floats each): S; H = max(BM, M, I, D) of the row above, then of
# this row; O = H of the row above (saved: the next column's diagonal); G = max(BG, M, D);
# E = I; T = max(BG, M, I);
# D; the target's costs of the column (I at column j: t_ins_*[j]; D into column j:
# t_del_*[j - 1]); the lane's query-side costs of the row; the running local best (value, cell
# index i * W + j as float). Past column 0 a row stores only H, G and E (and its codes): O, T,
# D, the row's costs and the running best pass along it in registers and reach column T's slots
# at its end; F (1 where G came from D: the tie rule of the I recurrence) of the row above is
# bit 3 of its code, and an end cell's value and state are its H and its code's state (_end_row)
(_TS, _TH, _TO, _TG, _TE, _TT, _TD, _TTIO, _TTIE, _TTDO, _TTDE,
 _TAO, _TAE, _TRO, _TRE, _TBV, _TBP) = (k * LANES for k in range(17))
_TL = 17 * LANES
MIN_FILL = 4  # a smaller group is left to the per-pair kernel
MAX_GROUP_CELLS = 1 << 20  # (Q + 1) * (T + 1) of a group: 16 MiB of directions


@njit(cache=True, nogil=True, inline="always")
def _begin0(mode: int, j: int) -> np.float32:
    """B at (0, j)."""
    if mode == GLOBAL:
        return np.float32(0.0) if j == 0 else NEG
    if mode == LOCAL:
        return NEG
    return np.float32(0.0)


@njit(cache=True, nogil=True, inline="always")
def _begin_col0(mode: int) -> np.float32:
    """B at (i, 0) for i >= 1."""
    return np.float32(0.0) if mode == SEMIGLOBAL else NEG


@njit(cache=True, nogil=True, inline="always")
def _is_end(mode: int, i: int, j: int, lq: int, lt: int) -> bool:
    if mode == GLOBAL:
        return i == lq and j == lt
    if mode == GLOCAL:
        return i == lq
    return i == lq or j == lt


@njit(cache=True, nogil=True, inline="always")
def _end_row(B, ql, i, n, idx, lqs, lts, mode, b0, ends, dirs, W):  # noqa: ANN001, PLR0913
    """Fold row i's end cells of every lane into ``ends`` (non-local modes), as gotoh does. Its
    walk over begin, M, I, D with ``>`` keeps the first state of the cell's maximum when that
    beats the running best: the cell's H (the maximum; column 0's includes begin) and its
    code's state (the first state reaching it), which is all the rows store."""
    for u in range(n):
        k = idx[u]
        lq = lqs[k]
        lt = lts[k]
        if mode == SEMIGLOBAL and i < lq:
            lo = lt
        elif i == lq:
            lo = 0
        else:
            continue
        best = ends[u, 0]
        for j in range(lo, lt + 1):
            if not _is_end(mode, i, j, lq, lt):
                continue
            h = B[j * ql + _TH + u]
            if h > best:
                best = h
                ends[u, 1], ends[u, 2] = i, j
                ends[u, 3] = dirs[(i * W + j) * LANES + u] & 3
        ends[u, 0] = best


_f32 = ir.FloatType()
_i8 = ir.IntType(8)
_i64 = ir.IntType(64)
_V = ir.VectorType(_f32, LANES)
_VB8 = ir.VectorType(_i8, LANES)
_vload = partial(vload, lanes=LANES, align=4)
_vstore = partial(vstore, align=4)
_UNROLL = 2  # columns per trip of the row loop (then one column a trip for the rest)


def _row_codegen(const: bool, local: bool):  # noqa: ANN202, C901
    """The body of the ``_row_*`` intrinsics (see :func:`_row_const_local`)."""

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        b = builder
        i64 = lambda x: ir.Constant(_i64, x)  # noqa: E731
        v8 = lambda x: ir.Constant(_VB8, [int(x)] * LANES)  # noqa: E731
        B_, T_, dirs_, dw_, p0_, z_ = args[:6]
        bp = array_data(context, b, signature.args[0], B_)
        dp = b.gep(array_data(context, b, signature.args[2], dirs_), [dw_])
        dprev = b.gep(dp, [b.mul(b.add(T_, i64(1)), i64(-LANES))])  # the row above's codes
        z = splat(b, z_, _V)
        if const:
            goi, gei, god, ged = (splat(b, x, _V) for x in args[6:10])
        else:  # the lane's query-side costs of the row, in column 0's slots
            ao, ae, ro, re = (_vload(b, bp, i64(s)) for s in (_TAO, _TAE, _TRO, _TRE))

        def column(jj, hd, t, d, bv, bpos):  # noqa: ANN001, ANN202
            """Column jj + 1 from column jj's carried (O, T, D, best value, best cell)."""
            cp = b.gep(bp, [b.mul(b.add(jj, i64(1)), i64(_TL))])
            hu = _vload(b, cp, i64(_TH))
            m = b.fadd(hd, _vload(b, cp, i64(_TS)))
            if const:
                c_io, c_ie, c_do, c_de = goi, gei, god, ged
            else:
                c_io = b.fadd(ao, _vload(b, cp, i64(_TTIO)))
                c_ie = b.fadd(ae, _vload(b, cp, i64(_TTIE)))
                c_do = b.fadd(_vload(b, cp, i64(_TTDO)), ro)
                c_de = b.fadd(_vload(b, cp, i64(_TTDE)), re)
            xo = b.fsub(_vload(b, cp, i64(_TG)), c_io)
            xe = b.fsub(_vload(b, cp, i64(_TE)), c_ie)
            # F of the row above: bit 3 of its code (G came from D)
            fa = vload(b, dprev, b.mul(b.add(jj, i64(1)), i64(LANES)), lanes=LANES, align=1)
            ci = b.or_(b.fcmp_ordered(">", xe, xo),
                       b.and_(b.fcmp_ordered("==", xe, xo),
                              b.icmp_unsigned("!=", b.and_(fa, v8(8)), v8(0))))
            e = b.select(ci, xe, xo)
            ct = b.fcmp_ordered(">", e, m)
            tn = b.select(ct, e, m)
            xo = b.fsub(t, c_do)
            xe = b.fsub(d, c_de)
            cd = b.fcmp_ordered(">", xe, xo)
            dn = b.select(cd, xe, xo)
            cg = b.fcmp_ordered(">", dn, m)
            g = b.select(cg, dn, m)
            c = b.fcmp_ordered(">", m, z)
            v = b.select(c, m, z)
            s = b.select(c, v8(1), v8(0))
            c = b.fcmp_ordered(">", e, v)
            v = b.select(c, e, v)
            s = b.select(c, v8(2), s)
            c = b.fcmp_ordered(">", dn, v)
            v = b.select(c, dn, v)
            s = b.select(c, v8(3), s)
            _vstore(b, e, cp, i64(_TE))
            _vstore(b, g, cp, i64(_TG))
            _vstore(b, v, cp, i64(_TH))
            code = b.or_(b.or_(s, b.select(cg, v8(12), v8(4))),
                         b.or_(b.select(ct, v8(32), v8(16)),
                               b.or_(b.select(ci, v8(64), v8(0)), b.select(cd, v8(128), v8(0)))))
            vstore(b, code, dp, b.mul(b.add(jj, i64(1)), i64(LANES)), align=1)
            if local:
                pos = splat(b, b.sitofp(b.add(b.add(p0_, jj), i64(1)), _f32), _V)
                cb = b.fcmp_ordered(">", m, bv)
                bv = b.select(cb, m, bv)
                bpos = b.select(cb, pos, bpos)
            return hu, tn, dn, bv, bpos

        carry0 = [_vload(b, bp, i64(s)) for s in (_TO, _TT, _TD, _TBV, _TBP)]
        nu = b.and_(T_, i64(-_UNROLL))

        j1, carry = column_loop(b, "trow2", i64(0), nu, _UNROLL, carry0, column)
        _, carry = column_loop(b, "trow1", j1, T_, 1, carry, column)
        if local:  # the running best, in column T's slots (the next row's column 0 reads them)
            last = b.gep(bp, [b.mul(T_, i64(_TL))])
            _vstore(b, carry[3], last, i64(_TBV))
            _vstore(b, carry[4], last, i64(_TBP))
        return context.get_dummy_value()

    return codegen


def _row_intrinsic(const: bool, local: bool):  # noqa: ANN202
    def typer(typingctx, B, T, dirs, dw, p0, z, go_i, ge_i, go_d, ge_d):  # noqa: ANN001, ANN202, ARG001, PLR0913
        f32 = types.float32
        if not (isinstance(B, types.Array) and B.dtype == f32 and B.ndim == 1
                and isinstance(dirs, types.Array) and dirs.dtype == types.uint8
                and dirs.ndim == 1 and z == f32
                and all(x == f32 for x in (go_i, ge_i, go_d, ge_d))):
            return None
        sig = types.void(B, types.int64, dirs, types.int64, types.int64, f32, f32, f32, f32, f32)
        return sig, _row_codegen(const, local)

    return intrinsic(typer)


_row_const_local = _row_intrinsic(True, True)
_row_const_local.__doc__ = """Columns 1..T of row i of the 16 lanes: the cell values and codes of
:func:`homalign.dp.kernels.gotoh` (codes to ``dirs[dw + (j * LANES) + u]``), each lane with the
shared position-independent costs ``go_*``/``ge_*``, local mode (the running best and its cell
``p0 + j`` carried, then written to column T's slots). ``_row_const``, ``_row_vec_local`` and
``_row_vec``: the other modes (M and D stored for the end cells) and the position-specific costs
(the lane's query-side costs from column 0's slots plus the column's target costs, added as
gotoh adds them). LLVM IR on ``<16 x float>``: O (the row above's H on the diagonal), T, D and
the running best pass between columns in registers; a column loads S, H, G, E, F (and four
cost slots) and stores H, G, E, F (and M, D) and its 16 code bytes. Vector ``fadd``, ``fsub``,
``fcmp`` and ``select`` only, in gotoh's order, so every value and code is bit-identical to it."""
_row_const = _row_intrinsic(True, False)
_row_vec_local = _row_intrinsic(False, True)
_row_vec = _row_intrinsic(False, False)


@njit(cache=True, nogil=True, error_model="numpy")
def _group_fill(addrs, idx, lqs, lts, vecs, v_off, mode, const, cp, Q, T, dirs, ends, work,  # noqa: ANN001, ANN201, PLR0913, PLR0915
                codes):
    """Fill ``dirs`` ((Q + 1) * (T + 1) * LANES uint8) for the pairs ``idx`` (<= LANES) and
    their end cells ``ends[u] = (score, end_i, end_j, end_state)``, as gotoh does per pair.
    ``const``: all the pairs have the position-independent costs ``cp`` = (go_i, ge_i, go_d,
    ge_d) (float32, each the sum gotoh forms per cell). ``work``: float32 scratch of at least
    ``(ceil(T / LANES) * LANES + 1) * _TL`` (reused: fresh pages cost more than the DP)."""
    n = idx.shape[0]
    W = T + 1
    tp = (T + LANES - 1) // LANES * LANES
    ql = _TL
    B = work[:(tp + 1) * ql]
    B[:] = NEG
    starts = np.zeros(LANES, dtype=np.int64)
    lens = np.zeros(LANES, dtype=np.int64)
    ones = np.ones(TABLE, dtype=np.float32)
    zcodes = np.zeros(tp * LANES, dtype=np.int32)
    zero = np.float32(0.0)
    local = mode == LOCAL
    z = zero if local else NEG
    for jj in range(tp + 1):  # costs 0 outside a pair (never reach its cells)
        for s in (_TTIO, _TTIE, _TTDO, _TTDE, _TAO, _TAE, _TRO, _TRE, _TBV, _TBP):
            for u in range(LANES):
                B[jj * ql + s + u] = zero
    for u in range(n):
        k = idx[u]
        lt = lts[k]
        o1 = v_off[k, 1]
        o2 = v_off[k, 2]
        for j in range(lt + 1):
            B[j * ql + _TTIO + u] = vecs[2][o1 + j]
            B[j * ql + _TTIE + u] = vecs[3][o1 + j]
        for j in range(lt):
            B[(j + 1) * ql + _TTDO + u] = vecs[4][o2 + j]
            B[(j + 1) * ql + _TTDE + u] = vecs[5][o2 + j]
        ends[u, 0] = zero if local else NEG
        ends[u, 1] = 0
        ends[u, 2] = 0
        ends[u, 3] = 0 if local else -1
    # row 0: B and D only (the lane's query-side D costs of row 0 in the R slots of column 0)
    for u in range(n):
        B[_TRO + u] = vecs[6][v_off[idx[u], 3]]
        B[_TRE + u] = vecs[7][v_off[idx[u], 3]]
    b = _begin0(mode, 0)
    bm = zero if local else b
    for u in range(LANES):
        B[_TD + u] = NEG
        B[_TE + u] = NEG
        B[_TT + u] = b
        B[_TG + u] = b
        B[_TH + u] = bm
        dirs[u] = 0
    for jj in range(T):
        pb = jj * ql
        base = pb + ql
        b = _begin0(mode, jj + 1)
        bm = zero if local else b
        db = (jj + 1) * LANES
        for u in range(LANES):
            ro = B[pb + _TRO + u]
            re = B[pb + _TRE + u]
            B[base + _TRO + u] = ro
            B[base + _TRE + u] = re
            xo = B[pb + _TT + u] - (B[base + _TTDO + u] + ro)
            xe = B[pb + _TD + u] - (B[base + _TTDE + u] + re)
            c = xe > xo
            dv = xe if c else xo
            B[base + _TD + u] = dv
            B[base + _TE + u] = NEG
            B[base + _TT + u] = b
            cg = dv > b
            B[base + _TG + u] = dv if cg else b
            ch = dv > bm
            B[base + _TH + u] = dv if ch else bm
            dirs[db + u] = np.uint8((3 if ch else 0) | ((3 if cg else 0) << 2)
                                    | ((1 if c else 0) << 7))
    if mode == SEMIGLOBAL:
        for u in range(n):
            lt = lts[idx[u]]
            if _begin0(mode, lt) > ends[u, 0]:
                ends[u, 0] = _begin0(mode, lt)
                ends[u, 1], ends[u, 2], ends[u, 3] = 0, lt, 0
            if B[lt * ql + _TD + u] > ends[u, 0]:
                ends[u, 0] = B[lt * ql + _TD + u]
                ends[u, 1], ends[u, 2], ends[u, 3] = 0, lt, 3
    b0 = _begin_col0(mode)
    bm0 = zero if local else b0
    table, qc, qo, tc, to = codes
    use_codes = table.shape[0] > 0
    rows = np.full(LANES, CODE_TABLE * CODE_TABLE, dtype=np.int32)  # the -inf row
    pad = np.int32(CODE_TABLE - 1)  # a column of -inf
    if use_codes:
        for u in range(n):
            starts[u] = to[idx[u]]
            lens[u] = lts[idx[u]]
    for i in range(1, Q + 1):
        if use_codes:  # S[i - 1, j] = table[q[i - 1] * 32 + t[j]], -inf outside the pair
            for u in range(n):
                k = idx[u]
                rows[u] = (qc[qo[k] + i - 1] * CODE_TABLE if i <= lqs[k]
                           else CODE_TABLE * CODE_TABLE)
            for j0 in range(0, T, LANES):
                lookup_lanes16(B, j0 * ql + (ql + _TS), ql, table, rows, tc, starts, lens, j0,
                               pad)
        else:
            pack_row(B, ql, addrs, idx, lqs, lts, i - 1, T, starts, lens, ones, zcodes)
            for u in range(n):  # the rows two ahead into cache (the matrices stream from DRAM)
                k = idx[u]
                if i + 8 < lqs[k]:
                    a = addrs[k] + (i + 8) * lts[k] * 4
                    for off in range(0, lts[k] * 4 + 63, 64):
                        prefetch(a + off)
        for u in range(n):
            k = idx[u]
            if i <= lqs[k]:
                B[_TAO + u] = vecs[0][v_off[k, 0] + i - 1]
                B[_TAE + u] = vecs[1][v_off[k, 0] + i - 1]
                B[_TRO + u] = vecs[6][v_off[k, 3] + i]
                B[_TRE + u] = vecs[7][v_off[k, 3] + i]
            else:  # past the pair's last row: costs 0
                B[_TAO + u] = zero
                B[_TAE + u] = zero
                B[_TRO + u] = zero
                B[_TRE + u] = zero
        # column 0: M = D = -inf, G = B (its opens never come from D)
        db = i * W * LANES
        for u in range(LANES):
            xo = B[_TG + u] - (B[_TAO + u] + B[_TTIO + u])
            xe = B[_TE + u] - (B[_TAE + u] + B[_TTIE + u])
            c = xe > xo  # F (the tie rule) is 0 in column 0: G there never came from D
            e = xe if c else xo
            ct = e > NEG
            t = e if ct else NEG
            ts = 2 if ct else 1
            if not (t > b0):
                t = b0
                ts = 0
            v = z
            s = 0
            if e > v:
                v = e
                s = 2
            if not (v > bm0):
                v = bm0
                s = 0
            B[_TO + u] = B[_TH + u]
            B[_TH + u] = v
            B[_TE + u] = e
            B[_TT + u] = t
            B[_TG + u] = b0
            B[_TD + u] = NEG
            dirs[db + u] = np.uint8(s | (ts << 4) | ((1 if c else 0) << 6))
        if local:  # the running best enters the row at column 0
            for u in range(LANES):
                B[_TBV + u] = B[T * ql + _TBV + u]
                B[_TBP + u] = B[T * ql + _TBP + u]
        dw = i * W * LANES
        p0 = i * W
        if const:
            if local:
                _row_const_local(B, T, dirs, dw, p0, z, cp[0], cp[1], cp[2], cp[3])
            else:
                _row_const(B, T, dirs, dw, p0, z, cp[0], cp[1], cp[2], cp[3])
        elif local:
            _row_vec_local(B, T, dirs, dw, p0, z, zero, zero, zero, zero)
        else:
            _row_vec(B, T, dirs, dw, p0, z, zero, zero, zero, zero)
        if not local:
            _end_row(B, ql, i, n, idx, lqs, lts, mode, b0, ends, dirs, W)
    if local:
        for u in range(n):
            bv = B[T * ql + _TBV + u]
            if bv > zero:
                p = np.int64(B[T * ql + _TBP + u])
                ends[u, 0] = bv
                ends[u, 1] = p // W
                ends[u, 2] = p % W
                ends[u, 3] = 1


@njit(cache=True, nogil=True)
def _walk(dirs, W, u, end_i, end_j, end_state, ops):  # noqa: ANN001, ANN201
    """:func:`homalign.dp.kernels.traceback` on lane ``u`` of a lane-interleaved matrix."""
    i = end_i
    j = end_j
    state = end_state
    n = 0
    while state != 0:
        code = dirs[(i * W + j) * LANES + u]
        ops[n] = state
        n += 1
        if state == 1:
            i -= 1
            j -= 1
            state = dirs[(i * W + j) * LANES + u] & 3
        elif state == 2:
            i -= 1
            state = 2 if (code >> 6) & 1 else (dirs[(i * W + j) * LANES + u] >> 2) & 3
        else:
            j -= 1
            state = 3 if (code >> 7) & 1 else (dirs[(i * W + j) * LANES + u] >> 4) & 3
    for k in range(n // 2):
        ops[k], ops[n - 1 - k] = ops[n - 1 - k], ops[k]
    return n, i, j


@njit(cache=True, parallel=True)
def _run_groups(addrs, order, bounds, lqs, lts, vecs, v_off, mode, gconst, cparams, ops, o_off,  # noqa: PLR0913
                scores, meta, dirs_work, b_work, codes):  # noqa: ANN001, ANN201, PLR0913
    ng = bounds.shape[0] - 1
    for p0 in prange(ng):
        g = p0 // 2 if p0 % 2 == 0 else ng - 1 - p0 // 2  # short and long groups alternate
        idx = order[bounds[g]:bounds[g + 1]]
        Q = 0
        T = 0
        for u in range(idx.shape[0]):
            Q = max(Q, lqs[idx[u]])
            T = max(T, lts[idx[u]])
        tid = get_thread_id()  # each thread its own scratch (reused across calls)
        dirs = dirs_work[tid]  # a whole row (C-contiguous: whole-vector stores); its head is used
        ends = np.zeros((idx.shape[0], 4), dtype=np.float64)
        _group_fill(addrs, idx, lqs, lts, vecs, v_off, mode, gconst[g], cparams[idx[0]], Q, T,
                    dirs, ends, b_work[tid], codes)
        for u in range(idx.shape[0]):
            k = idx[u]
            nops, si, sj = _walk(dirs, T + 1, u, np.int64(ends[u, 1]), np.int64(ends[u, 2]),
                                 np.int64(ends[u, 3]), ops[o_off[k]:o_off[k] + lqs[k] + lts[k]])
            scores[k] = np.float32(ends[u, 0])
            meta[k, 0] = nops
            meta[k, 1] = si
            meta[k, 2] = sj


def trace_lanes(mats, lqs: np.ndarray, lts: np.ndarray, vecs, v_off: np.ndarray, mode: int,  # noqa: PLR0913
                consts, ops: np.ndarray, o_off: np.ndarray, scores: np.ndarray,
                meta: np.ndarray, codes: tuple | None = None) -> np.ndarray:
    """Align (with traceback) the pairs of ``mats`` (C-contiguous float32) LANES at a time, in
    ``align_batch``'s buffers: packed gap vectors ``vecs``/``v_off``, column codes into ``ops``
    at ``o_off``, ``scores[k]`` and ``meta[k] = (n_ops, start_i, start_j)``. ``consts[k]``: the
    pair's ``GapCosts.constant_costs()`` (or None). Pairs with the same constant costs go
    together (and the others together), then by shape (target, then query length); groups of
    fewer than MIN_FILL pairs, and pairs whose group would exceed MAX_GROUP_CELLS, are not run.
    Returns the pairs aligned. ``codes``: ``(table, qc, qo, tc, to)`` instead of ``mats`` (None):
    ``S_k[i, j] = table[qc[qo[k] + i] * CODE_TABLE + tc[to[k] + j]]`` (:func:`homalign.dp.lanes.code_table`,
    :func:`homalign.dp.lanes.pack_codes`), looked up in registers, no matrix per pair."""
    n = len(lqs)
    small = np.flatnonzero((lqs + 1) * (lts + 1) <= MAX_GROUP_CELLS)
    if small.size < MIN_FILL:
        return small[:0]
    cparams = np.array([c if c is not None else (0.0,) * 4 for c in consts], dtype=np.float32)
    key = np.full(n, -1, dtype=np.int64)  # one key per cost tuple; position-specific -1
    cw = np.array([k for k in small if consts[k] is not None], dtype=np.int64)
    if cw.size:
        _, inv = np.unique(cparams[cw], axis=0, return_inverse=True)
        key[cw] = inv.reshape(-1)
    order = small[np.lexsort((lqs[small], lts[small], key[small]))]
    bounds = [0]
    Q = T = 0
    for p in range(order.size):
        k = order[p]
        q2, t2 = max(Q, lqs[k]), max(T, lts[k])
        if p > bounds[-1] and (p - bounds[-1] == LANES or key[k] != key[order[bounds[-1]]]
                               or (q2 + 1) * (t2 + 1) > MAX_GROUP_CELLS):
            bounds.append(p)
            q2, t2 = lqs[k], lts[k]
        Q, T = q2, t2
    bounds.append(order.size)
    keep = [g for g in range(len(bounds) - 1) if bounds[g + 1] - bounds[g] >= MIN_FILL]
    if not keep:
        return order[:0]
    order = np.concatenate([order[bounds[g]:bounds[g + 1]] for g in keep])
    sizes_g = np.array([bounds[g + 1] - bounds[g] for g in keep], dtype=np.int64)
    gconst = np.array([key[order[b]] >= 0 for b in np.cumsum(sizes_g) - sizes_g])
    bounds = np.concatenate(([0], np.cumsum(sizes_g))).astype(np.int64)
    addrs = np.zeros(n, dtype=np.int64)  # the kernel reads the matrices in place
    if codes is None:
        none_i = np.zeros(0, dtype=np.int32)
        codes = (np.zeros(0, dtype=np.float32), none_i, np.zeros(0, dtype=np.int64), none_i,
                 np.zeros(0, dtype=np.int64))
    for k in (order if mats is not None else ()):
        m = mats[k]
        if not (m.dtype == np.float32 and m.flags.c_contiguous and m.shape == (lqs[k], lts[k])):
            raise ValueError("trace_lanes needs C-contiguous float32 matrices")
        addrs[k] = m.ctypes.data
    cells = max(int((lqs[g] + 1).max() * (lts[g] + 1).max())
                for g in np.split(order, bounds[1:-1]))
    tmax = int(lts[order].max())
    dirs_work, b_work = _scratch(get_num_threads(), cells * LANES,
                                 ((tmax + LANES - 1) // LANES * LANES + 1) * _TL)
    try:
        _run_groups(addrs, order, bounds, lqs, lts, vecs, v_off, mode, gconst, cparams, ops,
                    o_off, scores, meta, dirs_work, b_work, codes)
    finally:
        if dirs_work.nbytes + b_work.nbytes <= _KEEP_BYTES and len(_SCRATCH) < 4:
            _SCRATCH.append((dirs_work, b_work))
    return order


_SCRATCH: list = []  # (dirs, B) scratch of earlier calls, one row per thread, for reuse
_KEEP_BYTES = 64 << 20  # scratch larger than this is not kept


def _scratch(nth: int, n_dirs: int, n_b: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-thread scratch at least (nth, n_dirs) uint8 and (nth, n_b) float32: a kept one if it
    fits (fresh pages cost more than the DP), else new; kept ones that are too small or too
    large are dropped."""
    while _SCRATCH:
        try:
            d, b = _SCRATCH.pop()
        except IndexError:  # another thread took it
            break
        if d.shape[0] >= nth and d.shape[1] >= n_dirs and b.shape[1] >= n_b:
            return d, b
    return (np.empty((nth, n_dirs), dtype=np.uint8), np.empty((nth, n_b), dtype=np.float32))
