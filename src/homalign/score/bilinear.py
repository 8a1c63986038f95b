"""The bilinear term of the learned scores for one query against many targets, ``A E^T``, and its
``exp``.

The learned ranking score of a query against a target is a forward score over
``S[i, j] = A[i] . e_j + (residue table terms)``, with ``A = e W`` the query's transformed
embeddings (Lq, d) and ``e_j`` the target's stored per-residue embeddings
(:mod:`homalign.model.ranking`). For targets packed side by side (``E``, (N, d)) the first term
is one matrix product and the DP's match weights are its ``exp``: :func:`bilinear_exp`.

The product is a register-tiled kernel in LLVM IR (numba intrinsics, as the DP kernels of
:mod:`homalign.dp` are written): 32 columns of ``E`` at a time are transposed into a contiguous
(d, 32) panel, :data:`PANELS` panels at a time, and each tile of 4 rows by 32 columns keeps
eight ``<16 x float>`` accumulators in registers while ``k`` runs over the d dimensions (per
step two panel loads, four broadcasts of ``A`` and eight ``llvm.fma``); the tile's ``exp`` is
taken in registers before it is stored. Without AVX-512 a ``<16 x float>`` is two 8-lane
registers and the 4-row tile's accumulators alone fill all 16, so a tile is 2 rows there (its
product a third faster on an AVX2 EPYC; the same bits, each element's chain is the same).
Every output element is the same chain ``fma(A[i, d-1], E[j, d-1], ... fma(A[i, 0], E[j, 0],
0))`` whatever tile or batch it falls in (a column tail is zero-padded in the panel and masked
at the store; a whole tile stores plainly, as AMD cores microcode masked stores: a third of the
product's time on an AVX2 EPYC), so a target's scores never depend on the other targets: one
call covers them all (the same bits as OpenBLAS's one-thread product here, ~140 GFLOPS on one
core; BLAS over a whole batch rounds a small block with other kernels, so it would need one
call per target). The ``exp`` (:func:`exp_inplace` for a whole array) is Cephes' expf:
``exp(x) = 2**n exp(r)``, ``r = x - n ln 2`` with ln 2 in two parts, a degree-7 polynomial
through ``llvm.fma``; within 1.3 ulp of the exact value on [-87, 88] (numpy's float32 ``exp``
is within 2.4), about 3x numpy's speed.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from homalign.dp.simd import V16B as _VB
from homalign.dp.simd import V16F as _V
from homalign.dp.simd import V16I as _VI
from homalign.dp.simd import array_data, host_has, splat

__all__ = ["EXP_MAX", "EXP_MIN", "bilinear_exp", "exp_inplace"]

_N = 16
_i32 = ir.IntType(32)
_i64 = ir.IntType(64)


# Cephes expf: exp(x) = 2**n exp(r), r = x - n ln 2 (ln 2 in two parts), exp(r) by a degree-7
# polynomial 1 + r + r**2 (P5 + r (P4 + ... r P0))
_LOG2E = 1.44269504088896341
_C1 = 0.693359375
_C2 = -2.12194440e-4
_P = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
      5.0000001201e-1)
EXP_MIN = -87.0  # inputs are clamped to [EXP_MIN, EXP_MAX]: 2**n stays a normal float
EXP_MAX = 88.0


def _vexp(b, x):  # noqa: ANN001, ANN202
    """IR: exp of the <16 x float> ``x`` (Cephes expf, inputs clamped to [EXP_MIN, EXP_MAX])."""
    mod = b.module
    fma = cgutils.get_or_insert_function(mod, ir.FunctionType(_V, [_V, _V, _V]),
                                         "llvm.fma.v16f32")
    rint = cgutils.get_or_insert_function(mod, ir.FunctionType(_V, [_V]), "llvm.rint.v16f32")
    c = lambda v: ir.Constant(_V, [float(v)] * _N)  # noqa: E731
    x = b.select(b.fcmp_ordered("<", x, c(EXP_MIN)), c(EXP_MIN), x)
    x = b.select(b.fcmp_ordered(">", x, c(EXP_MAX)), c(EXP_MAX), x)
    nf = b.call(rint, [b.fmul(x, c(_LOG2E))])
    r = b.call(fma, [nf, c(-_C1), x])
    r = b.call(fma, [nf, c(-_C2), r])
    p = c(_P[0])
    for coef in _P[1:]:
        p = b.call(fma, [p, r, c(coef)])
    y = b.call(fma, [p, b.fmul(r, r), b.fadd(r, c(1.0))])
    e = b.shl(b.add(b.fptosi(nf, _VI), ir.Constant(_VI, [127] * _N)),
              ir.Constant(_VI, [23] * _N))
    return b.fmul(y, b.bitcast(e, _V))


def _masked(b, ptr_type):  # noqa: ANN001, ANN202
    """(masked load, masked store) of <16 x float> through ``ptr_type``."""
    mod = b.module
    mload = cgutils.get_or_insert_function(
        mod, ir.FunctionType(_V, [ptr_type, _i32, _VB, _V]), "llvm.masked.load.v16f32.p0")
    mstore = cgutils.get_or_insert_function(
        mod, ir.FunctionType(ir.VoidType(), [_V, ptr_type, _i32, _VB]),
        "llvm.masked.store.v16f32.p0")
    return mload, mstore


def _exp_codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
    b = builder
    buf_, start_, n_ = args
    bp = b.gep(array_data(context, b, signature.args[0], buf_), [start_])
    mload, mstore = _masked(b, bp.type)
    iota = ir.Constant(_VI, list(range(_N)))
    zero = ir.Constant(_V, [0.0] * _N)
    pre = b.block
    body = b.append_basic_block("exp.body")
    done = b.append_basic_block("exp.done")
    b.cbranch(b.icmp_signed(">", n_, ir.Constant(_i64, 0)), body, done)
    b.position_at_end(body)
    k = b.phi(_i64)
    rem = b.trunc(b.sub(n_, k), _i32)
    mask = b.icmp_signed("<", iota, splat(b, rem, _VI))
    ptr = b.gep(bp, [k])
    v = b.call(mload, [ptr, ir.Constant(_i32, 4), mask, zero])
    b.call(mstore, [_vexp(b, v), ptr, ir.Constant(_i32, 4), mask])
    kn = b.add(k, ir.Constant(_i64, _N))
    k.add_incoming(ir.Constant(_i64, 0), pre)
    k.add_incoming(kn, body)
    b.cbranch(b.icmp_signed("<", kn, n_), body, done)
    b.position_at_end(done)
    return context.get_dummy_value()


ROWS = 4 if host_has("avx512f") else 2  # rows of a product tile (see the module docstring)
COLS = 32  # columns of a product tile (two vectors of 16): the panel's width


def _tile_codegen(rows: int, exp: bool):  # noqa: ANN202
    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        b = builder
        A_, P_, out_, i_, j_, d_, n_ = args
        tys = signature.args
        ap = array_data(context, b, tys[0], A_)
        pp = array_data(context, b, tys[1], P_)
        op = array_data(context, b, tys[2], out_)
        fma = cgutils.get_or_insert_function(b.module, ir.FunctionType(_V, [_V, _V, _V]),
                                             "llvm.fma.v16f32")
        _, mstore = _masked(b, op.type)
        i64 = lambda x: ir.Constant(_i64, x)  # noqa: E731
        zero = ir.Constant(_V, [0.0] * _N)
        iota = ir.Constant(_VI, list(range(_N)))
        rem = b.trunc(b.sub(n_, j_), _i32)  # columns left from j (>= 1)
        masks = [b.icmp_signed("<", b.add(iota, splat(b, ir.Constant(_i32, h * _N), _VI)),
                               splat(b, rem, _VI)) for h in range(2)]
        arows = [b.gep(ap, [b.mul(b.add(i_, i64(r)), d_)]) for r in range(rows)]
        pre = b.block
        body = b.append_basic_block("k.body")
        done = b.append_basic_block("k.done")
        b.branch(body)
        b.position_at_end(body)
        k = b.phi(_i64)
        acc = [[b.phi(_V) for _ in range(2)] for _ in range(rows)]
        prow = b.gep(pp, [b.mul(k, i64(COLS))])
        pv = [b.load(b.bitcast(b.gep(prow, [i64(h * _N)]), _V.as_pointer()), align=4)
              for h in range(2)]
        new = []
        for r in range(rows):
            a = splat(b, b.load(b.gep(arows[r], [k])), _V)
            new.append([b.call(fma, [a, pv[h], acc[r][h]]) for h in range(2)])
        kn = b.add(k, i64(1))
        end = b.block
        k.add_incoming(i64(0), pre)
        k.add_incoming(kn, end)
        for r in range(rows):
            for h in range(2):
                acc[r][h].add_incoming(zero, pre)
                acc[r][h].add_incoming(new[r][h], end)
        b.cbranch(b.icmp_signed("<", kn, d_), body, done)
        b.position_at_end(done)
        vals = [[_vexp(b, new[r][h]) if exp else new[r][h] for h in range(2)]
                for r in range(rows)]
        orows = [b.gep(op, [b.add(b.mul(b.add(i_, i64(r)), n_), j_)]) for r in range(rows)]
        # a whole tile stores plainly: masked stores are microcoded on AMD cores
        with b.if_else(b.icmp_signed(">=", rem, ir.Constant(_i32, COLS))) as (whole, tail):
            with whole:
                for r in range(rows):
                    for h in range(2):
                        b.store(vals[r][h], b.bitcast(b.gep(orows[r], [i64(h * _N)]),
                                                      _V.as_pointer()), align=4)
            with tail:
                for r in range(rows):
                    for h in range(2):
                        b.call(mstore, [vals[r][h], b.gep(orows[r], [i64(h * _N)]),
                                        ir.Constant(_i32, 4), masks[h]])
        return context.get_dummy_value()

    return codegen


def _tile_intrinsic(rows: int, exp: bool):  # noqa: ANN202
    def typer(typingctx, A, P, out, i, j, d, n):  # noqa: ANN001, ANN202, ARG001, PLR0913
        if not all(isinstance(x, types.Array) and x.dtype == types.float32 and x.ndim == 1
                   for x in (A, P, out)):
            return None
        i64 = types.int64
        return types.void(A, P, out, i64, i64, i64, i64), _tile_codegen(rows, exp)

    return intrinsic(typer)


_tileR = _tile_intrinsic(ROWS, False)
_tile1 = _tile_intrinsic(1, False)
_tileR_exp = _tile_intrinsic(ROWS, True)
_tile1_exp = _tile_intrinsic(1, True)


PANELS = 32  # column panels transposed at a time (32 x 32 columns: 128 KB at d = 32)


@njit(cache=True, nogil=True)
def _product(A, E, out, lq, d, n, exp):  # noqa: ANN001, ANN201, PLR0913
    """``out = A E^T`` (or its exp), flat row-major buffers: A (lq, d), E (n, d), out (lq, n).
    Column panels of COLS: E's rows j .. j + 31 transposed into a contiguous (d, 32) panel
    (zeros past n), PANELS of them at a time, then every row tile of ROWS against those panels
    (a tile's stores then run along its rows for PANELS x 32 columns, not one panel: a fifth
    less time at Lq ~ 110 against ~25,000 columns)."""
    size = d * COLS
    panels = np.zeros(PANELS * size, dtype=np.float32)
    for j0 in range(0, n, COLS * PANELS):
        used = min(PANELS, (n - j0 + COLS - 1) // COLS)
        for p in range(used):
            j = j0 + p * COLS
            m = min(COLS, n - j)
            base = p * size
            for c in range(m):
                for k in range(d):
                    panels[base + k * COLS + c] = E[(j + c) * d + k]
            for c in range(m, COLS):
                for k in range(d):
                    panels[base + k * COLS + c] = 0.0
        i = 0
        while i < lq:  # tiles of ROWS rows, then single rows for the rest
            full = i + ROWS <= lq
            for p in range(used):
                panel = panels[p * size:(p + 1) * size]
                j = j0 + p * COLS
                if full and exp:
                    _tileR_exp(A, panel, out, i, j, d, n)
                elif full:
                    _tileR(A, panel, out, i, j, d, n)
                elif exp:
                    _tile1_exp(A, panel, out, i, j, d, n)
                else:
                    _tile1(A, panel, out, i, j, d, n)
            i += ROWS if full else 1


@intrinsic
def _exp_run(typingctx, buf, start, n):  # noqa: ANN001, ANN201, ARG001
    """``buf[start:start + n] = exp(buf[start:start + n])`` (float32, in place), 16 at a time."""
    if not (isinstance(buf, types.Array) and buf.dtype == types.float32 and buf.ndim == 1):
        return None
    return types.void(buf, types.int64, types.int64), _exp_codegen


@njit(cache=True, nogil=True)
def _exp_flat(flat):  # noqa: ANN001, ANN201
    _exp_run(flat, 0, flat.shape[0])


def exp_inplace(X: np.ndarray) -> np.ndarray:
    """``X = exp(X)`` in place (float32, C-contiguous), inputs clamped to [EXP_MIN, EXP_MAX]
    (Cephes' single-precision method, ~1 ulp; a fixed sequence of vector operations, so a value
    does not depend on where it lies in ``X``)."""
    if X.dtype != np.float32 or not X.flags.c_contiguous:
        raise ValueError("exp_inplace needs a C-contiguous float32 array")
    flat = X.reshape(-1)
    _exp_flat(flat)
    return X


def bilinear_exp(A: np.ndarray, E: np.ndarray, exp: bool = True) -> np.ndarray:
    """float32 (Lq, N) ``A @ E.T`` (``A`` (Lq, d), ``E`` (N, d): targets packed side by side),
    or its ``exp`` when ``exp`` (inputs clamped to [EXP_MIN, EXP_MAX]). One thread; column j
    depends on ``A`` and ``E[j]`` alone, whatever else is in the batch."""
    A = np.ascontiguousarray(A, dtype=np.float32)
    E = np.ascontiguousarray(E, dtype=np.float32)
    if A.ndim != 2 or E.ndim != 2 or A.shape[1] != E.shape[1]:
        raise ValueError(f"A (Lq, d) and E (N, d) must agree, got {A.shape} and {E.shape}")
    lq, d = A.shape
    n = E.shape[0]
    out = np.empty((lq, n), dtype=np.float32)
    if lq and n:
        if d == 0:
            out[:] = 1.0 if exp else 0.0
        else:
            _product(A.reshape(-1), E.reshape(-1), out.reshape(-1), lq, d, n, exp)
    return out
