"""The smoothed DP against brute-force enumeration of every alignment path (tiny cases)."""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pytest
import torch

from homalign.dp.soft import SoftGaps, path_score, soft_align, soft_posteriors

MODES = ("global", "local", "glocal", "semiglobal")


def _random_case(rng: np.random.Generator, lq: int, lt: int) -> tuple[torch.Tensor, SoftGaps]:
    S = torch.as_tensor(rng.normal(0.0, 1.5, (1, lq, lt)))
    sizes = {"q_ins": lq, "t_ins": lt + 1, "t_del": lt, "q_del": lq + 1}
    vec = {f.name: torch.as_tensor(rng.uniform(0.1, 1.5, (1, sizes[f.name[:5]])))
           for f in fields(SoftGaps)}
    return S, SoftGaps(**vec)


def _paths(S: np.ndarray, g: dict[str, np.ndarray], mode: str):
    """Yield (score, set of aligned pairs) for every path the mode allows (exhaustive DFS)."""
    lq, lt = S.shape

    def is_start(i: int, j: int) -> bool:
        return {"global": i == 0 and j == 0, "local": True, "glocal": i == 0,
                "semiglobal": i == 0 or j == 0}[mode]

    def is_end(i: int, j: int, last: str | None) -> bool:
        if mode == "global":
            return i == lq and j == lt
        if mode == "local":
            return last == "M"
        if mode == "glocal":
            return i == lq
        return i == lq or j == lt

    def walk(i, j, last, score, pairs, first):
        if last is not None and is_end(i, j, last):
            yield score, frozenset(pairs)
        if i < lq and j < lt:
            yield from walk(i + 1, j + 1, "M", score + S[i, j], pairs + [(i, j)], first or "M")
        if mode == "local" and first is None:
            return
        if i < lq:
            c = g["q_ins_ext"][i] + g["t_ins_ext"][j]
            if last != "I":
                c += g["q_ins_open"][i] + g["t_ins_open"][j]
            yield from walk(i + 1, j, "I", score - c, pairs, first or "I")
        if j < lt:
            c = g["t_del_ext"][j] + g["q_del_ext"][i]
            if last != "D":
                c += g["t_del_open"][j] + g["q_del_open"][i]
            yield from walk(i, j + 1, "D", score - c, pairs, first or "D")

    for i in range(lq + 1):
        for j in range(lt + 1):
            if is_start(i, j):
                yield from walk(i, j, None, 0.0, [], None)
    if mode == "local":
        yield 0.0, frozenset()
    if mode == "semiglobal":
        yield 0.0, frozenset()  # corner (0, Lt)
        yield 0.0, frozenset()  # corner (Lq, 0)


def _numpy_gaps(g: SoftGaps) -> dict[str, np.ndarray]:
    return {f.name: getattr(g, f.name)[0].numpy() for f in fields(SoftGaps)}


@pytest.mark.parametrize("mode", MODES)
def test_soft_dp_equals_brute_force_log_partition_and_max(mode: str) -> None:
    rng = np.random.default_rng(1)
    S, g = _random_case(rng, 3, 4)
    paths = list(_paths(S[0].numpy(), _numpy_gaps(g), mode))
    scores = np.array([p[0] for p in paths])
    logz = float(np.log(np.exp(scores - scores.max()).sum()) + scores.max())
    assert float(soft_align(S, g, mode, 1.0)[0]) == pytest.approx(logz, abs=1e-9)
    assert float(soft_align(S, g, mode, 0.0)[0]) == pytest.approx(scores.max(), abs=1e-9)
    # temperature -> 0 converges to the max from above
    values = [float(soft_align(S, g, mode, t)[0]) for t in (1.0, 0.1, 0.01, 0.001)]
    assert all(a >= b - 1e-12 for a, b in zip(values, values[1:], strict=False))
    assert values[-1] == pytest.approx(scores.max(), abs=0.05)


@pytest.mark.parametrize("mode", MODES)
def test_gradient_is_expected_alignment(mode: str) -> None:
    rng = np.random.default_rng(2)
    S, g = _random_case(rng, 3, 3)
    paths = list(_paths(S[0].numpy(), _numpy_gaps(g), mode))
    scores = np.array([p[0] for p in paths])
    w = np.exp(scores - scores.max())
    w /= w.sum()
    expected = np.zeros((3, 3))
    for weight, (_, pairs) in zip(w, paths, strict=True):
        for i, j in pairs:
            expected[i, j] += weight
    _, P = soft_posteriors(S, g, mode)
    np.testing.assert_allclose(P[0].numpy(), expected, atol=1e-9)


def test_gradient_matches_finite_differences_for_gap_costs() -> None:
    rng = np.random.default_rng(3)
    S, g = _random_case(rng, 3, 4)
    g.q_ins_open.requires_grad_(True)
    g.t_del_ext.requires_grad_(True)
    out = soft_align(S, g, "global", 1.0)
    gq, gt = torch.autograd.grad(out.sum(), [g.q_ins_open, g.t_del_ext])
    eps = 1e-6
    for vec, grad in ((g.q_ins_open, gq), (g.t_del_ext, gt)):
        for k in range(vec.shape[1]):
            with torch.no_grad():
                vec[0, k] += eps
                up = float(soft_align(S, g, "global", 1.0)[0])
                vec[0, k] -= 2 * eps
                down = float(soft_align(S, g, "global", 1.0)[0])
                vec[0, k] += eps
            assert float(grad[0, k]) == pytest.approx((up - down) / (2 * eps), abs=1e-6)


