"""The 16-lane float32 local kernels of :mod:`homalign.dp.lanes` (their row recurrence is LLVM IR
on ``<16 x float>``, ``_local_row`` / ``_local_row_vec``): bit-identical (float32 ``==``) to the
per-pair scalar kernels of ``align_score`` on every path that runs them: codes + matrix
(``score_local_codes_float32``), per-pair matrices with constant or position-specific gaps
(``align_batch(score_only=True)`` -> ``score_local_lanes``), and one query or query profile
against many targets (``score_local_codes_float32`` of one query, ``score_local_profile``: the
shared-rows kernel, ``lanes.ROWS`` query rows a sweep)."""

from __future__ import annotations

import numpy as np
import pytest

from homalign.dp import GapCosts, align_batch, align_score, lanes

SIZES = (1, 15, 16, 17, 33)  # lane remainders: a lone lane, one short of a group, exact, over


def _bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.int32)


def _lengths(rng: np.random.Generator, n: int) -> np.ndarray:
    """Lengths in 1..300, the extremes included."""
    ls = rng.integers(1, 301, n)
    ls[0] = 1 if n > 1 else ls[0]
    ls[-1] = 300
    return ls


def _matrix(rng: np.random.Generator, K: int, integral: bool) -> np.ndarray:
    M = rng.normal(0.0, 3.0, (K, K)).astype(np.float32)
    return np.round(M) if integral else M


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize(("go", "ge"), [(11.0, 1.0), (2.5, 0.0), (0.3, 0.1)])
def test_codes_float32_equals_align_score(n: int, go: float, ge: float) -> None:
    rng = np.random.default_rng(n * 101 + int(go * 10))
    K = 21
    M = _matrix(rng, K, integral=ge == 1.0)
    qs = [rng.integers(0, K, m) for m in _lengths(rng, n)]
    ts = [rng.integers(0, K, m) for m in _lengths(rng, n)[::-1]]
    got = lanes.score_local_codes_float32(qs, ts, M, go, ge)
    want = [align_score(M[q][:, t], GapCosts.uniform(len(q), len(t), go, ge), "local")
            for q, t in zip(qs, ts, strict=True)]
    assert np.array_equal(_bits(got), _bits(want))
    # one query against all the targets (the query stored once)
    got = lanes.score_local_codes_float32([qs[-1]] * n, ts, M, go, ge)
    want = [align_score(M[qs[-1]][:, t], GapCosts.uniform(len(qs[-1]), len(t), go, ge), "local")
            for t in ts]
    assert np.array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("lq", [1, 2, 3, 4, 5, 7, 9])
def test_one_query_every_row_remainder_equals_align_score(lq: int) -> None:
    """The shared-rows kernel takes ROWS query rows a sweep: every remainder of the query length,
    every lane remainder, very negative matrix entries, targets of length 1."""
    rng = np.random.default_rng(700 + lq)
    K = 21
    M = _matrix(rng, K, integral=False)
    M[rng.random((K, K)) < 0.05] = np.float32(-1e30)
    q = rng.integers(0, K, lq)
    for n in (1, 16, 17, 40):
        ts = [rng.integers(0, K, m) for m in _lengths(rng, n)]
        for go, ge in ((11.0, 1.0), (0.0, 0.0), (2.5, 0.25)):
            got = lanes.score_local_codes_float32([q] * n, ts, M, go, ge)
            want = [align_score(M[q][:, t], GapCosts.uniform(lq, len(t), go, ge), "local")
                    for t in ts]
            assert np.array_equal(_bits(got), _bits(want))
    assert lanes.ROWS == 4


def _vec_gaps(rng: np.random.Generator, lq: int, lt: int, zero_ext: bool) -> GapCosts:
    def f(m: int, scale: float) -> np.ndarray:
        return (rng.random(m) * scale).astype(np.float32)

    e = 0.0 if zero_ext else 1.5
    return GapCosts.from_vectors(lq, lt, q_ins_open=f(lq, 6), q_ins_ext=f(lq, e),
                                 t_ins_open=f(lt + 1, 3), t_ins_ext=f(lt + 1, e),
                                 t_del_open=f(lt, 6), t_del_ext=f(lt, e),
                                 q_del_open=f(lq + 1, 3), q_del_ext=f(lq + 1, e))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", ["constant", "constant_zero_ext", "vector", "vector_zero_ext"])
