"""Inter-sequence (SWIPE-style) score-only Smith-Waterman in saturating integers: int16, 32 pairs
at a time, one per lane of a ``<32 x i16>`` vector (one AVX-512BW register), and int8, 64 targets
of one query at a time (``<64 x i8>``), with saturation detection.

The integer fast path of :func:`homalign.dp.lanes.score_local_codes` (the entry point: it checks
and packs the inputs, runs :func:`int16_scores` when :func:`int16_limit` allows, and recomputes
the saturated pairs with the float32 kernel): a plain substitution matrix (codes < 31) and
uniform affine gaps, all integer-valued. ``go`` is the cost of a gap's first residue (BLAST
convention: open + extend), ``ge`` of each further one.

Layout: pairs sorted by target then query length, taken 32 at a time (``prange`` over the
groups, short and long groups alternating). A group runs as one DP over its longest query
(rows) and longest target (columns); each cell is a vector of 32 lanes, one pair per lane.
ROWS (4; SHARED_ROWS, 8, for one query against many targets) rows at a time sweep the columns:
H of the row above and E of the block's first row come from two int16 buffers (32 per column)
and go back once per column, the values of a
column pass from row to row in registers, each row's diagonal H, F and the running best are
carried along in registers; the loop is LLVM IR (numba intrinsics, as
:mod:`homalign.dp.posterior_batch` writes its kernels). Per cell, with saturating arithmetic
(``vpaddsw``, ``vpsubusw``, ``vpmaxsw``)::

    m = H(i-1, j-1) + s          h = max(F, E, m)             G = max(h - go, 0)
    E(i+1, j) = max(G, E - ge)    F(i, j+1) = max(G, F - ge)   best = max(best, h)

(``E - ge`` etc. unsigned: clamped at 0). Scores ``s``: when every lane of a group holds the
same query (one query against a database; found per group, by content) a row's scores at a
column are one ``vpermw`` of the query residue's 32 matrix entries by the 32 targets' codes at
that column (:func:`_sweep_shared`). Otherwise (independent pairs) each lane needs its own row
of the matrix: one ``vpermi2w`` per lane pair, row and 16 columns looks two lanes up at once,
four stages of two-source shuffles transpose the result into lane-major columns, 32 columns at
a time, interleaved with the recurrences of the previous 32 columns (:func:`_block_pairs`).
Columns past a lane's target and rows past its query use code 31, whose scores are -32768.

Exactness: ``E`` and ``F`` held as ``max(E, 0)``, ``max(F, 0)`` make ``h = max(0, m, E, F)``,
standard Smith-Waterman, whose best score is that of the float kernel's form (``m = max(H_diag,
0) + s``, no clamp): the values the two differ in are <= 0 and gap costs are >= 0, so they
never lead to a positive cell. Padded cells lie below or right of a lane's real cells (no path
leads back) and score at most what their predecessors do. Every operation is exact while no
sum reaches 32767: ``m >= -32768`` always (``H >= 0``; pads and scores below -32768 clamp to
-32768 and then never beat 0), and a positive overflow needs a cell with ``H >= LIMIT = 32767
- max(max score, 0)``, which the running best then holds. A lane whose best reaches LIMIT is
*saturated*: its score is not used and the pair is recomputed by the float32 kernel, as
parasail's ``sat`` functions recompute in wider lanes (under BLOSUM62 two identical random
sequences stay below LIMIT up to about 5600 residues, 3000 tryptophans do not). A group stops
early once all its lanes have saturated. Gap costs above 32767 act as 32767: such a gap costs
more than a lane can score before it saturates.

int8 (:func:`int8_scores`, one query against many targets, the learned search's SW stage):
the same recurrences and proof on ``<64 x i8>`` with ``vpermb`` (AVX-512 VBMI) for the scores,
or on AVX2 hosts ``<32 x i8>`` with two ``vpshufb`` lookups and a blend (:data:`INT8_LANES`),
LIMIT = 127 - max score (116 under BLOSUM62) and gap costs above 127 acting as 127; of the
learned search's 1,000 prefilter candidates a query ~0.4% reach it and go to the int16 kernel,
or the float32 one without AVX-512BW (:func:`homalign.dp.lanes.score_local_codes` arranges it).
One query against 1,000 targets of 50-400 residues, one thread: 17 GCUPS against int16's 10; a
learned search query's pass over trainval: 64 lanes 15 ms, 32 lanes 20 ms (compiled for Haswell
on the AMD EPYC), pyopal 59 ms.

Ungapped int8 (:func:`int8_ungapped_scores`, the learned search's first pass,
:mod:`homalign.search.ungapped`): the same lanes, layout and score lookups with ``h = max(H(i-1,
j-1) + s, 0)``, ``best = max(best, h)`` per cell (no E, F or gap costs), exact below LIMIT = 127
- max score; the 200 dev speed queries against trainval, one thread: 6.1 ms a query against the
int8 Smith-Waterman pass's 14.6 (``benchmarks/research/ungapped_recall.py``); compiled for
Haswell (32 lanes) 8.5 ms (``NUMBA_CPU_NAME=haswell benchmarks/research/search_stages.py
--avx2``; the Smith-Waterman pass there took 20).

Requirements: AVX-512BW (``vpermw``, 512-bit int16 arithmetic) on the CPU numba compiles for
(:data:`AVAILABLE`; a generic target, ``NUMBA_CPU_NAME=generic``, has none); elsewhere, and for
non-integer matrices or gap costs, :func:`homalign.dp.lanes.score_local_codes` runs the float32
kernel alone.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from homalign.dp.simd import array_data, column_loop, host_has, splat, vload, vstore

__all__ = ["AVAILABLE", "AVAILABLE8", "INT8_LANES", "LANES8", "LANES16", "TABLE16", "Int8Layout",
           "int8_layout", "int8_limit", "int8_scores", "int8_ungapped_limit",
           "int8_ungapped_scores", "int16_limit", "int16_scores"]

LANES16 = 32  # int16 lanes of one 512-bit vector
LANES8 = 64  # int8 lanes of one 512-bit vector
I8_MIN = -128
I8_MAX = 127
TABLE16 = 32  # table entries per matrix row (one vpermw): codes < 31 (lanes.CODE_TABLE)
PAD = TABLE16 - 1  # the code of padded rows and columns: scores -32768
I16_MIN = -32768
I16_MAX = 32767
ROWS = 4  # rows per sweep of a group's columns (the rows' carried values fit the registers)
#: rows per sweep when every lane holds the same query (no per-lane score transposes): 8 is 4%
#: faster for the int8 search pass on an AMD EPYC, while the pair kernel is 15% slower at 8
SHARED_ROWS = 8
_CHECK_BLOCKS = 16  # a group checks every so many sweeps whether all its lanes have saturated


#: whether the int16 kernel can run here (else score_local_codes runs the float32 kernel)
AVAILABLE = host_has("avx512f", "avx512bw")
#: whether the int8 kernel (one query against many targets; ``vpermb``) can run here
AVAILABLE8 = AVAILABLE and host_has("avx512vbmi")
#: lanes of the int8 kernel here: 64 with AVX-512 VBMI (``vpermb``), 32 on AVX2 (two
#: ``vpshufb`` lookups and a blend), 0 where it cannot run
INT8_LANES = LANES8 if AVAILABLE8 else LANES8 // 2 if host_has("avx2") else 0

_i16 = ir.IntType(16)
_i32 = ir.IntType(32)
_i64 = ir.IntType(64)
_V = ir.VectorType(_i16, LANES16)
_V8 = ir.VectorType(ir.IntType(8), LANES8)
_V8H = ir.VectorType(ir.IntType(8), LANES8 // 2)  # the AVX2 int8 kernel's 32 lanes
_VI = ir.VectorType(_i32, LANES16)
_data = array_data
_vload = partial(vload, lanes=LANES16, align=2)
_vstore = partial(vstore, align=2)


def _fn(builder, name, nargs, vt=_V):  # noqa: ANN001, ANN202
    """The LLVM intrinsic ``name`` on ``vt`` operands (default <32 x i16>)."""
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt] * nargs),
                                          name)


def _permw(builder, table, idx):  # noqa: ANN001, ANN202
    """``vpermw``: element e of the result is ``table[idx[e] & 31]``."""
    return builder.call(_fn(builder, "llvm.x86.avx512.permvar.hi.512", 2), [table, idx])


def _permb(builder, table, idx):  # noqa: ANN001, ANN202
    """``vpermb`` (AVX-512 VBMI): element e of the result is ``table[idx[e] & 63]``."""
    return builder.call(_fn(builder, "llvm.x86.avx512.permvar.qi.512", 2, _V8), [table, idx])


def _pshufb2(builder, table, idx):  # noqa: ANN001, ANN202
    """AVX2, <32 x i8>: element e of the result is ``table[idx[e]]`` for indices < 32: ``vpshufb``
    looks up 16 entries per 128-bit half, so the table's low and high halves are each copied
    into both halves, looked up, and bit 4 of the index picks one (a blend)."""
    b = builder
    vi = ir.VectorType(_i32, _V8H.count)
    lo = b.shuffle_vector(table, table, ir.Constant(vi, list(range(16)) * 2))
    hi = b.shuffle_vector(table, table, ir.Constant(vi, list(range(16, 32)) * 2))
    shuf = _fn(b, "llvm.x86.avx2.pshuf.b", 2, _V8H)
    high = b.icmp_unsigned("!=", b.and_(idx, ir.Constant(_V8H, [16] * _V8H.count)),
                           ir.Constant(_V8H, [0] * _V8H.count))
    return b.select(high, b.call(shuf, [hi, idx]), b.call(shuf, [lo, idx]))


class _Dp:
    """Emits the recurrences of one column of ``len(scores)`` rows (shared by the kernels), on
    ``vt``
    vectors (<32 x i16> or <64 x i8>)."""

    def __init__(self, builder, go_, ge_, vt=_V):  # noqa: ANN001
        self.b = builder
        self.gov = splat(builder, go_, vt)
        self.gev = splat(builder, ge_, vt)
        kind = f"v{vt.count}i{vt.element.width}"
        self.vt = vt
        self.adds = _fn(builder, f"llvm.sadd.sat.{kind}", 2, vt)
        self.subus = _fn(builder, f"llvm.usub.sat.{kind}", 2, vt)
        self.smax = _fn(builder, f"llvm.smax.{kind}", 2, vt)

    def mx(self, x, y):  # noqa: ANN001, ANN201
        return self.b.call(self.smax, [x, y])

    def column(self, hp, ep, off, scores, hd, f, best):  # noqa: ANN001, ANN201, PLR0913
        """Column at element offset ``off`` of the H / E buffers; ``scores[r]()``: row r's score
        vector; (hd, f): per row; returns the new (hd, f, best)."""
        b = self.b
        load = partial(vload, lanes=self.vt.count, align=self.vt.element.width // 8)
        store = partial(vstore, align=self.vt.element.width // 8)
        hup = load(b, hp, off)
        e = load(b, ep, off)
        hd_n, f_n, hs = [], [], []
        for r in range(len(scores)):
            m = b.call(self.adds, [hd[r], scores[r]()])
            hd_n.append(hup)
            h = self.mx(f[r], self.mx(m, e))  # >= 0: E and F are (unsigned saturation)
            g = b.call(self.subus, [h, self.gov])
            e = self.mx(g, b.call(self.subus, [e, self.gev]))
            f_n.append(self.mx(g, b.call(self.subus, [f[r], self.gev])))
            hs.append(h)
            hup = h
        store(b, hup, hp, off)
        store(b, e, ep, off)
        while len(hs) > 1:  # the running best: a tree over the rows, then one max
            hs = [self.mx(hs[k], hs[k + 1]) if k + 1 < len(hs) else hs[k]
                  for k in range(0, len(hs), 2)]
        return hd_n, f_n, self.mx(best, hs[0])


def _shared_codegen(vt, perm):  # noqa: ANN001, ANN202
    """The body of :func:`_sweep_shared` on ``vt`` vectors (<32 x i16> with ``perm`` vpermw,
    or <64 x i8> with vpermb)."""
    lanes = vt.count
    load = partial(vload, lanes=lanes, align=vt.element.width // 8)
    store = partial(vstore, align=vt.element.width // 8)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        hb_, eb_, tv_, tab_, roffs_, t_, go_, ge_, st_ = args
        tys = signature.args
        b = builder
        i64 = lambda x: ir.Constant(_i64, x)  # noqa: E731
        hp, ep, tvp, tabp, rp, stp = (_data(context, b, tys[k], v) for k, v in (
            (0, hb_), (1, eb_), (2, tv_), (3, tab_), (4, roffs_), (8, st_)))
        rows = [load(b, tabp, b.load(b.gep(rp, [i64(r)]))) for r in range(SHARED_ROWS)]
        dp = _Dp(b, go_, ge_, vt)
        zero = ir.Constant(vt, [0] * lanes)
        best0 = load(b, stp, i64(0))
        def column(j, *carried):  # noqa: ANN001, ANN202
            hd, f, best = carried[:SHARED_ROWS], carried[SHARED_ROWS:2 * SHARED_ROWS], carried[-1]
            off = b.mul(j, i64(lanes))
            codes = load(b, tvp, off)
            hd_n, f_n, bestn = dp.column(hp, ep, off, [lambda r=r: perm(b, rows[r], codes)
                                                       for r in range(SHARED_ROWS)], hd, f, best)
            return [*hd_n, *f_n, bestn]

        _, carried = column_loop(b, "shared", i64(0), t_, 1, [zero] * (2 * SHARED_ROWS) + [best0],
                                 column)
        bestn = carried[-1]
        store(b, bestn, stp, i64(0))
        return context.get_dummy_value()

    return codegen


@intrinsic
def _sweep_shared(typingctx, hb, eb, tv, tab, roffs, t, go, ge, st):  # noqa: ANN001, ANN201, ARG001
    """SHARED_ROWS rows over columns 0 .. T-1, every lane the same query residue in a row: the
    score of
    row r at column j is ``tab[roffs[r] + c]`` with ``c`` the lane's target code ``tv[L j +
    lane]`` (one ``vpermw`` / ``vpermb`` of the row's table entries by the column's codes).

    int16 arrays: 32 lanes (L = 32, table rows of 32, ``go``/``ge`` <= 32767); int8 arrays: 64
    lanes (L = 64, table rows of 64, ``go``/``ge`` <= 127) with a flat table, or 32 lanes
    (AVX2: L = 32, rows of 32, two ``vpshufb``) with a 2-D (32, 32) table, the table's
    dimensions picking the kernel when it compiles. ``hb``, ``eb``: H of the row above
    and E of the first row (L per column; read, then written for the next call), ``tv``: the
    lane-major target codes, ``roffs``: the rows' table offsets (int64 (SHARED_ROWS,)), ``t``:
    columns
    (> 0), ``st``: the running best (L lanes, read and written). One loop in IR; the values of
    a column pass from row to row in registers."""
    if st.dtype == types.int16:
        vt, perm = _V, _permw
    elif st.dtype == types.int8:
        vt, perm = (_V8H, _pshufb2) if tab.ndim == 2 else (_V8, _permb)
    else:
        return None
    return types.void(hb, eb, tv, tab, roffs, t, go, ge, st), _shared_codegen(vt, perm)


def _ungapped_codegen(vt, perm):  # noqa: ANN001, ANN202
    """The body of :func:`_sweep_ungapped` on ``vt`` (<64 x i8> with ``perm`` vpermb, or
    <32 x i8> with two vpshufb): per cell ``h = max(H(i-1, j-1) + s, 0)``, ``best = max(best,
    h)`` in saturating int8, the values of a column passing from row to row in registers."""
    lanes = vt.count
    load = partial(vload, lanes=lanes, align=1)
    store = partial(vstore, align=1)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        hb_, tv_, tab_, roffs_, t_, st_ = args
        tys = signature.args
        b = builder
        i64 = lambda x: ir.Constant(_i64, x)  # noqa: E731
        hp, tvp, tabp, rp, stp = (_data(context, b, tys[k], v) for k, v in (
            (0, hb_), (1, tv_), (2, tab_), (3, roffs_), (5, st_)))
        rows = [load(b, tabp, b.load(b.gep(rp, [i64(r)]))) for r in range(SHARED_ROWS)]
        kind = f"v{lanes}i8"
        adds = _fn(b, f"llvm.sadd.sat.{kind}", 2, vt)
        smax = _fn(b, f"llvm.smax.{kind}", 2, vt)
        zero = ir.Constant(vt, [0] * lanes)
        best0 = load(b, stp, i64(0))

        def column(j, *carried):  # noqa: ANN001, ANN202
            hd, best = carried[:SHARED_ROWS], carried[-1]
            off = b.mul(j, i64(lanes))
            codes = load(b, tvp, off)
            hup = load(b, hp, off)
            hd_n, hs = [], []
            for r in range(SHARED_ROWS):
                h = b.call(smax, [b.call(adds, [hd[r], perm(b, rows[r], codes)]), zero])
                hd_n.append(hup)
                hs.append(h)
                hup = h
            store(b, hup, hp, off)
            while len(hs) > 1:  # the running best: a tree over the rows, then one max
                hs = [b.call(smax, [hs[k], hs[k + 1]]) if k + 1 < len(hs) else hs[k]
                      for k in range(0, len(hs), 2)]
            return [*hd_n, b.call(smax, [best, hs[0]])]

        _, carried = column_loop(b, "ungapped", i64(0), t_, 1, [zero] * SHARED_ROWS + [best0],
                                 column)
        store(b, carried[-1], stp, i64(0))
        return context.get_dummy_value()

    return codegen


@intrinsic
def _sweep_ungapped(typingctx, hb, tv, tab, roffs, t, st):  # noqa: ANN001, ANN201, ARG001
    """:func:`_sweep_shared` without gaps (int8 only): SHARED_ROWS rows of the ungapped
    recurrence over columns 0 .. T-1; ``hb``: H of the row above (read, then written), ``st``:
    the running best. 64 lanes with a flat table, 32 (AVX2) with a (32, 32) one."""
    if st.dtype != types.int8:
        return None
    vt, perm = (_V8H, _pshufb2) if tab.ndim == 2 else (_V8, _permb)
    return types.void(hb, tv, tab, roffs, t, st), _ungapped_codegen(vt, perm)


@njit(cache=True, nogil=True)
def _lane_codes(tc, to, tl, idx, T, tv, lanes):  # noqa: ANN001, ANN201, PLR0913
    """The codes of the targets ``idx`` (at most ``lanes``) lane-major into ``tv`` (T columns of
    ``lanes``): ``tv[j lanes + u] = t_u[j]``, PAD past a target's end."""
    for j in range(T * lanes):
        tv[j] = PAD
    for u in range(idx.shape[0]):
        k = idx[u]
        for j in range(tl[k]):
            tv[j * lanes + u] = tc[to[k] + j]


