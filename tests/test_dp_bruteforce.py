"""Independent pure-Python enumeration of every alignment, straight from the definitions.

Used by ``test_dp.py`` and ``test_dp_posterior.py`` as the reference; the tests in this file check
the enumerator itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

M, I, D = "M", "I", "D"  # noqa: E741


def start_cells(mode: str, lq: int, lt: int) -> list[tuple[int, int]]:
    """Cells an alignment path may start from (local: any; its first column must be M)."""
    cells = [(i, j) for i in range(lq + 1) for j in range(lt + 1)]
    if mode == "global":
        return [(0, 0)]
    if mode == "glocal":
        return [(0, j) for j in range(lt + 1)]
    if mode == "semiglobal":
        return [(i, j) for i, j in cells if i == 0 or j == 0]
    return cells


def is_end_cell(mode: str, i: int, j: int, lq: int, lt: int) -> bool:
    """Whether a path may end at (i, j) (local: any cell; its last column must be M)."""
    if mode == "global":
        return i == lq and j == lt
    if mode == "glocal":
        return i == lq
    if mode == "semiglobal":
        return i == lq or j == lt
    return True


def enumerate_alignments(mode: str, lq: int, lt: int) -> Iterator[tuple[int, int, str]]:
    """Yield every alignment as (start_i, start_j, columns) with columns a string over M/I/D."""
    if mode == "local":
        yield 0, 0, ""  # the empty local alignment, counted once

    def walk(i: int, j: int, cols: str, i0: int, j0: int) -> Iterator[tuple[int, int, str]]:
        ok_end = is_end_cell(mode, i, j, lq, lt)
        if mode == "local":
            ok_end = ok_end and cols.endswith(M)
        if ok_end and (cols or mode != "local"):
            yield i0, j0, cols
        if i < lq and j < lt:
            yield from walk(i + 1, j + 1, cols + M, i0, j0)
        if mode == "local" and not cols:
            return
        if i < lq:
            yield from walk(i + 1, j, cols + I, i0, j0)
        if j < lt:
            yield from walk(i, j + 1, cols + D, i0, j0)

    for i0, j0 in start_cells(mode, lq, lt):
        yield from walk(i0, j0, "", i0, j0)


def path_score(S: np.ndarray, gaps: dict[str, np.ndarray], i0: int, j0: int, cols: str) -> float:
    """Score of a path in float64 from the GapCosts definition (maximal runs of I or D)."""
    i, j = i0, j0
    total = 0.0
    k = 0
    while k < len(cols):
        c = cols[k]
        run = 1
        while k + run < len(cols) and cols[k + run] == c:
            run += 1
        if c == M:
            for _ in range(run):
                total += float(S[i, j])
                i += 1
                j += 1
        elif c == I:
            total -= float(gaps["q_ins_open"][i]) + float(gaps["t_ins_open"][j])
            for _ in range(run):
                total -= float(gaps["q_ins_ext"][i]) + float(gaps["t_ins_ext"][j])
                i += 1
        else:
            total -= float(gaps["t_del_open"][j]) + float(gaps["q_del_open"][i])
            for _ in range(run):
                total -= float(gaps["t_del_ext"][j]) + float(gaps["q_del_ext"][i])
                j += 1
        k += run
    return total


def pairs_of(i0: int, j0: int, cols: str) -> list[tuple[int, int]]:
    """Aligned (query, target) pairs of a path."""
    out = []
    i, j = i0, j0
    for c in cols:
        if c == M:
            out.append((i, j))
        i += c != D
        j += c != I
    return out


def random_gap_vectors(rng: np.random.Generator, lq: int, lt: int) -> dict[str, np.ndarray]:
    """Random non-negative position-specific gap vectors (float32, some exact zeros)."""
    sizes = {"q_ins": lq, "t_ins": lt + 1, "t_del": lt, "q_del": lq + 1}
    out = {}
    for prefix, n in sizes.items():
        for kind, scale in (("open", 2.0), ("ext", 1.0)):
            v = rng.uniform(0.0, scale, size=n) * (rng.random(n) < 0.8)
            out[f"{prefix}_{kind}"] = v.astype(np.float32)
    return out


def brute_best(S: np.ndarray, gaps: dict[str, np.ndarray], mode: str) -> float:
    """The optimum over all enumerated alignments."""
    lq, lt = S.shape
    return max(path_score(S, gaps, i0, j0, c) for i0, j0, c in enumerate_alignments(mode, lq, lt))


def brute_posterior(
    S: np.ndarray, gaps: dict[str, np.ndarray], mode: str, temperature: float
) -> tuple[np.ndarray, float]:
    """(P, log Z): pair posteriors and log partition function over all alignments."""
    lq, lt = S.shape
    alns = list(enumerate_alignments(mode, lq, lt))
    scores = np.array([path_score(S, gaps, i0, j0, c) for i0, j0, c in alns]) / temperature
    top = scores.max()
    weights = np.exp(scores - top)
    log_z = top + math.log(weights.sum())
    P = np.zeros((lq, lt))
    for w, (i0, j0, c) in zip(weights, alns, strict=True):
        for i, j in pairs_of(i0, j0, c):
            P[i, j] += w
    return P / weights.sum(), log_z


# ------------------------------------------------------------------ tests of the enumerator
def _delannoy(m: int, n: int) -> int:
    return sum(math.comb(m, k) * math.comb(n, k) * 2**k for k in range(min(m, n) + 1))


def test_global_count_is_delannoy() -> None:
    for lq, lt in [(1, 1), (2, 3), (3, 3), (4, 2)]:
        assert sum(1 for _ in enumerate_alignments("global", lq, lt)) == _delannoy(lq, lt)


def test_local_paths_begin_and_end_with_pair_and_are_unique() -> None:
    alns = list(enumerate_alignments("local", 3, 3))
    assert alns[0] == (0, 0, "")
    assert all(c[0] == M and c[-1] == M for _, _, c in alns[1:])
    assert len(set(alns)) == len(alns)


def test_path_score_uniform_blast_convention() -> None:
    gaps = {k: np.zeros(n, np.float32) for k, n in
            [("q_ins_open", 3), ("q_ins_ext", 3), ("t_ins_open", 3), ("t_ins_ext", 3),
             ("t_del_open", 2), ("t_del_ext", 2), ("q_del_open", 4), ("q_del_ext", 4)]}
    gaps["q_ins_open"][:] = 11
    gaps["q_ins_ext"][:] = 1
    S = np.zeros((3, 2), np.float32)
    assert path_score(S, gaps, 0, 0, "MIM") == -12.0
    assert path_score(S, gaps, 0, 0, "MII") == -13.0
    assert path_score(S, gaps, 0, 0, "IMI") == -24.0


def reference_align(S: np.ndarray, gaps: dict[str, np.ndarray], mode: str):
    """Plain-Python three-state DP with the documented tie rules; returns (score, i0, j0, cols).

    Each state's predecessor is the first best of its candidates in the order B, M, I, D; the
    end is the first best end cell in row-major order (states B, M, I, D; local: M cells only,
    the empty alignment winning ties at 0). Meant for integer-valued inputs (no rounding).
    """
    lq, lt = S.shape
    neg = -math.inf
    g = {k: [float(x) for x in v] for k, v in gaps.items()}
    starts = set(start_cells(mode, lq, lt)) if mode != "local" else set()

    def b_gap(i: int, j: int) -> float:
        return 0.0 if (i, j) in starts else neg

    def b_m(i: int, j: int) -> float:
        return 0.0 if mode == "local" else b_gap(i, j)

    val = {s: [[neg] * (lt + 1) for _ in range(lq + 1)] for s in (M, I, D)}
    src = {s: [[0] * (lt + 1) for _ in range(lq + 1)] for s in (M, I, D)}

    def first_best(cands: list[float]) -> tuple[float, int]:
        best, k = cands[0], 0
        for idx, c in enumerate(cands[1:], start=1):
            if c > best:
                best, k = c, idx
        return best, k

    for i in range(lq + 1):
        for j in range(lt + 1):
            if i and j:
                v, k = first_best([b_m(i - 1, j - 1), val[M][i - 1][j - 1],
                                   val[I][i - 1][j - 1], val[D][i - 1][j - 1]])
                val[M][i][j], src[M][i][j] = v + float(S[i - 1, j - 1]), k
            if i:
                go = g["q_ins_open"][i - 1] + g["t_ins_open"][j] + g["q_ins_ext"][i - 1] \
                    + g["t_ins_ext"][j]
                ge = g["q_ins_ext"][i - 1] + g["t_ins_ext"][j]
                val[I][i][j], src[I][i][j] = first_best(
                    [b_gap(i - 1, j) - go, val[M][i - 1][j] - go, val[I][i - 1][j] - ge,
                     val[D][i - 1][j] - go])
            if j:
                go = g["t_del_open"][j - 1] + g["q_del_open"][i] + g["t_del_ext"][j - 1] \
                    + g["q_del_ext"][i]
                ge = g["t_del_ext"][j - 1] + g["q_del_ext"][i]
                val[D][i][j], src[D][i][j] = first_best(
                    [b_gap(i, j - 1) - go, val[M][i][j - 1] - go, val[I][i][j - 1] - go,
                     val[D][i][j - 1] - ge])
    best, end = (0.0, (0, 0, None)) if mode == "local" else (neg, None)
    for i in range(lq + 1):
        for j in range(lt + 1):
            if mode == "local":
                if i and j and val[M][i][j] > best:
                    best, end = val[M][i][j], (i, j, M)
                continue
            if not is_end_cell(mode, i, j, lq, lt):
                continue
            for state, v in ((None, b_gap(i, j)), (M, val[M][i][j]), (I, val[I][i][j]),
                             (D, val[D][i][j])):
                if v > best:
                    best, end = v, (i, j, state)
    i, j, state = end
    cols = ""
    while state is not None:
        k = src[state][i][j]
        cols = state + cols
        if state == M:
            i, j = i - 1, j - 1
        elif state == I:
            i -= 1
        else:
            j -= 1
        state = (None, M, I, D)[k]
    return best, i, j, cols


def test_reference_align_matches_enumeration_optimum() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        lq, lt = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        S = rng.integers(-3, 4, size=(lq, lt)).astype(np.float32)
        vecs = {k: np.round(v) for k, v in random_gap_vectors(rng, lq, lt).items()}
        for mode in ("local", "global", "glocal", "semiglobal"):
            score, i0, j0, cols = reference_align(S, vecs, mode)
            assert score == brute_best(S, vecs, mode)
            assert path_score(S, vecs, i0, j0, cols) == score
