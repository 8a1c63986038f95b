"""The vectorised DP kernels against their scalar references and the brute-force enumeration."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from tests.test_dp_bruteforce import brute_posterior

from homalign.alphabet import AMINO_ACIDS
from homalign.dp.forward_batch import LANES, local_forward_batch


def _batch(rng: np.random.Generator, lq: int, lts: np.ndarray, k: int = 4, sd: float = 2.0):
    """Random packed inputs of local_forward_batch for targets of lengths ``lts``."""
    n = int(lts.sum())
    X = np.exp(rng.normal(-0.5, sd, (lq, n))).astype(np.float32)
    starts = np.concatenate(([0], np.cumsum(lts)[:-1])).astype(np.int64)
    gaps = (rng.uniform(0.2, 4, lq), rng.uniform(0.01, 1, lq), rng.uniform(0.2, 4, n),
            rng.uniform(0.01, 1, n))
    codes = rng.integers(0, k, n).astype(np.uint8)
    R = np.exp(rng.normal(0, 0.5, (lq, k))).astype(np.float32)
    return X, starts, lts, *gaps, codes, R


def _log_space_reference(X, starts, lts, qo, qe, to, te, codes, R) -> list[float]:  # noqa: ANN001, PLR0913
    """Each target's local log-partition by the float64 log-space path of ``dp.posterior``."""
    from homalign.dp import GapCosts
    from homalign.dp.posterior import log_partition

    out = []
    for a, lt in zip(starts, lts, strict=True):
        S = np.log(X[:, a:a + lt].astype(np.float64) * R[:, codes[a:a + lt]])
        g = GapCosts.from_vectors(X.shape[0], int(lt), q_ins_open=qo, q_ins_ext=qe,
                                  t_del_open=to[a:a + lt], t_del_ext=te[a:a + lt])
        out.append(log_partition(S, g, mode="local", method="log"))
    return out


@pytest.mark.parametrize("n_targets", [1, 2, LANES - 1, LANES, LANES + 1, 2 * LANES + 5])
def test_lane_kernel_equals_the_scalar_kernel_for_every_lane_remainder(n_targets: int) -> None:
    rng = np.random.default_rng(n_targets)
    lq = int(rng.integers(1, 30))
    lts = rng.integers(0, 40, n_targets)
    lts[0] = 1  # a one-residue target
    if n_targets > 2:
        lts[1] = 0  # an empty one: only the empty alignment
    args = _batch(rng, lq, lts)
    ref = local_forward_batch(*args, scalar=True)
    got = local_forward_batch(*args)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)
    if n_targets > 2:
        assert got[1] == 0.0


def test_lane_kernel_with_extreme_and_hopeless_cells() -> None:
    rng = np.random.default_rng(7)
    lq, lts = 25, np.array([30, 3, 17, 1, 40, 22])
    X, *rest = _batch(rng, lq, lts)
    X[:, :30] = np.exp(np.float32(-80.0))  # hopeless target (subnormal-free weights near 0)
    X[3, 31] = np.exp(np.float32(55.0))  # one huge cell
    X[:, 50] = np.exp(np.float32(40.0))  # a column of large ones
    args = (X, *rest)
    ref = local_forward_batch(*args, scalar=True)
    got = local_forward_batch(*args)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-12)
    assert np.all(np.isfinite(got))


