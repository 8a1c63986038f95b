"""The int16 and int8 inter-sequence Smith-Waterman kernels (homalign.dp.lanes_int), as
homalign.dp.lanes.score_local_codes runs them, against the float32 lane kernel
(score_local_codes_float32), align_score, brute force and parasail: equal scores, float32 for
float32, for every input (lane remainders, one query or independent pairs, saturation and its
fallbacks, non-integer inputs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from tests.test_dp_bruteforce import brute_best

from homalign.alphabet import AMINO_ACIDS, encode
from homalign.dp import GapCosts, align_score, lanes, lanes_int
from homalign.dp.lanes import pack_codes, score_local_codes, score_local_codes_float32
from homalign.dp.lanes_int import (
    LANES8,
    LANES16,
    TABLE16,
    int8_limit,
    int8_scores,
    int16_limit,
    int16_scores,
)
from homalign.dp.simd import host_has
from homalign.matrices import substitution_matrix

B62 = substitution_matrix("BLOSUM62")
GAP_NAMES = ("q_ins_open", "q_ins_ext", "t_ins_open", "t_ins_ext", "t_del_open", "t_del_ext",
             "q_del_open", "q_del_ext")


def _random_set(rng: np.random.Generator, n: int, shared: bool, K: int = 20,
                hi: int = 200) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """n pairs of code sequences (lengths 1..hi, some 1, some empty, some related), one query
    for all when ``shared``."""
    ts = []
    for k in range(n):
        lt = 1 if k % 7 == 3 else 0 if k % 11 == 5 else int(rng.integers(1, hi))
        ts.append(rng.integers(0, K, lt))
    if shared:
        q = rng.integers(0, K, int(rng.integers(1, hi)))
        qs = [q] * n
        for k in range(0, n, 5):  # related targets: a piece of the query, mutated a little
            t = q[int(rng.integers(0, max(1, len(q) // 2))):].copy()
            t[rng.random(len(t)) < 0.2] = rng.integers(0, K)
            ts[k] = t
    else:
        qs = []
        for k in range(n):
            lq = 1 if k % 6 == 2 else 0 if k % 13 == 7 else int(rng.integers(1, hi))
            qs.append(rng.integers(0, K, lq))
        for k in range(1, n, 4):
            qs[k] = ts[k][::-1].copy() if len(ts[k]) else qs[k]
    return qs, ts


def _align_scores(qs, ts, M, go: float, ge: float) -> list[float]:  # noqa: ANN001
    """align_score of each pair (0 for an empty sequence: only the empty alignment)."""
    return [align_score(np.asarray(M, dtype=np.float32)[np.ix_(q, t)],
                        GapCosts.uniform(len(q), len(t), go, ge), "local")
            if len(q) and len(t) else 0.0 for q, t in zip(qs, ts, strict=True)]


def _kernel_only(qs, ts, M, go: float, ge: float) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001
    """(scores, saturated) of the int16 kernel alone, gap costs BLAST-convention open/extend."""
    M = np.asarray(M, dtype=np.float32)
    g, e = np.float32(np.float32(go) + np.float32(ge)), np.float32(ge)
    limit = int16_limit(M, g, e)
    assert limit is not None
    K = M.shape[0]
    return int16_scores(M, g, e, limit, *pack_codes(qs, K), *pack_codes(ts, K))


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("n", [1, 2, 31, 32, 33, 65])
def test_equals_float_path_and_align_score(n: int, shared: bool) -> None:
    rng = np.random.default_rng(100 * n + shared)
    qs, ts = _random_set(rng, n, shared)
    for go, ge in ((11.0, 1.0), (5.0, 2.0), (0.0, 0.0), (3.0, 0.0)):
        ref = _align_scores(qs, ts, B62, go, ge)
        got = score_local_codes(qs, ts, B62, go, ge)
        assert got.dtype == np.float32
        assert [float(x) for x in got] == ref
        assert np.array_equal(score_local_codes_float32(qs, ts, B62, go, ge), got)
    assert max(ref) > 0 and (n < 5 or min(ref) == 0.0)


@pytest.mark.parametrize("shared", [False, True])
def test_kernel_runs_unsaturated_and_equals_float_path(shared: bool) -> None:
    rng = np.random.default_rng(7 + shared)
    qs, ts = _random_set(rng, 70, shared, hi=300)
    if not lanes_int.AVAILABLE:  # no AVX-512BW: the kernel refuses, the public path falls back
        with pytest.raises(RuntimeError, match="AVX-512BW"):
            _kernel_only(qs, ts, B62, 11.0, 1.0)
        assert np.array_equal(score_local_codes(qs, ts, B62),
                              score_local_codes_float32(qs, ts, B62))
        return
    scores, sat = _kernel_only(qs, ts, B62, 11.0, 1.0)
    assert not sat.any()
    assert np.array_equal(scores, score_local_codes_float32(qs, ts, B62, 11.0, 1.0))


def test_equals_brute_force_on_tiny_pairs() -> None:
    rng = np.random.default_rng(3)
    M = rng.integers(-4, 6, (4, 4)).astype(np.float32)
    qs = [rng.integers(0, 4, int(rng.integers(1, 4))) for _ in range(40)]
    ts = [rng.integers(0, 4, int(rng.integers(1, 4))) for _ in range(40)]
    for go, ge in ((2.0, 1.0), (0.0, 0.0), (1.0, 3.0)):
        got = score_local_codes(qs, ts, M, go, ge)
        for q, t, s in zip(qs, ts, got, strict=True):
            g = GapCosts.uniform(len(q), len(t), go, ge)
            best = brute_best(M[np.ix_(q, t)], {k: getattr(g, k) for k in GAP_NAMES}, "local")
            assert float(s) == max(best, 0.0)


def test_equals_parasail_on_protein_pairs() -> None:
    parasail = pytest.importorskip("parasail")
    rng = np.random.default_rng(11)
    aa = list(AMINO_ACIDS)
    pairs = []
    for k in range(45):
        q = "".join(rng.choice(aa, int(rng.integers(1, 350))))
        t = "".join(rng.choice(aa, int(rng.integers(1, 350))))
        pairs.append((q, q[5:] + t[:40] if k % 3 == 0 else t))
    qs = [encode(q) for q, _ in pairs]
    ts = [encode(t) for _, t in pairs]
    for go, ge in ((11, 1), (10, 2)):
        got = score_local_codes(qs, ts, B62, go, ge)
        theirs = [parasail.sw_striped_16(q, t, go + ge, ge, parasail.blosum62).score
                  for q, t in pairs]
        assert [float(x) for x in got] == theirs


def test_long_targets_and_mixed_lengths() -> None:
    rng = np.random.default_rng(5)
    q = rng.integers(0, 20, 120)
    lens = [3000, 1, 0, 50, 2500, 700, 33, 32, 31, 64, 65, 1999] * 3
    ts = [rng.integers(0, 20, n) for n in lens]
    ts[4][1000:1120] = q  # the query inside a long target
    got = score_local_codes([q] * len(ts), ts, B62)
    assert [float(x) for x in got] == _align_scores([q] * len(ts), ts, B62, 11.0, 1.0)
    assert got[4] == max(got)
    qs = [rng.integers(0, 20, n) for n in lens[::-1]]  # pairs: long queries as well
    got = score_local_codes(qs, ts, B62)
    assert np.array_equal(got, score_local_codes_float32(qs, ts, B62))


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("T", [1, 2, 31, 32, 33, 64, 96])
def test_longest_target_around_chunk_boundaries(T: int, shared: bool) -> None:
    """The pair kernel's chunks of 32 columns: a last partial chunk, none, one column only."""
    rng = np.random.default_rng(T * 2 + shared)
    n = 33
    ts = [rng.integers(0, 20, int(rng.integers(0, T + 1))) for _ in range(n)]
    ts[int(rng.integers(0, n))] = rng.integers(0, 20, T)
    q = rng.integers(0, 20, int(rng.integers(1, 40)))
    qs = [q] * n if shared else [rng.integers(0, 20, int(rng.integers(1, 40))) for _ in range(n)]
    for k in range(0, n, 3):  # related pairs: positive scores across the whole target
        if len(ts[k]):
            qs[k] = np.concatenate((ts[k], qs[k][:5])) if not shared else qs[k]
    got = score_local_codes(qs, ts, B62)
    assert [float(x) for x in got] == _align_scores(qs, ts, B62, 11.0, 1.0)
    assert np.array_equal(score_local_codes_float32(qs, ts, B62), got)


