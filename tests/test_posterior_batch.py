"""posteriors_many (16-lane forward-backward, dp.posterior_batch) against the per-pair float64
reference forward_backward and the brute-force enumeration."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from numba import njit
from tests.test_dp_bruteforce import brute_posterior

from homalign.dp import posterior_batch
from homalign.dp.gaps import GapCosts
from homalign.dp.posterior import forward_backward
from homalign.dp.posterior_batch import LANES, _exp16, posteriors_many

MODES = ("local", "semiglobal")


def _scores(rng: np.random.Generator, lq: int, lt: int, large: bool = False) -> np.ndarray:
    """Learned-like scores: normal (sd 2) with a diagonal signal; ``large``: that signal at
    +30 and a few cells at +-30."""
    S = rng.normal(-1.0, 2.0, (lq, lt))
    off = int(rng.integers(-5, 6))
    d = np.arange(max(0, -off), min(lq, lt - off))
    S[d, d + off] = 30.0 if large else S[d, d + off] + 3.0
    if large:
        k = max(1, lq * lt // 50)
        S[rng.integers(0, lq, k), rng.integers(0, lt, k)] = rng.choice([-30.0, 30.0], k)
    return S.astype(np.float32)


def _batch(rng: np.random.Generator, lq: int, lts: np.ndarray, large: bool = False):  # noqa: ANN202
    """``(S, q_open, q_ext, t_open, t_ext)`` with position-specific gap costs."""
    S = [_scores(rng, lq, int(lt), large) for lt in lts]
    qo, qe = rng.uniform(0.5, 4.0, lq), rng.uniform(0.05, 1.0, lq)
    to = [rng.uniform(0.5, 4.0, lt) for lt in lts]
    te = [rng.uniform(0.05, 1.0, lt) for lt in lts]
    return S, qo, qe, to, te


def _strong(rng: np.random.Generator, lq: int, lts: np.ndarray):  # noqa: ANN202
    """``_batch``'s tuple for long targets each aligned whole (+2 a column) against a query
    region, over a background of many weaker alignments: semiglobal rows outgrow float32."""
    S = []
    for lt in lts:
        m = rng.normal(0.0, 1.0, (lq, int(lt)))
        off = int(rng.integers(0, lq - lt))
        d = np.arange(lt)
        m[d + off, d] += 2.0
        S.append(m.astype(np.float32))
    qo, qe = rng.uniform(1.0, 3.0, lq), rng.uniform(0.1, 0.5, lq)
    to = [rng.uniform(1.0, 3.0, lt) for lt in lts]
    te = [rng.uniform(0.1, 0.5, lt) for lt in lts]
    return S, qo, qe, to, te


def _first_pass_status(args: tuple) -> np.ndarray:
    """Status of the 16-lane kernel's first, unshifted pass alone (1: out of range)."""
    S, qo, qe, to, te = args
    lq, lts = S[0].shape[0], np.array([m.shape[1] for m in S])
    mats = [np.ascontiguousarray(m) for m in S]
    outs = [np.empty(m.shape, dtype=np.float32) for m in mats]
    q_o, q_e = qo.astype(np.float32).astype(np.float64), qe.astype(np.float32).astype(np.float64)
    t_o = np.concatenate(to).astype(np.float32).astype(np.float64)
    t_e = np.concatenate(te).astype(np.float32).astype(np.float64)
    top = int(lts.max())
    _, st = posterior_batch._posteriors_lanes(
        lq, np.exp(-(q_o + q_e)).astype(np.float32), np.exp(-q_e).astype(np.float32),
        np.exp(-(t_o + t_e)).astype(np.float32), np.exp(-t_e).astype(np.float32),
        np.concatenate(([0], np.cumsum(lts)[:-1])).astype(np.int64),
        np.array([m.ctypes.data for m in mats]), lts, np.array([o.ctypes.data for o in outs]),
        False, np.zeros(len(lts)), 1,
        posterior_batch._scratch(posterior_batch._store_size(lq, top)
                                 + posterior_batch._work_size(top)))
    return st


