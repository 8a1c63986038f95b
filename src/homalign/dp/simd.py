"""Explicit 16-lane vector code that LLVM does not find by itself, as numba intrinsics.

numba has no vector types and LLVM's vectorisers do not turn a transposition or a small table
lookup into shuffles. These intrinsics emit them directly (LLVM IR through llvmlite):
:func:`pack_lanes16` (and ``pack_lanes16_at``, reading by address) fills 16 columns of a
lane-major buffer from 16 row segments (masked loads, a 16 x 16 transpose in four shuffle
stages) and multiplies each column by a table lookup (:func:`permute32`: ``vpermi2ps`` on
AVX-512, four ``vpermps`` and three selects on AVX2, a masked gather elsewhere);
:func:`lookup_lanes16` fills them from 16 per-lane table rows indexed by per-lane codes (a
substitution matrix row per query residue, the target's codes). Values are moved, or multiplied
once in float32, so the results are bit-identical to the scalar loops they replace (tests check
it).
"""

from __future__ import annotations

import platform

import llvmlite.binding as llb
import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["FTZ_DAZ", "PERMUTE_TABLE", "TABLE", "V16B", "V16F", "V16I", "array_data", "column_loop",
           "get_mxcsr", "host_has", "lookup_lanes16", "pack_lanes16", "pack_lanes16_at",
           "permute32", "SWEEP_WIDTH",
           "set_mxcsr", "splat", "transpose16", "vload", "vmax", "vstore"]

_N = 16
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")
FTZ_DAZ = 0x8040
"""MXCSR bits: flush subnormal results to zero, treat subnormal inputs as zero. x86 cores take
~100 cycles for an instruction that meets a subnormal float; probability-space DP tails meet them
all the time. A kernel sets them with :func:`set_mxcsr` and restores the old value before
returning (nothing that can raise in between)."""
TABLE = 32  # entries of the lookup table per row (permute32: two vectors of 16)


def host_has(*features: str) -> bool:
    """Whether the CPU numba compiles for has every one of ``features`` (LLVM's names, e.g.
    ``"avx2"``, ``"avx512bw"``); False for a named or generic target (``NUMBA_CPU_NAME``: no
    x86 intrinsics are emitted) and where the host's features cannot be queried (non-x86)."""
    if numba.config.CPU_NAME not in (None, "host"):
        return False
    try:
        have = llb.get_host_cpu_features()
    except Exception:  # noqa: BLE001 - no feature query (non-x86): the generic paths
        return False
    return all(bool(have.get(f, False)) for f in features)


#: whether a 32-entry table lookup is register permutes (:func:`permute32`: AVX-512 or AVX2)
#: rather than a masked gather (LLVM scalarises a gather on AMD cores: 16 extracts, loads and
#: inserts, which made the AVX2 forward's packing cost more than its recurrences)
_AVX512 = host_has("avx512f")
PERMUTE_TABLE = _AVX512 or host_has("avx2")
#: lanes a DP sweep computes at once: one <16 x float> register on AVX-512; elsewhere the 16
#: lanes run as two halves of 8, one after the other, because a column's dozen carried values
#: as <16 x float> pairs do not fit in AVX2's sixteen registers (the spills took most of the
#: forward's time there); a lane's arithmetic is the same either way
SWEEP_WIDTH = _N if _AVX512 else _N // 2

_f32 = ir.FloatType()
_i32 = ir.IntType(32)
_i64 = ir.IntType(64)
_V = ir.VectorType(_f32, _N)
_VI = ir.VectorType(_i32, _N)
_VB = ir.VectorType(ir.IntType(1), _N)
#: the IR vector types of the 16-lane float32 kernels: values, int32 indices, masks
V16F, V16I, V16B = _V, _VI, _VB


# --- IR building blocks of the lane kernels (dp.forward_batch, dp.lanes, dp.lanes_int,
# dp.posterior_batch): written once here
def array_data(context, builder, ty, val):  # noqa: ANN001, ANN201
    """The data pointer of the numba array ``val`` of type ``ty``."""
    return context.make_array(ty)(context, builder, val).data


def _offset(off):  # noqa: ANN001, ANN202
    return off if isinstance(off, ir.Value) else ir.Constant(_i64, int(off))


def vload(builder, ptr, off, lanes: int, align: int):  # noqa: ANN001, ANN201
    """The ``<lanes x T>`` vector at element offset ``off`` (an int or an i64 value) of the
    ``T`` pointer ``ptr``, loaded with alignment ``align`` bytes."""
    vt = ir.VectorType(ptr.type.pointee, lanes)
    return builder.load(builder.bitcast(builder.gep(ptr, [_offset(off)]), vt.as_pointer()),
                        align=align)