def test_align_batch_score_only_equals_align_score(n: int, kind: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lanes, "MIN_FILL", 1)  # every group through the lane kernels
    rng = np.random.default_rng(n * 7 + len(kind))
    lqs, lts = _lengths(rng, n), _lengths(rng, n)[::-1]
    mats, gaps = [], []
    for k, (lq, lt) in enumerate(zip(lqs, lts, strict=True)):
        S = rng.normal(0.0, 3.0, (lq, lt)).astype(np.float32)
        if k % 2 == 0:  # -inf entries (forbidden cells)
            S[rng.random((lq, lt)) < 0.25] = -np.inf
        mats.append(S)
        zero_ext = kind.endswith("zero_ext")
        if kind.startswith("constant"):
            gaps.append(GapCosts.uniform(int(lq), int(lt), 7.0, 0.0 if zero_ext else 0.5))
        else:
            gaps.append(_vec_gaps(rng, int(lq), int(lt), zero_ext))
    got = align_batch(mats, gaps, "local", score_only=True)
    want = [align_score(S, g, "local") for S, g in zip(mats, gaps, strict=True)]
    assert np.array_equal(_bits(got), _bits(want))


def test_score_local_lanes_runs_every_pair() -> None:
    """The pairs of a full group are scored by the lane kernel itself (not left to others)."""
    rng = np.random.default_rng(5)
    n = 16
    lqs, lts = _lengths(rng, n), _lengths(rng, n)
    mats = [rng.normal(0.0, 3.0, (lq, lt)).astype(np.float32) for lq, lt in zip(lqs, lts,
                                                                               strict=True)]
    gaps = [_vec_gaps(rng, int(lq), int(lt), False) for lq, lt in zip(lqs, lts, strict=True)]
    kv = [g.kernel_vectors() for g in gaps]
    vecs = tuple(np.concatenate([v[c] for v in kv]) for c in range(8))

    def offs(x: np.ndarray) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(x)[:-1])).astype(np.int64)

    v_off = np.stack([offs(lqs), offs(lts + 1), offs(lts), offs(lqs + 1)], axis=1)
    scores = np.full(n, np.nan, dtype=np.float32)
    done = lanes.score_local_lanes(mats, np.arange(n), lqs, lts, vecs, v_off,
                                   np.zeros((n, 4), dtype=np.float32), np.zeros(n, dtype=bool),
                                   scores)
    assert sorted(done.tolist()) == list(range(n))
    want = [align_score(S, g, "local") for S, g in zip(mats, gaps, strict=True)]
    assert np.array_equal(_bits(scores), _bits(want))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("zero_ext", [False, True])
@pytest.mark.parametrize("permute", [True, False])
def test_profile_equals_align_score(n: int, zero_ext: bool, permute: bool,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Through ``_sweep_rows`` (table permutes: vpermi2ps on AVX-512, vpermps on AVX2) and
    through the packed-rows path that hosts without AVX2 run (``permute=False``)."""
    monkeypatch.setattr(lanes, "PERMUTE_TABLE", permute and lanes.PERMUTE_TABLE)
    rng = np.random.default_rng(n * 13 + zero_ext)
    K = 23
    lq = int(rng.integers(1, 301)) if n != 16 else 300
    P = rng.normal(0.0, 3.0, (lq, K)).astype(np.float32)
    ts = [rng.integers(0, K, m) for m in _lengths(rng, n)]
    e = 0.0 if zero_ext else 1.0
    vec = {"q_ins_open": (rng.random(lq) * 8).astype(np.float32),
           "q_ins_ext": (rng.random(lq) * e).astype(np.float32),
           "q_del_open": (rng.random(lq + 1) * 8).astype(np.float32),
           "q_del_ext": (rng.random(lq + 1) * e).astype(np.float32)}
    got = lanes.score_local_profile(P, ts, *vec.values())
    want = [align_score(P[:, t], GapCosts.from_vectors(lq, len(t), **vec), "local") for t in ts]
    assert np.array_equal(_bits(got), _bits(want))
