"""The bilinear term of the learned scores for one query against many targets, ``A E^T``, and its
``exp``.

The learned ranking score of a query against a target is a forward score over
``S[i, j] = A[i] . e_j + (residue table terms)``, with ``A = e W`` the query's transformed
embeddings (Lq, d) and ``e_j`` the target's stored per-residue embeddings
(:mod:`homalign.model.ranking`). For targets packed side by side (``E``, (N, d)) the first term
is one matrix product and the DP's match weights are its ``exp``: :func:`bilinear_exp` runs one
BLAS product per target on one thread and exponentiates each target's block while it is in
cache with :func:`exp_inplace`, a vector ``exp`` in LLVM IR (Cephes' expf:
``exp(x) = 2**n exp(r)``, ``r = x - n ln 2`` with ln 2 in two parts, a degree-7 polynomial
through ``llvm.fma``; within 1.3 ulp of the exact value on [-87, 88], numpy's float32 ``exp``
within 2.4), about 3x numpy's speed. Each value is a fixed sequence of operations on its own
input, so a target's weights never depend on the other targets of the batch or on where its
columns fall (tested).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from homalign.dp.simd import array_data, splat
from homalign.threads import one_blas_thread

__all__ = ["EXP_MAX", "EXP_MIN", "bilinear_exp", "exp_inplace"]

_N = 16
_f32 = ir.FloatType()
_i32 = ir.IntType(32)
_i64 = ir.IntType(64)
_V = ir.VectorType(_f32, _N)
_VI = ir.VectorType(_i32, _N)
_VB = ir.VectorType(ir.IntType(1), _N)


# Cephes expf: exp(x) = 2**n exp(r), r = x - n ln 2 (ln 2 in two parts), exp(r) by a degree-7
# polynomial 1 + r + r**2 (P5 + r (P4 + ... r P0))
_LOG2E = 1.44269504088896341
_C1 = 0.693359375
_C2 = -2.12194440e-4
_P = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
      5.0000001201e-1)
EXP_MIN = -87.0  # inputs are clamped to [EXP_MIN, EXP_MAX]: 2**n stays a normal float
EXP_MAX = 88.0


def _exp_codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
    b = builder
    buf_, start_, n_ = args
    bp = b.gep(array_data(context, b, signature.args[0], buf_), [start_])
    mod = b.module
    fma = cgutils.get_or_insert_function(mod, ir.FunctionType(_V, [_V, _V, _V]),
                                         "llvm.fma.v16f32")
    rint = cgutils.get_or_insert_function(mod, ir.FunctionType(_V, [_V]), "llvm.rint.v16f32")
    mload = cgutils.get_or_insert_function(
        mod, ir.FunctionType(_V, [bp.type, _i32, _VB, _V]), "llvm.masked.load.v16f32.p0")
    mstore = cgutils.get_or_insert_function(
        mod, ir.FunctionType(ir.VoidType(), [_V, bp.type, _i32, _VB]),
        "llvm.masked.store.v16f32.p0")
    c = lambda x: ir.Constant(_V, [float(x)] * _N)  # noqa: E731
    iota = ir.Constant(_VI, list(range(_N)))
    zero = c(0.0)

    def vexp(x):  # noqa: ANN001, ANN202
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
    b.call(mstore, [vexp(v), ptr, ir.Constant(_i32, 4), mask])
    kn = b.add(k, ir.Constant(_i64, _N))
    k.add_incoming(ir.Constant(_i64, 0), pre)
    k.add_incoming(kn, body)
    b.cbranch(b.icmp_signed("<", kn, n_), body, done)
    b.position_at_end(done)
    return context.get_dummy_value()


@intrinsic
def _exp_run(typingctx, buf, start, n):  # noqa: ANN001, ANN201, ARG001
    """``buf[start:start + n] = exp(buf[start:start + n])`` (float32, in place), 16 at a time."""
    if not (isinstance(buf, types.Array) and buf.dtype == types.float32 and buf.ndim == 1):
        return None
    return types.void(buf, types.int64, types.int64), _exp_codegen


@njit(cache=True, nogil=True)
def _exp_columns(flat, lq, n, c0, c1):  # noqa: ANN001, ANN201
    """exp of columns c0 .. c1 - 1 of every row of the row-major (lq, n) buffer ``flat``."""
    for i in range(lq):
        _exp_run(flat, i * n + c0, c1 - c0)


def exp_inplace(X: np.ndarray) -> np.ndarray:
    """``X = exp(X)`` in place (float32, C-contiguous), inputs clamped to [EXP_MIN, EXP_MAX]
    (Cephes' single-precision method, ~1 ulp; a fixed sequence of vector operations, so a value
    does not depend on where it lies in ``X``)."""
    if X.dtype != np.float32 or not X.flags.c_contiguous:
        raise ValueError("exp_inplace needs a C-contiguous float32 array")
    flat = X.reshape(-1)
    _exp_columns(flat, 1, flat.shape[0], 0, flat.shape[0])
    return X


def bilinear_exp(A: np.ndarray, E: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                 exp: bool = True) -> np.ndarray:
    """float32 (Lq, N) ``A @ E.T`` (``A`` (Lq, d), ``E`` (N, d) float32: targets packed side by
    side, target k the rows ``starts[k]:starts[k] + lengths[k]``), or its ``exp``
    (:func:`exp_inplace`'s) when ``exp``. One BLAS product per target, on one BLAS thread, so
    that a target's block depends on that pair alone: one product over the packed batch would
    round a column by the shape of the call it falls in (OpenBLAS takes other kernels for small
    blocks). Each block is exponentiated right after its product, while it is in cache."""
    A = np.ascontiguousarray(A, dtype=np.float32)
    E = np.ascontiguousarray(E, dtype=np.float32)
    if A.ndim != 2 or E.ndim != 2 or A.shape[1] != E.shape[1]:
        raise ValueError(f"A (Lq, d) and E (N, d) must agree, got {A.shape} and {E.shape}")
    lq, n = A.shape[0], E.shape[0]
    out = np.empty((lq, n), dtype=np.float32)
    flat = out.reshape(-1)
    with one_blas_thread():
        for s, m in zip(np.asarray(starts).tolist(), np.asarray(lengths).tolist(), strict=True):
            if not (0 <= s and s + m <= n):
                raise ValueError(f"target block {s}:{s + m} lies outside E ({n} rows)")
            np.matmul(A, E[s:s + m].T, out=out[:, s:s + m])
            if exp and lq and m:
                _exp_columns(flat, lq, n, s, s + m)
    return out