def vstore(builder, val, ptr, off, align: int) -> None:  # noqa: ANN001
    """Store the vector ``val`` at element offset ``off`` of ``ptr`` (alignment ``align``)."""
    builder.store(val, builder.bitcast(builder.gep(ptr, [_offset(off)]), val.type.as_pointer()),
                  align=align)


def splat(builder, x, vtype):  # noqa: ANN001, ANN201
    """A ``vtype`` vector with every element ``x`` (an integer wider than the element is
    truncated)."""
    if x.type != vtype.element:
        x = builder.trunc(x, vtype.element)
    undef = ir.Constant(vtype, ir.Undefined)
    v = builder.insert_element(undef, x, ir.Constant(_i32, 0))
    mask = ir.Constant(ir.VectorType(_i32, vtype.count), [0] * vtype.count)
    return builder.shuffle_vector(v, undef, mask)


def vmax(builder, v, t):  # noqa: ANN001, ANN201
    """``v if v > t else t`` per lane (``t`` where either is NaN), as the scalar kernels write
    it."""
    return builder.select(builder.fcmp_ordered(">", v, t), v, t)


def permute32(builder, lo, hi, idx):  # noqa: ANN001, ANN201
    """IR: the 16 values ``table[idx[u]]`` of a 32-entry float32 table held in two
    ``<16 x float>`` vectors ``lo`` (entries 0-15) and ``hi`` (16-31), ``idx`` a ``<16 x i32>``
    of values below 32 (only where :data:`PERMUTE_TABLE`). AVX-512: one ``vpermi2ps``. AVX2:
    per half of 8 lanes, ``vpermps`` of each quarter of the table by the index's low three bits,
    then two selects by bit 3 and one by bit 4. Values are moved, never computed."""
    mod = builder.module
    if _AVX512:
        perm = cgutils.get_or_insert_function(
            mod, ir.FunctionType(_V, [_V, _VI, _V]), "llvm.x86.avx512.vpermi2var.ps.512")
        return builder.call(perm, [lo, idx, hi])
    v8, i8 = ir.VectorType(_f32, 8), ir.VectorType(_i32, 8)
    perm = cgutils.get_or_insert_function(mod, ir.FunctionType(v8, [v8, i8]),
                                          "llvm.x86.avx2.permps")

    def half(v, h):  # noqa: ANN001, ANN202
        return builder.shuffle_vector(v, v, ir.Constant(i8, list(range(8 * h, 8 * h + 8))))

    quarters = [half(lo, 0), half(lo, 1), half(hi, 0), half(hi, 1)]
    zero = ir.Constant(i8, [0] * 8)
    out = []
    for h in range(2):
        ix = half(idx, h)
        p = [builder.call(perm, [t, ix]) for t in quarters]
        b3 = builder.icmp_signed("!=", builder.and_(ix, ir.Constant(i8, [8] * 8)), zero)
        b4 = builder.icmp_signed("!=", builder.and_(ix, ir.Constant(i8, [16] * 8)), zero)
        out.append(builder.select(b4, builder.select(b3, p[3], p[2]),
                                  builder.select(b3, p[1], p[0])))
    return builder.shuffle_vector(out[0], out[1], ir.Constant(_VI, list(range(_N))))


def column_loop(builder, name, start, stop, step, carry_in, column):  # noqa: ANN001, ANN201, PLR0913
    """IR: ``for jj in range(start, stop, step)`` (i64 values; ``stop - start`` a multiple of
    ``step`` unless ``step`` is 1) calling ``column(jj + k, *carried)`` for k < step, the
    carried vectors in phis (registers), skipped when ``start >= stop``. Returns ``(j, carried)``
    after the loop: where it stopped and the values it carries out."""
    b = builder
    i64 = ir.IntType(64)
    pre = b.block
    body = b.append_basic_block(f"{name}.body")
    done = b.append_basic_block(f"{name}.done")
    b.cbranch(b.icmp_signed("<", start, stop), body, done)
    b.position_at_end(body)
    jj = b.phi(i64)
    cs = [b.phi(c.type) for c in carry_in]
    cur = list(cs)
    for k in range(step):
        cur = list(column(b.add(jj, ir.Constant(i64, k)), *cur))
    jn = b.add(jj, ir.Constant(i64, step))
    end = b.block
    jj.add_incoming(start, pre)
    jj.add_incoming(jn, end)
    for p, c0, c1 in zip(cs, carry_in, cur, strict=True):
        p.add_incoming(c0, pre)
        p.add_incoming(c1, end)
    b.cbranch(b.icmp_signed("<", jn, stop), body, done)
    b.position_at_end(done)
    outs = []
    for c0, c1 in zip(carry_in, cur, strict=True):
        p = b.phi(c0.type)
        p.add_incoming(c0, pre)
        p.add_incoming(c1, end)
        outs.append(p)
    jout = b.phi(i64)
    jout.add_incoming(start, pre)
    jout.add_incoming(jn, end)
    return jout, outs