def test_lane_kernel_through_subnormal_tails_and_leaves_no_flush_mode_behind() -> None:
    """Long targets of hopeless cells with one strong diagonal and costly gaps: the gap chains
    and cells away from the diagonal fall below float32's normal range in their row's units,
    which the kernel flushes to zero. Scores agree with the float64 log-space reference, and
    the calling thread's arithmetic keeps its subnormals afterwards (the flags are restored)."""

    rng = np.random.default_rng(11)
    lq, lts = 160, np.array([150, 170, 90, 200])
    X, starts, _, qo, qe, to, te, codes, R = _batch(rng, lq, lts, sd=0.5)
    X *= np.float32(1e-12)  # hopeless cells everywhere ...
    for k, lt in enumerate(lts):
        for i in range(min(lq, lt) - 20):  # ... but one strong diagonal a target
            X[i, starts[k] + i + 10] = np.float32(np.exp(1.5))
    qo, qe, to, te = qo + 3.0, qe + 1.0, to + 3.0, te + 1.0  # gap chains decay fast
    got = local_forward_batch(X, starts, lts, qo, qe, to, te, codes, R)
    want = _log_space_reference(X, starts, lts, qo, qe, to, te, codes, R)
    assert got == pytest.approx(want, rel=1e-5)
    tiny = np.float32(1e-38) * np.float32(1e-3)  # a subnormal result in this thread
    assert tiny > 0.0 and np.float32(1e-40) > 0.0


@pytest.mark.parametrize("hi", [35, 150])
def test_lane_kernel_scores_do_not_depend_on_batch_or_threads(hi: int) -> None:
    rng = np.random.default_rng(3)
    lq, lts = 20, rng.integers(1, hi, 37)
    args = _batch(rng, lq, lts)
    full = local_forward_batch(*args)
    old = numba.get_num_threads()
    try:
        for n in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(n)
            assert np.array_equal(local_forward_batch(*args), full)
    finally:
        numba.set_num_threads(old)
    X, starts, _, qo, qe, to, te, codes, R = args
    for k in (0, 5, 36):  # each target alone: the same bits as in its group of 16
        a, b = starts[k], starts[k] + lts[k]
        alone = local_forward_batch(X[:, a:b], [0], [lts[k]], qo, qe, to[a:b], te[a:b],
                                    codes[a:b], R)
        assert alone[0] == full[k]


@pytest.mark.parametrize("seed", range(4))
def test_lane_kernel_equals_brute_force_log_partition(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    lq = int(rng.integers(1, 4))
    lts = rng.integers(1, 4, 3)
    X, starts, _, qo, qe, to, te, codes, R = _batch(rng, lq, lts, sd=1.0)
    got = local_forward_batch(X, starts, lts, qo, qe, to, te, codes, R)
    for k, lt in enumerate(lts):
        a = starts[k]
        S = np.log(X[:, a:a + lt].astype(np.float64) * R[:, codes[a:a + lt]])
        z = np.zeros
        gaps = {"q_ins_open": qo, "q_ins_ext": qe, "t_del_open": to[a:a + lt],
                "t_del_ext": te[a:a + lt], "t_ins_open": z(lt + 1), "t_ins_ext": z(lt + 1),
                "q_del_open": z(lq + 1), "q_del_ext": z(lq + 1)}
        _, log_z = brute_posterior(S, gaps, "local", 1.0)
        assert got[k] == pytest.approx(log_z, rel=1e-5, abs=1e-6)


def test_forward_with_no_query_rows_is_the_empty_alignment() -> None:
    X = np.zeros((0, 7), dtype=np.float32)
    args = (X, [0, 3], [3, 4], np.zeros(0), np.zeros(0), np.ones(7), np.ones(7))
    assert list(local_forward_batch(*args)) == [0.0, 0.0]
    assert list(local_forward_batch(*args, scalar=True)) == [0.0, 0.0]


@pytest.mark.parametrize("n_targets", [1, 15, 16, 17, 33])
def test_lane_kernel_across_row_chunks_equals_the_scalar_kernel(n_targets: int) -> None:
    """Rows of whole 16-column chunks and a partial last one, one- and two-row queries,
    one-residue targets and zero-weight (X = 0) targets, whose only alignment is the empty one."""
    rng = np.random.default_rng(40 + n_targets)
    for lq in (1, 2, 57):
        lts = rng.choice([1, 2, 15, 16, 17, 31, 32, 33, 64, 150, 211], n_targets)
        X, starts, *rest = _batch(rng, lq, lts)
        zero = rng.random(n_targets) < 0.25
        for k in np.flatnonzero(zero):
            X[:, starts[k]:starts[k] + lts[k]] = 0.0
        args = (X, starts, *rest)
        ref = local_forward_batch(*args, scalar=True)
        got = local_forward_batch(*args)
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)
        assert np.all(got[zero] == 0.0)


