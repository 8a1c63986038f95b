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
targets padded with zero weights and gap factors (a padded cell adds exactly 0 to every sum and
maximum). A row runs 16 columns at a time: :func:`homalign.dp.simd.pack_lanes16` moves the 16
columns' match weights into the lanes (16 x 16 transposes in registers and a vector table lookup
of ``R``), then :func:`_sweep16` (:func:`_sweep_tail` for a row's last, partial chunk) runs the
recurrences as LLVM IR on ``<16 x float>`` vectors (two halves of ``<8 x float>`` one after the
other without AVX-512: :data:`homalign.dp.simd.SWEEP_WIDTH`). The values one column passes to
the next (its m, x, y, the previous row's m + x + y on the diagonal, the running sum of m and
maximum of m, x, y, the lanes' factors) stay in registers; a column only loads its gap factors ``c_j``,
``d_j`` and the previous row's m, x, y from a lane-major buffer (five vectors per column) and
stores the new m, x, y over them; between chunks the carried values go through a small slot
array. Rows of ``X`` are prefetched two rows ahead (``X`` streams from memory). At the end of a
row each lane's scale exponent and factors come from the bits of its maximum (the results of
``math.frexp`` / ``math.ldexp``, without their calls).

Exactness: in row units (``inv``: the previous row's factor ``2**-k``, ``beg``: the begin weight
``2**-E``; primes: the previous row; ``w``: the match weight) every lane computes, in float32 and
in this order::

    m = w * (beg + inv * ((m'[j-1] + x'[j-1]) + y'[j-1]))
    x = inv * (a * (m' + y') + b * x')
    y = c * (m[j-1] + x[j-1]) + d * y[j-1]
    sum = sum + m

with no fast-math and no fused multiply-adds (the IR uses only vector ``fadd``, ``fmul``,
``fcmp`` and ``select``, which LLVM lowers on any CPU); the running maximum's order is free (a
maximum is exact; NaNs are skipped). A lane's arithmetic does not depend on the other lanes, so
a target's score does not depend on its group, on the batch or on the thread count.

Subnormals: x86 cores take ~100 cycles for an instruction that meets a subnormal float, and the
DP's tails (gap chains, hopeless cells) meet them, so a group runs with MXCSR's flush-to-zero
and denormals-are-zero set (restored afterwards; on x86): a value below ``2**-126`` in its row's
units, where the row's largest value is at least 1/2, becomes 0, far below float32's rounding
of the values it is summed with. The begin weight ``2**-E`` is such a value once the scale
passes ``2**126`` (log Z above 87 nats): from there on a local alignment counts only through
paths from earlier cells, as it already did past ``2**149``, where float32 has no value left
(a pair that strong lies far below any E-value cut). On real candidates the scores are the
same bits with and without the flags, and the forward takes a quarter less time.

``_forward_many_scalar`` (one target at a time, three row passes, its own rounding) is the
reference the tests compare with; both are checked against the float64 log-space reference and
the brute-force enumeration.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from homalign.dp.simd import (
    FTZ_DAZ,
    SWEEP_WIDTH,
    TABLE,
    array_data,
    get_mxcsr,
    pack_lanes16,
    prefetch,
    set_mxcsr,
    splat,
    vload,
    vmax,
    vstore,
)


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
_QC, _QD, _QM, _QX, _QY = (k * LANES for k in range(5))
_QL = 5 * LANES
# slots of a column block of the group buffer, LANES floats each: C, D the target's gap factors
# c_j, d_j; M, X, Y the states (row i-1 until overwritten by row i)
_INV, _BEG, _ML, _XL, _YL, _DG, _SUM, _TOP = (k * LANES for k in range(8))
_NST = 8 * LANES
# slots of the row state a chunk reads and writes back: the lanes' rescaling factor and begin
# weight; the m, x, y of the last column done; that column's row i-1 m + x + y (the next
# column's diagonal); the running sum of m and maximum of m, x, y along the row
_AHEAD = 2  # rows of X prefetched ahead

_f32 = ir.FloatType()
_i64 = ir.IntType(64)
_data = array_data
_vmax = vmax


def _sweep_codegen(tail: bool):  # noqa: ANN202
    """The body of :func:`_sweep16` (``tail``: of :func:`_sweep_tail`)."""

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        S_, W_, st_, j0_, n_, a_, b_ = args
        tys = signature.args
        b = builder
        sp = _data(context, b, tys[0], S_)
        wp = _data(context, b, tys[1], W_)
        stp = _data(context, b, tys[2], st_)
        # column j0 + 1 + e of the chunk: block j0 + 1 + e of S
        cp = b.gep(sp, [b.mul(b.add(j0_, ir.Constant(_i64, 1)), ir.Constant(_i64, _QL))])
        vt = ir.VectorType(_f32, SWEEP_WIDTH)
        for h in range(0, LANES, SWEEP_WIDTH):  # the lanes h .. h + SWEEP_WIDTH - 1
            _sweep_lanes(b, vt, h, cp, wp, stp, n_, a_, b_, tail)
        return context.get_dummy_value()

    return codegen


def _sweep_lanes(b, vt, h, cp, wp, stp, n_, a_, b_, tail):  # noqa: ANN001, ANN202, PLR0913
    """IR: the chunk's 16 columns for the lanes ``h .. h + vt.count - 1`` (vectors ``vt``)."""

    def load(ptr, off):  # noqa: ANN001, ANN202
        return vload(b, ptr, off + h, lanes=vt.count, align=4)

    def store(v, ptr, off):  # noqa: ANN001, ANN202
        vstore(b, v, ptr, off + h, align=4)

    a = splat(b, a_, vt)
    bb = splat(b, b_, vt)
    zero = ir.Constant(vt, [0.0] * vt.count)
    inv, beg, ml, xl, yl, dg, sm, top = (load(stp, k) for k in (
        _INV, _BEG, _ML, _XL, _YL, _DG, _SUM, _TOP))
    sm_out = sm
    tops = [zero, zero, zero]  # the chunk's maxima of m, x and y, from 0
    for e in range(LANES):
        base = e * _QL
        w = load(wp, e * LANES)
        c = load(cp, base + _QC)
        d = load(cp, base + _QD)
        mo = load(cp, base + _QM)
        xo = load(cp, base + _QX)
        yo = load(cp, base + _QY)
        mn = b.fmul(w, b.fadd(beg, b.fmul(inv, dg)))
        xn = b.fmul(inv, b.fadd(b.fmul(a, b.fadd(mo, yo)), b.fmul(bb, xo)))
        yn = b.fadd(b.fmul(c, b.fadd(ml, xl)), b.fmul(d, yl))
        store(mn, cp, base + _QM)
        store(xn, cp, base + _QX)
        store(yn, cp, base + _QY)
        dg = b.fadd(b.fadd(mo, xo), yo)
        sm = b.fadd(sm, mn)
        vals = (mn, xn, yn)
        if tail:  # the row's sum and maximum stop at column j0 + n
            keep = b.icmp_signed(">", n_, ir.Constant(_i64, e))
            sm_out = b.select(keep, sm, sm_out)
            vals = tuple(b.select(keep, v, zero) for v in vals)
        else:
            sm_out = sm
        tops = [_vmax(b, v, t) for v, t in zip(vals, tops, strict=True)]
        ml, xl, yl = mn, xn, yn
    # max(t, m, x, y) in any order: the sequential ``v if v > t else t`` of the three per
    # cell keeps the largest value but NaNs, and so do these (every chain starts >= 0)
    for t in tops:
        top = _vmax(b, t, top)
    for k, v in ((_ML, ml), (_XL, xl), (_YL, yl), (_DG, dg), (_SUM, sm_out), (_TOP, top)):
        store(v, stp, k)


@intrinsic
def _sweep16(typingctx, S, W, st, j0, n, a, b):  # noqa: ANN001, ANN201, ARG001
    """The recurrences of columns ``j0 + 1 .. j0 + 16`` of one row, 16 lanes (``n`` unused).

    ``S`` (float32): column blocks of ``_QL`` floats (block j: C, D and the M, X, Y of the
    previous row at column j, which this row's values overwrite), ``W`` (float32 (256,)): the
    16 columns' match weights, lane-major, ``st`` (float32 (``_NST``,)): the row state slots,
    read at entry and written back; ``a``, ``b``: the row's float32 query gap factors. Straight
    LLVM IR on ``<16 x float>``: the previous column's values, the diagonal, the running sum and
    the maxima stay in registers from column to column.
    """
    sig = types.void(S, W, st, j0, n, a, b)
    return sig, _sweep_codegen(False)


@intrinsic
def _sweep_tail(typingctx, S, W, st, j0, n, a, b):  # noqa: ANN001, ANN201, ARG001
    """:func:`_sweep16` for the row's last ``n`` (< 16) columns: all 16 columns are computed
    (past the group's longest target: zero weights and gap factors) but the sum and maximum
    written back are those of columns up to ``j0 + n``."""
    sig = types.void(S, W, st, j0, n, a, b)
    return sig, _sweep_codegen(True)


@intrinsic
def _frexp_exponent(typingctx, x):  # noqa: ANN001, ANN201, ARG001
    """``math.frexp(x)[1]`` of a float32 ``x > 0`` (0 for +inf, as C's ``frexpf``): from the
    exponent bits of ``x`` as a float64 (every float32, subnormals included, is normal there)."""
    if x != types.float32:
        return None

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
        b = builder
        bits = b.bitcast(b.fpext(args[0], ir.DoubleType()), _i64)
        e = b.and_(b.lshr(bits, ir.Constant(_i64, 52)), ir.Constant(_i64, 2047))
        return b.select(b.icmp_signed("==", e, ir.Constant(_i64, 2047)), ir.Constant(_i64, 0),
                        b.sub(e, ir.Constant(_i64, 1022)))

    return types.int64(x), codegen


@intrinsic
def _pow2(typingctx, n):  # noqa: ANN001, ANN201, ARG001
    """``math.ldexp(1.0, n)`` for an integer ``n <= 1023``, but 0 below -1022 (where ldexp's
    subnormal results still become 0 as float32): built from the exponent bits."""
    if not isinstance(n, types.Integer):
        return None

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        b = builder
        v = context.cast(b, args[0], signature.args[0], types.int64)
        x = b.bitcast(b.shl(b.add(v, ir.Constant(_i64, 1023)), ir.Constant(_i64, 52)),
                      ir.DoubleType())
        return b.select(b.icmp_signed("<", v, ir.Constant(_i64, -1022)),
                        ir.Constant(ir.DoubleType(), 0.0), x)

    return types.float64(n), codegen


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
    W = np.zeros(LANES * LANES, dtype=np.float32)
    st = np.zeros(_NST, dtype=np.float32)
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
        st[_INV + u] = 1.0
        st[_BEG + u] = 1.0
    E = np.zeros(LANES, dtype=np.int64)  # the row's scale is 2**E (E >= 0)
    acc = np.ones(LANES, dtype=np.float64)  # Z so far / 2**E (the 1: the empty alignment)
    xaddr = X.ctypes.data
    xrow = X.strides[0]
    # subnormals cost ~100 cycles an instruction on x86 and the DP's tails meet them (a quarter
    # of the forward's time on real candidates): flush them (module docstring); every
    # allocation is above, so nothing raises before the register is restored
    mxcsr = get_mxcsr()
    set_mxcsr(np.uint32(mxcsr | FTZ_DAZ))
    for i in range(lq):
        a = qa[i]
        b = qb[i]
        xr = X[i]
        r = R[i]
        ahead = xaddr + (i + _AHEAD) * xrow if i + _AHEAD < lq else 0
        for q in range(_ML, _NST):  # column 0: no state, sums and maxima from 0
            st[q] = f0
        for j0 in range(0, T, LANES):
            if ahead:  # these columns of a later row into cache (X streams from memory)
                for u in range(LANES):
                    if j0 < glens[u]:
                        p = ahead + (gstarts[u] + j0) * 4
                        prefetch(p)
                        prefetch(p + 4 * (LANES - 1))
            # W = X * R[code] of 16 columns (transpose + lookup), then the recurrences
            pack_lanes16(W, 0, LANES, xr, gstarts, glens, j0, r, gcode, j0 * LANES, f0)
            if j0 + LANES <= T:
                _sweep16(S, W, st, j0, LANES, a, b)
            else:
                _sweep_tail(S, W, st, j0, T - j0, a, b)
        # the row's scale step per lane; math.frexp / math.ldexp's results without their calls
        # (|kk| <= 149: 2**-kk is exact, and a product by it rounds once, as ldexp does)
        for u in range(LANES):
            top = st[_TOP + u]
            kk = 0
            if top > f0:
                kk = _frexp_exponent(top)  # top * 2**-kk in [0.5, 1)
                if E[u] + kk < 0:
                    kk = -E[u]  # never scale up past 1: the begin weight stays <= 1
            acc[u] = (acc[u] + st[_SUM + u]) * _pow2(-kk)
            E[u] += kk
            st[_INV + u] = _pow2(-kk)
            st[_BEG + u] = _pow2(-E[u])
    set_mxcsr(mxcsr)
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