class _VecGEP(ir.Instruction):
    """``getelementptr float, ptr base, <16 x i32> idx`` (llvmlite's gep takes no vectors)."""

    def __init__(self, parent, ptr, idx, name=""):  # noqa: ANN001
        super().__init__(parent, ir.VectorType(ptr.type, _N), "getelementptr", [ptr, idx],
                         name=name)

    def descr(self, buf):  # noqa: ANN001, ANN201
        p, i = self.operands
        buf.append(f"getelementptr float, {p.type} {p.get_reference()}, "
                   f"{i.type} {i.get_reference()}\n")


def transpose16(builder, rows):  # noqa: ANN001, ANN202
    """LLVM IR (for intrinsics): 16 vectors rows[u][e] -> cols[e][u] of 16 elements each; stage
    k swaps bit k of the row and column index."""
    rows = list(rows)
    for k in range(4):
        b = 1 << k
        lo = ir.Constant(_VI, [c if not c & b else _N + c - b for c in range(_N)])
        hi = ir.Constant(_VI, [c + b if not c & b else _N + c for c in range(_N)])
        out = list(rows)
        for i in range(_N):
            if not i & b:
                out[i] = builder.shuffle_vector(rows[i], rows[i + b], lo)
                out[i + b] = builder.shuffle_vector(rows[i], rows[i + b], hi)
        rows = out
    return rows


def _pack_codegen(by_address: bool):  # noqa: ANN202
    """The body of pack_lanes16 (``by_address``: ``starts`` are byte addresses of float32
    data and ``src`` is not used)."""

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        dst_, doff_, dstride_, src_, starts_, lens_, j0_, table_, codes_, coff_, fill_ = args
        tys = signature.args

        def data(k, v):  # noqa: ANN001, ANN202
            return context.make_array(tys[k])(context, builder, v).data

        dptr, sptr, stp, lnp, tptr, cptr = (data(0, dst_), data(3, src_), data(4, starts_),
                                            data(5, lens_), data(7, table_), data(8, codes_))
        mod = builder.module
        mload = cgutils.get_or_insert_function(
            mod, ir.FunctionType(_V, [sptr.type, _i32, _VB, _V]), "llvm.masked.load.v16f32.p0")
        zero = ir.Constant(_V, [0.0] * _N)
        fillv = builder.insert_element(ir.Constant(_V, ir.Undefined), fill_, ir.Constant(_i32, 0))
        fillv = builder.shuffle_vector(fillv, ir.Constant(_V, ir.Undefined),
                                       ir.Constant(_VI, [0] * _N))
        iota = ir.Constant(_VI, list(range(_N)))
        undef_vi = ir.Constant(_VI, ir.Undefined)
        splat0 = ir.Constant(_VI, [0] * _N)
        rows = []
        for u in range(_N):
            s = builder.load(builder.gep(stp, [ir.Constant(_i64, u)]))
            n = builder.load(builder.gep(lnp, [ir.Constant(_i64, u)]))
            rem = builder.sub(n, j0_)  # values of lane u from j0 on (may be <= 0)
            rem = builder.select(builder.icmp_signed("<", rem, ir.Constant(_i64, 0)),
                                 ir.Constant(_i64, 0), rem)
            rem = builder.select(builder.icmp_signed(">", rem, ir.Constant(_i64, _N)),
                                 ir.Constant(_i64, _N), rem)
            remv = builder.insert_element(undef_vi, builder.trunc(rem, _i32),
                                          ir.Constant(_i32, 0))
            remv = builder.shuffle_vector(remv, undef_vi, splat0)
            mask = builder.icmp_signed("<", iota, remv)
            if by_address:
                base = builder.inttoptr(s, sptr.type)
                p = builder.gep(base, [j0_])
            else:
                p = builder.gep(sptr, [builder.add(s, j0_)])
            rows.append(builder.call(mload, [p, ir.Constant(_i32, 4), mask, fillv]))
        cols = transpose16(builder, rows)
        if PERMUTE_TABLE:
            t_lo = builder.load(builder.bitcast(tptr, _V.as_pointer()), align=4)
            t_hi = builder.load(builder.bitcast(builder.gep(tptr, [ir.Constant(_i64, _N)]),
                                                _V.as_pointer()), align=4)
        else:
            gather = cgutils.get_or_insert_function(
                mod, ir.FunctionType(_V, [ir.VectorType(tptr.type, _N), _i32, _VB, _V]),
                "llvm.masked.gather.v16f32.v16p0")
            all_on = ir.Constant(_VB, [1] * _N)
        for e in range(_N):
            ip = builder.gep(cptr, [builder.add(coff_, ir.Constant(_i64, e * _N))])
            idx = builder.load(builder.bitcast(ip, _VI.as_pointer()), align=4)
            if PERMUTE_TABLE:
                tv = permute32(builder, t_lo, t_hi, idx)
            else:
                g = _VecGEP(builder.block, tptr, idx, name="tab")
                builder._insert(g)
                tv = builder.call(gather, [g, ir.Constant(_i32, 4), all_on, zero])
            w = builder.fmul(cols[e], tv)
            op = builder.gep(dptr, [builder.add(doff_, builder.mul(dstride_,
                                                                   ir.Constant(_i64, e)))])
            builder.store(w, builder.bitcast(op, _V.as_pointer()), align=4)
        return context.get_dummy_value()

    return codegen


