"""Pair posteriors (forward-backward) of one query against many targets, 16 targets at a time.

The model, alignments and results are those of :func:`homalign.dp.posterior.forward_backward`
at temperature 1, in ``local`` or ``semiglobal`` mode, for the gap structure of the learned
aligner: position-specific costs on the query's residues against gaps (``q_ins_*``, state I or
x) and on the target's residues against gaps (``t_del_*``, state D or y), the other four cost
vectors zero. With the match weights ``w[i, j] = exp(S[i-1, j-1])`` and the gap factors
``a_i = exp(-(q_open + q_ext)[i-1])``, ``b_i = exp(-q_ext[i-1])``, ``c_j = exp(-(t_open +
t_ext)[j-1])``, ``d_j = exp(-t_ext[j-1])`` the forward pass is (rows ``i = 1..Lq``, columns
``j = 1..Lt``)::

    m[i, j] = w[i, j] (beg + m[i-1, j-1] + x[i-1, j-1] + y[i-1, j-1])
    x[i, j] = a_i (m[i-1, j] + y[i-1, j]) + b_i x[i-1, j]             (x[i, 0] too)
    y[i, j] = c_j (m[i, j-1] + x[i, j-1]) + d_j y[i, j-1]

and the backward pass, with ``e`` the end weights (rows ``i = Lq..0``, columns ``j = Lt..0``)::

    B_M[i, j] = e_M[i, j] + w[i+1, j+1] B_M[i+1, j+1] + a_{i+1} B_I[i+1, j] + c_{j+1} B_D[i, j+1]
    B_I[i, j] = e_G[i, j] + w[i+1, j+1] B_M[i+1, j+1] + b_{i+1} B_I[i+1, j] + c_{j+1} B_D[i, j+1]
    B_D[i, j] = e_G[i, j] + w[i+1, j+1] B_M[i+1, j+1] + a_{i+1} B_I[i+1, j] + d_{j+1} B_D[i, j+1]

    P[i-1, j-1] = m[i, j] B_M[i, j] / Z

Local mode: ``beg = 1`` (an alignment may start with any pair), ``e_M = 1``, ``e_G = 0``,
``Z = 1 + sum m`` (the 1: the empty alignment). Semiglobal mode: ``beg = 0``; the begin weight
1 of every cell of row 0 and column 0 is held in that cell's ``m`` (which is otherwise 0), so
row 0 has a D chain and column 0 an I chain from them; ``e_M = e_G = 1`` on row Lq and on column
Lt; ``Z`` is the sum of ``m + x + y`` over those end cells, row 0's (0, Lt) included (the empty
alignments are the two corners, as in :func:`homalign.dp.posterior._forward`).

Arithmetic: float32 in probability space. Each row of each pass is rescaled by a power of two
``2**k`` near its largest value (an int64 exponent per row and target; the rescale of a row is
applied as the next row reads it); the begin / end weights, ``2**-e`` in row units, stay <= 1
(exponents >= 0). The forward pass computes ``w`` from the scores with a vectorised float32
``exp`` (Cephes ``expf``, within 1 ulp; 0 below -87.33) and keeps ``w`` and ``m`` of every row
for the backward pass, which turns each row into posteriors as
``P = (m / max_F) (B_M / max_B) 2**(e + h) / Z`` (each factor <= 1 but the last; ``max_F``,
``max_B``: the row's scale factors). A score above 88 (NaN, +inf) sends the target to the
float64 path, whose input check rejects NaN and +inf; -inf is a weight 0.

Subnormals: x86 cores take ~100 cycles per instruction that meets a subnormal float, and the
tails of the DP (long gap chains, hopeless cells) meet them constantly, so the kernel runs with
MXCSR's flush-to-zero and denormals-are-zero set (restored afterwards, on x86): a value below
``2**-126`` (in its row's units) becomes 0.

Exactness: sums and products of non-negative numbers lose accuracy (beyond float32 rounding)
only where a value falls below the normal range, at most ``2**-126`` (absolute, in that row's
units) per operation. As in :mod:`homalign.dp.posterior_scaled`, a loss ``d`` in a forward value
of row ``i`` changes any ``P`` by at most ``2 d B_i / Z`` (``B_i``: the largest backward value
of row ``i``, every path from the cell to the pair being part of it) and conversely, so the
posterior error is at most ``2 ops (Lt + 2) 2**-126 sum_i 2**(uf_i + ub_i) / Z`` with ``ops``
(64) a generous count of lossy operations per cell and ``uf_i`` (``ub_i``) the largest exponent
of the units any value charged to row ``i`` was held in (three consecutive rows, since a row's
rescale is deferred). A target whose bound exceeds ``POSTERIOR_TOLERANCE`` (1e-6), whose rows
overflow (a maximum at or above ``2**120``) or whose scores exceed 88 is recomputed by the
per-pair float64 :func:`~homalign.dp.posterior.forward_backward` (with its own log-space
fallback). On the bundled learned aligner's scores of HOMSTRAD dev pairs the bound is 1e-30 to
1e-17 for most targets; a long, strongly aligned pair can exceed it (a semiglobal row then
spans more than float32's range: its maximum comes from paths that end near the target's end,
while paths through the row's other end still matter). In semiglobal mode such a target first
runs once more in the lanes in shifted column units (:func:`_shifted_retry`: the same
posteriors, rows that stay in range), and takes the per-pair path only if that fails too.

Layout (inter-sequence, as :mod:`homalign.dp.forward_batch`): targets sorted by length, taken 16
at a time; a group runs as one DP whose cells are vectors of 16 lanes, one target per lane,
shorter targets padded with zero weights and gap factors (padded cells hold exact zeros, so a
target's result is the same bits in any group, batch or thread count; no fast-math, no fused
multiply-adds). A row is computed 16 columns at a time by :func:`_fw16` / :func:`_bw16`, LLVM IR
on ``<16 x float>`` vectors (one AVX-512 register; two halves of 8 lanes, one after the other,
elsewhere: :data:`homalign.dp.simd.SWEEP_WIDTH`): the 16 targets' scores are read by
address
with masked loads and transposed in registers, the carried state (the previous column, running
sums and maxima, the lanes' factors) stays in registers, the rows of ``m``, ``w``, x, y, B_M,
B_I are lane-major (16 floats per column), and the posteriors are transposed back and written
to each target's ``P`` with masked stores. The groups are shared out over numba's threads
(``prange``), longest first.

Memory: a group keeps ``m`` and ``w`` of every row, ``(2 Lq + 3) (T + 17) x 64`` bytes (T: its
longest target; one such store per numba thread, in a scratch buffer the calling thread keeps
between calls, up to 64 MiB: fresh memory page-faults); a target for which that
exceeds ``GROUP_BYTES`` (256 MiB) takes the per-pair path, so no group exceeds it. A target of
length 0 gets an empty ``P`` and the log partition of its alignments (local: 0; semiglobal: runs
of query residues against gaps down the single column).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from functools import partial

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from homalign.dp.gaps import GapCosts
from homalign.dp.modes import LOCAL, SEMIGLOBAL, mode_code
from homalign.dp.posterior import forward_backward
from homalign.dp.simd import (
    FTZ_DAZ,
    SWEEP_WIDTH,
    array_data,
    get_mxcsr,
    set_mxcsr,
    splat,
    transpose16,
    vload,
    vmax,
    vstore,
)

__all__ = ["GROUP_BYTES", "LANES", "POSTERIOR_TOLERANCE", "posteriors_many"]

LANES = 16  # targets per group (one vector of float32 lanes)
GROUP_BYTES = 256 << 20
"""Largest forward store of a group (``m`` and ``w`` of every row); larger targets run per
pair."""
_SCRATCH_KEEP = 64 << 20
"""Largest scratch buffer (bytes) a calling thread keeps between calls (see ``_scratch``)."""
_kept = threading.local()
POSTERIOR_TOLERANCE = 1e-6
"""Largest accepted a-posteriori bound on the error of a posterior (else the per-pair path)."""

_OPS_PER_CELL = 64  # generous count of lossy operations per cell and row (both passes, P, w)
_LN2 = math.log(2.0)
_MAX_STEP = 120  # row steps stay within 2**+-120: every factor 2**-k is a normal float32
_TOP_LIMIT = 2.0 ** _MAX_STEP  # a row maximum at or above: overflow (the per-pair path)
_LOSS_LOG2 = -126.0  # log2 of the largest loss of one operation (results below 2**-126 flush)

# float32 exp (Cephes expf): exp(x) = p(r) 2**n, n = round(x / ln 2), r = x - n ln 2
_LO = np.float32(-87.33)  # below: exp(x) < 1.01 * 2**-126, taken as 0 (n >= -126 above)
_HI = np.float32(88.0)  # above: the target takes the per-pair path (float32 exp overflows)
_LOG2E = np.float32(1.44269504088896341)
_SHIFT = np.float32(12582912.0)  # 1.5 * 2**23: x / ln 2 + _SHIFT holds round(x / ln 2)
_SHIFT_BITS = np.int32(np.array([_SHIFT], dtype=np.float32).view(np.int32)[0])
_C1 = np.float32(0.693359375)  # ln 2 = _C1 + _C2, n * _C1 exact
_C2 = np.float32(-2.12194440e-4)
_P0 = np.float32(1.9875691500e-4)
_P1 = np.float32(1.3981999507e-3)
_P2 = np.float32(8.3334519073e-3)
_P3 = np.float32(4.1665795894e-2)
_P4 = np.float32(1.6666665459e-1)
_P5 = np.float32(5.0000001201e-1)
_FILL = np.float32(-1e30)  # packed score of a padded cell: weight 0

_f32 = ir.FloatType()
_f64 = ir.DoubleType()
_i32 = ir.IntType(32)
_i64 = ir.IntType(64)
_V = ir.VectorType(_f32, LANES)
_VI = ir.VectorType(_i32, LANES)
_VB = ir.VectorType(ir.IntType(1), LANES)
_data = array_data
_vload = partial(vload, lanes=LANES, align=4)
_vstore = partial(vstore, align=4)
_splat_i32 = partial(splat, vtype=_VI)
_vmax = vmax

# slots (LANES floats each) of the per-row state a chunk kernel reads and writes back
_INV, _BEG, _A, _B, _ML, _XL, _YL, _DG, _SUM, _TOP, _CHK = range(11)
_EW = _BEG  # backward: the end weight
_BD = _ML  # backward: B_D of the column right of the chunk
_NSLOTS = 11


def _fv(x: float, n: int = LANES) -> ir.Constant:
    return ir.Constant(ir.VectorType(_f32, n), [float(np.float32(x))] * n)


def _iv(x: int, n: int = LANES) -> ir.Constant:
    return ir.Constant(ir.VectorType(_i32, n), [int(x)] * n)


def _lanes(builder, v, h, n):  # noqa: ANN001, ANN202
    """Elements ``h .. h + n - 1`` of the vector ``v`` (``v`` itself when that is all of it)."""
    if n == v.type.count:
        return v
    return builder.shuffle_vector(v, v, ir.Constant(ir.VectorType(_i32, n),
                                                    list(range(h, h + n))))


def _i(x: int) -> ir.Constant:
    return ir.Constant(_i64, x)


def _lane_masks(builder, lp, start):  # noqa: ANN001, ANN202
    """For each lane u, the <16 x i1> mask ``e < lens[u] - start`` (``lp``: the int64 lengths)."""
    lensv = builder.trunc(_vload(builder, lp, _i(0)), _VI)
    rem = builder.sub(lensv, _splat_i32(builder, start))
    iota = ir.Constant(_VI, list(range(LANES)))
    undef = ir.Constant(_VI, ir.Undefined)
    return [builder.icmp_signed("<", iota, builder.shuffle_vector(
        rem, undef, ir.Constant(_VI, [u] * LANES))) for u in range(LANES)]


def _load_columns(builder, ap, lp, start):  # noqa: ANN001, ANN202
    """16 columns ``start .. start + 15`` of 16 lanes: lane u's row is the float32 data at byte
    address ``ap[u]``, ``lp[u]`` long (masked loads, ``_FILL`` past the end), transposed so that
    element e of the result holds column ``start + e`` of every lane."""
    ptr_t = _f32.as_pointer()
    mload = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(_V, [ptr_t, _i32, _VB, _V]), "llvm.masked.load.v16f32.p0")
    rows = []
    for u, mask in enumerate(_lane_masks(builder, lp, start)):
        a = builder.load(builder.gep(ap, [_i(u)]))
        p = builder.gep(builder.inttoptr(a, ptr_t), [start])
        rows.append(builder.call(mload, [p, ir.Constant(_i32, 4), mask, _fv(_FILL)]))
    return transpose16(builder, rows)


def _ir_exp(builder, x):  # noqa: ANN001, ANN202
    """float32 ``exp`` of a vector (Cephes ``expf``, ~1 ulp): 0 below ``_LO`` (where the result
    leaves float32's normal range; also for -inf and NaN), garbage above ``_HI`` (the caller
    rejects those scores)."""
    b = builder
    w = x.type.count
    fv = partial(_fv, n=w)
    iv = partial(_iv, n=w)
    t = b.fadd(b.fmul(x, fv(_LOG2E)), fv(_SHIFT))  # n = round(x / ln 2) in the low bits
    n = b.fsub(t, fv(_SHIFT))
    r = b.fsub(b.fsub(x, b.fmul(n, fv(_C1))), b.fmul(n, fv(_C2)))
    p = b.fadd(b.fmul(fv(_P0), r), fv(_P1))
    for c in (_P2, _P3, _P4, _P5):
        p = b.fadd(b.fmul(p, r), fv(c))
    p = b.fadd(b.fadd(b.fmul(p, b.fmul(r, r)), r), fv(1.0))
    k = b.sub(b.bitcast(t, ir.VectorType(_i32, w)), iv(int(_SHIFT_BITS) - 127))  # n + 127
    e = b.fmul(p, b.bitcast(b.shl(k, iv(23)), x.type))  # p * 2**n
    return b.select(b.fcmp_ordered(">=", x, fv(_LO)), e, fv(0.0))


@intrinsic
def _exp16(typingctx, src, soff, dst, doff):  # noqa: ANN001, ANN201, ARG001
    """``dst[doff:doff + 16] = exp(src[soff:soff + 16])`` by the kernels' float32 exp."""
    sig = types.void(src, soff, dst, doff)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        s_, so, d_, do = args
        sp = _data(context, builder, signature.args[0], s_)
        dp = _data(context, builder, signature.args[2], d_)
        _vstore(builder, _ir_exp(builder, _vload(builder, sp, so)), dp, do)
        return context.get_dummy_value()

    return sig, codegen