def _reference(args: tuple, mode: str, k: int) -> tuple[np.ndarray, float]:
    S, qo, qe, to, te = args
    lq, lt = S[k].shape
    gaps = GapCosts.from_vectors(lq, lt, q_ins_open=qo, q_ins_ext=qe, t_del_open=to[k],
                                 t_del_ext=te[k])
    return forward_backward(S[k], gaps, mode=mode)


def _check(args: tuple, mode: str) -> np.ndarray:
    """Compare every target with the reference; return which ran on the 16-lane kernel."""
    P, log_z, lane = posterior_batch._posteriors(*args, mode)
    assert len(P) == len(args[0]) and log_z.shape == (len(args[0]),)
    for k in range(len(P)):
        ref_p, ref_z = _reference(args, mode, k)
        assert P[k].dtype == np.float32 and P[k].shape == ref_p.shape
        np.testing.assert_allclose(P[k], ref_p, rtol=0, atol=2e-5)
        assert log_z[k] == pytest.approx(ref_z, rel=1e-5, abs=1e-6)
    return lane


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n_targets", [1, LANES - 1, LANES, LANES + 1, 2 * LANES + 1])
def test_equals_forward_backward_for_every_lane_remainder(mode: str, n_targets: int) -> None:
    rng = np.random.default_rng(n_targets)
    lq = int(rng.integers(2, 81))
    lts = rng.integers(1, 81, n_targets)
    lts[0] = 1  # a one-residue target
    lane = _check(_batch(rng, lq, lts), mode)
    assert lane.all()  # learned-like scores never need the per-pair path


@pytest.mark.parametrize("mode", MODES)
def test_query_of_one_residue(mode: str) -> None:
    rng = np.random.default_rng(5)
    lts = np.array([1, 2, 7, 40, 80])
    assert _check(_batch(rng, 1, lts), mode).all()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", range(3))
def test_large_scores_exercise_the_scaling(mode: str, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    lq = int(rng.integers(20, 81))
    lts = rng.integers(1, 81, LANES + 1)
    args = _batch(rng, lq, lts, large=True)
    lane = _check(args, mode)
    assert lane.any()  # log Z of hundreds to thousands of nats on the lanes
    assert max(posteriors_many(*args, mode)[1][lane]) > 500.0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (2, 3), (3, 2)])