def test_saturating_lanes_are_recomputed_exactly() -> None:
    rng = np.random.default_rng(9)
    w = int(encode("W")[0])
    long_w = np.full(3000, w)  # 3000 x 11 = 33000 > 32767 - 11
    qs, ts = _random_set(rng, 40, False, hi=150)
    for k in (0, 17, 39):
        qs[k], ts[k] = long_w, long_w.copy()
    ident = rng.integers(0, 20, 2500)  # an identical pair that stays in int16 (~14000)
    qs[5], ts[5] = ident, ident.copy()
    ref = score_local_codes_float32(qs, ts, B62)
    assert ref[0] == ref[17] == ref[39] == 33000.0
    got = score_local_codes(qs, ts, B62)
    assert np.array_equal(got, ref)
    assert float(ref[5]) == align_score(B62[np.ix_(ident, ident)],
                                        GapCosts.uniform(2500, 2500, 11.0, 1.0), "local")
    if lanes_int.AVAILABLE:
        scores, sat = _kernel_only(qs, ts, B62, 11.0, 1.0)
        assert np.flatnonzero(sat).tolist() == [0, 17, 39]
        keep = ~sat
        assert np.array_equal(scores[keep], ref[keep])
        assert (scores[sat] >= 32767 - 11).all()


@pytest.mark.parametrize("shared", [False, True])
def test_a_group_of_saturated_lanes_stops_early_and_falls_back(shared: bool) -> None:
    rng = np.random.default_rng(13)
    M = np.diag(np.full(5, 3000.0)).astype(np.float32) - 1  # 11 identical residues saturate
    q = rng.integers(0, 5, 300)
    qs = [q] * 40 if shared else [q.copy() for _ in range(40)]
    ts = [q[int(rng.integers(0, 50)):].copy() for _ in range(40)]
    ts[39] = np.zeros(0, dtype=np.int64)
    ref = score_local_codes_float32(qs, ts, M, 11, 1)
    assert ref[:39].min() > 32767 and ref[39] == 0.0
    assert np.array_equal(score_local_codes(qs, ts, M, 11, 1), ref)
    if lanes_int.AVAILABLE:
        _, sat = _kernel_only(qs, ts, M, 11.0, 1.0)
        assert sat[:39].all() and not sat[39]