@intrinsic
def pack_lanes16(typingctx, dst, doff, dstride, src, starts, lens, j0, table, codes, coff, fill):  # noqa: ANN001, ANN201, ARG001, E501
    """For e, u < 16: ``dst[doff + e * dstride + u] = v * table[codes[coff + 16 e + u]]`` with
    ``v = src[starts[u] + j0 + e]`` if ``j0 + e < lens[u]`` else ``fill`` (float32; that
    element of ``src`` is not read).

    ``dst``, ``src``, ``table``: float32; ``starts``/``lens``: int64 (16,); ``codes``: int32 with
    every entry < TABLE and ``table`` at least TABLE long from its start; offsets int64. The 16
    destination rows must not overlap the sources.
    """
    sig = types.void(dst, doff, dstride, src, starts, lens, j0, table, codes, coff, fill)
    return sig, _pack_codegen(False)


@intrinsic
def pack_lanes16_at(typingctx, dst, doff, dstride, src, addrs, lens, j0, table, codes, coff, fill):  # noqa: ANN001, ANN201, ARG001, E501
    """:func:`pack_lanes16` with lane ``u`` read from the float32 data at byte address
    ``addrs[u]`` (int64) instead of ``src[starts[u]:]`` (``src``: any float32 array, unused).
    The caller keeps the arrays behind the addresses alive."""
    sig = types.void(dst, doff, dstride, src, addrs, lens, j0, table, codes, coff, fill)
    return sig, _pack_codegen(True)


