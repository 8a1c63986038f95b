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
* posterior_matrix (forward-backward, float64 log space).

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


def timed(fn: Callable[[], object], reps: int) -> tuple[float, float]:
    """(best, median) wall seconds of ``fn`` over ``reps`` runs after one warm-up run."""
    fn()
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return min(runs), statistics.median(runs)


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
    rows: list[tuple[str, str, str, str, str]] = []  # what, size, best GCUPS, median, note

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

        best, med = timed(lambda S=S, g=gaps: align_score(S, g, "local"), reps)
        ours = best
        rows.append(("align_score, local 11/1 (integer-valued kernel)", size,
                     gcups(cells, best), gcups(cells, med), "linear memory"))
        best, med = timed(lambda S=S, g=gaps: align(S, g, "local"), reps)
        rows.append(("align (traceback), local 11/1", size, gcups(cells, best), gcups(cells, med),
                     "uint8 direction matrix + CIGAR"))
        best, med = timed(lambda S=S, g=gaps: align_score(S, g, "global"), reps)
        rows.append(("align_score, global 11/1", size, gcups(cells, best), gcups(cells, med), ""))
        noisy = S + np.float32(0.01) * rng.standard_normal(S.shape).astype(np.float32)
        best, med = timed(lambda S=noisy, g=gaps: align_score(S, g, "local"), reps)
        rows.append(("align_score, local 11/1, non-integer scores (float kernel)", size,
                     gcups(cells, best), gcups(cells, med), "BLOSUM62 + 0.01 noise"))
        ps = GapCosts.from_vectors(
            L, L,
            q_ins_open=rng.uniform(8, 12, L), q_ins_ext=rng.uniform(0.5, 1.5, L),
            t_del_open=rng.uniform(8, 12, L), t_del_ext=rng.uniform(0.5, 1.5, L),
        )
        best, med = timed(lambda S=S, g=ps: align_score(S, g, "local"), reps)
        rows.append(("align_score, local, position-specific gaps (general kernel)", size,
                     gcups(cells, best), gcups(cells, med), ""))
        if parasail is not None:
            for name in ("sw_striped_sat", "sw_striped_32"):
                fn = getattr(parasail, name)
                best, med = timed(lambda fn=fn, q=q, t=t: fn(q, t, 12, 1, parasail.blosum62), reps)
                res = fn(q, t, 12, 1, parasail.blosum62)
                assert res.score == align_score(S, gaps, "local"), "parasail disagrees"
                rows.append((f"parasail.{name} (open 12 = our 11 + 1), score only", size,
                             gcups(cells, best), gcups(cells, med),
                             f"ours / parasail = {best / ours:.2f}x speed"))

    # batch throughput
    n = args.batch_pairs
    pairs = [random_pair(rng, 300, 300) for _ in range(n)]
    mats = [scores(sub, q, t) for q, t in pairs]
    gl = [GapCosts.uniform(300, 300, 11.0, 1.0) for _ in range(n)]
    cells = float(n * 300 * 300)
    threads = numba.get_num_threads()
    for score_only in (True, False):
        best, med = timed(lambda so=score_only: align_batch(mats, gl, "local", so),
                          max(3, args.reps // 3))
        label = "score only" if score_only else "traceback"
        rows.append((f"align_batch, {n} pairs, local 11/1, {label}", "300x300",
                     gcups(cells, best), gcups(cells, med),
                     f"{n / best:.0f} pairs/s, {threads} thread(s)"))

    # posteriors
    q, t = random_pair(rng, 300, 300)
    S = scores(sub, q, t)
    best, med = timed(lambda: posterior_matrix(S, GapCosts.uniform(300, 300, 11.0, 1.0)),
                      max(3, args.reps // 3))
    rows.append(("posterior_matrix (forward-backward), local 11/1", "300x300",
                 gcups(90000.0, best), gcups(90000.0, med), f"{best * 1e3:.1f} ms"))

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
        "least disturbed run). Single pairs run on one thread; numba "
        f"{numba.__version__}, numpy {np.__version__}.",
        "",
        "| what | size | GCUPS (best) | GCUPS (median) | note |",
        "|---|---|---|---|---|",
        *(f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in rows),
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
