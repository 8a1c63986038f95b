"""Traceback kernels: the 16-lane batch kernel (dp.trace_lanes), its code-sequence form
(dp.align_codes) and the checkpointed linear-memory path equal the per-pair kernel (gotoh +
traceback) exactly: same score bits, same path, in every mode, for every lane remainder, with
position-specific and negative costs, extreme and -inf scores, length-1 sequences and empty
alignments; and equal brute force."""

from __future__ import annotations

import numpy as np
import pytest
from tests.test_dp_bruteforce import brute_best, random_gap_vectors, reference_align

from homalign.dp import GapCosts, align, align_batch, align_codes
from homalign.dp import trace_lanes as tl
from homalign.dp.batch import _offsets
from homalign.dp.result import ops_from_cigar

MODES = ("local", "global", "glocal", "semiglobal")
KINDS = ("int", "float", "ps", "neg", "extreme", "hopeless")


def _pair(rng: np.random.Generator, kind: str, lq: int, lt: int) -> tuple[np.ndarray, GapCosts]:
    if kind == "int":
        return (rng.integers(-4, 6, (lq, lt)).astype(np.float32),
                GapCosts.uniform(lq, lt, float(rng.integers(0, 4)), float(rng.integers(0, 2))))
    S = rng.normal(0, 2, (lq, lt)).astype(np.float32)
    if kind == "float":
        return S, GapCosts.uniform(lq, lt, 2.5, 0.5)
    if kind == "extreme":
        S = (S * np.float32(1e6)).astype(np.float32)
        S[rng.random((lq, lt)) < 0.2] = -np.inf
        return S, GapCosts.uniform(lq, lt, 3e5, 1e4)
    if kind == "hopeless":  # every local alignment scores < 0: the empty one
        return -np.abs(S) - 1, GapCosts.uniform(lq, lt, 1.0, 0.5)
    lo = -0.7 if kind == "neg" else 0.0
    sizes = {"q_ins": lq, "t_ins": lt + 1, "t_del": lt, "q_del": lq + 1}
    vec = {f"{p}_{k}": rng.uniform(lo, 2.0 if k == "open" else 1.0, n).astype(np.float32)
           * (rng.random(n) < 0.8) for p, n in sizes.items() for k in ("open", "ext")}
    return S, GapCosts(**vec)


def _pairs(rng: np.random.Generator, n: int, kind: str, lo: int = 1, hi: int = 40):
    out = []
    for _ in range(n):
        lq, lt = (int(x) for x in rng.integers(lo, hi + 1, 2))
        out.append(_pair(rng, kind, lq, lt))
    return out