def test_tiny_problems_equal_brute_force(mode: str, shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(shape[0] * 10 + shape[1])
    lq, lt = shape
    args = _batch(rng, lq, np.array([lt]))
    S, qo, qe, to, te = args
    z = np.zeros
    gaps = {"q_ins_open": qo.astype(np.float32), "q_ins_ext": qe.astype(np.float32),
            "t_del_open": to[0].astype(np.float32), "t_del_ext": te[0].astype(np.float32),
            "t_ins_open": z(lt + 1), "t_ins_ext": z(lt + 1), "q_del_open": z(lq + 1),
            "q_del_ext": z(lq + 1)}
    ref_p, ref_z = brute_posterior(S[0].astype(np.float64), gaps, mode, 1.0)
    P, log_z = posteriors_many(*args, mode)
    np.testing.assert_allclose(P[0], ref_p, rtol=0, atol=2e-6)
    assert log_z[0] == pytest.approx(ref_z, rel=1e-6, abs=1e-7)


def test_a_target_gets_the_same_bits_alone_and_in_any_batch() -> None:
    rng = np.random.default_rng(3)
    lq, lts = 30, rng.integers(1, 70, 37)
    S, qo, qe, to, te = _batch(rng, lq, lts)
    for mode in MODES:
        P, log_z = posteriors_many(S, qo, qe, to, te, mode)
        rev = posteriors_many(S[::-1], qo, qe, to[::-1], te[::-1], mode)
        for k in range(len(S)):
            assert np.array_equal(rev[0][len(S) - 1 - k], P[k])
            assert rev[1][len(S) - 1 - k] == log_z[k]
        for k in (0, 5, 36):  # alone: a group of one
            P1, z1 = posteriors_many([S[k]], qo, qe, [to[k]], [te[k]], mode)
            assert np.array_equal(P1[0], P[k]) and z1[0] == log_z[k]


def test_a_kept_scratch_buffer_leaves_no_trace_in_later_results() -> None:
    """The store and work rows are reused between calls: a call after larger ones, in the other
    mode and with huge values left behind, gives the bits of a fresh buffer."""
    rng = np.random.default_rng(5)
    small = _batch(rng, 20, rng.integers(1, 40, 5))
    first = {mode: posteriors_many(*small, mode) for mode in MODES}
    posterior_batch._kept.buf = None  # a fresh buffer for the reference
    fresh = {mode: posteriors_many(*small, mode) for mode in MODES}
    posterior_batch._kept.buf = None
    big = _batch(rng, 60, rng.integers(50, 120, 2 * LANES + 3), large=True)
    for mode in MODES:
        posteriors_many(*big, mode)
        assert posterior_batch._kept.buf is not None  # kept, and larger than small needs
        for other in MODES:
            P, log_z = posteriors_many(*small, other)
            assert all(np.array_equal(a, b) for a, b in zip(P, fresh[other][0], strict=True))
            assert np.array_equal(log_z, fresh[other][1])
            assert all(np.array_equal(a, b) for a, b in zip(P, first[other][0], strict=True))


_THREADS_SCRIPT = """
import numba, numpy as np, sys
sys.path.insert(0, {root!r})
from tests.test_posterior_batch import _batch, _strong
from homalign.dp.posterior_batch import posteriors_many
rng, srng = np.random.default_rng(11), np.random.default_rng(12)
ok = True
for args in (_batch(rng, 40, rng.integers(1, 90, 3 * 16 + 5)),
             _strong(srng, 500, srng.integers(280, 420, 24))):
    out = []
    for n in (1, 2):
        numba.set_num_threads(n)
        out.append(posteriors_many(*args, "semiglobal"))
    ok &= all(np.array_equal(a, b) for a, b in zip(out[0][0], out[1][0], strict=True))
    ok &= bool(np.array_equal(out[0][1], out[1][1]))
sys.exit(0 if ok else 1)
"""


def test_results_do_not_depend_on_the_thread_count() -> None:
    """Also for the shifted retry: of 24 long targets more than 16 fail the first pass, so the
    retry runs two groups."""
    srng = np.random.default_rng(12)
    strong = _strong(srng, 500, srng.integers(280, 420, 24))
    assert (_first_pass_status(strong) == 1).sum() > LANES
    if numba.config.NUMBA_NUM_THREADS >= 2:
        rng = np.random.default_rng(11)
        for args in (_batch(rng, 40, rng.integers(1, 90, 3 * LANES + 5)), strong):
            old = numba.get_num_threads()
            try:
                numba.set_num_threads(1)
                one = posteriors_many(*args, "semiglobal")
                numba.set_num_threads(2)
                two = posteriors_many(*args, "semiglobal")
            finally:
                numba.set_num_threads(old)
            assert all(np.array_equal(a, b) for a, b in zip(one[0], two[0], strict=True))
            assert np.array_equal(one[1], two[1])
    else:  # this process has one thread: ask a child with two
        root = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "NUMBA_NUM_THREADS": "2"}
        res = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT.format(root=root)],
                             env=env, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]


@pytest.mark.parametrize("mode", MODES)
def test_targets_out_of_float32_reach_take_the_per_pair_path(mode: str) -> None:
    rng = np.random.default_rng(8)
    lq, lts = 40, np.array([30, 50, 60, 20, 45])
    S, qo, qe, to, te = _batch(rng, lq, lts)
    S[1] = S[1].copy()
    S[1][7, 11] = 100.0  # exp overflows float32
    te[2] = np.full(60, -3.0)  # negative costs: rows grow by e**3 per column and overflow
    big = rng.normal(0.0, 16.0, (lq, 20)).clip(-30, 30).astype(np.float32)
    S[3] = big  # +-30 everywhere: the error bound rules float32 out
    args = (S, qo, qe, to, te)
    P, log_z, lane = posterior_batch._posteriors(*args, mode)
    # semiglobal: the +-30 target fits float32 in shifted column units (the retry); the
    # overflowing score and the overflowing rows (no finite first log Z to shift by) do not
    sg = mode == "semiglobal"
    assert list(lane) == [True, False, False, sg, True]
    for k in np.flatnonzero(~lane):
        ref_p, ref_z = _reference(args, mode, k)
        assert np.array_equal(P[k], ref_p) and log_z[k] == ref_z
    _check(args, mode)


