"""Inter-sequence (SWIPE-style) score-only local alignment: 16 pairs at a time, one per lane.

The pairs of a group run as one DP over the largest query and target length of the group, each
cell a vector of ``LANES`` float32 values, one pair per lane; a pair's cells outside its own
matrix score -inf, so they never reach a real cell (paths only go down and right) and never beat
one (gap costs are >= 0). A group's columns live in one lane-major buffer of column blocks at
fixed slot offsets (``_Q*``); each row of scores is moved into the S slots by
:func:`homalign.dp.simd.pack_lanes16` (16 x 16 transposes in registers), then the row runs as
LLVM IR on ``<16 x float>`` (``_local_row``, ``_local_row_vec``: one loop, four columns a trip):
the values one column passes to the next (the diagonal H of the row above, T, D and the running
best) stay in registers, and a column only loads its S, H, E (and position-specific costs) and
stores its H and E. The IR uses only vector ``fadd``, ``fsub``, ``fcmp`` and ``select`` (no
fast-math, no fused operations), so it lowers on any CPU.

Two kernels: ``_group_const`` for a group whose pairs all have the same position-independent
costs (scalars, 7 slots a column) and ``_group_vec`` for position-specific costs (the eight
vectors, per lane). Every lane performs, cell by cell, the same float32 operations in the same
order as :func:`homalign.dp.kernels.score_constant` / ``score_general`` (max is exact), so the
scores are bit-identical to them, hence to ``gotoh`` and ``score_integral``, whatever the other
lanes hold. Conditions (checked by the caller): local mode, and all eight gap vectors >= 0 or
constant costs with go >= ge >= 0.

Code sequences and a plain substitution matrix (:func:`score_local_codes`, the scores looked up
in registers rather than read from per-pair matrices), and one query profile against many
target code sequences (:func:`score_local_profile`, the PSSM search): ROWS (4) query rows per
sweep of the columns, in LLVM IR, the values of a column passing from row to row in registers,
each row with its query-side gap costs (the target side costs nothing), so H and E go through
memory once per ROWS rows; the same float32 operations per cell as ``_local_row``, so the same
bits. When every lane is in the same query row (one query, or one profile, against many
targets) a row's scores at a column are one permute of the row's 32 table entries by the 16 lanes'
target codes (``_sweep_rows``; :func:`homalign.dp.simd.permute32`, AVX-512 or AVX2); otherwise :func:`homalign.dp.simd.
lookup_lanes16` writes the ROWS rows' scores of each lane, from its own query residue's row,
to a buffer the sweep reads (``_group_rows``, ``_sweep_rows_packed``). For an integer-valued
matrix and gap costs on an AVX-512BW host :func:`score_local_codes` runs the int8 / int16
kernels of :mod:`homalign.dp.lanes_int` first and recomputes their saturated pairs here: the
same scores, float32, either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from homalign.dp import lanes_int
from homalign.dp.gaps import GapCosts
from homalign.dp.pairwise import align_score
from homalign.dp.simd import (
    PERMUTE_TABLE,
    TABLE,
    column_loop,
    lookup_lanes16,
    pack_lanes16_at,
    permute32,
    splat,
    vload,
    vmax,
    vstore,
)

__all__ = ["CODE_TABLE", "LANES", "code_table", "float_scores", "pack_codes", "profile_row_costs",
           "score_local_codes", "score_local_query_packed",
           "score_local_codes_float32", "score_local_lanes", "score_local_profile",
           "validate_codes_args"]

LANES = 16
NEG = np.float32(-np.inf)
# slots of a column block (LANES floats each): S, the states H, I (E) of the row above until
# this row overwrites them; column 0's B slot: the running best (written at the end of each row);
# D, T, O: unused past column 0 (those values pass between columns in registers); position-
# specific costs add the target's costs of the column (I: t_ins at column j, D: t_del of residue
# j) and the lane's query-side costs of the row (in column 0's AO, AE, RO, RE slots)
(_QS, _QH, _QE, _QD, _QT, _QO, _QB,
 _QTIO, _QTIE, _QTDO, _QTDE, _QAO, _QAE, _QRO, _QRE) = (k * LANES for k in range(15))
_QL_CONST = 7 * LANES
_QL = 15 * LANES


@njit(cache=True, nogil=True, inline="always")
def pack_row(B, ql, addrs, idx, lqs, lts, i, T, starts, lens, ones, zcodes):  # noqa: ANN001, ANN202, PLR0913
    """Row i of every pair of the group into the S slots (-inf outside a pair's matrix)."""
    n = idx.shape[0]
    for u in range(n):
        k = idx[u]
        if i < lqs[k]:
            starts[u] = addrs[k] + i * lts[k] * 4  # byte address of S_k[i, 0]
            lens[u] = lts[k]
        else:
            starts[u] = addrs[k]
            lens[u] = 0
    for u in range(n, LANES):  # unused lanes: a valid address too (a masked load from an
        starts[u] = addrs[idx[0]]  # unmapped one takes a microcode assist, ~7 ms a group)
        lens[u] = 0
    for j0 in range(0, T, LANES):
        pack_lanes16_at(B, j0 * ql + (ql + _QS), ql, ones, starts, lens, j0, ones, zcodes,
                        j0 * LANES, NEG)


_f32 = ir.FloatType()
_i32 = ir.IntType(32)
_i64 = ir.IntType(64)
_V = ir.VectorType(_f32, LANES)
_VI = ir.VectorType(_i32, LANES)
_vload = partial(vload, lanes=LANES, align=4)
_vstore = partial(vstore, align=4)
_splat = partial(splat, vtype=_V)
_vmax = vmax
_UNROLL = 4  # columns per trip of the row loop (then one column a trip for the rest)


def _row_codegen(vec: bool):  # noqa: ANN202
    """The body of :func:`_local_row` (``vec``: of :func:`_local_row_vec`)."""

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        b = builder
        i64 = lambda x: ir.Constant(_i64, x)  # noqa: E731
        B_, T_ = args[0], args[1]
        bp = context.make_array(signature.args[0])(context, b, B_).data
        ql = _QL if vec else _QL_CONST
        zero = ir.Constant(_V, [0.0] * LANES)
        if vec:  # the lanes' query-side costs of the row, in column 0's slots
            ao, ae, ro, re = (_vload(b, bp, i64(s)) for s in (_QAO, _QAE, _QRO, _QRE))
        else:
            goi, gei, god, ged = (_splat(b, x) for x in args[2:6])

        def column(jj, hd, t, d, best):  # noqa: ANN001, ANN202
            """Column jj + 1 from column jj's carried (O, T, D, B): the new ones."""
            cp = b.gep(bp, [b.mul(b.add(jj, i64(1)), i64(ql))])
            s = _vload(b, cp, i64(_QS))
            hu = _vload(b, cp, i64(_QH))
            eu = _vload(b, cp, i64(_QE))
            if vec:
                c_io = b.fadd(ao, _vload(b, cp, i64(_QTIO)))
                c_ie = b.fadd(ae, _vload(b, cp, i64(_QTIE)))
                c_do = b.fadd(_vload(b, cp, i64(_QTDO)), ro)
                c_de = b.fadd(_vload(b, cp, i64(_QTDE)), re)
            else:
                c_io, c_ie, c_do, c_de = goi, gei, god, ged
            m = b.fadd(_vmax(b, hd, zero), s)
            e = _vmax(b, b.fsub(hu, c_io), b.fsub(eu, c_ie))
            _vstore(b, e, cp, i64(_QE))
            tn = _vmax(b, m, e)
            dn = _vmax(b, b.fsub(t, c_do), b.fsub(d, c_de))
            h = _vmax(b, tn, dn)
            _vstore(b, h, cp, i64(_QH))
            return hu, tn, dn, _vmax(b, h, best)

        # column 0 (local mode): O = T = D = -inf; B: the running best of the rows above
        ninf = ir.Constant(_V, [float("-inf")] * LANES)
        carry0 = [ninf, ninf, ninf, _vload(b, bp, i64(_QB))]
        nu = b.and_(T_, i64(-_UNROLL))  # columns done _UNROLL a trip

        j1, carry = column_loop(b, "row4", i64(0), nu, _UNROLL, carry0, column)
        _, carry = column_loop(b, "row1", j1, T_, 1, carry, column)
        _vstore(b, carry[3], bp, i64(_QB))  # the running best, to column 0 for the next row
        return context.get_dummy_value()

    return codegen


@intrinsic
def _local_row(typingctx, B, T, go_i, ge_i, go_d, ge_d):  # noqa: ANN001, ANN201, ARG001
    """One row of the 16 lanes' local recurrences with shared affine costs (float32 scalars),
    over columns 1 .. T of the lane-major buffer ``B`` (blocks of ``_QL_CONST`` floats, its S
    row packed; H and E of the row above, overwritten by this row's), then the running best to
    column 0's B slot. Column 0 (local mode): H = I = T = -inf, so D starts at -inf.

    Straight LLVM IR on ``<16 x float>`` (vector ``fsub``, ``fadd``, ``fcmp`` and ``select``
    only): the values one column passes to the next (H of the row above on the diagonal, T, D
    and the running best) stay in registers; a column loads S, H and E and stores H and E."""
    f32 = types.float32
    if not (isinstance(B, types.Array) and B.dtype == f32 and B.ndim == 1
            and isinstance(T, types.Integer) and all(x == f32 for x in (go_i, ge_i, go_d, ge_d))):
        return None
    return types.void(B, types.int64, f32, f32, f32, f32), _row_codegen(False)


@intrinsic
def _local_row_vec(typingctx, B, T):  # noqa: ANN001, ANN201, ARG001
    """:func:`_local_row` with position-specific costs (blocks of ``_QL`` floats): an I cell
    costs ``ao + tio`` / ``ae + tie`` (the lane's query-side row costs in column 0's AO, AE slots
    plus the column's), a D cell ``tdo + ro`` / ``tde + re``, as ``score_general`` adds them."""
    if not (isinstance(B, types.Array) and B.dtype == types.float32 and B.ndim == 1
            and isinstance(T, types.Integer)):
        return None
    return types.void(B, types.int64), _row_codegen(True)


@njit(cache=True, nogil=True, error_model="numpy")
def _group_const(addrs, idx, lqs, lts, go_i, ge_i, go_d, ge_d, out):  # noqa: ANN001, ANN201, PLR0913
    """Best local score of the pairs ``idx`` (<= LANES, costs shared) into ``out``."""
    n = idx.shape[0]
    T = 0
    Q = 0
    for u in range(n):
        T = max(T, lts[idx[u]])
        Q = max(Q, lqs[idx[u]])
    tp = (T + LANES - 1) // LANES * LANES
    ql = _QL_CONST
    B = np.full((tp + 1) * ql, NEG, dtype=np.float32)
    starts = np.zeros(LANES, dtype=np.int64)
    lens = np.zeros(LANES, dtype=np.int64)
    ones = np.ones(TABLE, dtype=np.float32)
    zcodes = np.zeros(tp * LANES, dtype=np.int32)
    zero = np.float32(0.0)
    for i in range(Q):
        pack_row(B, ql, addrs, idx, lqs, lts, i, T, starts, lens, ones, zcodes)
        _local_row(B, T, go_i, ge_i, go_d, ge_d)
    for u in range(n):
        b = B[_QB + u]
        out[u] = b if b > zero else zero


@njit(cache=True, nogil=True, error_model="numpy")
def _group_vec(addrs, idx, lqs, lts, vecs, v_off, out):  # noqa: ANN001, ANN201, PLR0913
    """Best local score of the pairs ``idx`` (<= LANES, position-specific costs) into ``out``."""
    n = idx.shape[0]
    T = 0
    Q = 0
    for u in range(n):
        T = max(T, lts[idx[u]])
        Q = max(Q, lqs[idx[u]])
    tp = (T + LANES - 1) // LANES * LANES
    ql = _QL
    B = np.full((tp + 1) * ql, NEG, dtype=np.float32)
    starts = np.zeros(LANES, dtype=np.int64)
    lens = np.zeros(LANES, dtype=np.int64)
    ones = np.ones(TABLE, dtype=np.float32)
    zcodes = np.zeros(tp * LANES, dtype=np.int32)
    zero = np.float32(0.0)
    for jj in range(tp + 1):  # gap costs: 0 outside the pair (any value >= 0 would do)
        for s in (_QTIO, _QTIE, _QTDO, _QTDE, _QAO, _QAE, _QRO, _QRE):
            for u in range(LANES):
                B[jj * ql + s + u] = zero
    for u in range(n):
        k = idx[u]
        lt = lts[k]
        o1 = v_off[k, 1]
        o2 = v_off[k, 2]
        for j in range(lt + 1):
            B[j * ql + _QTIO + u] = vecs[2][o1 + j]
            B[j * ql + _QTIE + u] = vecs[3][o1 + j]
        for j in range(lt):
            B[(j + 1) * ql + _QTDO + u] = vecs[4][o2 + j]
            B[(j + 1) * ql + _QTDE + u] = vecs[5][o2 + j]
    for i in range(Q):
        pack_row(B, ql, addrs, idx, lqs, lts, i, T, starts, lens, ones, zcodes)
        for u in range(n):
            k = idx[u]
            if i < lqs[k]:
                B[_QAO + u] = vecs[0][v_off[k, 0] + i]
                B[_QAE + u] = vecs[1][v_off[k, 0] + i]
                B[_QRO + u] = vecs[6][v_off[k, 3] + i + 1]
                B[_QRE + u] = vecs[7][v_off[k, 3] + i + 1]
            else:  # past the pair's last row (its S is -inf there): costs 0
                B[_QAO + u] = zero
                B[_QAE + u] = zero
                B[_QRO + u] = zero
                B[_QRE + u] = zero
        _local_row_vec(B, T)
    for u in range(n):
        b = B[_QB + u]
        out[u] = b if b > zero else zero


@njit(cache=True, parallel=True)
def _run_groups(addrs, order, bounds, lqs, lts, vecs, v_off, cparams, const, scores):  # noqa: ANN001, ANN201, PLR0913
    for g in prange(bounds.shape[0] - 1):
        idx = order[bounds[g]:bounds[g + 1]]
        o = np.zeros(idx.shape[0], dtype=np.float32)
        if const[g]:
            c = cparams[idx[0]]
            _group_const(addrs, idx, lqs, lts, c[0], c[1], c[2], c[3], o)
        else:
            _group_vec(addrs, idx, lqs, lts, vecs, v_off, o)
        for u in range(idx.shape[0]):
            scores[idx[u]] = o[u]


MIN_FILL = LANES // 2  # a group with fewer pairs is left to the per-pair kernels


def score_local_lanes(mats, which: np.ndarray, lqs: np.ndarray, lts: np.ndarray, vecs,
                      v_off: np.ndarray, cparams: np.ndarray, has_const: np.ndarray,
                      scores: np.ndarray) -> np.ndarray:
    """Fill ``scores[k]`` for pairs of ``which`` (indices into ``mats``, C-contiguous float32
    matrices), LANES at a time: ``align_batch``'s packed gap vectors ``vecs``/``v_off``, its
    constant costs ``cparams`` (n, 4) float32 where ``has_const``. Pairs with the same constant
    costs go together (and position-specific ones together), then by shape (target, then query
    length); a group of fewer than MIN_FILL pairs is not run. Returns the pairs scored."""
    which = np.asarray(which, dtype=np.int64)
    if which.size == 0:
        return which
    key = np.full(len(mats), -1, dtype=np.int64)  # one key per cost tuple; position-specific -1
    cw = which[has_const[which]]
    if cw.size:
        _, inv = np.unique(cparams[cw], axis=0, return_inverse=True)
        key[cw] = inv.reshape(-1)
    order = which[np.lexsort((lqs[which], lts[which], key[which]))]
    kk = key[order]
    bounds = [0]
    for p in range(1, order.size + 1):  # groups of <= LANES with one key
        if p == order.size or kk[p] != kk[bounds[-1]] or p - bounds[-1] == LANES:
            bounds.append(p)
    keep = [g for g in range(len(bounds) - 1) if bounds[g + 1] - bounds[g] >= MIN_FILL]
    if not keep:
        return which[:0]
    order = np.concatenate([order[bounds[g]:bounds[g + 1]] for g in keep])
    sizes_g = np.array([bounds[g + 1] - bounds[g] for g in keep], dtype=np.int64)
    const = np.array([kk[bounds[g]] >= 0 for g in keep])
    bounds = np.concatenate(([0], np.cumsum(sizes_g))).astype(np.int64)
    addrs = np.zeros(len(mats), dtype=np.int64)  # the kernel reads the matrices in place
    for k in order:
        m = mats[k]
        if not (m.dtype == np.float32 and m.flags.c_contiguous and m.shape == (lqs[k], lts[k])):
            raise ValueError("score_local_lanes needs C-contiguous float32 matrices")
        addrs[k] = m.ctypes.data
    _run_groups(addrs, order, bounds, lqs, lts, vecs, v_off,
                np.ascontiguousarray(cparams, dtype=np.float32), const, scores)
    return order


# ------------------------------------------------ plain substitution matrix: codes, not matrices
CODE_TABLE = 32  # the lookup table is (CODE_TABLE + 1) x CODE_TABLE: matrix, then -inf padding


def validate_codes_args(matrix: np.ndarray, n_queries: int, n_targets: int, gap_open: float,
                        gap_extend: float, first_gap: float | None
                        ) -> tuple[np.ndarray, np.float32, np.float32]:
    """(M, go, ge) of :func:`score_local_codes`'s arguments: the float32 matrix and the float32
    costs of a gap's first and each further residue; raises ValueError on bad input."""
    M = np.asarray(matrix, dtype=np.float32)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] >= CODE_TABLE:
        raise ValueError(f"matrix must be square with fewer than {CODE_TABLE} rows")
    if not np.all(np.isfinite(M)):
        raise ValueError("matrix must be finite")
    if n_targets != n_queries:
        raise ValueError("queries and targets differ in number")
    ge = np.float32(gap_extend)
    go = np.float32(np.float32(gap_open) + ge) if first_gap is None else np.float32(first_gap)
    if not (go >= ge >= 0):
        raise ValueError("gap costs must satisfy open + extend >= extend >= 0")
    return M, go, ge