def test_batched_padded_equals_single() -> None:
    rng = np.random.default_rng(4)
    cases = [_random_case(rng, lq, lt) for lq, lt in ((3, 5), (5, 2), (4, 4))]
    LQ, LT = 5, 5
    S = torch.zeros(3, LQ, LT, dtype=torch.float64)
    sizes = {"q_ins": LQ, "t_ins": LT + 1, "t_del": LT, "q_del": LQ + 1}
    vec = {f.name: torch.full((3, sizes[f.name[:5]]), 7.0, dtype=torch.float64)
           for f in fields(SoftGaps)}
    for b, (s, g) in enumerate(cases):
        lq, lt = s.shape[1:]
        S[b, :lq, :lt] = s[0]
        for f in fields(SoftGaps):
            v = getattr(g, f.name)[0]
            vec[f.name][b, : len(v)] = v
    batch = SoftGaps(**vec)
    lq = torch.tensor([c[0].shape[1] for c in cases])
    lt = torch.tensor([c[0].shape[2] for c in cases])
    for mode in MODES:
        got = soft_align(S, batch, mode, 1.0, lq, lt)
        for b, (s, g) in enumerate(cases):
            assert float(got[b]) == pytest.approx(float(soft_align(s, g, mode, 1.0)[0]), abs=1e-9)


@pytest.mark.parametrize("mode", ["global", "local"])
def test_path_score_matches_enumerated_path(mode: str) -> None:
    rng = np.random.default_rng(5)
    S, g = _random_case(rng, 4, 4)
    # every enumerated path with the canonical order (I run before D run) has the score that
    # path_score gives its pair set; the best path per pair set is that canonical one when the
    # position costs make order irrelevant, so check max over paths with the same pairs >= it.
    best: dict[frozenset, float] = {}
    for score, pairs in _paths(S[0].numpy(), _numpy_gaps(g), mode):
        if pairs:
            best[pairs] = max(best.get(pairs, -math.inf), score)
    for pairs, top in list(best.items())[:40]:
        p = np.array(sorted(pairs))
        assert float(path_score(S, g, 0, p, 4, 4, mode)) <= top + 1e-9
    # with only q_ins / t_del costs (the learned model's) the order is irrelevant: equality
    for name in ("t_ins_open", "t_ins_ext", "q_del_open", "q_del_ext"):
        getattr(g, name).zero_()
    best = {}
    for score, pairs in _paths(S[0].numpy(), _numpy_gaps(g), mode):
        if pairs:
            best[pairs] = max(best.get(pairs, -math.inf), score)
    for pairs, top in best.items():
        p = np.array(sorted(pairs))
        assert float(path_score(S, g, 0, p, 4, 4, mode)) == pytest.approx(top, abs=1e-9)


def test_semiglobal_path_score_sums_the_two_overhang_paths() -> None:
    """Semiglobal: between the best path and the log-sum over all paths with the same pairs."""
    rng = np.random.default_rng(8)
    S, g = _random_case(rng, 4, 4)
    for name in ("t_ins_open", "t_ins_ext", "q_del_open", "q_del_ext"):
        getattr(g, name).zero_()
    by_pairs: dict[frozenset, list[float]] = {}
    for score, pairs in _paths(S[0].numpy(), _numpy_gaps(g), "semiglobal"):
        if pairs:
            by_pairs.setdefault(pairs, []).append(score)
    checked = 0
    for pairs, scores in by_pairs.items():
        p = np.array(sorted(pairs))
        got = float(path_score(S, g, 0, p, 4, 4, "semiglobal"))
        total = float(np.log(np.exp(scores).sum()))
        assert max(scores) - 1e-9 <= got <= total + 1e-9
        checked += p[0, 0] > 0 and p[0, 1] > 0
    assert checked > 0  # cases with overhangs of both sequences were covered


def test_soft_dp_matches_exact_dp_engine() -> None:
    import homalign.dp as dp

    rng = np.random.default_rng(6)
    S = rng.normal(0.0, 2.0, (9, 12)).astype(np.float32)
    gaps = dp.GapCosts.uniform(9, 12, 3.0, 0.5)
    soft_gaps = SoftGaps.from_numpy(gaps)
    for mode in MODES:
        exact = dp.align_score(S, gaps, mode=mode)
        hard = float(soft_align(torch.as_tensor(S, dtype=torch.float64)[None], soft_gaps, mode, 0.0)[0])
        assert hard == pytest.approx(exact, abs=1e-4)
        cold = float(soft_align(torch.as_tensor(S, dtype=torch.float64)[None], soft_gaps, mode, 1e-3)[0])
        assert cold == pytest.approx(exact, abs=0.02)