def test_long_strongly_aligned_semiglobal_pairs_stay_in_the_lanes() -> None:
    """A semiglobal row of a long pair with a strong alignment spans more than float32's range
    (the first lane pass fails its bound); the retry in shifted column units computes it in
    the lanes, equal to the float64 path."""
    args = _strong(np.random.default_rng(21), 500, np.array([300, 420, 260]))
    assert (_first_pass_status(args) == 1).all()
    assert _check(args, "semiglobal").all()


def test_targets_over_the_group_memory_take_the_per_pair_path(monkeypatch) -> None:
    rng = np.random.default_rng(9)
    args = _batch(rng, 30, np.array([10, 60, 20]))
    monkeypatch.setattr(posterior_batch, "GROUP_BYTES", int(posterior_batch._store_bytes(30, 20)))
    lane = _check(args, "semiglobal")
    assert list(lane) == [True, False, True]


@pytest.mark.parametrize("mode", MODES)
def test_targets_of_length_zero(mode: str) -> None:
    rng = np.random.default_rng(12)
    lq = 3
    S, qo, qe, to, te = _batch(rng, lq, np.array([4, 1]))
    z = np.zeros
    S.insert(1, np.zeros((lq, 0), dtype=np.float32))
    to.insert(1, z(0))
    te.insert(1, z(0))
    P, log_z = posteriors_many(S, qo, qe, to, te, mode)
    assert P[1].shape == (lq, 0) and P[1].dtype == np.float32
    gaps = {"q_ins_open": qo.astype(np.float32), "q_ins_ext": qe.astype(np.float32),
            "t_del_open": z(0), "t_del_ext": z(0), "t_ins_open": z(1), "t_ins_ext": z(1),
            "q_del_open": z(lq + 1), "q_del_ext": z(lq + 1)}
    assert log_z[1] == pytest.approx(brute_posterior(z((lq, 0)), gaps, mode, 1.0)[1], rel=1e-12)
    if mode == "local":
        assert log_z[1] == 0.0  # only the empty alignment
    _check(([S[0], S[2]], qo, qe, [to[0], to[2]], [te[0], te[2]]), mode)  # neighbours unharmed


def test_empty_batch() -> None:
    P, log_z = posteriors_many([], np.ones(5), np.ones(5), [], [])
    assert P == [] and log_z.shape == (0,) and log_z.dtype == np.float64


def test_a_nan_score_is_an_error() -> None:
    rng = np.random.default_rng(4)
    S, qo, qe, to, te = _batch(rng, 10, np.array([5, 6]))
    S[1][2, 3] = np.nan
    with pytest.raises(ValueError, match=r"S\[1\]"):
        posteriors_many(S, qo, qe, to, te)


def test_minus_infinity_marks_a_forbidden_pair() -> None:
    rng = np.random.default_rng(6)
    args = _batch(rng, 12, np.array([9, 14]))
    args[0][0][3, :] = -np.inf
    assert _check(args, "semiglobal").all()


def _bad_inputs():  # noqa: ANN202
    rng = np.random.default_rng(1)
    S, qo, qe, to, te = _batch(rng, 6, np.array([4, 5]))
    bad_te = [te[0], te[1].copy()]
    bad_te[1][2] = np.inf
    return [
        ((S, qo, qe, to, te, "global"), "modes 'local' and 'semiglobal'"),
        ((S, qo, qe, to, te, "nope"), "unknown alignment mode"),
        ((S, qo[:5], qe, to, te, "local"), "q_ext must have shape"),
        ((S, np.zeros(0), np.zeros(0), to, te, "local"), "q_open must be a non-empty"),
        ((S, qo, qe, to[:1], te, "local"), "same length"),
        ((S, qo, qe, [to[0], to[0]], te, "local"), r"t_open\[1\] must have shape"),
        (([S[0], S[1][:5]], qo, qe, to, te, "local"), r"S\[1\] must have shape"),
        (([S[0], S[1][0]], qo, qe, to, te, "local"), r"S\[1\] must have shape"),
        ((S, qo, qe, to, bad_te, "local"), r"t_ext\[1\] must be finite"),
        ((S, np.full(6, np.nan), qe, to, te, "local"), "q_open must be finite"),
    ]