def _lane_access(b, h, n, sto_):  # noqa: ANN001, ANN202
    """``(load, store, slot)`` for IR on the lanes ``h .. h + n - 1``: ``load(ptr, off)`` and
    ``store(v, ptr, off)`` of their ``<n x T>`` vector at element offset ``off`` of a lane-major
    row, ``slot(k)`` the offset of state slot ``k``."""

    def load(ptr, off):  # noqa: ANN001, ANN202
        return vload(b, ptr, b.add(off, _i(h)), lanes=n, align=4)

    def store(v, ptr, off):  # noqa: ANN001, ANN202
        vstore(b, v, ptr, b.add(off, _i(h)), align=4)

    def slot(k):  # noqa: ANN001, ANN202
        return b.add(sto_, _i(k * LANES))

    return load, store, slot


def _fw_lanes(b, h, scores, fptr, wptr, j0_, fp_, fc_, ec_, xp_, xc_, yp_, yc_, cdo_, sto_):  # noqa: ANN001, ANN202, PLR0913
    """IR of :func:`_fw16` for the lanes ``h ..`` (``scores``: the 16 columns' scores of those
    lanes, vectors of SWEEP_WIDTH)."""
    n = scores[0].type.count
    fv = partial(_fv, n=n)
    load, store, slot = _lane_access(b, h, n, sto_)
    inv, beg, a, bb = (load(wptr, slot(k)) for k in (_INV, _BEG, _A, _B))
    ml, xl, yl, dg, sm, top, chk = (load(wptr, slot(k))
                                    for k in (_ML, _XL, _YL, _DG, _SUM, _TOP, _CHK))
    for e in range(LANES):
        col = b.mul(b.add(j0_, _i(e + 1)), _i(LANES))
        s = scores[e]
        chk = b.fadd(chk, b.select(b.fcmp_ordered("<=", s, fv(_HI)), fv(0.0), fv(1.0)))
        w = _ir_exp(b, s)
        mo = load(fptr, b.add(fp_, col))
        xo = load(wptr, b.add(xp_, col))
        yo = load(wptr, b.add(yp_, col))
        cd = b.add(cdo_, b.add(col, col))
        c = load(wptr, cd)
        d = load(wptr, b.add(cd, _i(LANES)))
        mn = b.fmul(w, b.fadd(beg, b.fmul(inv, dg)))
        xn = b.fmul(inv, b.fadd(b.fmul(a, b.fadd(mo, yo)), b.fmul(bb, xo)))
        yn = b.fadd(b.fmul(c, b.fadd(ml, xl)), b.fmul(d, yl))
        store(mn, fptr, b.add(fc_, col))
        store(w, fptr, b.add(ec_, col))
        store(xn, wptr, b.add(xc_, col))
        store(yn, wptr, b.add(yc_, col))
        dg = b.fadd(b.fadd(mo, xo), yo)
        sm = b.fadd(sm, mn)
        top = _vmax(b, yn, _vmax(b, xn, _vmax(b, mn, top)))
        ml, xl, yl = mn, xn, yn
    for k, v in ((_ML, ml), (_XL, xl), (_YL, yl), (_DG, dg), (_SUM, sm), (_TOP, top),
                 (_CHK, chk)):
        store(v, wptr, slot(k))


