"""Many alignments at once: :func:`align_batch`, a numba ``prange`` over pairs.

The score matrices and gap vectors are packed into flat buffers with offsets, so one compiled,
parallel call handles pairs of any shapes; each pair runs
the same kernels as :func:`align` / :func:`align_score`, so the results are identical. Threads:
``NUMBA_NUM_THREADS`` (or ``numba.set_num_threads``).

Score-only local pairs whose gap costs allow the fast kernels (constant go >= ge >= 0, or
position-specific and all >= 0) run instead 16 at a time in the inter-sequence kernel of
:mod:`homalign.dp.lanes` (pairs with equal constant costs together), bit-identical to the
per-pair kernels; pairs left over (a group of fewer than 8) take the per-pair kernels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit, prange

from homalign.dp import pairwise
from homalign.dp.checkpoint import align_checkpointed
from homalign.dp.gaps import GapCosts
from homalign.dp.kernels import gotoh, score_constant, score_general, score_integral, traceback
from homalign.dp.lanes import code_table, pack_codes, score_local_lanes, validate_codes_args
from homalign.dp.modes import LOCAL, mode_code
from homalign.dp.pairwise import integral_bound_ok, validate_scores
from homalign.dp.result import DPResult
from homalign.dp.trace_lanes import trace_lanes

__all__ = ["align_batch"]


@njit(cache=True, parallel=True)
def _batch_kernel(  # noqa: ANN201, PLR0913
    flat, m_off, lqs, lts, vecs, v_off, kind, cparams, mode, trace, ops, o_off, scores, meta
):  # noqa: ANN001
    """Align pair k for every k with ``kind[k] >= 0`` in parallel (its S is
    ``flat[m_off[k]:m_off[k] + lq * lt]``); fill scores[k] and meta[k] = (n_ops, si, sj)."""
    n = lqs.shape[0]
    for k in prange(n):
        if kind[k] < 0:
            continue  # scored by a lane kernel or the checkpointed path
        lq = lqs[k]
        lt = lts[k]
        S = flat[m_off[k]:m_off[k] + lq * lt].reshape((lq, lt))
        qio = vecs[0][v_off[k, 0]:v_off[k, 0] + lq]
        qie = vecs[1][v_off[k, 0]:v_off[k, 0] + lq]
        tio = vecs[2][v_off[k, 1]:v_off[k, 1] + lt + 1]
        tie = vecs[3][v_off[k, 1]:v_off[k, 1] + lt + 1]
        tdo = vecs[4][v_off[k, 2]:v_off[k, 2] + lt]
        tde = vecs[5][v_off[k, 2]:v_off[k, 2] + lt]
        qdo = vecs[6][v_off[k, 3]:v_off[k, 3] + lq + 1]
        qde = vecs[7][v_off[k, 3]:v_off[k, 3] + lq + 1]
        if trace:
            dirs = np.empty((lq + 1, lt + 1), np.uint8)
            sc, ei, ej, es = gotoh(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode, dirs)
            nops, si, sj = traceback(dirs, ei, ej, es, ops[o_off[k]:o_off[k] + lq + lt])
            scores[k] = sc
            meta[k, 0] = nops
            meta[k, 1] = si
            meta[k, 2] = sj
        elif kind[k] == 3:
            scores[k] = score_general(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode)
        elif kind[k] > 0:
            ok = False
            if kind[k] == 2:
                sc, ok = score_integral(
                    S, cparams[k, 0], cparams[k, 1], cparams[k, 2], cparams[k, 3], mode
                )
                scores[k] = sc
            if not ok:
                scores[k] = score_constant(
                    S, cparams[k, 0], cparams[k, 1], cparams[k, 2], cparams[k, 3], mode
                )
        else:
            dummy = np.zeros((1, 1), np.uint8)
            scores[k] = gotoh(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode, dummy)[0]


@njit(cache=True, nogil=True)
def _paths(ops, o_off, meta, spans, p_off, pairs, r_off, runs):  # noqa: ANN001, ANN201
    """Per pair k (column codes ``ops[o_off[k]:][:meta[k, 0]]`` from ``meta[k, 1:]``): the
    aligned pairs into ``pairs[p_off[k]:]``, the CIGAR runs (length, code) into
    ``runs[r_off[k]:]``, and ``spans[k] = (q_end, t_end, n_pairs, n_runs)``, as
    :func:`homalign.dp.result.from_ops` computes them."""
    for k in range(meta.shape[0]):
        i = meta[k, 1]
        j = meta[k, 2]
        np_ = 0
        nr = 0
        prev = 0
        for c in range(meta[k, 0]):
            op = ops[o_off[k] + c]
            if op == 1:
                pairs[p_off[k] + np_, 0] = i
                pairs[p_off[k] + np_, 1] = j
                np_ += 1
            if op != 3:
                i += 1
            if op != 2:
                j += 1
            if op == prev:
                runs[r_off[k] + nr - 1, 0] += 1
            else:
                runs[r_off[k] + nr, 0] = 1
                runs[r_off[k] + nr, 1] = op
                nr += 1
                prev = op
        spans[k, 0] = i
        spans[k, 1] = j
        spans[k, 2] = np_
        spans[k, 3] = nr


_LETTERS = ("?", "M", "I", "D")


def _results(scores: np.ndarray, ops: np.ndarray, o_off: np.ndarray, meta: np.ndarray,
             lqs: np.ndarray, lts: np.ndarray, mode: str) -> list[DPResult]:
    """The DPResults of align_batch's traceback buffers (equal to ``from_ops`` per pair, in
    one compiled pass)."""
    n = meta.shape[0]
    p_off = _offsets(np.minimum(lqs, lts))
    r_off = o_off
    spans = np.zeros((n, 4), dtype=np.int64)
    pairs = np.empty((int(np.minimum(lqs, lts).sum()), 2), dtype=np.int32)
    runs = np.zeros((max(int(ops.shape[0]), 1), 2), dtype=np.int64)
    _paths(ops, o_off, meta, spans, p_off, pairs, r_off, runs)
    out = []
    sl = spans.tolist()
    ml = meta.tolist()
    po = p_off.tolist()
    ro = r_off.tolist()
    for k in range(n):
        q_end, t_end, npairs, nruns = sl[k]
        rk = runs[ro[k]:ro[k] + nruns].tolist()
        cigar = "".join(f"{a}{_LETTERS[b]}" for a, b in rk)
        out.append(DPResult(score=float(scores[k]), pairs=pairs[po[k]:po[k] + npairs].copy(),
                            cigar=cigar, q_start=ml[k][1], q_end=q_end, t_start=ml[k][2],
                            t_end=t_end, mode=mode))
    return out


def _offsets(sizes: np.ndarray) -> np.ndarray:
    """Exclusive prefix sums of ``sizes`` (int64)."""
    out = np.zeros(sizes.shape[0], dtype=np.int64)
    np.cumsum(sizes[:-1], out=out[1:])
    return out


def align_batch(
    score_matrices: Sequence[np.ndarray],
    gaps: Sequence[GapCosts],
    mode: str = "local",
    score_only: bool = False,
) -> list[DPResult] | list[float]:
    """Align every (S, gaps) pair in parallel; a list of :class:`DPResult` (or of float scores
    when ``score_only``), in input order, equal to per-pair :func:`align` / :func:`align_score`.
    """
    code = mode_code(mode)
    if len(score_matrices) != len(gaps):
        raise ValueError(
            f"score_matrices and gaps must have the same length, got "
            f"{len(score_matrices)} and {len(gaps)}"
        )
    n = len(score_matrices)
    if n == 0:
        return []
    checked = [validate_scores(S, g) for S, g in zip(score_matrices, gaps, strict=True)]
    mats = [c[0] for c in checked]
    lqs = np.array([m.shape[0] for m in mats], dtype=np.int64)
    lts = np.array([m.shape[1] for m in mats], dtype=np.int64)
    kv = [g.kernel_vectors() for g in gaps]
    vecs = tuple(np.concatenate([v[c] for v in kv]) for c in range(8))
    v_off = np.stack(
        [_offsets(lqs), _offsets(lts + 1), _offsets(lts), _offsets(lqs + 1)], axis=1
    )
    consts = [g.constant_costs() if score_only else None for g in gaps]
    # kernel per pair (as in align_score): 0 general, 1 constant costs, 2 constant integer costs,
    # 3 non-negative position-specific costs
    kind = np.zeros(n, dtype=np.int8)
    for k, (c, (m, hi, lo)) in enumerate(zip(consts, checked, strict=True)):
        if c is not None:
            kind[k] = 2 if integral_bound_ok(m.shape[0], m.shape[1], hi, lo, c) else 1
        elif score_only and gaps[k].nonnegative:
            kind[k] = 3
    cparams = np.array([c if c is not None else (0.0,) * 4 for c in consts], dtype=np.float32)
    ops = np.empty(int((lqs + lts).sum()) if not score_only else 1, dtype=np.uint8)
    o_off = _offsets(lqs + lts)
    scores = np.empty(n, dtype=np.float32)
    meta = np.zeros((n, 3), dtype=np.int64)
    if score_only and code == LOCAL:
        done = score_local_lanes(mats, np.flatnonzero(kind > 0), lqs, lts, vecs, v_off, cparams,
                                 np.array([c is not None for c in consts]), scores)
        kind[done] = -1
    if not score_only:
        big = np.flatnonzero((lqs + 1) * (lts + 1) > pairwise.TRACE_LIMIT_BYTES)
        kind[big] = -1  # checkpointed kernel, one at a time, below
        tconsts = [g.constant_costs() for g in gaps]
        kind[trace_lanes(mats, lqs, lts, vecs, v_off, code, tconsts, ops, o_off, scores, meta)] = -1
    rest = np.flatnonzero(kind >= 0)
    if len(rest):
        # the per-pair kernels' matrices packed into one buffer (a numba typed list of them
        # costs ~0.35 s of compilation in every new process)
        cells = lqs[rest] * lts[rest]
        m_off = np.zeros(n, dtype=np.int64)
        m_off[rest] = _offsets(cells)
        flat = np.empty(int(cells.sum()), dtype=np.float32)
        for k, a, c in zip(rest.tolist(), m_off[rest].tolist(), cells.tolist(), strict=True):
            flat[a:a + c] = mats[k].reshape(-1)
        _batch_kernel(
            flat, m_off, lqs, lts, vecs, v_off, kind, cparams, code, not score_only,
            ops, o_off, scores, meta,
        )
    if score_only:
        return [float(s) for s in scores]
    for k in big:
        sc, kops, si, sj = align_checkpointed(mats[k], kv[k], code)
        scores[k] = sc
        ops[o_off[k]:o_off[k] + kops.shape[0]] = kops
        meta[k] = (kops.shape[0], si, sj)
    return _results(scores, ops, o_off, meta, lqs, lts, mode)


def align_codes(queries: Sequence, targets: Sequence, matrix: np.ndarray,
                gap_open: float = 11.0, gap_extend: float = 1.0,
                mode: str = "local") -> list[DPResult]:
    """Align (with traceback) the pairs ``(queries[k], targets[k])`` of integer code sequences
    under a plain substitution ``matrix`` (K x K, K < 32) and BLAST-convention affine gaps (a gap
    of k residues costs ``gap_open + k * gap_extend``), as parasail's interface takes them: the
    same DPResults as :func:`align_batch` of ``matrix[q][:, t]`` with
    ``GapCosts.uniform(lq, lt, gap_open, gap_extend)``, but the 16-lane kernel looks each row's
    scores up in registers (:mod:`homalign.dp.trace_lanes`), so no matrix is built or read per
    pair. Pairs the lanes leave (a group of fewer than four, or a pair too large for a group)
    go through :func:`align_batch`."""
    code = mode_code(mode)
    M, _, _ = validate_codes_args(matrix, len(queries), len(targets), gap_open, gap_extend, None)
    n = len(queries)
    if n == 0:
        return []
    K = M.shape[0]
    qc, qo, lqs = pack_codes(queries, K)
    tc, to, lts = pack_codes(targets, K)

    def matrices(ks: np.ndarray) -> list[np.ndarray]:
        return [np.ascontiguousarray(M[qc[qo[k]:qo[k] + lqs[k]]][:, tc[to[k]:to[k] + lts[k]]])
                for k in ks.tolist()]

    empty = np.flatnonzero((lqs == 0) | (lts == 0))
    if empty.size:
        raise ValueError(f"pair {int(empty[0])}: sequences must be non-empty (a "
                         f"{int(lqs[empty[0]])}x{int(lts[empty[0]])} score matrix)")
    one = GapCosts.uniform(1, 1, gap_open, gap_extend)
    kv1 = one.kernel_vectors()
    sizes = (lqs, lqs, lts + 1, lts + 1, lts, lts, lqs + 1, lqs + 1)
    vecs = tuple(np.full(int(sz.sum()), v[0], dtype=np.float32)
                 for v, sz in zip(kv1, sizes, strict=True))
    v_off = np.stack([_offsets(lqs), _offsets(lts + 1), _offsets(lts), _offsets(lqs + 1)], axis=1)
    ops = np.empty(int((lqs + lts).sum()), dtype=np.uint8)
    o_off = _offsets(lqs + lts)
    scores = np.empty(n, dtype=np.float32)
    meta = np.zeros((n, 3), dtype=np.int64)
    done = trace_lanes(None, lqs, lts, vecs, v_off, code, [one.constant_costs()] * n, ops, o_off,
                       scores, meta, codes=(code_table(M), qc, qo, tc, to))
    results = _results(scores, ops, o_off, meta, lqs, lts, mode)
    rest = np.setdiff1d(np.arange(n), done)
    if rest.size:
        gaps = [GapCosts.uniform(int(lqs[k]), int(lts[k]), gap_open, gap_extend) for k in rest]
        for k, r in zip(rest.tolist(), align_batch(matrices(rest), gaps, mode), strict=True):
            results[k] = r
    return results