def test_lane_kernel_across_row_chunks_equals_the_log_space_reference() -> None:
    rng = np.random.default_rng(8)
    lq, lts = 45, np.array([1, 16, 17, 33, 120])
    X, starts, _, qo, qe, to, te, codes, R = _batch(rng, lq, lts)
    got = local_forward_batch(X, starts, lts, qo, qe, to, te, codes, R)
    ref = _log_space_reference(X, starts, lts, qo, qe, to, te, codes, R)
    assert got == pytest.approx(ref, rel=1e-5, abs=1e-5)


def test_row_scale_bits_equal_frexp_and_ldexp() -> None:
    """The kernel's row step takes frexp's exponent and ldexp's powers of two from the bits:
    the same values, subnormal float32 maxima and float64 underflow included."""
    from numba import njit

    from homalign.dp.forward_batch import _frexp_exponent, _pow2

    @njit
    def ours(tops, ns, xs, ks):  # noqa: ANN001, ANN202
        e = np.array([_frexp_exponent(t) for t in tops])
        p = np.array([_pow2(n) for n in ns])
        q = np.array([xs[k] * _pow2(ks[k]) for k in range(len(xs))])
        return e, p, q

    @njit
    def libm(tops, ns, xs, ks):  # noqa: ANN001, ANN202
        e = np.array([math.frexp(t)[1] for t in tops])
        p = np.array([math.ldexp(1.0, n) for n in ns])
        q = np.array([math.ldexp(xs[k], ks[k]) for k in range(len(xs))])
        return e, p, q

    rng = np.random.default_rng(2)
    bits = rng.integers(1, 0x7F800001, 20000).astype(np.uint32)  # every positive float32, inf
    tops = np.concatenate((bits.view(np.float32), np.float32([1e-45, 2.0**-126, 0.5, 1.0,
                                                             3.4028235e38, np.inf])))
    ns = np.arange(-1100, 1024)
    xs = np.concatenate((np.exp(rng.uniform(-745, 709, 5000)), rng.uniform(0, 2, 100)))
    ks = rng.integers(-149, 150, len(xs)).astype(np.int32)
    (e1, p1, q1), (e2, p2, q2) = ours(tops, ns, xs, ks), libm(tops, ns, xs.copy(), ks)
    assert np.array_equal(e1, e2)
    low = ns < -1022  # ldexp's subnormal float64 there: 0 as float32 either way
    assert np.array_equal(p1[~low], p2[~low]) and np.all(p1[low] == 0.0)
    assert np.all(p2[low].astype(np.float32) == 0.0)
    assert np.array_equal(q1, q2)


# ---------------------------------------------------- parasail's SIMD Smith-Waterman vs homalign
AA = AMINO_ACIDS