def test_matrix_codes_up_to_31_and_extreme_values() -> None:
    rng = np.random.default_rng(17)
    K = 31  # codes 0..30; 31 is the kernel's pad code
    M = rng.integers(-9, 12, (K, K)).astype(np.float32)
    qs, ts = _random_set(rng, 37, False, K=K, hi=90)
    assert max(int(np.max(s, initial=0)) for s in qs + ts) == K - 1
    ref = _align_scores(qs, ts, M, 6.0, 2.0)
    assert [float(x) for x in score_local_codes(qs, ts, M, 6.0, 2.0)] == ref
    M2 = M.copy()  # entries below int16 (clamped by the kernel) and gap costs above it
    M2[M2 < -5] = -50000.0
    for go, ge in ((11.0, 1.0), (40000.0, 1.0), (3.0, 40000.0)):
        assert np.array_equal(score_local_codes(qs, ts, M2, go, ge),
                              score_local_codes_float32(qs, ts, M2, go, ge))
    assert int16_limit(M2, np.float32(12), np.float32(1)) == 32767 - 11


def test_non_integer_inputs_take_the_float_path(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = lanes_int.int16_scores

    def counting(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(lanes_int, "int16_scores", counting)
    rng = np.random.default_rng(19)
    qs, ts = _random_set(rng, 34, False, hi=80)
    frac = B62 + np.float32(0.25)
    big = B62.copy()
    big[0, 0] = 32767.0  # no headroom left in int16
    for M, go, ge, fg in ((frac, 11.0, 1.0, None), (B62, 10.5, 1.0, None),
                          (B62, 11.0, 0.5, None), (B62, 11.0, 1.0, 12.5), (big, 11.0, 1.0, None)):
        got = score_local_codes(qs, ts, M, go, ge, first_gap=fg)
        assert np.array_equal(got, score_local_codes_float32(qs, ts, M, go, ge, first_gap=fg))
        assert int16_limit(M, np.float32(fg if fg is not None else go + ge), np.float32(ge)) \
            is None
    assert calls == []
    got = score_local_codes(qs, ts, B62, 11.0, 1.0, first_gap=13.0)  # integer: the kernel
    assert [float(x) for x in got] == _align_scores(qs, ts, B62, 12.0, 1.0)
    assert calls == ([1] if lanes_int.AVAILABLE else [])


def test_empty_inputs_and_errors() -> None:
    assert score_local_codes([], [], B62).shape == (0,)
    assert list(score_local_codes([[], [1, 2], [3]], [[3], [], [3]], B62)) == [
        0.0, 0.0, float(B62[3, 3])]
    assert list(score_local_codes([[]] * 40, [[1]] * 40, B62)) == [0.0] * 40
    with pytest.raises(ValueError, match="codes"):
        score_local_codes([[23]], [[0]], B62)
    with pytest.raises(ValueError, match="differ"):
        score_local_codes([[1]], [], B62)
    with pytest.raises(ValueError, match="gap costs"):
        score_local_codes([[1]], [[1]], B62, 1.0, -1.0)


def test_does_not_depend_on_threads_or_on_the_query_object() -> None:
    rng = np.random.default_rng(23)
    qs, ts = _random_set(rng, 97, True, hi=260)
    copies = [q.copy() for q in qs]  # the same query, distinct objects: found per group
    ref = score_local_codes_float32(qs, ts, B62)
    old = numba.get_num_threads()
    try:
        for t in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(t)
            assert np.array_equal(score_local_codes(qs, ts, B62), ref)
            assert np.array_equal(score_local_codes(copies, ts, B62), ref)
    finally:
        numba.set_num_threads(old)
    assert LANES16 == 2 * lanes.LANES and TABLE16 == lanes.CODE_TABLE


def test_generic_cpu_target_falls_back_to_the_float_path(tmp_path: Path) -> None:
    code = (
        "import numpy as np\n"
        "from homalign.dp import lanes_int\n"
        "from homalign.dp.lanes import score_local_codes, score_local_codes_float32\n"
        "from homalign.matrices import substitution_matrix\n"
        "assert not lanes_int.AVAILABLE\n"
        "M = substitution_matrix('BLOSUM62')\n"
        "rng = np.random.default_rng(1)\n"
        "qs = [rng.integers(0, 20, 40) for _ in range(20)]\n"
        "ts = [rng.integers(0, 20, 30) for _ in range(20)]\n"
        "a = score_local_codes(qs, ts, M)\n"
        "assert np.array_equal(a, score_local_codes_float32(qs, ts, M))\n"
        "print(repr(a.tobytes().hex()))\n"
    )
    env = {**os.environ, "NUMBA_CPU_NAME": "generic", "NUMBA_CACHE_DIR": str(tmp_path),
           "NUMBA_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    rng = np.random.default_rng(1)
    qs = [rng.integers(0, 20, 40) for _ in range(20)]
    ts = [rng.integers(0, 20, 30) for _ in range(20)]
    assert out.stdout.strip() == repr(score_local_codes(qs, ts, B62).tobytes().hex())


@pytest.mark.parametrize("n", [1, 63, 64, 65, 130])
def test_int8_one_query_equals_the_float_path_through_both_fallbacks(n: int) -> None:
    """One query against many targets: int8 lanes, the pairs past int8's limit in int16, those
    past int16's in float32; the same scores as the float32 kernel for any gap costs (a gap
    dearer than 127 acts as 127: it costs more than an int8 lane can score)."""
    rng = np.random.default_rng(300 + n)
    qs, ts = _random_set(rng, n, True, hi=260)
    q = qs[0]
    for k in range(0, n, 9):  # exact copies: far past int8's limit
        ts[k] = np.concatenate([q, q[:int(rng.integers(0, len(q) + 1))]])
    M = B62.copy()
    if n == 130:  # a pair past int16's limit too
        M[np.diag_indices(20)] = 400.0
    for go, ge in ((11.0, 1.0), (5.0, 2.0), (0.0, 0.0), (300.0, 1.0), (3.0, 500.0)):
        ref = score_local_codes_float32(qs, ts, M, go, ge)
        assert np.array_equal(score_local_codes(qs, ts, M, go, ge), ref)
    if not lanes_int.INT8_LANES:
        return
    g, e = np.float32(12.0), np.float32(1.0)
    limit = int8_limit(M, g, e)
    if n == 130:
        assert limit is None  # no headroom in int8: the int16 kernel alone
        return
    assert limit == 127 - 11
    K = M.shape[0]
    _, _, tc, to, tl = (*pack_codes(qs[:1], K)[:2], *pack_codes(ts, K))
    scores, sat = int8_scores(M, g, e, limit, np.asarray(q), tc, to, tl)
    ref = score_local_codes_float32(qs, ts, M, 11.0, 1.0)
    assert np.array_equal(scores[~sat], ref[~sat])
    assert (ref[sat] >= limit).all() and (ref[~sat] < limit).all()
    assert sat[::9].all()


def test_int8_is_taken_for_one_query_only(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = lanes_int.int8_scores

    def counting(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(lanes_int, "int8_scores", counting)
    rng = np.random.default_rng(29)
    qs, ts = _random_set(rng, 70, True, hi=120)
    score_local_codes(qs, ts, B62)
    assert calls == ([1] if lanes_int.INT8_LANES else [])  # 64 lanes on AVX-512 VBMI, 32 on AVX2
    qs2, ts2 = _random_set(rng, 70, False, hi=120)
    score_local_codes(qs2, ts2, B62)
    score_local_codes(qs, ts, B62 + np.float32(0.5))
    assert len(calls) == (1 if lanes_int.INT8_LANES else 0)
    assert int8_limit(B62 + np.float32(0.5), np.float32(12), np.float32(1)) is None
    assert LANES8 == 2 * LANES16


def _database(rng: np.random.Generator, q: np.ndarray, n: int, longest: int, copies: tuple[int, int]
              ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """``n`` random targets as a database packs them (uint8 codes, int64 lengths and starts),
    target ``copies[0]`` the query twice over and ``copies[1]`` the query (past int8's limit)."""
    ts = [rng.integers(0, 23, int(rng.integers(1, longest))) for _ in range(n)]
    ts[copies[0]] = np.concatenate([q, q])
    ts[copies[1]] = q.copy()
    lens = np.array([len(t) for t in ts], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)
    return ts, np.concatenate(ts).astype(np.uint8), lens, starts


def test_one_query_against_slices_of_packed_codes_equals_the_float_path() -> None:
    """score_local_query_packed reads the targets as slices of one (uint8) code array, as a
    database stores them: the same scores as score_local_codes, through every fallback."""
    from homalign.dp.lanes import score_local_query_packed

    rng = np.random.default_rng(41)
    q = rng.integers(0, 20, 150)
    ts, codes, lens, starts = _database(rng, q, 130, 300, (3, 77))
    pick = np.array([5, 3, 77, 0, 129, 64, 63] + list(range(10, 80)))
    M = B62.copy()
    for go, ge in ((11.0, 1.0), (0.0, 0.0), (300.0, 1.0)):
        got = score_local_query_packed(q, codes, starts[pick], lens[pick], M, go, ge)
        want = score_local_codes_float32([q] * len(pick), [ts[k] for k in pick], M, go, ge)
        assert np.array_equal(got, want)
    big = M.copy()
    big[np.diag_indices(20)] = 3000.0  # past int16's limit too
    got = score_local_query_packed(q, codes, starts[pick], lens[pick], big)
    assert np.array_equal(got, score_local_codes_float32([q] * len(pick),
                                                         [ts[k] for k in pick], big))
    assert score_local_query_packed(q, codes, [], [], M).shape == (0,)
    with pytest.raises(ValueError, match="inside codes"):
        score_local_query_packed(q, codes, [len(codes) - 2], [5], M)
    with pytest.raises(ValueError, match="codes"):
        score_local_query_packed(q + 30, codes, [0], [5], M)


def test_int8_layout_made_once_serves_every_query() -> None:
    """A database's int8 layout (targets sorted by length, lane-major codes) is made once and
    kept: every query scores the same with it as with a layout made for it, and a layout of
    other targets is refused (in groups of the host's int8 lanes: 64 with AVX-512 VBMI, 32 with
    AVX2; without the int8 kernel no layout is asked for)."""
    from homalign.dp.lanes import score_local_query_packed

    rng = np.random.default_rng(43)
    ts = [rng.integers(0, 23, int(rng.integers(1, 200))) for _ in range(150)]
    codes = np.concatenate(ts).astype(np.uint8)
    lens = np.array([len(t) for t in ts], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)
    lanes = lanes_int.INT8_LANES or LANES8
    layout = lanes_int.int8_layout(codes, starts, lens, lanes)
    assert np.array_equal(layout.order, np.argsort(lens, kind="stable"))
    assert layout.codes.shape == (int(layout.widths.sum()) * lanes,) and layout.lanes == lanes
    g0 = layout.order[:lanes]  # the first group's lane 5 holds its sixth target's codes
    assert np.array_equal(layout.codes[5:lanes * lens[g0[5]]:lanes], ts[g0[5]])
    made = []

    def kept() -> lanes_int.Int8Layout:
        made.append(1)
        return layout

    for q in (rng.integers(0, 20, 90), rng.integers(0, 20, 7), ts[40].copy()):
        got = score_local_query_packed(q, codes, starts, lens, B62, layout=kept)
        want = score_local_codes_float32([q] * len(ts), ts, B62, 11.0, 1.0)
        assert np.array_equal(got, want)
    assert len(made) == (3 if lanes_int.INT8_LANES else 0)
    if not lanes_int.INT8_LANES:
        return
    g, e = np.float32(12.0), np.float32(1.0)
    with pytest.raises(ValueError, match=f"holds 150 targets in groups of {lanes}, not 3"):
        int8_scores(B62, g, e, int8_limit(B62, g, e), np.arange(5), codes, starts[:3],
                    lens[:3], layout)
    other = lanes_int.int8_layout(codes, starts, lens, LANES8 if lanes != LANES8 else lanes // 2)
    with pytest.raises(ValueError, match=f"groups of {other.lanes}, not 150 in groups of {lanes}"):
        score_local_query_packed(ts[3].copy(), codes, starts, lens, B62, layout=lambda: other)


@pytest.mark.parametrize("with_int16", [True, False])
def test_the_avx2_int8_kernel_equals_the_float_path(monkeypatch: pytest.MonkeyPatch,
                                                     with_int16: bool) -> None:
    """The 32-lane int8 kernel of AVX2 hosts (two vpshufb lookups a row; it runs on any AVX2
    or AVX-512 CPU, so it is tested here whatever the host's own choice): the float32 path's
    scores, the saturated targets through int16 or, without AVX-512BW, float32."""
    if not host_has("avx2"):
        pytest.skip("no AVX2 on this CPU: the int8 kernels do not run here")
    from homalign.dp.lanes import score_local_query_packed

    monkeypatch.setattr(lanes_int, "INT8_LANES", LANES16)
    if not with_int16:
        monkeypatch.setattr(lanes_int, "AVAILABLE", False)
    rng = np.random.default_rng(47)
    q = rng.integers(0, 20, 120)
    ts, codes, lens, starts = _database(rng, q, 101, 260, (7, 50))
    layout = lanes_int.int8_layout(codes, starts, lens)
    assert layout.lanes == LANES16 and layout.codes.shape == (int(layout.widths.sum()) * 32,)
    for go, ge in ((11.0, 1.0), (5.0, 2.0), (0.0, 0.0), (300.0, 1.0)):
        got = score_local_query_packed(q, codes, starts, lens, B62, go, ge)
        want = score_local_codes_float32([q] * len(ts), ts, B62, go, ge)
        assert np.array_equal(got, want)
    g, e = np.float32(12.0), np.float32(1.0)
    scores, sat = int8_scores(B62, g, e, int8_limit(B62, g, e), q, codes, starts, lens, layout)
    assert sat[7] and sat[50] and sat.sum() == 2
    ref = score_local_codes_float32([q] * len(ts), ts, B62, 11.0, 1.0)
    assert np.array_equal(scores[~sat], ref[~sat])