@pytest.mark.parametrize("case", range(len(_bad_inputs())))
def test_input_errors(case: int) -> None:
    args, message = _bad_inputs()[case]
    with pytest.raises(ValueError, match=message):
        posteriors_many(*args)


@njit(cache=True)
def _vexp(x, out):  # noqa: ANN001, ANN202
    for i in range(0, len(x), 16):
        _exp16(x, i, out, i)


def test_the_kernels_exp_is_within_one_ulp() -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-87.3, 88.0, 1 << 16), rng.uniform(-5, 5, 1 << 14)])
    x = x.astype(np.float32)
    out = np.empty_like(x)
    _vexp(x, out)
    ref = np.exp(x.astype(np.float64))
    assert np.all(np.abs(out - ref) <= np.spacing(ref.astype(np.float32)))
    tiny = np.array([-87.34, -90.0, -1e30, -np.inf] + [0.0] * 12, dtype=np.float32)
    _vexp(tiny, out[:16])
    assert np.all(out[:4] == 0.0)


_GENERIC_SCRIPT = """
import numpy as np
from tests.test_posterior_batch import _batch
from homalign.dp.posterior_batch import posteriors_many
rng = np.random.default_rng(21)
args = _batch(rng, 23, rng.integers(1, 60, 19))
for mode in ("local", "semiglobal"):
    P, log_z = posteriors_many(*args, mode)
    print(mode, log_z.tobytes().hex(), b"".join(p.tobytes() for p in P).hex())
"""


@pytest.mark.slow
def test_a_generic_cpu_target_gives_the_same_bits(tmp_path) -> None:
    """NUMBA_CPU_NAME=generic: the 16-lane IR vectors lowered without AVX-512 (and a fresh
    compilation): the same IEEE operations, so the same bits."""
    env = {**os.environ, "NUMBA_CPU_NAME": "generic", "NUMBA_CACHE_DIR": str(tmp_path),
           "NUMBA_NUM_THREADS": "1"}
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", _GENERIC_SCRIPT], env=env, capture_output=True,
                         text=True, cwd=root, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    here = subprocess.run([sys.executable, "-c", _GENERIC_SCRIPT], capture_output=True,
                          text=True, cwd=root, timeout=900)
    assert here.returncode == 0, here.stderr[-2000:]
    assert out.stdout == here.stdout


_ASM_SCRIPT = """
import numpy as np
from homalign.dp import posterior_batch as pb
from tests.test_posterior_batch import _batch
rng = np.random.default_rng(2)
pb.posteriors_many(*_batch(rng, 5, np.array([3, 4])), "local")
fn = pb._posteriors_lanes
print(fn.inspect_asm(fn.signatures[0]))
"""


@pytest.mark.slow
def test_the_cell_loops_run_on_whole_vector_registers(tmp_path) -> None:
    """The lane arithmetic is vector code: zmm vmulps / vaddps on an AVX-512 host, twice as
    many ymm ones on an AVX2 host (a fresh compilation: numba shows no assembly of cached
    code)."""
    from homalign.dp import simd

    if simd.host_has("avx512f"):
        register, least = "zmm", 200  # two chunk kernels of 16 columns each
    elif simd.host_has("avx2"):
        register, least = "ymm", 400  # each 16-lane operation in two halves
    else:
        pytest.skip("neither AVX-512 nor AVX2 on this host")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "NUMBA_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", _ASM_SCRIPT], env=env, capture_output=True,
                         text=True, cwd=Path(__file__).resolve().parents[1], timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count(f"vmulps\t%{register}") >= least
    assert out.stdout.count(f"vaddps\t%{register}") >= least