@pytest.mark.parametrize("seed", range(6))
def test_parasail_striped_16_and_sat_equal_homalign(seed: int) -> None:
    parasail = pytest.importorskip("parasail")
    from homalign.alphabet import encode
    from homalign.dp import GapCosts, align_batch, align_score
    from homalign.matrices import score_matrix

    rng = np.random.default_rng(seed)
    pairs = [("W", "C"), ("W", "W"), ("A", "".join(rng.choice(list(AA), 40)))]  # length 1, 0
    for _ in range(20):
        q = "".join(rng.choice(list(AA), int(rng.integers(1, 300))))
        t = list(q[int(rng.integers(0, len(q))):])  # a related target: mutated suffix
        for k in rng.integers(0, max(1, len(t)), len(t) // 3):
            t[k % len(t)] = str(rng.choice(list(AA)))
        t = "".join(rng.choice(list(AA), int(rng.integers(0, 30)))) + "".join(t) or "A"
        pairs.append((q, t))
    mats, gaps = [], []
    for q, t in pairs:
        S = score_matrix(encode(q), encode(t), "BLOSUM62")
        mats.append(np.asarray(S, dtype=np.float32))
        gaps.append(GapCosts.uniform(len(q), len(t), 11.0, 1.0))
    ours = [align_score(S, g, "local") for S, g in zip(mats, gaps, strict=True)]
    assert align_batch(mats, gaps, "local", score_only=True) == ours
    assert ours[0] == 0.0  # W/C: only the empty alignment
    for fn in (parasail.sw_striped_16, parasail.sw_striped_sat):
        theirs = [fn(q, t, 12, 1, parasail.blosum62).score for q, t in pairs]  # 12 = 11 + 1
        assert theirs == ours


@pytest.mark.slow
def test_lane_kernel_on_a_generic_cpu_target_equals_the_scalar_kernel(tmp_path) -> None:
    """NUMBA_CPU_NAME=generic: no AVX-512 table permute (masked gathers) and generic lowering of
    the transposing loads, for the forward and both lane SW kernels; the scores must not
    change."""
    code = (
        "import numpy as np\n"
        "from homalign.dp import simd\n"
        "from homalign.dp.forward_batch import local_forward_batch\n"
        "from tests.test_dp_simd import _batch\n"
        "assert not simd.PERMUTE_TABLE\n"
        "rng = np.random.default_rng(11)\n"
        "args = _batch(rng, 19, rng.integers(0, 45, 21))\n"
        "a = local_forward_batch(*args)\n"
        "b = local_forward_batch(*args, scalar=True)\n"
        "np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)\n"
        "from homalign.dp import align_batch, align_score\n"
        "from homalign.dp.lanes import score_local_codes\n"
        "from tests.test_dp_simd import _sw_pairs\n"
        "for kind in ('float', 'ps'):\n"
        "    mats, gaps = _sw_pairs(np.random.default_rng(3), 20, kind)\n"
        "    assert align_batch(mats, gaps, 'local', True) == [\n"
        "        align_score(S, g, 'local') for S, g in zip(mats, gaps)]\n"
        "M = rng.normal(0, 2, (5, 5)).astype(np.float32)\n"
        "qs = [rng.integers(0, 5, 30) for _ in range(18)]\n"
        "ts = [rng.integers(0, 5, 25) for _ in range(18)]\n"
        "from homalign.dp import GapCosts\n"
        "assert [float(x) for x in score_local_codes(qs, ts, M, 1.0, 0.5)] == [\n"
        "    align_score(M[np.ix_(q, t)], GapCosts.uniform(30, 25, 1.0, 0.5), 'local')\n"
        "    for q, t in zip(qs, ts)]\n"
        "print(repr(a.tobytes().hex()))\n"
    )
    env = {**os.environ, "NUMBA_CPU_NAME": "generic", "NUMBA_CACHE_DIR": str(tmp_path),
           "NUMBA_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    rng = np.random.default_rng(11)
    here = local_forward_batch(*_batch(rng, 19, rng.integers(0, 45, 21)))
    assert out.stdout.strip() == repr(here.tobytes().hex())  # the same bits on both targets


def test_pack_lanes16_is_the_exact_transposed_product() -> None:
    from numba import njit

    from homalign.dp.simd import TABLE, pack_lanes16

    @njit
    def pack(dst, stride, src, starts, lens, table, codes, T):  # noqa: ANN001, ANN202
        for j0 in range(0, T, 16):
            pack_lanes16(dst, j0 * stride + 3, stride, src, starts, lens, j0, table, codes,
                         j0 * 16, np.float32(-np.inf))

    rng = np.random.default_rng(5)
    lens = np.array([0, 1, 15, 16, 17, 31, 33, 2, 40, 5, 0, 16, 9, 1, 38, 20], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)
    T = int(lens.max())
    tp = (T + 15) // 16 * 16
    src = rng.normal(size=int(lens.sum())).astype(np.float32)
    table = rng.normal(size=TABLE).astype(np.float32)
    codes = rng.integers(0, TABLE, tp * 16).astype(np.int32)
    stride = 40
    dst = np.full(tp * stride + 3, np.nan, dtype=np.float32)
    pack(dst, stride, src, starts, lens, table, codes, T)
    for j in range(tp):
        for u in range(16):
            v = src[starts[u] + j] if j < lens[u] else np.float32(-np.inf)
            assert dst[j * stride + 3 + u] == np.float32(v * table[codes[j * 16 + u]])


# ------------------------------------------- inter-sequence score-only Smith-Waterman (dp.lanes)
def _sw_pairs(rng: np.random.Generator, n: int, kind: str, lo: int = 1, hi: int = 60):
    from homalign.dp import GapCosts

    mats, gaps = [], []
    for k in range(n):
        lq, lt = (int(x) for x in rng.integers(lo, hi + 1, 2))
        if k % 7 == 0:
            lq = 1  # one-row and one-column pairs
        if k % 11 == 0:
            lt = 1
        if kind == "int":
            S = rng.integers(-6, 9, (lq, lt)).astype(np.float32)
        else:
            S = rng.normal(-0.5, 3.0, (lq, lt)).astype(np.float32)
        if k % 5 == 1:
            S[rng.random((lq, lt)) < 0.2] = -np.inf  # forbidden pairs
        if k % 9 == 2:
            S = -np.abs(S) - 1  # nothing positive: the empty alignment
        if k % 13 == 3:
            S[0, 0] = 1e6  # an extreme cell
        mats.append(S)
        if kind == "ps":
            g = GapCosts.from_vectors(
                lq, lt, q_ins_open=rng.uniform(0, 5, lq) * (rng.random(lq) < 0.8),
                q_ins_ext=rng.uniform(0, 1, lq), t_del_open=rng.uniform(0, 5, lt),
                t_del_ext=rng.uniform(0, 1, lt) * (rng.random(lt) < 0.8),
                t_ins_open=rng.uniform(0, 1, lt + 1), t_ins_ext=rng.uniform(0, 0.5, lt + 1),
                q_del_open=rng.uniform(0, 1, lq + 1), q_del_ext=rng.uniform(0, 0.5, lq + 1))
        else:
            g = GapCosts.uniform(lq, lt, *((11.0, 1.0) if k % 3 else (4.5, 0.25)))
        gaps.append(g)
    return mats, gaps


@pytest.mark.parametrize("kind", ["int", "float", "ps"])
@pytest.mark.parametrize("n", [1, 7, 8, 15, 16, 17, 33, 50])
def test_lane_sw_equals_the_per_pair_kernels_bit_for_bit(kind: str, n: int) -> None:
    from homalign.dp import align_batch, align_score

    rng = np.random.default_rng(n * 10 + len(kind))
    mats, gaps = _sw_pairs(rng, n, kind)
    ref = [align_score(S, g, "local") for S, g in zip(mats, gaps, strict=True)]
    assert align_batch(mats, gaps, "local", score_only=True) == ref
    assert any(r == 0.0 for r in ref) or n < 9


def test_lane_sw_runs_and_does_not_depend_on_threads() -> None:
    from homalign.dp import align_batch, lanes

    rng = np.random.default_rng(4)
    mats, gaps = _sw_pairs(rng, 40, "ps", 20, 90)
    consts = np.zeros((40, 4), dtype=np.float32)
    out = np.full(40, np.nan, dtype=np.float32)
    kv = [g.kernel_vectors() for g in gaps]
    vecs = tuple(np.concatenate([v[c] for v in kv]) for c in range(8))
    lqs = np.array([m.shape[0] for m in mats])
    lts = np.array([m.shape[1] for m in mats])
    from homalign.dp.batch import _offsets

    v_off = np.stack([_offsets(lqs), _offsets(lts + 1), _offsets(lts), _offsets(lqs + 1)], axis=1)
    done = lanes.score_local_lanes(mats, np.arange(40), lqs, lts, vecs, v_off, consts,
                                   np.zeros(40, dtype=bool), out)
    assert len(done) == 40 - 40 % lanes.LANES or len(done) == 40  # the lane kernel did run
    ref = align_batch(mats, gaps, "local", score_only=True)
    assert [float(out[k]) for k in done] == [ref[k] for k in done]
    old = numba.get_num_threads()
    try:
        for t in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(t)
            assert align_batch(mats, gaps, "local", score_only=True) == ref
    finally:
        numba.set_num_threads(old)


@pytest.mark.parametrize("kind", ["int", "ps"])
def test_lane_sw_equals_brute_force_on_tiny_pairs(kind: str) -> None:
    from tests.test_dp_bruteforce import brute_best

    from homalign.dp import align_batch

    rng = np.random.default_rng(21 if kind == "int" else 22)
    mats, gaps = _sw_pairs(rng, 24, kind, 1, 3)
    got = align_batch(mats, gaps, "local", score_only=True)
    names = ("q_ins_open", "q_ins_ext", "t_ins_open", "t_ins_ext", "t_del_open", "t_del_ext",
             "q_del_open", "q_del_ext")
    for S, g, score in zip(mats, gaps, got, strict=True):
        best = brute_best(S, {k: getattr(g, k) for k in names}, "local")
        assert score == pytest.approx(max(best, 0.0), rel=1e-6, abs=1e-5)


@pytest.mark.parametrize("n", [1, 5, 16, 17, 40])
def test_codes_lane_sw_equals_align_score_and_parasail(n: int) -> None:
    parasail = pytest.importorskip("parasail")
    from homalign.alphabet import encode
    from homalign.dp import GapCosts, align_score
    from homalign.dp.lanes import score_local_codes
    from homalign.matrices import score_matrix, substitution_matrix

    rng = np.random.default_rng(n)
    pairs = []
    for k in range(n):
        lq, lt = (int(x) for x in rng.integers(1, 120, 2))
        if k % 4 == 1:
            lq = 1
        q = "".join(rng.choice(list(AA), lq))
        t = "".join(rng.choice(list(AA), lt)) if k % 5 != 2 else q[::-1] + q  # related ones
        pairs.append((q, t))
    if n > 2:
        pairs[2] = ("W", "C")  # only the empty alignment
    for go, ge in ((11.0, 1.0), (5.0, 2.0), (2.5, 0.5)):
        got = score_local_codes([encode(q) for q, _ in pairs], [encode(t) for _, t in pairs],
                                substitution_matrix("BLOSUM62"), go, ge)
        ref = [align_score(score_matrix(encode(q), encode(t)), GapCosts.uniform(
            len(q), len(t), go, ge), "local") for q, t in pairs]
        assert [float(x) for x in got] == ref
        if float(go).is_integer():
            theirs = [parasail.sw_striped_16(q, t, int(go + ge), int(ge),
                                             parasail.blosum62).score for q, t in pairs]
            assert theirs == ref


def test_codes_lane_sw_float_matrix_and_empty_sequences() -> None:
    from homalign.dp import GapCosts, align_score
    from homalign.dp.lanes import score_local_codes

    rng = np.random.default_rng(9)
    M = rng.normal(-0.5, 2.0, (7, 7)).astype(np.float32)
    qs = [rng.integers(0, 7, int(rng.integers(1, 50))) for _ in range(21)]
    ts = [rng.integers(0, 7, int(rng.integers(1, 50))) for _ in range(21)]
    got = score_local_codes(qs, ts, M, 1.3, 0.7)
    ref = [align_score(M[np.ix_(q, t)], GapCosts.uniform(len(q), len(t), 1.3, 0.7), "local")
           for q, t in zip(qs, ts, strict=True)]
    assert [float(x) for x in got] == ref
    assert list(score_local_codes([[], [1, 2]], [[3], []], M)) == [0.0, 0.0]
    with pytest.raises(ValueError, match="codes"):
        score_local_codes([[7]], [[0]], M)