def pack_codes(seqs: Sequence, K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes, offsets, lengths) of code sequences, concatenated as int32; every code must lie
    in [0, K). A sequence passed as the same object every time (one query against many
    targets) is stored once, all offsets 0."""
    n = len(seqs)
    if n > 1 and all(s is seqs[0] for s in seqs):
        flat, _, lens = pack_codes(seqs[:1], K)
        return flat, np.zeros(n, dtype=np.int64), np.full(n, lens[0], dtype=np.int64)
    arrs = [s if type(s) is np.ndarray and s.ndim == 1 and s.dtype.kind in "iu"
            else np.asarray(s, dtype=np.int64).reshape(-1) for s in seqs]
    lens = np.fromiter(map(len, arrs), dtype=np.int64, count=n)
    flat = np.concatenate(arrs) if lens.sum() else np.zeros(0, dtype=np.int64)
    if flat.dtype.kind not in "iu":  # int64 and uint64 together: float64
        flat = np.concatenate([a.astype(np.int64) for a in arrs])
    if flat.size and (flat.min() < 0 or flat.max() >= K):
        raise ValueError(f"codes must lie in [0, {K})")
    offs = np.zeros(n, dtype=np.int64)
    np.cumsum(lens[:-1], out=offs[1:])
    return flat.astype(np.int32), offs, lens


def code_table(M: np.ndarray) -> np.ndarray:
    """The lanes' lookup table of a K x K matrix (K < CODE_TABLE): float32
    ``(CODE_TABLE + 1) * CODE_TABLE``, ``table[a * CODE_TABLE + b] = M[a, b]``; -inf in the
    other columns (the pad code ``CODE_TABLE - 1``) and in the last row (rows past a query)."""
    K = M.shape[0]
    table = np.full((CODE_TABLE + 1) * CODE_TABLE, NEG, dtype=np.float32)
    table[:CODE_TABLE * CODE_TABLE].reshape(CODE_TABLE, CODE_TABLE)[:K, :K] = M
    return table


def float_scores(M: np.ndarray, go: np.float32, ge: np.float32, qc: np.ndarray, qo: np.ndarray,
                 ql_: np.ndarray, tc: np.ndarray, to: np.ndarray, tl: np.ndarray,
                 which: np.ndarray | None = None) -> np.ndarray:
    """float32 scores of the packed pairs (:func:`pack_codes`; all of them, or those of
    ``which``, in that order) by the 16-lane float32 kernel."""
    table = code_table(M)
    n = ql_.shape[0]
    w = np.arange(n, dtype=np.int64) if which is None else np.asarray(which, dtype=np.int64)
    order = w[np.lexsort((ql_[w], tl[w]))]
    scores = np.zeros(n, dtype=np.float32)
    if order.size and PERMUTE_TABLE and not qo.any() and (ql_ == ql_[0]).all():
        # one query against all the targets: ROWS query rows a sweep (_sweep_rows)
        roffs = qc[:ql_[0]].astype(np.int64) * CODE_TABLE
        cg, ce = np.full(len(roffs), go, np.float32), np.full(len(roffs), ge, np.float32)
        _run_shared(table, roffs, CODE_TABLE * CODE_TABLE, cg, ce, cg, ce, tc, to, tl, order,
                    scores)
    elif order.size:
        cg = np.full(int(ql_.max()), go, np.float32)
        ce = np.full(int(ql_.max()), ge, np.float32)
        _run_rows(table, qc, qo, ql_, tc, to, tl, order, cg, ce, cg, ce, False, scores)
    return scores[w]


def score_local_codes_float32(queries: Sequence, targets: Sequence, matrix: np.ndarray,
                              gap_open: float = 11.0, gap_extend: float = 1.0, *,
                              first_gap: float | None = None) -> np.ndarray:
    """:func:`score_local_codes` by the float32 16-lane kernel alone (whatever the inputs)."""
    M, go, ge = validate_codes_args(matrix, len(queries), len(targets), gap_open, gap_extend,
                                    first_gap)
    if len(queries) == 0:
        return np.zeros(0, dtype=np.float32)
    K = M.shape[0]
    return float_scores(M, go, ge, *pack_codes(queries, K), *pack_codes(targets, K))


def score_local_codes(queries: Sequence, targets: Sequence, matrix: np.ndarray,
                      gap_open: float = 11.0, gap_extend: float = 1.0, *,
                      first_gap: float | None = None) -> np.ndarray:
    """Local (Smith-Waterman) scores of the pairs ``(queries[k], targets[k])`` of integer code
    sequences under a plain substitution ``matrix`` (K x K, K < 32) and uniform gaps (BLAST
    convention: a gap of length k costs ``open + k * extend``), float32.

    Equal, bit for bit, to ``align_score(matrix[q][:, t], GapCosts.uniform(..., gap_open,
    gap_extend), "local")`` (tests check it). A query may be repeated (one query against a
    database: pass it once per target). ``first_gap``: the cost of a one-residue gap as the
    caller rounds it to float32 (default ``float32(gap_open) + float32(gap_extend)``, as
    GapCosts.uniform forms it).

    Kernels: with an integer-valued matrix and gap costs on an AVX-512BW host, the int16 kernel
    of :mod:`homalign.dp.lanes_int` (32 pairs a vector; pairs that saturate int16 are
    recomputed in float32), and for one query against many targets (the same query object
    every time) on a host with AVX-512 VBMI first its int8 kernel (64 targets a vector; the
    pairs that reach int8's limit go to the int16 kernel); otherwise :func:`score_local_codes_float32`, 16 pairs at a time in
    float32, each lane's scores its query residue's row of the matrix permuted by its target
    codes in registers (:func:`homalign.dp.simd.lookup_lanes16`): the same float32 operations
    on the same values as ``align_score``.
    """
    M, go, ge = validate_codes_args(matrix, len(queries), len(targets), gap_open, gap_extend,
                                    first_gap)
    if len(queries) == 0:
        return np.zeros(0, dtype=np.float32)
    K = M.shape[0]
    qc, qo, ql_ = pack_codes(queries, K)
    if (lanes_int.INT8_LANES and not qo.any() and (ql_ == ql_[0]).all()
            and lanes_int.int8_limit(M, go, ge) is not None):
        # one query against many targets: int8 lanes first (_one_query)
        tc, to, tl = pack_codes(targets, K)
        return _one_query(M, go, ge, qc[:ql_[0]], tc, to, tl)
    packed = (qc, qo, ql_, *pack_codes(targets, K))
    limit = lanes_int.int16_limit(M, go, ge) if lanes_int.AVAILABLE else None
    if limit is None:
        return float_scores(M, go, ge, *packed)
    scores, sat = lanes_int.int16_scores(M, go, ge, limit, *packed)
    if sat.any():  # lanes that reached int16's limit: the float32 kernel, as parasail's sat
        which = np.flatnonzero(sat)
        scores[which] = float_scores(M, go, ge, *packed, which)
    return scores


def _one_query(M: np.ndarray, go: np.float32, ge: np.float32, q: np.ndarray, codes: np.ndarray,
               starts: np.ndarray, lengths: np.ndarray,
               layout: lanes_int.Int8Layout | None = None) -> np.ndarray:
    """One query (int32 codes) against targets ``codes[starts[k]:starts[k] + lengths[k]]``
    (any integer dtype, every code < K): the int8 kernel, then the int16 kernel (AVX-512BW;
    else the float32 kernel) for the targets past int8's limit and the float32 kernel for those
    past int16's (the targets of a fallback are packed alone, so ``codes`` may be a whole
    database); ``layout``: the targets' :func:`homalign.dp.lanes_int.int8_layout`, when the
    caller keeps it."""
    limit8 = lanes_int.int8_limit(M, go, ge)
    scores, sat = lanes_int.int8_scores(M, go, ge, limit8, q, codes, starts, lengths, layout)
    which = np.flatnonzero(sat)
    if which.size:
        K = M.shape[0]
        sub = [codes[starts[k]:starts[k] + lengths[k]] for k in which.tolist()]
        packed = (q, np.zeros(which.size, np.int64), np.full(which.size, len(q), np.int64),
                  *pack_codes(sub, K))
        if not lanes_int.AVAILABLE:
            scores[which] = float_scores(M, go, ge, *packed)
            return scores
        s16, sat16 = lanes_int.int16_scores(M, go, ge, lanes_int.int16_limit(M, go, ge), *packed)
        if sat16.any():
            w16 = np.flatnonzero(sat16)
            s16[w16] = float_scores(M, go, ge, *packed, w16)
        scores[which] = s16
    return scores


def score_local_query_packed(query: np.ndarray, codes: np.ndarray, starts: np.ndarray,
                             lengths: np.ndarray, matrix: np.ndarray, gap_open: float = 11.0,
                             gap_extend: float = 1.0, *,
                             first_gap: float | None = None,
                             layout: Callable[[], lanes_int.Int8Layout] | None = None,
                             ) -> np.ndarray:
    """:func:`score_local_codes` of one query against targets that are slices of one code
    array (a database's packed codes): target k is ``codes[starts[k]:starts[k] + lengths[k]]``,
    so nothing is copied per target. ``codes`` must lie in [0, K) (the caller's database
    guarantees it: it is not scanned here); the query and the slices are checked. ``layout``:
    a function giving these targets' :func:`homalign.dp.lanes_int.int8_layout` (a database
    keeps one for all its queries), called only where the int8 kernel runs."""
    M, go, ge = validate_codes_args(matrix, 1, 1, gap_open, gap_extend, first_gap)
    K = M.shape[0]
    q, _, _ = pack_codes([query], K)
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if starts.shape != lengths.shape or (starts.size and (
            starts.min() < 0 or lengths.min() < 0 or (starts + lengths).max() > len(codes))):
        raise ValueError("target slices must lie inside codes")
    if starts.size == 0:
        return np.zeros(0, dtype=np.float32)
    if (len(q) and lanes_int.INT8_LANES and np.asarray(codes).dtype.kind in "iu"
            and lanes_int.int8_limit(M, go, ge) is not None):
        return _one_query(M, go, ge, q, np.asarray(codes), starts, lengths,
                          layout() if layout is not None else None)
    targets = [codes[s:s + m] for s, m in zip(starts.tolist(), lengths.tolist(), strict=True)]
    return score_local_codes([query] * len(targets), targets, M, gap_open, gap_extend,
                             first_gap=first_gap)


# ------------------------------------------------ one query (or profile) against many targets
ROWS = 4  # query rows per sweep of the shared-rows kernel


def _rows_codegen(packed: bool):  # noqa: ANN202, C901
    """The body of :func:`_sweep_rows` (``packed``: of :func:`_sweep_rows_packed`)."""

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        return _rows_body(context, builder, signature, args, packed)

    return codegen


def _rows_body(context, builder, signature, args, packed):  # noqa: ANN001, ANN202, PLR0915

    tys = signature.args
    b = builder
    i64 = lambda x: ir.Constant(_i64, x)  # noqa: E731

    def data(k, v):  # noqa: ANN001, ANN202
        return context.make_array(tys[k])(context, b, v).data

    if packed:
        hb_, eb_, sb_, costs_, t_, ts_, st_ = args
        hp, ep, sp, cp, stp = (data(k, v) for k, v in ((0, hb_), (1, eb_), (2, sb_),
                                                       (3, costs_), (6, st_)))
    else:
        hb_, eb_, tv_, tab_, roffs_, costs_, t_, st_ = args
        hp, ep, tvp, tabp, rp, cp, stp = (data(k, v) for k, v in (
            (0, hb_), (1, eb_), (2, tv_), (3, tab_), (4, roffs_), (5, costs_), (7, st_)))
        rows = []
        for r in range(ROWS):
            base = b.gep(tabp, [b.load(b.gep(rp, [i64(r)]))])
            rows.append((_vload(b, base, i64(0)), _vload(b, base, i64(LANES))))
    cost = [[_splat(b, b.load(b.gep(cp, [i64(4 * r + c)]))) for c in range(4)]
            for r in range(ROWS)]
    zero = ir.Constant(_V, [0.0] * LANES)
    ninf = ir.Constant(_V, [float("-inf")] * LANES)
    best0 = _vload(b, stp, i64(0))
    def column(j, *carried):  # noqa: ANN001, ANN202
        hd, tt, dd, best = (carried[:ROWS], carried[ROWS:2 * ROWS], carried[2 * ROWS:3 * ROWS],
                            carried[-1])
        off = b.mul(j, i64(LANES))
        if not packed:
            idx = b.load(b.bitcast(b.gep(tvp, [off]), _VI.as_pointer()), align=4)
        hu = _vload(b, hp, off)
        eu = _vload(b, ep, off)
        hd_n, t_n, d_n, hs = [], [], [], []
        for r in range(ROWS):  # the float32 operations of _local_row, in its order
            c_io, c_ie, c_do, c_de = cost[r]
            if packed:  # row r's scores: sb[(r * ts + j) * 16 + lane]
                s_ = _vload(b, sp, b.mul(b.add(b.mul(i64(r), ts_), j), i64(LANES)))
            else:
                s_ = permute32(b, rows[r][0], rows[r][1], idx)
            m = b.fadd(_vmax(b, hd[r], zero), s_)
            e = _vmax(b, b.fsub(hu, c_io), b.fsub(eu, c_ie))
            tn = _vmax(b, m, e)
            dn = _vmax(b, b.fsub(tt[r], c_do), b.fsub(dd[r], c_de))
            h = _vmax(b, tn, dn)
            hd_n.append(hu)
            t_n.append(tn)
            d_n.append(dn)
            hs.append(h)
            hu, eu = h, e
        _vstore(b, hu, hp, off)
        _vstore(b, eu, ep, off)
        bn = best
        for h in hs:
            bn = _vmax(b, h, bn)
        return [*hd_n, *t_n, *d_n, bn]

    _, carried = column_loop(b, "rows", i64(0), t_, 1, [ninf] * (3 * ROWS) + [best0], column)
    bn = carried[-1]
    _vstore(b, bn, stp, i64(0))
    return context.get_dummy_value()


@intrinsic
def _sweep_rows(typingctx, hb, eb, tv, tab, roffs, costs, t, st):  # noqa: ANN001, ANN201, ARG001
    """ROWS query rows over columns 0 .. t-1 of 16 targets, every lane the same query row: row
    r's score at column j is ``tab[roffs[r] + c]`` with ``c`` the lane's target code ``tv[16 j +
    lane]`` (one :func:`~homalign.dp.simd.permute32` of the row's 32 entries by the column's codes), its costs
    ``costs[4 r : 4 r + 4]`` = (go_i, ge_i, go_d, ge_d). ``hb``, ``eb``: H and E of the row
    above (float32, 16 per column; read, then written with the last row's); ``st``: the running
    best (float32 (16,)). The cells run :func:`_local_row`'s float32 operations in its order, so
    the scores are the same bits; the values of a column pass from row to row in registers (the
    buffers are read and written once per ROWS rows), as :mod:`homalign.dp.lanes_int` does."""
    return types.void(hb, eb, tv, tab, roffs, costs, t, st), _rows_codegen(False)


@intrinsic
def _sweep_rows_packed(typingctx, hb, eb, sb, costs, t, ts, st):  # noqa: ANN001, ANN201, ARG001
    """:func:`_sweep_rows` with row r's scores read from ``sb[(r ts + j) 16 + lane]`` (float32,
    ROWS rows of ``ts`` lane-major columns, filled by :func:`homalign.dp.simd.lookup_lanes16`):
    pairs whose lanes are in different query rows."""
    return types.void(hb, eb, sb, costs, t, ts, st), _rows_codegen(True)


@njit(cache=True, nogil=True, error_model="numpy")
def _group_rows(table, qc, qo, ql_, tc, to, tl, idx, go_i, ge_i, go_d, ge_d, profile, out):  # noqa: ANN001, ANN201, PLR0913
    """Best local scores of the pairs ``idx`` (<= LANES), ROWS query rows a sweep
    (:func:`_sweep_rows_packed`): lane u's score at row i, column j is ``table[rows_u(i) +
    t_u[j]]`` with ``rows_u(i) = q_u[i] * 32`` (codes) or ``i * 32`` (``profile``: one query
    profile, its rows in ``table``), and row i costs ``go_i[i]``, ``ge_i[i]``, ``go_d[i]``,
    ``ge_d[i]`` in every lane; rows past a lane's query read the -inf row at
    ``(ql_ + 1) * 32`` for a profile, ``32 * 32`` for codes."""
    n = idx.shape[0]
    T = 0
    Q = 0
    for u in range(n):
        T = max(T, tl[idx[u]])
        Q = max(Q, ql_[idx[u]])
    tp = (T + LANES - 1) // LANES * LANES
    st = np.full(LANES, NEG, dtype=np.float32)
    if T > 0 and Q > 0:
        hb = np.full(T * LANES, NEG, dtype=np.float32)
        eb = np.full(T * LANES, NEG, dtype=np.float32)
        sb = np.empty(ROWS * tp * LANES, dtype=np.float32)
        pad = np.int32(CODE_TABLE - 1)  # a column of -inf
        none = Q * CODE_TABLE if profile else CODE_TABLE * CODE_TABLE  # the -inf row
        starts = np.zeros(LANES, dtype=np.int64)
        lens = np.zeros(LANES, dtype=np.int64)
        for u in range(n):
            starts[u] = to[idx[u]]
            lens[u] = tl[idx[u]]
        rows = np.full(LANES, none, dtype=np.int32)
        costs = np.zeros(4 * ROWS, dtype=np.float32)
        for i0 in range(0, Q, ROWS):
            for r in range(ROWS):
                i = i0 + r
                for u in range(n):
                    k = idx[u]
                    if i >= ql_[k]:
                        rows[u] = none
                    elif profile:
                        rows[u] = i * CODE_TABLE
                    else:
                        rows[u] = qc[qo[k] + i] * CODE_TABLE
                for j0 in range(0, T, LANES):
                    lookup_lanes16(sb, (r * tp + j0) * LANES, LANES, table, rows, tc, starts,
                                   lens, j0, pad)
                if i < Q:
                    costs[4 * r] = go_i[i]
                    costs[4 * r + 1] = ge_i[i]
                    costs[4 * r + 2] = go_d[i]
                    costs[4 * r + 3] = ge_d[i]
            _sweep_rows_packed(hb, eb, sb, costs, T, tp, st)
    zero = np.float32(0.0)
    for u in range(n):
        out[u] = st[u] if st[u] > zero else zero


@njit(cache=True, parallel=True)
def _run_rows(table, qc, qo, ql_, tc, to, tl, order, go_i, ge_i, go_d, ge_d, profile, scores):  # noqa: ANN001, ANN201, PLR0913
    ng = (order.shape[0] + LANES - 1) // LANES
    for p0 in prange(ng):
        g = p0 // 2 if p0 % 2 == 0 else ng - 1 - p0 // 2  # short and long groups alternate
        idx = order[g * LANES:min(order.shape[0], (g + 1) * LANES)]
        o = np.zeros(idx.shape[0], dtype=np.float32)
        _group_rows(table, qc, qo, ql_, tc, to, tl, idx, go_i, ge_i, go_d, ge_d, profile, o)
        for u in range(idx.shape[0]):
            scores[idx[u]] = o[u]


@njit(cache=True, nogil=True, error_model="numpy")
def _group_shared(table, roffs, pad, go_i, ge_i, go_d, ge_d, tc, to, tl, idx, out):  # noqa: ANN001, ANN201, PLR0913
    """Best local scores of the query rows ``roffs`` (table offsets, one per query position;
    ``pad``: the offset of a row of -inf) with their costs against the targets ``idx``
    (<= LANES), ROWS rows a sweep."""
    n = idx.shape[0]
    T = 0
    for u in range(n):
        T = max(T, tl[idx[u]])
    Q = roffs.shape[0]
    st = np.full(LANES, NEG, dtype=np.float32)
    if T > 0 and Q > 0:
        hb = np.full(T * LANES, NEG, dtype=np.float32)
        eb = np.full(T * LANES, NEG, dtype=np.float32)
        tv = np.full(T * LANES, CODE_TABLE - 1, dtype=np.int32)  # the pad code: -inf
        for u in range(n):
            k = idx[u]
            for j in range(tl[k]):
                tv[j * LANES + u] = tc[to[k] + j]
        rows = np.empty(ROWS, dtype=np.int64)
        costs = np.zeros(4 * ROWS, dtype=np.float32)
        for i0 in range(0, Q, ROWS):
            for r in range(ROWS):  # rows past the query: the pad row (only gaps reach it)
                i = i0 + r
                rows[r] = roffs[i] if i < Q else pad
                if i < Q:
                    costs[4 * r] = go_i[i]
                    costs[4 * r + 1] = ge_i[i]
                    costs[4 * r + 2] = go_d[i]
                    costs[4 * r + 3] = ge_d[i]
            _sweep_rows(hb, eb, tv, table, rows, costs, T, st)
    zero = np.float32(0.0)
    for u in range(n):
        out[u] = st[u] if st[u] > zero else zero


@njit(cache=True, parallel=True)
def _run_shared(table, roffs, pad, go_i, ge_i, go_d, ge_d, tc, to, tl, order, scores):  # noqa: ANN001, ANN201, PLR0913
    ng = (order.shape[0] + LANES - 1) // LANES
    for p0 in prange(ng):
        g = p0 // 2 if p0 % 2 == 0 else ng - 1 - p0 // 2  # short and long groups alternate
        idx = order[g * LANES:min(order.shape[0], (g + 1) * LANES)]
        o = np.zeros(idx.shape[0], dtype=np.float32)
        _group_shared(table, roffs, pad, go_i, ge_i, go_d, ge_d, tc, to, tl, idx, o)
        for u in range(idx.shape[0]):
            scores[idx[u]] = o[u]


# ------------------------------------------------ one query profile against many target codes


def profile_row_costs(gaps: GapCosts) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(go_i, ge_i, go_d, ge_d), float32 (Lq,): the costs of row i (0-based) of a local DP
    whose gaps are ``gaps`` with every target-side vector zero, formed exactly as
    :func:`homalign.dp.kernels.score_general` forms them from ``gaps.kernel_vectors()``: an I
    cell of row i costs ``qio[i] + tio[j]`` (open) or ``qie[i] + tie[j]`` (extend), a D cell of
    row i ``tdo[j] + qdo[i + 1]`` or ``tde[j] + qde[i + 1]``; with the target side zero,
    ``tio = tie = tdo = tde = 0.0`` in float32, the same sums whatever j."""
    qio, qie, _, _, _, _, qdo, qde = gaps.kernel_vectors()
    z = np.float32(0.0)
    return ((qio + z).astype(np.float32), (qie + z).astype(np.float32),
            (z + qdo[1:]).astype(np.float32), (z + qde[1:]).astype(np.float32))