@intrinsic
def _fw16(typingctx, F, W, addrs, lens, j0, fp, fc, ec, xp, xc, yp, yc, cdo, sto):  # noqa: ANN001, ANN201, ARG001, E501
    """Forward recurrences of columns ``j0 + 1 .. j0 + 16`` of one row, 16 lanes.

    Scores: lane u's row at byte address ``addrs[u]`` (``lens[u]`` long; columns ``j0 ..
    j0 + 15``). Lane-major rows (16 floats per column) at element offsets: ``F[fp:]`` /
    ``F[fc:]`` m of the previous / this row, ``F[ec:]`` this row's weights w (written for the
    backward pass), ``W[xp:]``, ``W[xc:]``, ``W[yp:]``, ``W[yc:]`` x and y, ``W[cdo:]`` the gap
    factors (32 floats per column: c, then d). ``W[sto:]``: the state slots (column ``j0``'s m,
    x, y, the diagonal sum, running sum / max / check count, the lane factors), read at entry
    and written back.
    """
    sig = types.void(F, W, addrs, lens, j0, fp, fc, ec, xp, xc, yp, yc, cdo, sto)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        F_, W_, a_, l_, j0_, fp_, fc_, ec_, xp_, xc_, yp_, yc_, cdo_, sto_ = args
        tys = signature.args
        b = builder
        fptr = _data(context, b, tys[0], F_)
        wptr = _data(context, b, tys[1], W_)
        scores = _load_columns(b, _data(context, b, tys[2], a_), _data(context, b, tys[3], l_),
                               j0_)

        for h in range(0, LANES, SWEEP_WIDTH):  # lanes h .. h + SWEEP_WIDTH - 1
            _fw_lanes(b, h, [_lanes(b, v, h, SWEEP_WIDTH) for v in scores], fptr, wptr, j0_,
                      fp_, fc_, ec_, xp_, xc_, yp_, yc_, cdo_, sto_)
        return context.get_dummy_value()

    return sig, codegen