def _same(a, b) -> None:  # noqa: ANN001
    assert a.pairs.dtype == b.pairs.dtype and a.pairs.flags.c_contiguous == b.pairs.flags.c_contiguous
    assert np.float32(a.score).tobytes() == np.float32(b.score).tobytes()
    assert a.cigar == b.cigar
    assert (a.q_start, a.q_end, a.t_start, a.t_end) == (b.q_start, b.q_end, b.t_start, b.t_end)
    assert np.array_equal(a.pairs, b.pairs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_lane_traceback_equals_the_per_pair_kernel(mode: str, kind: str) -> None:
    rng = np.random.default_rng(abs(hash((mode, kind))) % 2**32)
    P = _pairs(rng, 37, kind)
    got = align_batch([p[0] for p in P], [p[1] for p in P], mode)
    for (S, g), r in zip(P, got, strict=True):
        _same(align(S, g, mode), r)


@pytest.mark.parametrize("n", [4, 5, 7, 15, 16, 17, 33, 50])
def test_lane_traceback_every_lane_remainder_runs_the_lanes(n: int) -> None:
    rng = np.random.default_rng(n)
    for mode in MODES:
        P = _pairs(rng, n, "ps" if n % 2 else "float", 1, 30)
        mats = [p[0] for p in P]
        lqs = np.array([m.shape[0] for m in mats], dtype=np.int64)
        lts = np.array([m.shape[1] for m in mats], dtype=np.int64)
        kv = [p[1].kernel_vectors() for p in P]
        vecs = tuple(np.concatenate([v[c] for v in kv]) for c in range(8))
        v_off = np.stack([_offsets(lqs), _offsets(lts + 1), _offsets(lts), _offsets(lqs + 1)], 1)
        ops = np.zeros(int((lqs + lts).sum()), np.uint8)
        o_off = _offsets(lqs + lts)
        scores = np.zeros(n, np.float32)
        meta = np.zeros((n, 3), np.int64)
        from homalign.dp.modes import mode_code
        done = tl.trace_lanes(mats, lqs, lts, vecs, v_off, mode_code(mode),
                              [p[1].constant_costs() for p in P], ops, o_off, scores, meta)
        assert done.size == n - (n % tl.LANES if n % tl.LANES < tl.MIN_FILL else 0)
        for k in done:
            ref = align(*P[k], mode)
            assert scores[k] == np.float32(ref.score)
            cig = ops[o_off[k]:o_off[k] + meta[k, 0]]
            assert np.array_equal(cig, ops_from_cigar(ref.cigar))
            assert (meta[k, 1], meta[k, 2]) == (ref.q_start, ref.t_start)


@pytest.mark.parametrize("mode", MODES)
def test_lane_traceback_length_one_and_mixed_shapes(mode: str) -> None:
    rng = np.random.default_rng(7)
    P = [_pair(rng, k, 1, 1) for k in ("int", "ps", "neg", "hopeless")] * 3
    P += [_pair(rng, "int", 1, int(t)) for t in rng.integers(1, 9, 6)]
    P += [_pair(rng, "ps", int(q), 1) for q in rng.integers(1, 9, 6)]
    P += _pairs(rng, 9, "float", 60, 120)
    got = align_batch([p[0] for p in P], [p[1] for p in P], mode)
    for (S, g), r in zip(P, got, strict=True):
        _same(align(S, g, mode), r)


@pytest.mark.parametrize("mode", MODES)
def test_lane_traceback_equals_brute_force_on_tiny_pairs(mode: str) -> None:
    rng = np.random.default_rng(11)
    P, vecs_all = [], []
    for _ in range(24):
        lq, lt = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        S = rng.integers(-3, 4, size=(lq, lt)).astype(np.float32)
        vecs = {k: np.round(v) for k, v in random_gap_vectors(rng, lq, lt).items()}
        P.append((S, GapCosts(**vecs)))
        vecs_all.append(vecs)
    got = align_batch([p[0] for p in P], [p[1] for p in P], mode)
    for (S, _), vecs, r in zip(P, vecs_all, got, strict=True):
        score, i0, j0, cols = reference_align(S, vecs, mode)
        assert r.score == score == brute_best(S, vecs, mode)
        assert (r.q_start, r.t_start) == (i0, j0)
        assert np.array_equal(ops_from_cigar(r.cigar),
                              ops_from_cigar("".join(f"1{c}" for c in cols)))


def test_lane_traceback_ties_on_flat_scores() -> None:
    """Many equal-scoring paths (constant S, free or equal gaps): the same tie-breaks."""
    rng = np.random.default_rng(3)
    for mode in MODES:
        P = []
        for _ in range(20):
            lq, lt = (int(x) for x in rng.integers(1, 12, 2))
            S = np.full((lq, lt), float(rng.integers(-1, 2)), np.float32)
            P.append((S, GapCosts.uniform(lq, lt, float(rng.integers(0, 2)), 0.0)))
        got = align_batch([p[0] for p in P], [p[1] for p in P], mode)
        for (S, g), r in zip(P, got, strict=True):
            _same(align(S, g, mode), r)


def test_lane_traceback_does_not_depend_on_threads_or_batch() -> None:
    import numba
    rng = np.random.default_rng(5)
    P = _pairs(rng, 40, "ps")
    mats, gaps = [p[0] for p in P], [p[1] for p in P]
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = align_batch(mats, gaps, "local")
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = align_batch(mats, gaps, "local")
    finally:
        numba.set_num_threads(old)
    alone = align_batch(mats[:5], gaps[:5], "local")
    for a, b in zip(one, two, strict=True):
        _same(a, b)
    for a, b in zip(alone, one, strict=False):
        _same(a, b)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_checkpointed_traceback_equals_the_full_matrix(mode: str, kind: str) -> None:
    from homalign.dp.checkpoint import align_checkpointed
    from homalign.dp.modes import mode_code
    from homalign.dp.result import from_ops
    rng = np.random.default_rng(abs(hash(("ck", mode, kind))) % 2**32)
    for S, g in _pairs(rng, 12, kind, 1, 30):
        ref = align(S, g, mode)
        for K in (1, 2, 3, 7, None, 1000):
            sc, ops, si, sj = align_checkpointed(S, g.kernel_vectors(), mode_code(mode), K)
            _same(ref, from_ops(sc, ops, si, sj, mode))


def test_align_and_align_batch_switch_to_checkpoints_above_the_limit(monkeypatch) -> None:  # noqa: ANN001
    from homalign.dp import pairwise
    rng = np.random.default_rng(9)
    P = _pairs(rng, 20, "ps", 1, 50) + [_pair(rng, "int", 200, 150), _pair(rng, "float", 1, 1)]
    refs = {m: [align(S, g, m) for S, g in P] for m in MODES}
    monkeypatch.setattr(pairwise, "TRACE_LIMIT_BYTES", 300)
    for mode in MODES:
        for (S, g), ref in zip(P, refs[mode], strict=True):
            _same(ref, align(S, g, mode))
        for ref, r in zip(refs[mode], align_batch([p[0] for p in P], [p[1] for p in P], mode),
                          strict=True):
            _same(ref, r)


def test_checkpointed_traceback_of_a_long_pair_uses_little_memory() -> None:
    import tracemalloc

    from homalign.dp.checkpoint import align_checkpointed
    from homalign.dp.modes import mode_code
    rng = np.random.default_rng(2)
    S = rng.integers(-4, 6, (3000, 2000)).astype(np.float32)
    g = GapCosts.uniform(3000, 2000, 11, 1)
    align_checkpointed(S[:5, :5].copy(), GapCosts.uniform(5, 5).kernel_vectors(), 0)
    tracemalloc.start()
    sc, ops, si, sj = align_checkpointed(S, g.kernel_vectors(), mode_code("local"))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 3001 * 2001 / 4  # well under a byte a cell
    ref = align(S, g, "local")
    assert sc == ref.score and (si, sj) == (ref.q_start, ref.t_start)


@pytest.mark.parametrize("mode", MODES)
def test_align_codes_equals_align_on_the_matrix_of_the_codes(mode: str) -> None:
    """align_codes (scores looked up in the lanes) = align of matrix[q][:, t] with uniform gaps:
    every lane remainder (groups of 1-17 pairs, and the per-pair rest), length-1 sequences,
    one query against many targets, integer, fractional and extreme matrices, ties."""
    rng = np.random.default_rng(21)
    for K, scale, go, ge in ((20, 1.0, 11.0, 1.0), (23, 0.37, 2.5, 0.25), (5, 1e5, 1e5, 0.0),
                             (3, 1.0, 0.0, 0.0)):
        M = (rng.integers(-4, 6, (K, K)) * scale).astype(np.float32)
        for n in (1, 3, 4, 15, 16, 17, 33):
            qs = [rng.integers(0, K, int(rng.integers(1, 40))) for _ in range(n)]
            ts = [rng.integers(0, K, int(rng.integers(1, 40))) for _ in range(n)]
            if n == 17:  # one query object against all the targets
                qs = [qs[0]] * n
            got = align_codes(qs, ts, M, go, ge, mode)
            for q, t, r in zip(qs, ts, got, strict=True):
                S = np.ascontiguousarray(M[q][:, t])
                _same(align(S, GapCosts.uniform(len(q), len(t), go, ge), mode), r)


def test_align_codes_rejects_bad_input() -> None:
    M = np.zeros((20, 20), np.float32)
    q = np.zeros(5, np.int64)
    with pytest.raises(ValueError, match="pair 1: sequences must be non-empty"):
        align_codes([q, q], [q, q[:0]], M)
    with pytest.raises(ValueError, match="codes must lie"):
        align_codes([q + 20], [q], M)
    with pytest.raises(ValueError, match="differ in number"):
        align_codes([q], [q, q], M)
    with pytest.raises(ValueError, match="gap costs"):
        align_codes([q], [q], M, gap_open=-2.0)
    assert align_codes([], [], M) == []