def score_local_profile(profile: np.ndarray, targets: Sequence, q_ins_open: np.ndarray,
                        q_ins_ext: np.ndarray, q_del_open: np.ndarray,
                        q_del_ext: np.ndarray) -> np.ndarray:
    """float32 local (Smith-Waterman) scores of one query profile against each target.

    ``profile``: (Lq, K) scores, K < 32 columns indexed by target residue code (a PSSM);
    ``targets``: integer code sequences, each code in [0, K); the gap vectors: the query side
    of :class:`homalign.dp.GapCosts` (``q_ins_*`` of length Lq, ``q_del_*`` Lq + 1, as
    ``GapCosts.from_vectors(Lq, Lt, q_ins_open=..., ...)`` takes them; the target side is zero).

    Score k equals, bit for bit, ``align_score(profile[:, targets[k]], GapCosts.from_vectors(Lq,
    len(targets[k]), q_ins_open=..., q_ins_ext=..., q_del_open=..., q_del_ext=...), "local")``
    (float32 ``==``; tests check it): 16 targets at a time, sorted by length, through
    ``_group_profile``, whose lanes look their scores up in the profile row of the current query
    position (:func:`homalign.dp.simd.lookup_lanes16`) and perform ``score_general``'s float32
    operations on the costs of :func:`profile_row_costs`. Groups run in parallel (numba threads).
    An integer profile with uniform integer gaps (PSI-BLAST's kind) runs first through the int8
    kernel of :mod:`homalign.dp.lanes_int` (64 targets a vector, 32 on AVX2; exact below its limit; the
    targets that reach it go to the float32 kernel).

    Raises ValueError (as ``align_score`` does for an empty matrix) for a profile that is not
    2-D with Lq >= 1 and 1 <= K < 32, or not finite; an empty target; codes outside [0, K);
    gap vectors of the wrong length or not finite. Gap vectors
    with a negative entry (outside the fast kernels' condition) take the general path instead:
    ``align_score`` per target, the same result.
    """
    P = np.asarray(profile, dtype=np.float32)
    if P.ndim != 2 or P.shape[0] < 1 or not 1 <= P.shape[1] < CODE_TABLE:
        raise ValueError(f"profile must be (Lq, K) with Lq >= 1 and 1 <= K < {CODE_TABLE}, "
                         f"got shape {P.shape}")
    if not np.all(np.isfinite(P)):
        raise ValueError("profile must be finite")
    lq, K = P.shape
    gaps = GapCosts.from_vectors(lq, 0, q_ins_open=q_ins_open, q_ins_ext=q_ins_ext,
                                 q_del_open=q_del_open, q_del_ext=q_del_ext)
    n = len(targets)
    if n == 0:
        return np.zeros(0, dtype=np.float32)
    tc, to, tl = pack_codes(targets, K)
    if tl.min() < 1:
        raise ValueError("targets must be non-empty")
    if not gaps.nonnegative:
        vec = {"q_ins_open": gaps.q_ins_open, "q_ins_ext": gaps.q_ins_ext,
               "q_del_open": gaps.q_del_open, "q_del_ext": gaps.q_del_ext}
        return np.array([align_score(P[:, tc[o:o + m]], GapCosts.from_vectors(lq, int(m), **vec),
                                     "local") for o, m in zip(to, tl, strict=True)],
                        dtype=np.float32)
    costs = profile_row_costs(gaps)
    uniform = _uniform_costs(costs)
    if uniform is not None and lanes_int.INT8_LANES:
        limit = lanes_int.int8_limit(P, *uniform)
        if limit is not None:  # an integer PSSM with uniform integer gaps, as PSI-BLAST's
            scores, sat = lanes_int.int8_profile_scores(P, *uniform, limit, tc, to, tl)
            which = np.flatnonzero(sat)
            if which.size:  # past int8's limit: the float32 kernel
                sub = pack_codes([tc[to[k]:to[k] + tl[k]] for k in which.tolist()], K)
                scores[which] = _profile_float32(P, costs, *sub)
            return scores
    return _profile_float32(P, costs, tc, to, tl)