def _bw_lanes(b, h, n, fptr, wptr, lptr, pfp, j0_, fn_, en_, mn_o, in_o, mc_o, ic_o, cdo_, sto_,  # noqa: ANN001, ANN202, PLR0913, E501
              mode_):
    """IR of :func:`_bw16`'s recurrences for the lanes ``h .. h + n - 1``: their posteriors
    of the 16 columns (vectors of ``n``)."""
    fv = partial(_fv, n=n)
    load, store, slot = _lane_access(b, h, n, sto_)
    f1, f2, g = (load(pfp, _i(k * LANES)) for k in range(3))
    lensv = b.trunc(load(lptr, _i(0)), ir.VectorType(_i32, n))
    inv, ew, a, bb, bdn, top = (load(wptr, slot(k)) for k in (_INV, _EW, _A, _B, _BD, _TOP))
    zero = fv(0.0)
    local = b.icmp_signed("==", mode_, _i(0))
    last_col = b.icmp_signed("==", mode_, _i(2))
    posts = [None] * LANES
    for e in range(LANES - 1, -1, -1):
        J = b.add(j0_, _i(e))
        col = b.mul(J, _i(LANES))
        colp = b.add(col, _i(LANES))
        w = load(fptr, b.add(en_, colp))  # weight of (r, J) -> (r + 1, J + 1)
        bmo = load(wptr, b.add(mn_o, colp))
        bio = load(wptr, b.add(in_o, col))
        tm = b.fmul(w, bmo)
        v = b.fmul(inv, b.fadd(tm, b.fmul(a, bio)))
        vi = b.fmul(inv, b.fadd(tm, b.fmul(bb, bio)))
        Jv = splat(b, J, ir.VectorType(_i32, n))
        emask = b.select(last_col, b.icmp_signed("==", Jv, lensv),
                         b.icmp_signed("<=", Jv, lensv))
        em = b.select(emask, ew, zero)
        eg = b.select(local, zero, em)
        cd = b.add(cdo_, b.add(colp, colp))
        c = load(wptr, cd)
        d = load(wptr, b.add(cd, _i(LANES)))
        t = b.fmul(c, bdn)
        bm = b.fadd(b.fadd(v, em), t)
        bi = b.fadd(b.fadd(vi, eg), t)
        bd = b.fadd(b.fadd(v, eg), b.fmul(d, bdn))
        store(bm, wptr, b.add(mc_o, col))
        store(bi, wptr, b.add(ic_o, col))
        top = _vmax(b, bd, _vmax(b, bi, _vmax(b, bm, top)))
        bdn = bd
        m = load(fptr, b.add(fn_, colp))
        posts[e] = b.fmul(b.fmul(b.fmul(m, f1), b.fmul(bmo, f2)), g)
    store(bdn, wptr, slot(_BD))
    store(top, wptr, slot(_TOP))
    return posts


