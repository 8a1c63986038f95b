"""Throughput of the exact DP engine (homalign.dp) in GCUPS, and parasail for reference.

Usage::

    NUMBA_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE python benchmarks/bench_dp.py [--reps 15]

Score matrices are BLOSUM62 scores of random protein pairs (20 amino acids at uniform
frequencies), float32, gaps 11/1 (BLAST convention), local mode unless stated. Every kernel is
compiled and run once before timing (JIT excluded); a row reports the best of ``--reps`` runs
(the machine is shared, the best run is the least disturbed one) and the median. GCUPS =
Lq * Lt / seconds / 1e9, the time including input validation. Rows:

* score-only and traceback (``align_score`` / ``align``) at 300x300 and 1000x1000;
* the same score-only on a non-integer matrix (BLOSUM62 + 0.01 * noise: the float kernel, since
  the integer-valued fast path does not apply) and with position-specific gaps (general kernel);
* parasail's striped Smith-Waterman (``sw_striped_sat`` / ``sw_striped_32``, score only) on the
  same sequences, and our ratio to it;
* ``align_batch`` over many 300x300 pairs (threads = numba's current thread count);
* posterior_matrix (forward-backward; scaled probability space by default, float64 log space
  with method="log").

The Markdown table is printed and written to benchmarks/results/dp.md (atomically), with the
command line at the top.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np
from Bio.Align import substitution_matrices

from homalign.dp import GapCosts, align, align_batch, align_score
from homalign.dp.posterior import posterior_matrix

AA = "ARNDCQEGHILKMFPSTWYV"
OUT = Path(__file__).resolve().parent / "results" / "dp.md"


def blosum62() -> np.ndarray:
    """BLOSUM62 over AA, float32, straight from Biopython."""
    m = substitution_matrices.load("BLOSUM62")
    idx = [m.alphabet.index(c) for c in AA]
    return np.asarray(m, dtype=np.float32)[np.ix_(idx, idx)]


def random_pair(rng: np.random.Generator, lq: int, lt: int) -> tuple[str, str]:
    """Two random protein sequences."""
    q = "".join(rng.choice(list(AA), size=lq))
    t = "".join(rng.choice(list(AA), size=lt))
    return q, t


def scores(sub: np.ndarray, q: str, t: str) -> np.ndarray:
    """S[i, j] = sub[q_i, t_j] as C-contiguous float32."""
    qi = np.array([AA.index(c) for c in q])
    ti = np.array([AA.index(c) for c in t])
    return np.ascontiguousarray(sub[np.ix_(qi, ti)])


def timed(fn: Callable[[], object], reps: int) -> tuple[float, float, float]:
    """(best wall, median wall, best CPU) seconds of ``fn`` over ``reps`` runs after a warm-up.

    CPU time is this process's (all threads): on a loaded machine it shows what the code costs
    when it is not waiting for a core.
    """
    fn()
    wall = []
    cpu = []
    for _ in range(reps):
        t0 = time.perf_counter()
        c0 = time.process_time()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    return min(wall), statistics.median(wall), min(cpu)


def gcups(cells: float, seconds: float) -> str:
    return f"{cells / seconds / 1e9:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=15, help="timed runs per row (best reported)")
    parser.add_argument("--batch-pairs", type=int, default=64)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(2026)
    sub = blosum62()
    rows: list[tuple[str, ...]] = []  # what, size, best, median, CPU GCUPS, note

    def add(what: str, size: str, cells: float, t: tuple[float, float, float], note: str) -> None:
        best, med, cpu = t
        rows.append((what, size, gcups(cells, best), gcups(cells, med), gcups(cells, cpu), note))

    try:
        import parasail
    except ImportError:  # pragma: no cover - parasail is a test dependency
        parasail = None

    for L in (300, 1000):
        q, t = random_pair(rng, L, L)
        S = scores(sub, q, t)
        gaps = GapCosts.uniform(L, L, open=11.0, extend=1.0)
        cells = float(L * L)
        reps = args.reps if L == 300 else max(3, args.reps // 3)
        size = f"{L}x{L}"

        ours = timed(lambda S=S, g=gaps: align_score(S, g, "local"), reps)
        add("align_score, local 11/1 (integer-valued kernel)", size, cells, ours, "linear memory")
        add("align (traceback), local 11/1", size, cells,
            timed(lambda S=S, g=gaps: align(S, g, "local"), reps), "uint8 directions + CIGAR")
        add("align_score, global 11/1", size, cells,
            timed(lambda S=S, g=gaps: align_score(S, g, "global"), reps), "")
        noisy = S + np.float32(0.01) * rng.standard_normal(S.shape).astype(np.float32)
        add("align_score, local 11/1, non-integer scores (float kernel)", size, cells,
            timed(lambda S=noisy, g=gaps: align_score(S, g, "local"), reps),
            "BLOSUM62 + 0.01 noise")
        ps = GapCosts.from_vectors(
            L, L,
            q_ins_open=rng.uniform(8, 12, L), q_ins_ext=rng.uniform(0.5, 1.5, L),
            t_del_open=rng.uniform(8, 12, L), t_del_ext=rng.uniform(0.5, 1.5, L),
        )
        add("align_score, local, position-specific gaps (general kernel)", size, cells,
            timed(lambda S=S, g=ps: align_score(S, g, "local"), reps), "")
        if parasail is not None:
            for name in ("sw_striped_sat", "sw_striped_32"):
                fn = getattr(parasail, name)
                res = fn(q, t, 12, 1, parasail.blosum62)
                assert res.score == align_score(S, gaps, "local"), "parasail disagrees"
                theirs = timed(lambda fn=fn, q=q, t=t: fn(q, t, 12, 1, parasail.blosum62), reps)
                add(f"parasail.{name} (open 12 = our 11 + 1), score only", size, cells, theirs,
                    f"ours / parasail speed: {theirs[0] / ours[0]:.2f} (wall), "
                    f"{theirs[2] / ours[2]:.2f} (CPU)")

    # batch throughput
    n = args.batch_pairs
    mats = [scores(sub, *random_pair(rng, 300, 300)) for _ in range(n)]
    gl = [GapCosts.uniform(300, 300, 11.0, 1.0) for _ in range(n)]
    threads = numba.get_num_threads()
    for score_only in (True, False):
        t_b = timed(lambda so=score_only: align_batch(mats, gl, "local", so), max(3, args.reps // 3))
        label = "score only" if score_only else "traceback"
        add(f"align_batch, {n} pairs, local 11/1, {label}", "300x300", float(n * 90000), t_b,
            f"{n / t_b[0]:.0f} pairs/s (wall), {threads} thread(s)")

    # posteriors
    S = scores(sub, *random_pair(rng, 300, 300))
    g300 = GapCosts.uniform(300, 300, 11.0, 1.0)
    t_p = timed(lambda: posterior_matrix(S, g300), max(3, args.reps // 3))
    add("posterior_matrix (forward-backward), local 11/1", "300x300", 90000.0, t_p,
        f"{t_p[0] * 1e3:.1f} ms wall, {t_p[2] * 1e3:.1f} ms CPU")

    cmd = " ".join(shlex.quote(a) for a in [
        *(f"{k}={os.environ[k]}" for k in ("NUMBA_NUM_THREADS", "OMP_WAIT_POLICY")
          if k in os.environ),
        "python", "benchmarks/bench_dp.py", *(argv if argv is not None else sys.argv[1:]),
    ])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        "## Exact DP engine (homalign.dp)",
        "",
        f"Command: `{cmd}`",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average {load:.1f} at the end of the run (shared machine: best-of-N is the "
        "least disturbed run; CPU time excludes waiting for a core). Single pairs run on one thread; numba "
        f"{numba.__version__}, numpy {np.__version__}.",
        "",
        "| what | size | GCUPS (best wall) | GCUPS (median wall) | GCUPS (best CPU time) | note |",
        "|---|---|---|---|---|---|",
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=args.out.parent, prefix=".dp.", suffix=".md")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