def _uniform_costs(costs: tuple[np.ndarray, ...]) -> tuple[np.float32, np.float32] | None:
    """(first residue, each further one) of :func:`profile_row_costs` that are the same in
    every row and for both gap directions, or None."""
    go_i, ge_i, go_d, ge_d = costs
    go, ge = go_i[0], ge_i[0]
    if ((go_i == go).all() and (go_d == go).all() and (ge_i == ge).all()
            and (ge_d == ge).all()):
        return np.float32(go), np.float32(ge)
    return None


def _profile_float32(P: np.ndarray, costs: tuple[np.ndarray, ...], tc: np.ndarray,
                     to: np.ndarray, tl: np.ndarray) -> np.ndarray:
    """:func:`score_local_profile`'s float32 kernel over the packed targets."""
    lq, K = P.shape
    n = len(tl)
    table = np.full((lq + 1) * CODE_TABLE, NEG, dtype=np.float32)  # and a row of -inf
    table.reshape(lq + 1, CODE_TABLE)[:lq, :K] = P
    order = np.argsort(tl, kind="stable").astype(np.int64)
    scores = np.zeros(n, dtype=np.float32)
    if PERMUTE_TABLE:
        roffs = np.arange(lq, dtype=np.int64) * CODE_TABLE
        _run_shared(table, roffs, lq * CODE_TABLE, *costs, tc, to, tl, order, scores)
    else:  # no register permutes: the rows' scores through lookup_lanes16's gathers
        _run_rows(table, tc[:0], np.zeros(n, np.int64), np.full(n, lq, np.int64), tc, to, tl,
                  order, *costs, True, scores)
    return scores