@intrinsic
def lookup_lanes16(typingctx, dst, doff, dstride, table, rows, codes, starts, lens, j0, pad):  # noqa: ANN001, ANN201, ARG001, E501
    """For e, u < 16: ``dst[doff + e * dstride + u] = table[rows[u] + c]`` with ``c =
    codes[starts[u] + j0 + e]`` if ``j0 + e < lens[u]`` else ``pad`` (that code not read).

    A per-lane row of TABLE (32) entries of ``table`` (float32) indexed by the lane's codes
    (int32, < 32): :func:`permute32` per lane (a masked gather without AVX2), then the 16 x 16
    transpose into lane-major columns. ``rows``: int32 (16,) offsets into ``table``;
    ``starts``/``lens``: int64 (16,); ``j0``: int64; ``pad``: int32.
    """
    sig = types.void(dst, doff, dstride, table, rows, codes, starts, lens, j0, pad)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        dst_, doff_, dstride_, table_, rows_, codes_, starts_, lens_, j0_, pad_ = args
        tys = signature.args

        def data(k, v):  # noqa: ANN001, ANN202
            return context.make_array(tys[k])(context, builder, v).data

        dptr, tptr, rptr, cptr, stp, lnp = (data(0, dst_), data(3, table_), data(4, rows_),
                                            data(5, codes_), data(6, starts_), data(7, lens_))
        mod = builder.module
        mload = cgutils.get_or_insert_function(
            mod, ir.FunctionType(_VI, [cptr.type, _i32, _VB, _VI]), "llvm.masked.load.v16i32.p0")
        undef_vi = ir.Constant(_VI, ir.Undefined)
        splat0 = ir.Constant(_VI, [0] * _N)
        padv = builder.shuffle_vector(
            builder.insert_element(undef_vi, pad_, ir.Constant(_i32, 0)), undef_vi, splat0)
        iota = ir.Constant(_VI, list(range(_N)))
        if not PERMUTE_TABLE:
            gather = cgutils.get_or_insert_function(
                mod, ir.FunctionType(_V, [ir.VectorType(tptr.type, _N), _i32, _VB, _V]),
                "llvm.masked.gather.v16f32.v16p0")
            all_on = ir.Constant(_VB, [1] * _N)
            zero = ir.Constant(_V, [0.0] * _N)
        vals = []
        for u in range(_N):
            s = builder.load(builder.gep(stp, [ir.Constant(_i64, u)]))
            n = builder.load(builder.gep(lnp, [ir.Constant(_i64, u)]))
            rem = builder.sub(n, j0_)
            rem = builder.select(builder.icmp_signed("<", rem, ir.Constant(_i64, 0)),
                                 ir.Constant(_i64, 0), rem)
            rem = builder.select(builder.icmp_signed(">", rem, ir.Constant(_i64, _N)),
                                 ir.Constant(_i64, _N), rem)
            remv = builder.shuffle_vector(
                builder.insert_element(undef_vi, builder.trunc(rem, _i32), ir.Constant(_i32, 0)),
                undef_vi, splat0)
            mask = builder.icmp_signed("<", iota, remv)
            c = builder.call(mload, [builder.gep(cptr, [builder.add(s, j0_)]),
                                     ir.Constant(_i32, 4), mask, padv])
            row = builder.sext(builder.load(builder.gep(rptr, [ir.Constant(_i64, u)])), _i64)
            rp = builder.gep(tptr, [row])
            if PERMUTE_TABLE:
                lo = builder.load(builder.bitcast(rp, _V.as_pointer()), align=4)
                hi = builder.load(builder.bitcast(builder.gep(rp, [ir.Constant(_i64, _N)]),
                                                  _V.as_pointer()), align=4)
                vals.append(permute32(builder, lo, hi, c))
            else:
                g = _VecGEP(builder.block, rp, c, name="tab")
                builder._insert(g)
                vals.append(builder.call(gather, [g, ir.Constant(_i32, 4), all_on, zero]))
        cols = transpose16(builder, vals)
        for e in range(_N):
            op = builder.gep(dptr, [builder.add(doff_, builder.mul(dstride_,
                                                                   ir.Constant(_i64, e)))])
            builder.store(cols[e], builder.bitcast(op, _V.as_pointer()), align=4)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def prefetch(typingctx, addr):  # noqa: ANN001, ANN201, ARG001
    """Hint the cache line at byte address ``addr`` (int64) into cache (``llvm.prefetch``, read,
    locality 3): no effect on any value."""
    sig = types.void(types.int64)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
        i8p = ir.IntType(8).as_pointer()
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, _i32, _i32, _i32]),
            "llvm.prefetch.p0i8")
        ptr = builder.inttoptr(args[0], i8p)
        builder.call(fn, [ptr, ir.Constant(_i32, 0), ir.Constant(_i32, 3), ir.Constant(_i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def get_mxcsr(typingctx):  # noqa: ANN001, ANN201, ARG001
    """The x86 MXCSR register (0 elsewhere)."""

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
        if not _X86:
            return ir.Constant(ir.IntType(32), 0)
        i8p = ir.IntType(8).as_pointer()
        slot = cgutils.alloca_once(builder, ir.IntType(32))
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p]), "llvm.x86.sse.stmxcsr")
        builder.call(fn, [builder.bitcast(slot, i8p)])
        return builder.load(slot)

    return types.uint32(), codegen


@intrinsic
def set_mxcsr(typingctx, value):  # noqa: ANN001, ANN201, ARG001
    """Load the x86 MXCSR register (nothing elsewhere)."""
    if value != types.uint32:
        return None

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        if _X86:
            i8p = ir.IntType(8).as_pointer()
            slot = cgutils.alloca_once(builder, ir.IntType(32))
            builder.store(args[0], slot)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [i8p]), "llvm.x86.sse.ldmxcsr")
            builder.call(fn, [builder.bitcast(slot, i8p)])
        return context.get_dummy_value()

    return types.void(types.uint32), codegen