@intrinsic
def _bw16(typingctx, F, W, lens, j0, fn, en, mn_, in_, mc, ic, cdo, sto, pf, oaddrs, mode, want):  # noqa: ANN001, ANN201, ARG001, E501
    """Backward recurrences of columns ``j0 + 15`` down to ``j0`` of row r, 16 lanes, and the
    posteriors of row r + 1 at those columns + 1.

    Lane-major rows (16 floats per column) at element offsets: ``F[fn:]`` m and ``F[en:]`` w of
    forward row r + 1, ``W[mn_:]``, ``W[in_:]`` B_M and B_I of row r + 1 (final), ``W[mc:]``,
    ``W[ic:]`` of row r (written), ``W[cdo:]`` the gap factors; ``lens`` the targets' lengths.
    ``W[sto:]``: state slots (B_D right of the chunk, the running max, the lane factors).
    ``mode``: 0 local, 1 semiglobal last row (every state ends on columns <= Lt), 2 semiglobal
    other rows (on column Lt). With ``want``, ``P = ((m * pf[0:16]) * (B_M * pf[16:32])) *
    pf[32:48]`` of row r + 1, column J + 1 goes to target column J at byte address
    ``oaddrs[u]`` (masked stores; ``m * pf[0:16]`` and ``B_M * pf[16:32]`` are each row's
    values over its maximum).
    """
    sig = types.void(F, W, lens, j0, fn, en, mn_, in_, mc, ic, cdo, sto, pf, oaddrs, mode, want)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        (F_, W_, l_, j0_, fn_, en_, mn_o, in_o, mc_o, ic_o, cdo_, sto_, pf_, oa_, mode_,
         want_) = args
        tys = signature.args
        b = builder
        fptr = _data(context, b, tys[0], F_)
        wptr = _data(context, b, tys[1], W_)
        lptr = _data(context, b, tys[2], l_)
        optr = _data(context, b, tys[13], oa_)
        pfp = _data(context, b, tys[12], pf_)
        halves = [_bw_lanes(b, h, SWEEP_WIDTH, fptr, wptr, lptr, pfp, j0_, fn_, en_, mn_o, in_o,
                            mc_o, ic_o, cdo_, sto_, mode_) for h in range(0, LANES, SWEEP_WIDTH)]
        posts = [halves[0][e] if len(halves) == 1 else b.shuffle_vector(
            halves[0][e], halves[1][e], ir.Constant(_VI, list(range(LANES))))
            for e in range(LANES)]
        # P of row r + 1, columns J + 1 = j0 + 1 .. j0 + 16 -> target columns J (J < len)
        rows = transpose16(b, posts)
        ptr_t = _f32.as_pointer()
        mstore = cgutils.get_or_insert_function(
            b.module, ir.FunctionType(ir.VoidType(), [_V, ptr_t, _i32, _VB]),
            "llvm.masked.store.v16f32.p0")
        on = b.icmp_signed("!=", want_, _i(0))
        off = ir.Constant(_VB, [0] * LANES)
        for u, mask in enumerate(_lane_masks(b, lptr, j0_)):
            p = b.gep(b.inttoptr(b.load(b.gep(optr, [_i(u)])), ptr_t), [j0_])
            b.call(mstore, [rows[u], p, ir.Constant(_i32, 4), b.select(on, mask, off)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _f32_bits(typingctx, x):  # noqa: ANN001, ANN201, ARG001
    """The bits of a float32 as an int32."""
    if x != types.float32:
        return None

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
        return builder.bitcast(args[0], _i32)

    return types.int32(types.float32), codegen


@intrinsic
def _pow2(typingctx, n):  # noqa: ANN001, ANN201, ARG001
    """``2.0 ** n`` (float64) for an integer ``n``: exact for -1022 <= n <= 1023, 0 below, inf
    above (a multiplication instead of a call to ``ldexp``)."""
    if not isinstance(n, types.Integer):
        return None

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        v = context.cast(builder, args[0], signature.args[0], types.int64)
        bits = builder.shl(builder.add(v, _i(1023)), _i(52))
        x = builder.bitcast(bits, _f64)
        x = builder.select(builder.icmp_signed("<", v, _i(-1022)), ir.Constant(_f64, 0.0), x)
        return builder.select(builder.icmp_signed(">", v, _i(1023)),
                              ir.Constant(_f64, float("inf")), x)

    return types.float64(n), codegen


@njit(cache=True, nogil=True)
def _step(top, e):  # noqa: ANN001, ANN202
    """``(k, overflow)``: the exponent step of a row whose largest value is ``top`` in units
    ``2**e``: ``top * 2**-k`` in [0.5, 1) where possible, ``e + k >= 0`` (begin / end weights stay
    <= 1) and ``k >= -_MAX_STEP``; ``overflow`` when ``top >= 2**_MAX_STEP`` (or NaN)."""
    if not top < _TOP_LIMIT:
        return 0, True
    k = 0
    if top > 0.0:  # normal (subnormals are flushed): top * 2**-k in [0.5, 1)
        k = ((_f32_bits(np.float32(top)) >> 23) & 255) - 126
    return max(k, max(-e, -_MAX_STEP)), False


@njit(cache=True, nogil=True)
def _last_row_ends(W, lens, mu, tpb, mc, ic, cdo, sto):  # noqa: ANN001, ANN201
    """The backward pass over the last row (semiglobal, :func:`_bw16`'s mode 1: nothing below,
    every state ends on columns <= Lt), lane by lane in :func:`_bw16`'s float32 operations and
    order, the end weight at column J times ``exp(-mu (Lt - J))``."""
    for u in range(LANES):
        ew = W[sto + _EW * LANES + u]
        bdn = np.float32(0.0)
        top = np.float32(0.0)
        lt = lens[u]
        for J in range(tpb - 1, -1, -1):
            em = np.float32(0.0)
            if J <= lt:
                em = ew * np.float32(math.exp(-mu[u] * (lt - J)))
            c = W[cdo + (J + 1) * 2 * LANES + u]
            d = W[cdo + (J + 1) * 2 * LANES + LANES + u]
            t = c * bdn
            bm = em + t
            bd = em + d * bdn
            W[mc + J * LANES + u] = bm
            W[ic + J * LANES + u] = bm
            top = max(max(bd, bm), top)
            bdn = bd
        W[sto + _BD * LANES + u] = bdn
        W[sto + _TOP * LANES + u] = top


@njit(cache=True, nogil=True, error_model="numpy")
def _group(lq, qa, qb, tc, td, goff, addrs, lens, oaddrs, local, mu, F, work, logz, status):  # noqa: ANN001, ANN201, E501
    """Forward-backward of the (up to) LANES targets of one group.

    Lane ``u``: scores at byte address ``addrs[u]`` (float32 (lq, lens[u]) C order), gap factors
    ``tc/td[goff[u]:goff[u] + lens[u]]``, posteriors written at ``oaddrs[u]``; log Z into
    ``logz[u]``, ``status[u]`` 0 (done) or 1 (use the per-pair path). Empty lanes have length 0.
    ``mu[u]`` (semiglobal; 0: none): the lane's column shift (:func:`_shifted_retry`), whose
    border factors are applied here: begin weight ``exp(-mu j)`` at (0, j), end weight
    ``exp(-mu (Lt - j))`` at (Lq, j).
    ``F``: ``_store_size(lq, T)`` floats of room for the forward m of rows 0..lq and the
    weights w of rows 0..lq + 1 (lane-major); ``work``: ``_work_size(T)`` floats for the rows
    and state of the passes. Neither needs to be cleared.
    """
    T = 0
    shifted = False
    for u in range(LANES):
        T = max(T, lens[u])
        shifted |= mu[u] != 0.0
    tp = (T + LANES - 1) // LANES * LANES  # forward chunks: columns 1..tp
    tpb = (T + LANES) // LANES * LANES  # backward chunks: columns 0..tpb - 1
    ns = tpb + 1  # columns of a row buffer (the last one stays 0)
    rs = ns * LANES
    EO = (lq + 1) * rs  # the weights' rows in F
    XO = 0  # work buffer: x, y (two rows each), B_M, B_I (two rows each), gap factors, state
    YO = 2 * rs
    MO = 4 * rs
    IO = 6 * rs
    CDO = 8 * rs
    STO = CDO + 2 * rs
    W = work[:STO + _NSLOTS * LANES]
    W[:] = 0.0
    for u in range(LANES):
        for j in range(lens[u]):
            W[CDO + (j + 1) * 2 * LANES + u] = tc[goff[u] + j]
            W[CDO + (j + 1) * 2 * LANES + LANES + u] = td[goff[u] + j]
    raddr = np.empty(LANES, dtype=np.int64)
    E = np.zeros(LANES, dtype=np.int64)  # exponent of the current row's units
    acc = np.zeros(LANES)  # Z so far / 2**E
    bad = np.zeros(LANES, dtype=np.bool_)
    chk = np.zeros(LANES)
    Ef = np.zeros((lq + 2, LANES), dtype=np.int64)  # Ef[i + 1]: exponent of row i (Ef[0] = 0)
    bg = np.zeros(LANES, dtype=np.float32)  # semiglobal: begin weight of (i, 0) in row units
    H = np.zeros(LANES, dtype=np.int64)
    Hb = np.zeros((lq + 3, LANES), dtype=np.int64)  # Hb[i]: exponent of backward row i
    bsum = np.zeros(LANES)  # sum_i 2**(uf_i + ub_i) / Z
    pf = np.zeros(3 * LANES, dtype=np.float32)  # P factors of a row (see _bw16)
    oaddr = np.zeros(LANES, dtype=np.int64)
    # subnormal arithmetic costs ~100 cycles per instruction on x86 and the DP's tails hit it
    # all the time: flush to zero (the error bound counts 2**-126 per operation); every
    # allocation is above, so nothing raises before the register is restored
    mxcsr = get_mxcsr()
    set_mxcsr(np.uint32(mxcsr | FTZ_DAZ))

    # ---- row 0: begin weights (semiglobal: in m, with the D chain from them)
    for q in range(rs):
        F[q] = 0.0
    for u in range(LANES):
        W[STO + _INV * LANES + u] = 1.0
        if local:
            acc[u] = 1.0  # the empty alignment
            W[STO + _BEG * LANES + u] = 1.0
        else:
            for j in range(lens[u] + 1):
                F[j * LANES + u] = np.float32(math.exp(-mu[u] * j))
            top = np.float32(0.0)
            yl = np.float32(0.0)
            for j in range(1, lens[u] + 1):
                c = W[CDO + j * 2 * LANES + u]
                d = W[CDO + j * 2 * LANES + LANES + u]
                yl = c * (F[(j - 1) * LANES + u] + W[XO + (j - 1) * LANES + u]) + d * yl
                W[YO + j * LANES + u] = yl
            for j in range(lens[u] + 1):
                top = max(top, max(F[j * LANES + u], W[YO + j * LANES + u]))
            c = lens[u] * LANES + u
            add = np.float64(F[c]) + np.float64(W[YO + c])  # the corner (0, Lt)
            k, ovf = _step(top, E[u])
            bad[u] |= ovf
            acc[u] = add * _pow2(-k)
            E[u] += k
            W[STO + _INV * LANES + u] = _pow2(-k)
            bg[u] = _pow2(-E[u])
            Ef[1, u] = E[u]

    # ---- forward rows 1..lq
    for r in range(1, lq + 1):
        i = r - 1
        a = qa[i]
        b = qb[i]
        fp = i * rs
        fc = r * rs
        xp = XO + (i & 1) * rs
        xc = XO + (r & 1) * rs
        yp = YO + (i & 1) * rs
        yc = YO + (r & 1) * rs
        for u in range(LANES):
            raddr[u] = addrs[u] + 4 * i * lens[u]
            inv = W[STO + _INV * LANES + u]
            mo = F[fp + u]
            xo = W[xp + u]
            yo = W[yp + u]
            xn = inv * (a * (mo + yo) + b * xo)  # column 0: x from the begin weights above
            mn = bg[u]
            F[fc + u] = mn
            W[xc + u] = xn
            W[yc + u] = 0.0
            W[STO + _A * LANES + u] = a
            W[STO + _B * LANES + u] = b
            W[STO + _ML * LANES + u] = mn
            W[STO + _XL * LANES + u] = xn
            W[STO + _YL * LANES + u] = 0.0
            W[STO + _DG * LANES + u] = (mo + xo) + yo
            W[STO + _SUM * LANES + u] = 0.0
            W[STO + _TOP * LANES + u] = mn if mn > xn else xn
            W[STO + _CHK * LANES + u] = 0.0
        for j0 in range(0, T, LANES):
            _fw16(F, W, raddr, lens, j0, fp, fc, EO + fc, xp, xc, yp, yc, CDO, STO)
        for q in range((tp + 1) * LANES, rs):  # columns no chunk wrote
            F[fc + q] = 0.0
            F[EO + fc + q] = 0.0
        for u in range(LANES):
            chk[u] += W[STO + _CHK * LANES + u]
            if local:
                add = np.float64(W[STO + _SUM * LANES + u])
            elif r < lq:  # the last column ends alignments
                c = lens[u] * LANES + u
                add = np.float64(F[fc + c]) + np.float64(W[xc + c]) + np.float64(W[yc + c])
            else:  # the last row ends alignments (its column 0: the corner (Lq, 0))
                add = 0.0
                for j in range(T + 1):
                    c = j * LANES + u
                    add += ((np.float64(F[fc + c]) + np.float64(W[xc + c])
                             + np.float64(W[yc + c])) * math.exp(-mu[u] * (lens[u] - j)))
            k, ovf = _step(W[STO + _TOP * LANES + u], E[u])
            bad[u] |= ovf
            acc[u] = (acc[u] + add) * _pow2(-k)
            E[u] += k
            W[STO + _INV * LANES + u] = _pow2(-k)
            wb = np.float32(_pow2(-E[u]))
            if local:
                W[STO + _BEG * LANES + u] = wb
            else:
                bg[u] = wb
            Ef[r + 1, u] = E[u]

    # ---- backward rows lq..0; the pass over row r writes P of row r + 1
    for q in range(rs):  # the weights of row lq + 1: none
        F[EO + (lq + 1) * rs + q] = 0.0
    for u in range(LANES):
        W[STO + _INV * LANES + u] = 1.0
        W[STO + _EW * LANES + u] = 1.0
    for r in range(lq, -1, -1):
        a = np.float32(0.0)
        b = np.float32(0.0)
        if r < lq:
            a = qa[r]
            b = qb[r]
        for u in range(LANES):
            if r < lq:  # row r + 1: m and B_M over their row maxima, times 2**(e + h) / Z
                oaddr[u] = oaddrs[u] + 4 * r * lens[u]
                pf[u] = _pow2(Ef[r + 1, u] - Ef[r + 2, u])
                pf[LANES + u] = _pow2(Hb[r + 2, u] - Hb[r + 1, u])
                pf[2 * LANES + u] = (1.0 / acc[u]) * _pow2(Ef[r + 2, u] + Hb[r + 1, u] - E[u])
            W[STO + _A * LANES + u] = a
            W[STO + _B * LANES + u] = b
            W[STO + _BD * LANES + u] = 0.0
            W[STO + _TOP * LANES + u] = 0.0
        mode = 0 if local else (1 if r == lq else 2)
        mn = MO + ((r + 1) & 1) * rs
        mc = MO + (r & 1) * rs
        inn = IO + ((r + 1) & 1) * rs
        ic = IO + (r & 1) * rs
        fn = min(r + 1, lq) * rs
        en = EO + (r + 1) * rs
        if mode == 1 and shifted:  # the last row's ends at (Lq, j) carry the column factors
            _last_row_ends(W, lens, mu, tpb, mc, ic, CDO, STO)
        else:
            for j0 in range(tpb - LANES, -1, -LANES):
                _bw16(F, W, lens, j0, fn, en, mn, inn, mc, ic, CDO, STO, pf, oaddr, mode,
                      1 if r < lq else 0)
        for u in range(LANES):
            k, ovf = _step(W[STO + _TOP * LANES + u], H[u])
            bad[u] |= ovf
            H[u] += k
            Hb[r, u] = H[u]
            uf = max(Ef[r, u], Ef[r + 1, u])
            if r >= 1:
                uf = max(uf, Ef[r - 1, u])
            ub = max(H[u], max(Hb[r + 1, u], Hb[r + 2, u]))
            bsum[u] += (1.0 / acc[u]) * _pow2(uf + ub - E[u])
            W[STO + _INV * LANES + u] = _pow2(-k)
            W[STO + _EW * LANES + u] = _pow2(-H[u])

    set_mxcsr(mxcsr)
    log_tol = math.log(POSTERIOR_TOLERANCE)
    for u in range(LANES):
        lz = math.log(acc[u]) + E[u] * _LN2
        logz[u] = lz
        log_bound = (math.log(bsum[u]) + math.log(2.0 * _OPS_PER_CELL * (lens[u] + 2))
                     + _LOSS_LOG2 * _LN2)
        ok = (not bad[u]) and chk[u] == 0.0 and math.isfinite(lz) and log_bound <= log_tol
        status[u] = 0 if ok else 1


@njit(cache=True, nogil=True)
def _store_size(lq, T):  # noqa: ANN001, ANN202
    """float32 values of a group's forward store: m of rows 0..lq and w of rows 0..lq + 1,
    columns 0..tpb (see _group), 16 lanes."""
    return (2 * lq + 3) * ((T + LANES) // LANES * LANES + 1) * LANES


@njit(cache=True, nogil=True)
def _work_size(T):  # noqa: ANN001, ANN202
    """float32 values of a group's work buffer: x, y, B_M, B_I (two rows each), the gap factors
    (two values per column) and the state slots (see _group)."""
    return 10 * ((T + LANES) // LANES * LANES + 1) * LANES + _NSLOTS * LANES


@njit(cache=True, parallel=True)
def _posteriors_lanes(lq, qa, qb, tc, td, goffs, addrs, lens, oaddrs, local, mu, threads, scratch):  # noqa: ANN001, ANN201, E501
    """All targets, LANES at a time in order of length: ``(log Z, status)``. The part-filled
    group is the shortest one. ``nw = min(threads, groups)`` workers run in a ``prange``, worker
    ``w`` taking groups ``ng - 1 - w``, ``ng - 1 - w - nw``, ... (longest first), each with one
    forward store and work buffer for all its groups, parts of ``scratch`` (``_scratch``;
    contents ignored). Which worker runs a group changes nothing in its results."""
    nt = len(lens)
    order = np.argsort(lens, kind="mergesort")
    ng = (nt + LANES - 1) // LANES
    skip = ng * LANES - nt  # empty lanes, all in group 0
    logz = np.zeros(nt)
    status = np.ones(nt, dtype=np.int64)
    nw = max(1, min(threads, ng))
    T = lens.max() if nt else 0
    fsize = _store_size(lq, T)
    size = fsize + _work_size(T)
    if len(scratch) < nw * size:  # the caller sizes it by the same rule (_posteriors)
        raise ValueError("posteriors_many: scratch buffer too small")
    for w in prange(nw):
        for g in range(ng - 1 - w, -1, -nw):  # longest groups first
            # an empty lane (length 0: every load and store masked off) points at the longest
            # target's matrices, not at address 0: a masked-off access to an unmapped page is
            # a microcode assist on AMD cores (one target alone ran 6x slower than 16)
            ga = np.full(LANES, addrs[order[nt - 1]], dtype=np.int64)
            gl = np.zeros(LANES, dtype=np.int64)
            go = np.zeros(LANES, dtype=np.int64)
            gp = np.full(LANES, oaddrs[order[nt - 1]], dtype=np.int64)
            gm = np.zeros(LANES)
            for u in range(LANES):
                p = g * LANES + u - skip
                if p >= 0:
                    k = order[p]
                    ga[u] = addrs[k]
                    gl[u] = lens[k]
                    go[u] = goffs[k]
                    gp[u] = oaddrs[k]
                    gm[u] = mu[k]
            lz = np.zeros(LANES)
            st = np.ones(LANES, dtype=np.int64)
            base = w * size
            _group(lq, qa, qb, tc, td, go, ga, gl, gp, local, gm, scratch[base:base + fsize],
                   scratch[base + fsize:base + size], lz, st)
            for u in range(LANES):
                p = g * LANES + u - skip
                if p >= 0:
                    logz[order[p]] = lz[u]
                    status[order[p]] = st[u]
    return logz, status


def _run_lanes(mats: list, outs: list, qa: np.ndarray, qb: np.ndarray, to: np.ndarray,
               te: np.ndarray, local: bool, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(log Z, status)`` of the targets ``mats`` (float32 (Lq, Lt) each, results into
    ``outs``) through :func:`_posteriors_lanes`; ``to``/``te``: their float64 target costs,
    concatenated; ``mu``: their column shifts (zeros: none)."""
    lq = len(qa)
    sub = np.array([m.shape[1] for m in mats], dtype=np.int64)
    goffs = np.concatenate(([0], np.cumsum(sub)[:-1])).astype(np.int64)
    addrs = np.array([m.ctypes.data for m in mats], dtype=np.int64)
    oaddrs = np.array([o.ctypes.data for o in outs], dtype=np.int64)
    threads = numba.get_num_threads()
    workers = max(1, min(threads, (len(mats) + LANES - 1) // LANES))
    top = int(sub.max())
    scratch = _scratch(workers * (_store_size(lq, top) + _work_size(top)))
    return _posteriors_lanes(lq, qa, qb, np.exp(-(to + te)).astype(np.float32),
                             np.exp(-te).astype(np.float32), goffs, addrs, sub, oaddrs, local,
                             mu, threads, scratch)


def _shifted_retry(ks: np.ndarray, mats: list, out: list, qa: np.ndarray, qb: np.ndarray,
                   tos: list, tes: list, log_z: np.ndarray, status: np.ndarray) -> None:
    """Semiglobal targets whose float32 rows outgrew their range, once more in the lanes with
    the target's columns in shifted units: every move that consumes target column j (a pair, or
    the target residue against a gap) times ``exp(-mu)``, the begin weight at (0, j) times
    ``exp(-mu j)`` and the end weight at (Lq, j) times ``exp(-mu (Lt - j))``. Every alignment's
    weight is then ``exp(-mu Lt)`` times its own, so the posteriors are the same and ``log Z``
    is the run's plus ``mu Lt``, while a row of a long, strongly aligned pair, which grows by
    about ``mu`` a column, stays within float32's range. ``mu``: the first pass's ``log Z`` (in
    ``log_z``; finite and > 0 for every target in ``ks``) over ``Lt``: that pass lost mass, but
    its row scales follow the strongest paths, so it is close to the rate at which the rows grow
    (the bound decides either way). The targets that pass get their results in ``out``,
    ``log_z`` and ``status``; the others keep status 1."""
    lts = np.array([mats[k].shape[1] for k in ks], dtype=np.int64)
    mus = log_z[ks] / lts
    shifted = [np.ascontiguousarray(mats[k] - np.float32(m), dtype=np.float32)
               for k, m in zip(ks, mus, strict=True)]
    to = np.concatenate([tos[k] for k in ks]).astype(np.float64)
    te = np.concatenate([tes[k].astype(np.float64) + m for k, m in zip(ks, mus, strict=True)])
    lz, st = _run_lanes(shifted, [out[k] for k in ks], qa, qb, to, te, False, mus)
    ok = st == 0
    log_z[ks[ok]] = lz[ok] + mus[ok] * lts[ok]
    status[ks[ok]] = 0


def _scratch(values: int) -> np.ndarray:
    """A float32 buffer of at least ``values`` for this call's groups: the calling thread's kept
    buffer when it is large enough, else a new one, kept when at most ``_SCRATCH_KEEP`` bytes.
    Reusing it spares a call the page faults of fresh memory, which depend on what the process
    allocated before (the DP benchmark's 32 targets of ~300 took 260 faults a call, now
    none)."""
    buf = getattr(_kept, "buf", None)
    if buf is not None and buf.size >= values:
        return buf
    raw = np.empty(values + LANES, dtype=np.float32)  # from a 64-byte boundary (whole lines)
    start = (-raw.ctypes.data % 64) // 4
    buf = raw[start:start + values]
    if 4 * values <= _SCRATCH_KEEP:
        _kept.buf = buf
    return buf


def _store_bytes(lq: int, lt: np.ndarray) -> np.ndarray:
    """Bytes of the forward store of a group whose longest target has length ``lt`` (at least
    ``4 * _store_size(lq, lt)``)."""
    return 4 * (2 * lq + 3) * (np.asarray(lt, dtype=np.int64) + LANES + 1) * LANES


def _vector(name: str, v: object, n: int) -> np.ndarray:
    """``v`` as a finite float32 vector of length ``n``, or ValueError."""
    arr = np.asarray(v, dtype=np.float32)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def _empty_target_log_z(qo: np.ndarray, qe: np.ndarray, local: bool) -> float:
    """log Z of a target of length 0. Local: the empty alignment only. Semiglobal: every cell
    (i, 0) is a start and an end cell, so the alignments are the runs of query residues against
    gaps down the single column (empty ones included), as in the modes' definition."""
    if local:
        return 0.0
    la = -(qo.astype(np.float64) + qe.astype(np.float64))
    lb = -qe.astype(np.float64)
    lx = -np.inf  # log of the weight of the runs ending at (i, 0)
    runs = []
    for i in range(len(qo)):
        lx = np.logaddexp(la[i], lb[i] + lx)
        runs.append(lx)
    return float(np.logaddexp(math.log(len(qo) + 1), np.logaddexp.reduce(runs)))


def _pair(S: np.ndarray, qo: np.ndarray, qe: np.ndarray, to: np.ndarray, te: np.ndarray,
          mode: str, k: int) -> tuple[np.ndarray, float]:
    """Target ``k`` by the per-pair float64 path."""
    lq, lt = S.shape
    if lt == 0:
        return np.empty((lq, 0), dtype=np.float32), _empty_target_log_z(qo, qe, mode == "local")
    gaps = GapCosts.from_vectors(lq, lt, q_ins_open=qo, q_ins_ext=qe, t_del_open=to,
                                 t_del_ext=te)
    try:
        return forward_backward(S, gaps, mode=mode)
    except ValueError as err:
        raise ValueError(f"S[{k}]: {err}") from err


def posteriors_many(
    S: Sequence[np.ndarray], q_open: np.ndarray, q_ext: np.ndarray,
    t_open: Sequence[np.ndarray], t_ext: Sequence[np.ndarray], mode: str = "semiglobal",
) -> tuple[list[np.ndarray], np.ndarray]:
    """Pair posteriors and log partition functions of one query against many targets.

    Returns ``(P, log_z)``: ``P[k]`` float32 (Lq, Lt_k), ``log_z`` float64 (n,), equal up to
    float32 rounding to ``forward_backward(S[k], GapCosts.from_vectors(Lq, Lt_k,
    q_ins_open=q_open, q_ins_ext=q_ext, t_del_open=t_open[k], t_del_ext=t_ext[k]), mode)``
    (temperature 1; see the module docstring for the recurrences, layout and exactness).

    ``S[k]``: scores (Lq, Lt_k) in nats (float32; -inf allowed, NaN and +inf rejected);
    ``q_open``/``q_ext`` (Lq,) the costs of query residues against gaps, ``t_open[k]``/
    ``t_ext[k]`` (Lt_k,) those of target residues against gaps (finite, subtracted; a run of k
    residues costs ``open + k * extend``). ``mode``: ``"local"`` or ``"semiglobal"``. Targets run
    16 at a time in float32, the groups in parallel over numba's threads; a target whose
    error bound, range or size rules float32 out runs per pair in float64. The result does not
    depend on the thread count nor on the other targets of the batch. A target may have length
    0 (``P[k]`` is then (Lq, 0); see the module docstring for its ``log_z``).
    """
    post, log_z, _ = _posteriors(S, q_open, q_ext, t_open, t_ext, mode)
    return post, log_z


def _posteriors(
    S: Sequence[np.ndarray], q_open: np.ndarray, q_ext: np.ndarray,
    t_open: Sequence[np.ndarray], t_ext: Sequence[np.ndarray], mode: str,
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """:func:`posteriors_many` and, per target, whether the 16-lane kernel's result was kept
    (False: the per-pair path)."""
    code = mode_code(mode)
    if code not in (LOCAL, SEMIGLOBAL):
        raise ValueError(f"posteriors_many supports modes 'local' and 'semiglobal', got {mode!r}")
    qo = np.asarray(q_open, dtype=np.float32)
    if qo.ndim != 1 or qo.shape[0] == 0:
        raise ValueError(f"q_open must be a non-empty vector, got shape {qo.shape}")
    lq = qo.shape[0]
    qo = _vector("q_open", qo, lq)
    qe = _vector("q_ext", q_ext, lq)
    n = len(S)
    if len(t_open) != n or len(t_ext) != n:
        raise ValueError(f"S, t_open and t_ext must have the same length, got {n}, "
                         f"{len(t_open)}, {len(t_ext)}")
    mats, tos, tes = [], [], []
    for k in range(n):
        m = np.ascontiguousarray(S[k], dtype=np.float32)
        if m.ndim != 2 or m.shape[0] != lq:
            raise ValueError(f"S[{k}] must have shape ({lq}, Lt), got {m.shape}")
        lt = m.shape[1]
        for name, v, dst in (("t_open", t_open[k], tos), ("t_ext", t_ext[k], tes)):
            arr = np.asarray(v, dtype=np.float32)
            if arr.shape != (lt,):
                raise ValueError(f"{name}[{k}] must have shape ({lt},), got {arr.shape}")
            dst.append(arr)
        mats.append(m)
    if n == 0:
        return [], np.empty(0, dtype=np.float64), np.zeros(0, dtype=bool)
    lens = np.array([m.shape[1] for m in mats], dtype=np.int64)
    to = np.concatenate(tos).astype(np.float64)
    te = np.concatenate(tes).astype(np.float64)
    for name, v in (("t_open", to), ("t_ext", te)):
        bad = np.flatnonzero(~np.isfinite(v))
        if len(bad):
            k = int(np.searchsorted(np.cumsum(lens), bad[0], side="right"))
            raise ValueError(f"{name}[{k}] must be finite")

    # lanes: targets of length >= 1 whose group's forward store stays within GROUP_BYTES (a
    # group is as long as its longest target, which passes this test too)
    lane = (lens > 0) & (_store_bytes(lq, lens) <= GROUP_BYTES)
    idx = np.flatnonzero(lane)
    out: list[np.ndarray] = [np.empty((lq, int(lt)), dtype=np.float32) for lt in lens]
    log_z = np.zeros(n, dtype=np.float64)
    status = np.ones(n, dtype=np.int64)
    if len(idx):
        qo64, qe64 = qo.astype(np.float64), qe.astype(np.float64)
        qa = np.exp(-(qo64 + qe64)).astype(np.float32)
        qb = np.exp(-qe64).astype(np.float32)
        if len(idx) < n:
            keep = np.repeat(lane, lens)
            to, te = to[keep], te[keep]
        lz, st = _run_lanes([mats[k] for k in idx], [out[k] for k in idx], qa, qb, to, te,
                            code == LOCAL, np.zeros(len(idx)))
        log_z[idx] = lz
        status[idx] = st
        # semiglobal rows that outgrew float32: once more in shifted units (NaN and +inf
        # scores go on to the per-pair path, whose input check names them)
        retry = np.array([k for k in idx[st != 0] if code == SEMIGLOBAL
                          and math.isfinite(log_z[k]) and log_z[k] > 0.0
                          and not (np.isnan(mats[k]).any() or np.isposinf(mats[k]).any())],
                         dtype=np.int64)
        if len(retry):
            _shifted_retry(retry, mats, out, qa, qb, tos, tes, log_z, status)
    for k in np.flatnonzero(status != 0):
        out[k], log_z[k] = _pair(mats[k], qo, qe, tos[k], tes[k], mode, int(k))
    return out, log_z, status == 0