@njit(cache=True, nogil=True, error_model="numpy")
def _shared_sweeps(tab, q, tv, n, T, go, ge, limit, st, pad):  # noqa: ANN001, ANN201, PLR0913
    """The query ``q`` against the ``n`` targets whose lane-major codes are ``tv`` (at most one
    vector of ``st``'s lanes, T columns; :func:`_lane_codes`), SHARED_ROWS query rows a sweep,
    into the running best ``st`` (int16 or int8); stops early once every lane has reached
    ``limit``. ``q``: the rows' table rows (residue codes, or positions for a profile's table),
    ``pad``: the table row of the rows past the query."""
    lanes = st.shape[0]
    Q = q.shape[0]
    hb = np.zeros(T * lanes, dtype=st.dtype)
    eb = np.zeros(T * lanes, dtype=st.dtype)
    rows = np.empty(SHARED_ROWS, dtype=np.int64)
    for i0 in range(0, Q, SHARED_ROWS):
        for r in range(SHARED_ROWS):  # rows past the query: the pad row (only gaps reach it)
            i = i0 + r
            rows[r] = np.int64(q[i]) * lanes if i < Q else pad * lanes
        _sweep_shared(hb, eb, tv, tab, rows, T, go, ge, st)
        if (i0 // SHARED_ROWS + 1) % _CHECK_BLOCKS == 0 and _all_saturated(st, n, limit):
            break


@njit(cache=True, nogil=True, error_model="numpy")
def _ungapped_sweeps(tab, q, tv, n, T, limit, st):  # noqa: ANN001, ANN201, PLR0913
    """:func:`_shared_sweeps` of the ungapped recurrence (:func:`_sweep_ungapped`)."""
    lanes = st.shape[0]
    Q = q.shape[0]
    hb = np.zeros(T * lanes, dtype=st.dtype)
    rows = np.empty(SHARED_ROWS, dtype=np.int64)
    for i0 in range(0, Q, SHARED_ROWS):
        for r in range(SHARED_ROWS):  # rows past the query: the pad row (scores -128)
            i = i0 + r
            rows[r] = np.int64(q[i]) * lanes if i < Q else PAD * lanes
        _sweep_ungapped(hb, tv, tab, rows, T, st)
        if (i0 // SHARED_ROWS + 1) % _CHECK_BLOCKS == 0 and _all_saturated(st, n, limit):
            break


def _fill_half(b, perm2, tabp, rp, r, xp, xbase, h, sp, sbase):  # noqa: ANN001, ANN202, PLR0913
    """Generator emitting, one instruction group per step, the scores of row r at the 16
    columns of half h of a chunk (codes from ``xp[xbase:]``) into ``sp[sbase:]`` (32 vectors
    per row, lane-major)."""
    half = LANES16 // 2
    i64 = lambda x: ir.Constant(_i64, x)  # noqa: E731
    vecs = []
    for p in range(half):
        ta = _vload(b, tabp, b.load(b.gep(rp, [i64(r * LANES16 + 2 * p)])))
        tb = _vload(b, tabp, b.load(b.gep(rp, [i64(r * LANES16 + 2 * p + 1)])))
        x = _vload(b, xp, b.add(xbase, i64((h * half + p) * LANES16)))
        vecs.append(b.call(perm2, [ta, x, tb]))
        yield
    for m in range(1, 5):
        sh = 1 << m
        lo = ir.Constant(_VI, [c if not c & sh else LANES16 + c - sh for c in range(LANES16)])
        hi = ir.Constant(_VI, [c + sh if not c & sh else LANES16 + c for c in range(LANES16)])
        vb = 1 << (m - 1)
        out = list(vecs)
        for w in range(half):
            if not w & vb:
                out[w] = b.shuffle_vector(vecs[w], vecs[w | vb], lo)
                out[w | vb] = b.shuffle_vector(vecs[w], vecs[w | vb], hi)
                yield
        vecs = out
    for w in range(half):
        _vstore(b, vecs[w], sp, b.add(sbase, i64((h * half + w) * LANES16)))
        yield


_CHUNK = LANES16 * LANES16  # elements of 32 columns of lane-major int16 vectors
_SLOT = ROWS * _CHUNK  # one chunk's scores of ROWS rows


@intrinsic
def _block_pairs(typingctx, hb, eb, sb, tab, rows, xc, t, go, ge, st):  # noqa: ANN001, ANN201, ARG001
    """ROWS rows of independent pairs over columns 0 .. T-1, the scores computed on the way.

    Lane u's score at row r, column j is ``tab[rows[32 r + u] + t_u[j]]`` (``rows``: int64
    (32 ROWS,), ``xc``: the codes as :func:`_pair_codes` arranges them). Each chunk of 32
    columns: one ``vpermi2w`` per lane pair, row and 16 columns looks both lanes' matrix rows up
    (lane bit 0 lands in element bit 0), four stages of two-source shuffles swap element bits
    1..4 (column bits 0..3) with the vectors' lane bits, and the lane-major vectors go to ``sb``
    (int16, 2 x ROWS x 32 x 32: two chunks). The scores of chunk c + 1 are computed within the
    loop over chunk c, their instructions interleaved with the recurrences (shuffles and
    arithmetic share the vector ports). Other arguments as :func:`_sweep_shared`'s.
    """
    sig = types.void(hb, eb, sb, tab, rows, xc, t, go, ge, st)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        hb_, eb_, sb_, tab_, rows_, xc_, t_, go_, ge_, st_ = args
        tys = signature.args
        b = builder
        i64 = lambda x: ir.Constant(_i64, x)  # noqa: E731
        hp, ep, sp, tabp, rp, xp, stp = (_data(context, b, tys[k], v) for k, v in (
            (0, hb_), (1, eb_), (2, sb_), (3, tab_), (4, rows_), (5, xc_), (9, st_)))
        perm2 = cgutils.get_or_insert_function(
            b.module, ir.FunctionType(_V, [_V, _V, _V]), "llvm.x86.avx512.vpermi2var.hi.512")
        dp = _Dp(b, go_, ge_)
        zero = ir.Constant(_V, [0] * LANES16)

        def fill(xbase, sbase):  # noqa: ANN001, ANN202
            for r in range(ROWS):
                for h in range(2):
                    yield from _fill_half(b, perm2, tabp, rp, r, xp, xbase, h, sp,
                                          b.add(sbase, i64(r * _CHUNK)))

        best0 = _vload(b, stp, i64(0))
        nfull = b.sdiv(t_, i64(LANES16))
        for _ in fill(i64(0), i64(0)):  # chunk 0 into slot 0
            pass
        pre = b.block
        loop = b.append_basic_block("p16.loop")
        mid = b.append_basic_block("p16.mid")
        tail = b.append_basic_block("p16.tail")
        done = b.append_basic_block("p16.done")
        b.cbranch(b.icmp_signed(">", nfull, i64(0)), loop, mid)

        b.position_at_end(loop)
        c = b.phi(_i64)
        hd = [b.phi(_V) for _ in range(ROWS)]
        f = [b.phi(_V) for _ in range(ROWS)]
        best = b.phi(_V)
        slot = b.and_(c, i64(1))
        cur = b.mul(slot, i64(_SLOT))
        nxt = b.mul(b.xor(slot, i64(1)), i64(_SLOT))
        cn = b.add(c, i64(1))
        gen = fill(b.mul(cn, i64(_CHUNK)), nxt)  # the next chunk's scores
        per_col = 16  # steps of the next chunk's scores per column: spread over half of them
        st_hd, st_f, st_best = hd, f, best
        for e in range(LANES16):
            off = b.mul(b.add(b.mul(c, i64(LANES16)), i64(e)), i64(LANES16))

            def score(r, e=e):  # noqa: ANN001, ANN202
                return _vload(b, sp, b.add(cur, i64(r * _CHUNK + e * LANES16)))

            st_hd, st_f, st_best = dp.column(hp, ep, off, [lambda r=r: score(r)
                                                           for r in range(ROWS)],
                                             st_hd, st_f, st_best)
            for _ in range(per_col):
                if next(gen, True) is True:
                    break
        for _ in gen:
            pass
        end = b.block
        b.cbranch(b.icmp_signed("<", cn, nfull), loop, mid)
        c.add_incoming(i64(0), pre)
        c.add_incoming(cn, end)
        for r in range(ROWS):
            for phi, v1 in ((hd[r], st_hd[r]), (f[r], st_f[r])):
                phi.add_incoming(zero, pre)
                phi.add_incoming(v1, end)
        best.add_incoming(best0, pre)
        best.add_incoming(st_best, end)

        b.position_at_end(mid)  # columns past the last full chunk, one at a time
        m_hd = [b.phi(_V) for _ in range(ROWS)]
        m_f = [b.phi(_V) for _ in range(ROWS)]
        m_best = b.phi(_V)
        for r in range(ROWS):
            for phi, v1 in ((m_hd[r], st_hd[r]), (m_f[r], st_f[r])):
                phi.add_incoming(zero, pre)
                phi.add_incoming(v1, end)
        m_best.add_incoming(best0, pre)
        m_best.add_incoming(st_best, end)
        j0 = b.mul(nfull, i64(LANES16))
        tslot = b.mul(b.and_(nfull, i64(1)), i64(_SLOT))
        b.cbranch(b.icmp_signed("<", j0, t_), tail, done)

        b.position_at_end(tail)
        j = b.phi(_i64)
        t_hd = [b.phi(_V) for _ in range(ROWS)]
        t_f = [b.phi(_V) for _ in range(ROWS)]
        t_best = b.phi(_V)
        off = b.mul(j, i64(LANES16))
        soff = b.add(tslot, b.mul(b.sub(j, j0), i64(LANES16)))
        n_hd, n_f, n_best = dp.column(
            hp, ep, off, [lambda r=r: _vload(b, sp, b.add(soff, i64(r * _CHUNK)))
                          for r in range(ROWS)], t_hd, t_f, t_best)
        jn = b.add(j, i64(1))
        tend = b.block
        b.cbranch(b.icmp_signed("<", jn, t_), tail, done)
        j.add_incoming(j0, mid)
        j.add_incoming(jn, tend)
        for r in range(ROWS):
            for phi, v0, v1 in ((t_hd[r], m_hd[r], n_hd[r]), (t_f[r], m_f[r], n_f[r])):
                phi.add_incoming(v0, mid)
                phi.add_incoming(v1, tend)
        t_best.add_incoming(m_best, mid)
        t_best.add_incoming(n_best, tend)

        b.position_at_end(done)
        out = b.phi(_V)
        out.add_incoming(m_best, mid)
        out.add_incoming(n_best, tend)
        _vstore(b, out, stp, i64(0))
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, nogil=True)
def _pair_codes(tc, to, tl, idx, tp):  # noqa: ANN001, ANN202
    """The target codes of the lanes ``idx`` as :func:`_block_pairs` reads them, ``tp``
    columns (a multiple of 32): for 16-column block jb, lane pair p, k < 16 and s < 2, element
    ``(16 jb + p) 32 + 2 k + s`` holds ``t[16 jb + k] + 32 s`` of lane 2p + s (a ``vpermi2w``
    index: bit 5 picks the lane's table), PAD past the lane's end."""
    half = LANES16 // 2
    xc = np.empty(tp * LANES16, dtype=np.int16)
    for jb in range(tp // half):
        for p in range(half):
            for k in range(half):
                for s in range(2):
                    xc[((jb * half + p) * LANES16) + 2 * k + s] = PAD + LANES16 * s
    for u in range(idx.shape[0]):
        k = idx[u]
        p, s = u // 2, u % 2
        for j in range(tl[k]):
            xc[((j // half) * half + p) * LANES16 + 2 * (j % half) + s] = (
                tc[to[k] + j] + LANES16 * s)
    return xc


@njit(cache=True, nogil=True)
def _all_saturated(st, n, limit):  # noqa: ANN001, ANN202
    for u in range(n):
        if st[u] < limit:
            return False
    return True


@njit(cache=True, nogil=True, error_model="numpy")
def _group16(tab, qc, qo, ql_, tc, to, tl, idx, go, ge, limit, out, sat):  # noqa: ANN001, ANN201, PLR0913
    """Best local scores of the pairs ``idx`` (<= 32) into ``out``; ``sat[u]``: lane u reached
    ``limit`` (its score is then not exact)."""
    n = idx.shape[0]
    T = 0
    Q = 0
    for u in range(n):
        T = max(T, tl[idx[u]])
        Q = max(Q, ql_[idx[u]])
    st = np.zeros(LANES16, dtype=np.int16)
    if T > 0 and Q > 0:
        k0 = idx[0]
        shared = True
        for u in range(1, n):
            k = idx[u]
            if ql_[k] != ql_[k0]:
                shared = False
                break
            if qo[k] != qo[k0]:
                for i in range(ql_[k0]):
                    if qc[qo[k] + i] != qc[qo[k0] + i]:
                        shared = False
                        break
                if not shared:
                    break
        if shared:  # one query: a score vector is the query residue's row permuted by codes
            tv = np.empty(T * LANES16, dtype=np.int16)
            _lane_codes(tc, to, tl, idx, T, tv, LANES16)
            _shared_sweeps(tab, qc[qo[k0]:qo[k0] + ql_[k0]], tv, n, T, go, ge, limit, st, PAD)
        else:  # independent pairs: each lane's matrix row by its own codes, transposed
            hb = np.zeros(T * LANES16, dtype=np.int16)
            eb = np.zeros(T * LANES16, dtype=np.int16)
            tp = (T + LANES16 - 1) // LANES16 * LANES16
            xc = _pair_codes(tc, to, tl, idx, tp + LANES16)  # a pad chunk past the end
            sb = np.empty(2 * ROWS * LANES16 * LANES16, dtype=np.int16)
            prow = np.full(ROWS * LANES16, PAD * LANES16, dtype=np.int64)
            for i0 in range(0, Q, ROWS):
                for r in range(ROWS):
                    i = i0 + r
                    for u in range(n):
                        k = idx[u]
                        prow[r * LANES16 + u] = (np.int64(qc[qo[k] + i]) * LANES16
                                                 if i < ql_[k] else PAD * LANES16)
                _block_pairs(hb, eb, sb, tab, prow, xc, T, go, ge, st)
                if (i0 // ROWS + 1) % _CHECK_BLOCKS == 0 and _all_saturated(st, n, limit):
                    break
    for u in range(n):
        out[u] = st[u]
        sat[u] = st[u] >= limit


@njit(cache=True, parallel=True)
def _run16(tab, qc, qo, ql_, tc, to, tl, order, go, ge, limit, scores, sat):  # noqa: ANN001, ANN201, PLR0913
    ng = (order.shape[0] + LANES16 - 1) // LANES16
    for p0 in prange(ng):
        g = p0 // 2 if p0 % 2 == 0 else ng - 1 - p0 // 2  # short and long groups alternate
        idx = order[g * LANES16:min(order.shape[0], (g + 1) * LANES16)]
        o = np.zeros(idx.shape[0], dtype=np.float32)
        s = np.zeros(idx.shape[0], dtype=np.bool_)
        _group16(tab, qc, qo, ql_, tc, to, tl, idx, go, ge, limit, o, s)
        for u in range(idx.shape[0]):
            scores[idx[u]] = o[u]
            sat[idx[u]] = s[u]


def int16_limit(M: np.ndarray, go: float, ge: float) -> int | None:
    """The saturation limit of the int16 kernel for the float32 matrix ``M`` and the float32 gap
    costs (first residue ``go``, each further ``ge``), or None where the kernel does not apply:
    a non-integer (or non-finite) value, or a largest score that leaves int16 no headroom."""
    M = np.asarray(M, dtype=np.float32)
    if not (np.isfinite(go) and np.isfinite(ge) and go == np.round(go) and ge == np.round(ge)):
        return None
    if not (np.all(np.isfinite(M)) and np.array_equal(M, np.round(M))):
        return None
    top = max(float(M.max(initial=0.0)), 0.0)
    return int(I16_MAX - top) if top < I16_MAX else None


def _table16(M: np.ndarray) -> np.ndarray:
    """The 32 x 32 int16 lookup table (flat): the matrix, clamped to int16, and -32768 in the
    pad row and column (and wherever no code reaches)."""
    K = M.shape[0]
    tab = np.full((TABLE16, TABLE16), I16_MIN, dtype=np.int16)
    tab[:K, :K] = np.clip(M, I16_MIN, I16_MAX).astype(np.int16)
    return tab.reshape(-1)


def int16_scores(M: np.ndarray, go: float, ge: float, limit: int, qc: np.ndarray,
                 qo: np.ndarray, ql_: np.ndarray, tc: np.ndarray, to: np.ndarray,
                 tl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(scores, saturated) of the packed pairs (:func:`homalign.dp.lanes.pack_codes`) by the
    int16 kernel alone (``limit`` from :func:`int16_limit`); ``saturated[k]``: pair k reached
    ``limit`` and its score is not exact. Needs :data:`AVAILABLE`."""
    if not AVAILABLE:
        raise RuntimeError("the int16 kernel needs AVX-512BW")
    n = ql_.shape[0]
    scores = np.zeros(n, dtype=np.float32)
    sat = np.zeros(n, dtype=np.bool_)
    if n == 0:
        return scores, sat
    order = np.lexsort((ql_, tl)).astype(np.int64)
    g16 = np.int64(min(float(go), I16_MAX))
    e16 = np.int64(min(float(ge), I16_MAX))
    _run16(_table16(M), qc, qo, ql_, tc, to, tl, order, g16, e16, np.int16(limit), scores, sat)
    return scores, sat


# ------------------------------------------------ int8: one query against many targets
class Int8Layout(NamedTuple):
    """Targets as the int8 kernel reads them, whatever the query (:func:`int8_layout`): sorted
    by length (``order``), ``lanes`` a group, the part-filled group the shortest (:func:`_group`);
    group g's lane-major codes (:func:`_lane_codes`) are ``codes[starts[g]:starts[g] + lanes
    widths[g]]``, ``widths[g]`` its longest target. One layout serves every query of a database
    (``homalign.search.sw_scores`` keeps it)."""

    order: np.ndarray
    widths: np.ndarray
    starts: np.ndarray
    codes: np.ndarray
    lanes: int


@njit(cache=True, nogil=True)
def _group(order, ng, lanes, g):  # noqa: ANN001, ANN202
    """The targets of group ``g`` of ``ng`` (``order``: sorted by length): ``lanes`` a group, the
    part-filled one first, so that the empty lanes run as long as the shortest targets."""
    skip = ng * lanes - order.shape[0]
    return order[max(0, g * lanes - skip):(g + 1) * lanes - skip]


@njit(cache=True, nogil=True)
def _fill_layout(tc, to, tl, order, widths, starts, codes, lanes):  # noqa: ANN001, ANN201, PLR0913
    for g in range(widths.shape[0]):
        idx = _group(order, widths.shape[0], lanes, g)
        T = widths[g]
        _lane_codes(tc, to, tl, idx, T, codes[starts[g]:starts[g] + T * lanes], lanes)


def int8_layout(tc: np.ndarray, to: np.ndarray, tl: np.ndarray,
                lanes: int | None = None) -> Int8Layout:
    """The :class:`Int8Layout` of the targets ``tc[to[k]:to[k] + tl[k]]`` for ``lanes`` a group
    (default :data:`INT8_LANES`, the kernel here; one byte a residue, padding to each group's
    longest target)."""
    lanes = int(lanes or INT8_LANES or LANES8)
    tl = np.ascontiguousarray(tl, dtype=np.int64)
    order = np.argsort(tl, kind="stable").astype(np.int64)
    ng = (len(order) + lanes - 1) // lanes
    skip = ng * lanes - len(order)  # the empty lanes, all in the first (shortest) group
    widths = tl[order[np.arange(1, ng + 1) * lanes - skip - 1]]  # sorted: a group's last
    starts = np.zeros(ng, dtype=np.int64)
    np.cumsum(widths[:-1] * lanes, out=starts[1:])
    codes = np.empty(int(widths.sum()) * lanes, dtype=np.int8)
    _fill_layout(tc, np.ascontiguousarray(to, dtype=np.int64), tl, order, widths, starts, codes,
                 lanes)
    return Int8Layout(order, widths, starts, codes, lanes)


@njit(cache=True, parallel=True)
def _run8(tab, q, order, widths, starts, codes, lanes, go, ge, limit, scores, sat, gapped, pad):  # noqa: ANN001, ANN201, PLR0913, E501
    ng = widths.shape[0]
    for p0 in prange(ng):
        g = p0 // 2 if p0 % 2 == 0 else ng - 1 - p0 // 2  # short and long groups alternate
        idx = _group(order, ng, lanes, g)
        st = np.zeros(lanes, dtype=np.int8)
        T = widths[g]
        tv = codes[starts[g]:starts[g] + T * lanes]
        if T > 0 and q.shape[0] > 0:
            if gapped:
                _shared_sweeps(tab, q, tv, idx.shape[0], T, go, ge, limit, st, pad)
            else:
                _ungapped_sweeps(tab, q, tv, idx.shape[0], T, limit, st)
        for u in range(idx.shape[0]):
            scores[idx[u]] = st[u]
            sat[idx[u]] = st[u] >= limit


def int8_limit(M: np.ndarray, go: float, ge: float) -> int | None:
    """:func:`int16_limit` for the int8 kernel: ``127 - max(max score, 0)``, or None where it
    does not apply (non-integer values, or no headroom)."""
    return None if int16_limit(M, go, ge) is None else int8_ungapped_limit(M)


def int8_scores(M: np.ndarray, go: float, ge: float, limit: int, q: np.ndarray,
                tc: np.ndarray, to: np.ndarray, tl: np.ndarray,
                layout: Int8Layout | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(scores, saturated) of the query codes ``q`` against each packed target (int8 kernel,
    :data:`INT8_LANES` targets a vector; ``limit`` from :func:`int8_limit`); ``saturated[k]``:
    target k reached ``limit`` and its score is not exact; ``layout``: these targets'
    :func:`int8_layout` for this kernel, made here when not given."""
    return _int8_pass(M, limit, q, tc, to, tl, layout, (go, ge))


def int8_profile_scores(P: np.ndarray, go: float, ge: float, limit: int, tc: np.ndarray,
                        to: np.ndarray, tl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(scores, saturated) of the query profile ``P`` ((Lq, K) integer scores, a PSSM: row i
    scores query position i against each target code) against each packed target, with uniform
    gaps (``go`` a gap's first residue, ``ge`` each further one): :func:`int8_scores`' kernel
    whose table rows are the profile's rows instead of a matrix's (``limit`` from
    :func:`int8_limit` of ``P``)."""
    return _int8_pass(P, limit, None, tc, to, tl, None, (go, ge))


def _int8_pass(M: np.ndarray, limit: int, q: np.ndarray | None, tc: np.ndarray,
               to: np.ndarray, tl: np.ndarray, layout: Int8Layout | None,
               gaps: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`int8_scores` (``gaps``: (go, ge)) or :func:`int8_ungapped_scores` (None); with
    ``q`` None, ``M`` is a query profile (:func:`int8_profile_scores`)."""
    lanes = INT8_LANES
    if not lanes:
        raise RuntimeError("the int8 kernel needs AVX2 (or AVX-512BW and AVX-512 VBMI)")
    n = tl.shape[0]
    scores = np.zeros(n, dtype=np.float32)
    sat = np.zeros(n, dtype=np.bool_)
    if n == 0:
        return scores, sat
    if layout is None:
        layout = int8_layout(tc, to, tl, lanes)
    elif len(layout.order) != n or layout.lanes != lanes:
        raise ValueError(f"the layout holds {len(layout.order)} targets in groups of "
                         f"{layout.lanes}, not {n} in groups of {lanes}")
    g8, e8 = (np.int64(min(float(g), I8_MAX)) for g in (gaps or (0.0, 0.0)))
    if q is None:  # a profile: row i of the table is position i's, the pad row follows
        tab, rows, pad = _profile_table8(M, lanes), np.arange(len(M), dtype=np.int32), len(M)
    else:
        tab, rows, pad = _table8(M, lanes), np.ascontiguousarray(q, dtype=np.int32), PAD
    _run8(tab, rows, *layout[:4], np.int64(lanes), g8, e8, np.int8(limit), scores, sat,
          gaps is not None, np.int64(pad))
    return scores, sat


def _table8(M: np.ndarray, lanes: int) -> np.ndarray:
    """The int8 kernels' score table: row ``a`` holds ``M[a, :]``, -128 elsewhere; flat for the
    64-lane kernel (``vpermb``), (32, 32) for the 32-lane one (two ``vpshufb``)."""
    K = np.asarray(M).shape[0]
    width = LANES8 if lanes == LANES8 else TABLE16  # a row per code: vpermb 64, vpshufb 32
    tab = np.full((width, width), I8_MIN, dtype=np.int8)
    tab[:K, :K] = np.clip(M, I8_MIN, I8_MAX).astype(np.int8)
    return tab.reshape(-1) if lanes == LANES8 else tab


def _profile_table8(P: np.ndarray, lanes: int) -> np.ndarray:
    """:func:`_table8` of a query profile: row i holds ``P[i, :]`` (-128 past its K codes), then
    one pad row of -128; flat for the 64-lane kernel, 2-D for the 32-lane one."""
    lq, K = np.asarray(P).shape
    tab = np.full((lq + 1, lanes), I8_MIN, dtype=np.int8)
    tab[:lq, :K] = np.clip(P, I8_MIN, I8_MAX).astype(np.int8)
    return tab.reshape(-1) if lanes == LANES8 else tab


def int8_ungapped_limit(M: np.ndarray) -> int | None:
    """The int8 ungapped kernel's saturation limit, ``127 - max(max score, 0)``, or None where
    it does not apply (non-integer or non-finite values, or no headroom)."""
    M = np.asarray(M, dtype=np.float64)
    if not (np.all(np.isfinite(M)) and np.all(M == np.round(M))):
        return None
    top = max(float(M.max(initial=0.0)), 0.0)
    return int(I8_MAX - top) if top < I8_MAX else None


def int8_ungapped_scores(M: np.ndarray, limit: int, q: np.ndarray, tc: np.ndarray,
                         to: np.ndarray, tl: np.ndarray,
                         layout: Int8Layout | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(scores, saturated): the best ungapped local score (the best diagonal segment) of the
    query codes ``q`` against each packed target, :func:`int8_scores`' lanes and layout with
    ``h = max(H(i-1, j-1) + s, 0)`` per cell (exact while below ``limit``, from
    :func:`int8_ungapped_limit`: ``saturated[k]`` marks the targets whose score is not)."""
    return _int8_pass(M, limit, q, tc, to, tl, layout, None)
