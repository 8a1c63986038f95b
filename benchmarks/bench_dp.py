"""Throughput of the exact DP engine (homalign.dp) in GCUPS, and parasail for reference.

Usage::

    NUMBA_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE python benchmarks/bench_dp.py [--reps 15]

Score matrices are BLOSUM62 scores of random protein pairs (20 amino acids at uniform
frequencies), float32, gaps 11/1 (BLAST convention), local mode unless stated. Every kernel is
compiled and run once before timing (JIT excluded); a row reports the best of ``--reps`` runs
(the machine is shared, the best run is the least disturbed one) and the median. GCUPS =
Lq * Lt / seconds / 1e9, the time including input validation. Rows:

* score-only and traceback (``align_score`` / ``align``) at 300x300 and 1000x1000, and align's
  checkpointed-rows traceback (dp.checkpoint, the path above TRACE_LIMIT_BYTES) on the same pair;
* the same score-only on a non-integer matrix (BLOSUM62 + 0.01 * noise: the float kernel, since
  the integer-valued fast path does not apply) and with position-specific gaps (general kernel);
* one query profile against 16 targets with query-side position-specific gaps (the pssm
  search): ``dp.lanes.score_local_profile`` (scores looked up from the profile in the lanes)
  against ``align_batch`` on the score matrices and GapCosts ``score_pssm`` builds (the generic
  path, matrices built in the timed call as the search builds them), scores checked equal;
* parasail's striped Smith-Waterman (``sw_striped_sat`` / ``sw_striped_32``, score only) on the
  same sequences, and our ratio to it;
* ``align_batch`` over many 300x300 pairs (threads = numba's current thread count);
* posterior_matrix (forward-backward; scaled probability space by default, float64 log space
  with method="log");
* the learned search's batched posteriors (``posteriors_many``, 16 targets per group in float32
  lanes) against ``posterior_matrix`` pair by pair on the same pairs: one 300-residue query
  against 32 targets of 250-350 residues, learned-like scores (normal, sd 2, plus a diagonal
  signal), position-specific gaps, semiglobal (the aligner's decode mode); posteriors checked
  equal to 2e-5; threads = numba's current thread count;
* head to head at 1 and 2 threads (``--threads``) on ``--pairs`` (100) random 300x300 BLOSUM62
  pairs, 11/1: ``align_score`` per pair, ``align_batch`` score-only and with traceback (the
  16-lane kernel dp.trace_lanes; also global mode, position-specific gaps, and the per-pair
  kernel it replaced, paths checked equal), ``dp.align_codes`` (the same traceback kernel on code
  sequences and the matrix, scores looked up in registers; paths checked equal), and parasail's ``sw_striped_16`` (its 16-bit
  striped kernel) and ``sw_trace_striped_16`` with its CIGAR (2 threads via a thread pool, the
  ctypes call releases the GIL), scores checked equal; ``align_batch`` also on the first 16
  pairs alone, whose matrices stay in cache (homalign reads a float32 matrix per pair where
  parasail reads two sequences: on 100 pairs the matrices come from DRAM), and
  ``dp.lanes.score_local_codes``, which like parasail takes the sequences (codes) and the
  matrix: its int16 kernel (dp.lanes_int, 32 lanes) and the float32 kernel it replaced
  (``score_local_codes_float32``, 16 lanes), on the same pairs and on the first query against
  all the targets (one query x 100 targets, parasail likewise), scores checked equal;
* the learned search's batched forward (``local_forward_batch``, the 16-lane kernel and the
  scalar ``scalar=True`` reference) on one 233-residue query against 150 targets of 150-320
  residues, log-partitions checked equal to 1e-6.

The Markdown table is printed and written to benchmarks/results/dp.md (atomically), with the
command line at the top; the head-to-head rows also go to benchmarks/results/dp.csv.
"""

from __future__ import annotations

import argparse
import csv
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

from homalign.dp import GapCosts, align, align_batch, align_codes, align_score, trace_lanes
from homalign.dp.checkpoint import align_checkpointed, block_rows
from homalign.dp.forward_batch import local_forward_batch
from homalign.dp.lanes import score_local_codes, score_local_codes_float32, score_local_profile
from homalign.dp.pairwise import TRACE_LIMIT_BYTES
from homalign.dp.posterior import posterior_matrix
from homalign.dp.posterior_batch import posteriors_many
from homalign.dp.result import from_ops

AA = "ARNDCQEGHILKMFPSTWYV"
OUT = Path(__file__).resolve().parent / "results" / "dp.md"
CSV_OUT = OUT.with_suffix(".csv")


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
    parser.add_argument("--csv", type=Path, default=CSV_OUT)
    parser.add_argument("--pairs", type=int, default=100, help="pairs of the head-to-head rows")
    parser.add_argument("--threads", default="1,2", help="thread counts of the head-to-head rows")
    parser.add_argument("--only-head-to-head", action="store_true",
                        help="skip the single-pair, 1000x1000 and posterior rows")
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

    for L in () if args.only_head_to_head else (300, 1000):
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
        add("align (traceback), local 11/1, checkpointed rows (long-sequence path)", size, cells,
            timed(lambda S=S, g=gaps: checkpointed(S, g), reps),
            f"every {block_rows(L)} rows; used above {TRACE_LIMIT_BYTES >> 20} MiB of directions")
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
        profile_rows(rng, L, reps, add)
        if parasail is not None:
            for name in ("sw_striped_sat", "sw_striped_32"):
                fn = getattr(parasail, name)
                res = fn(q, t, 12, 1, parasail.blosum62)
                assert res.score == align_score(S, gaps, "local"), "parasail disagrees"
                theirs = timed(lambda fn=fn, q=q, t=t: fn(q, t, 12, 1, parasail.blosum62), reps)
                add(f"parasail.{name} (open 12 = our 11 + 1), score only", size, cells, theirs,
                    f"ours / parasail speed: {theirs[0] / ours[0]:.2f} (wall), "
                    f"{theirs[2] / ours[2]:.2f} (CPU)")

    csv_rows = head_to_head(args, rng, sub, parasail, add)
    csv_rows += forward_rows(args, add)

    # batch throughput
    n = 0 if args.only_head_to_head else args.batch_pairs
    mats = [scores(sub, *random_pair(rng, 300, 300)) for _ in range(n)]
    gl = [GapCosts.uniform(300, 300, 11.0, 1.0) for _ in range(n)]
    threads = numba.get_num_threads()
    for score_only in (True, False) if n else ():
        t_b = timed(lambda so=score_only: align_batch(mats, gl, "local", so), max(3, args.reps // 3))
        label = "score only" if score_only else "traceback"
        add(f"align_batch, {n} pairs, local 11/1, {label}", "300x300", float(n * 90000), t_b,
            f"{n / t_b[0]:.0f} pairs/s (wall), {threads} thread(s)")

    # posteriors
    if not args.only_head_to_head:
        S = scores(sub, *random_pair(rng, 300, 300))
        g300 = GapCosts.uniform(300, 300, 11.0, 1.0)
        t_p = timed(lambda: posterior_matrix(S, g300), max(3, args.reps // 3))
        add("posterior_matrix (forward-backward), local 11/1", "300x300", 90000.0, t_p,
            f"{t_p[0] * 1e3:.1f} ms wall, {t_p[2] * 1e3:.1f} ms CPU")
        posterior_rows(args, add)

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
    write_csv(args.csv, csv_rows, cmd)
    return 0


def head_to_head(args: argparse.Namespace, rng: np.random.Generator, sub: np.ndarray,
                 parasail, add) -> list[dict]:  # noqa: ANN001
    """homalign's score-only and traceback paths vs parasail sw_striped_16, same pairs."""
    from concurrent.futures import ThreadPoolExecutor

    n, L = args.pairs, 300
    pairs = [random_pair(rng, L, L) for _ in range(n)]
    mats = [scores(sub, q, t) for q, t in pairs]
    gl = [GapCosts.uniform(L, L, 11.0, 1.0) for _ in range(n)]
    gps = [GapCosts.from_vectors(L, L, q_ins_open=rng.uniform(8, 12, L),
                                 q_ins_ext=rng.uniform(0.5, 1.5, L),
                                 t_del_open=rng.uniform(8, 12, L),
                                 t_del_ext=rng.uniform(0.5, 1.5, L)) for _ in range(n)]
    cells = float(n * L * L)
    ref = [align_score(S, g, "local") for S, g in zip(mats, gl, strict=True)]
    for mode, gg in (("local", gl), ("global", gl), ("local", gps)):  # lanes == per-pair kernel
        a = align_batch(mats[:20], gg[:20], mode, False)
        b = per_pair_trace(mats[:20], gg[:20], mode)
        assert [(x.score, x.cigar, x.q_start, x.t_start) for x in a] == [
            (x.score, x.cigar, x.q_start, x.t_start) for x in b], "lane traceback differs"
    qcodes = [np.array([AA.index(c) for c in q]) for q, _ in pairs]
    tcodes = [np.array([AA.index(c) for c in t]) for _, t in pairs]
    assert [float(x) for x in score_local_codes(qcodes, tcodes, sub, 11.0, 1.0)] == ref
    assert [float(x) for x in score_local_codes_float32(qcodes, tcodes, sub, 11.0, 1.0)] == ref
    for mode in ("local", "global"):  # align_codes == align_batch on the codes' matrices
        a = align_codes(qcodes[:20], tcodes[:20], sub, 11.0, 1.0, mode)
        b = align_batch(mats[:20], gl[:20], mode, False)
        assert [(x.score, x.cigar, x.q_start, x.t_start) for x in a] == [
            (x.score, x.cigar, x.q_start, x.t_start) for x in b], "align_codes differs"
    one_q = [qcodes[0]] * n  # one query against all the targets (the database-search layout)
    one_pairs = [(pairs[0][0], t) for _, t in pairs]
    ref_one = score_local_codes_float32(one_q, tcodes, sub, 11.0, 1.0)
    assert np.array_equal(score_local_codes(one_q, tcodes, sub, 11.0, 1.0), ref_one)
    assert float(ref_one[1]) == align_score(scores(sub, *one_pairs[1]), gl[1], "local")
    out = []
    old = numba.get_num_threads()
    reps = max(3, args.reps // 3)
    try:
        for th in (int(x) for x in args.threads.split(",")):
            numba.set_num_threads(min(th, numba.config.NUMBA_NUM_THREADS))
            runs: list[tuple[str, Callable[[], object]]] = []
            if th == 1:
                runs.append(("homalign align_score (per pair)", lambda: [
                    align_score(S, g, "local") for S, g in zip(mats, gl, strict=True)]))
            runs.append(("homalign align_batch score_only",
                         lambda: align_batch(mats, gl, "local", True)))
            # the first 16 pairs only (5.8 MB of S, cache-resident between runs): what the
            # kernels do when the matrices need not come from DRAM (parasail reads sequences)
            runs.append(("homalign align_batch score_only, first 16 pairs (S cached)",
                         lambda: align_batch(mats[:16], gl[:16], "local", True)))
            runs.append(("homalign align_batch traceback",
                         lambda: align_batch(mats, gl, "local", False)))
            runs.append(("homalign align_batch traceback, first 16 pairs (S cached)",
                         lambda: align_batch(mats[:16], gl[:16], "local", False)))
            runs.append(("homalign dp.align_codes traceback (codes + matrix)",
                         lambda: align_codes(qcodes, tcodes, sub, 11.0, 1.0, "local")))
            runs.append(("homalign dp.align_codes traceback, global",
                         lambda: align_codes(qcodes, tcodes, sub, 11.0, 1.0, "global")))
            runs.append(("homalign align_batch traceback, global",
                         lambda: align_batch(mats, gl, "global", False)))
            runs.append(("homalign align_batch traceback, position-specific gaps",
                         lambda: align_batch(mats, gps, "local", False)))
            runs.append(("homalign align_batch traceback, per-pair kernel (before)",
                         lambda: per_pair_trace(mats, gl)))
            runs.append(("homalign dp.lanes.score_local_codes (codes + matrix; int16 kernel, "
                         "dp.lanes_int)",
                         lambda: score_local_codes(qcodes, tcodes, sub, 11.0, 1.0)))
            runs.append(("homalign dp.lanes.score_local_codes_float32 (codes + matrix; float32 "
                         "kernel)",
                         lambda: score_local_codes_float32(qcodes, tcodes, sub, 11.0, 1.0)))
            runs.append((f"homalign dp.lanes.score_local_codes (int8 lanes, int16 past 116), "
                         f"one query x {n} targets",
                         lambda: score_local_codes(one_q, tcodes, sub, 11.0, 1.0)))
            runs.append((f"homalign dp.lanes.score_local_codes_float32, one query x {n} targets",
                         lambda: score_local_codes_float32(one_q, tcodes, sub, 11.0, 1.0)))
            assert align_batch(mats, gl, "local", True) == ref
            if parasail is not None:
                def one(qt: tuple[str, str]) -> int:
                    return parasail.sw_striped_16(qt[0], qt[1], 12, 1, parasail.blosum62).score

                def one_trace(qt: tuple[str, str]) -> tuple[int, bytes]:
                    r = parasail.sw_trace_striped_16(qt[0], qt[1], 12, 1, parasail.blosum62)
                    return r.score, r.cigar.decode

                assert [one(p) for p in pairs] == ref, "parasail disagrees"
                assert [one(p) for p in one_pairs] == list(ref_one), "parasail disagrees"
                assert [one_trace(p)[0] for p in pairs] == ref, "parasail traceback disagrees"
                assert [r.score for r in align_batch(mats, gl, "local", False)] == ref
                if th == 1:
                    runs.append(("parasail sw_striped_16", lambda: [one(p) for p in pairs]))
                    runs.append(("parasail sw_trace_striped_16 (+ CIGAR)",
                                 lambda: [one_trace(p) for p in pairs]))
                    runs.append((f"parasail sw_striped_16, one query x {n} targets",
                                 lambda: [one(p) for p in one_pairs]))
                else:
                    pool = ThreadPoolExecutor(th)
                    chunk = max(1, n // (4 * th))
                    runs.append(("parasail sw_striped_16", lambda pool=pool, chunk=chunk: list(
                        pool.map(one, pairs, chunksize=chunk))))
                    runs.append(("parasail sw_trace_striped_16 (+ CIGAR)",
                                 lambda pool=pool, chunk=chunk: list(
                                     pool.map(one_trace, pairs, chunksize=chunk))))
                    runs.append((f"parasail sw_striped_16, one query x {n} targets",
                                 lambda pool=pool, chunk=chunk: list(
                                     pool.map(one, one_pairs, chunksize=chunk))))
            base = None
            for name, fn in runs:
                t = timed(fn, reps)
                base = t if name == "parasail sw_striped_16" else base
                m = 16 if "first 16" in name else n
                c = float(m * L * L)
                out.append({"kernel": name, "threads": th, "pairs": m, "size": f"{L}x{L}",
                            "cells": int(c), "best_wall_s": t[0], "median_wall_s": t[1],
                            "best_cpu_s": t[2], "gcups_best_wall": c / t[0] / 1e9,
                            "gcups_best_cpu": c / t[2] / 1e9})
                add(f"{name}, {m} pairs, local 11/1", f"{L}x{L}", c, t, f"{th} thread(s)")
            if base is not None:
                for r in out:
                    if r["threads"] == th:  # speed ratio per cell
                        r["vs_parasail_wall"] = (base[0] / cells) / (r["best_wall_s"] / r["cells"])
    finally:
        numba.set_num_threads(old)
    return out


def profile_rows(rng: np.random.Generator, L: int, reps: int, add) -> None:  # noqa: ANN001
    """score_local_profile vs the generic align_batch path: a PSSM-like L x 23 profile against
    16 random targets of length L, query-side position-specific gaps."""
    n = 16
    P = rng.normal(-1.0, 3.0, (L, 23)).astype(np.float32)
    targets = [rng.integers(0, 20, L) for _ in range(n)]
    vec = {"q_ins_open": rng.uniform(8, 12, L), "q_ins_ext": rng.uniform(0.5, 1.5, L),
           "q_del_open": rng.uniform(8, 12, L + 1), "q_del_ext": rng.uniform(0.5, 1.5, L + 1)}
    args = (vec["q_ins_open"], vec["q_ins_ext"], vec["q_del_open"], vec["q_del_ext"])

    def generic() -> list:
        return align_batch([np.ascontiguousarray(P[:, t]) for t in targets],
                           [GapCosts.from_vectors(L, L, **vec) for _ in targets], "local", True)

    fast = score_local_profile(P, targets, *args)
    assert fast.tolist() == generic(), "score_local_profile disagrees with align_batch"
    cells = float(n * L * L)
    ours = timed(lambda: score_local_profile(P, targets, *args), reps)
    theirs = timed(generic, reps)
    add(f"score_local_profile, one profile x {n} targets, query position-specific gaps",
        f"{L}x{L}", cells, ours,
        f"{theirs[2] / ours[2]:.2f}x the CPU speed of the next row")
    add(f"align_batch score-only, the same {n} pairs (S and GapCosts built per target)",
        f"{L}x{L}", cells, theirs, "the generic pssm path")


def checkpointed(S: np.ndarray, gaps: GapCosts) -> object:
    """align's long-sequence path (dp.checkpoint) on S, whatever its size."""
    sc, ops, si, sj = align_checkpointed(S, gaps.kernel_vectors(), 0)
    return from_ops(sc, ops, si, sj, "local")


def per_pair_trace(mats: list[np.ndarray], gaps: list[GapCosts], mode: str = "local") -> list:
    """align_batch with traceback on the per-pair kernel (gotoh + traceback, the path before
    dp.trace_lanes): the lane kernel switched off."""
    keep = trace_lanes.MIN_FILL
    trace_lanes.MIN_FILL = 1 << 30
    try:
        return align_batch(mats, gaps, mode, False)
    finally:
        trace_lanes.MIN_FILL = keep


def forward_rows(args: argparse.Namespace, add) -> list[dict]:  # noqa: ANN001
    """The learned search's batched forward: the 16-lane kernel vs the scalar reference."""
    rng = np.random.default_rng(7)
    lq, lts = 233, rng.integers(150, 321, 150)
    n = int(lts.sum())
    X = np.exp(rng.normal(-1.5, 1.0, (lq, n))).astype(np.float32)
    starts = np.concatenate(([0], np.cumsum(lts)[:-1]))
    gaps = (rng.uniform(0.5, 4, lq), rng.uniform(0.05, 1, lq), rng.uniform(0.5, 4, n),
            rng.uniform(0.05, 1, n))
    codes = rng.integers(0, 20, n).astype(np.uint8)
    R = np.exp(rng.normal(0, 0.5, (lq, 21))).astype(np.float32)
    cells = float(lq * n)
    ref = local_forward_batch(X, starts, lts, *gaps, codes, R, scalar=True)
    assert np.allclose(local_forward_batch(X, starts, lts, *gaps, codes, R), ref, rtol=1e-6)
    out = []
    old = numba.get_num_threads()
    try:
        for th in (int(x) for x in args.threads.split(",")):
            numba.set_num_threads(min(th, numba.config.NUMBA_NUM_THREADS))
            for name, sc in (("local_forward_batch (16 lanes)", False),
                             ("local_forward_batch scalar=True (reference)", True)):
                t = timed(lambda sc=sc: local_forward_batch(X, starts, lts, *gaps, codes, R,
                                                            scalar=sc), max(3, args.reps // 3))
                out.append({"kernel": name, "threads": th, "pairs": 150,
                            "size": f"{lq}x150-320", "cells": int(cells), "best_wall_s": t[0],
                            "median_wall_s": t[1], "best_cpu_s": t[2],
                            "gcups_best_wall": cells / t[0] / 1e9,
                            "gcups_best_cpu": cells / t[2] / 1e9})
                add(f"{name}, 1 query x 150 targets", f"{lq}x150-320", cells, t,
                    f"{th} thread(s), {t[0] * 1e3:.1f} ms")
    finally:
        numba.set_num_threads(old)
    return out


def posterior_rows(args: argparse.Namespace, add) -> None:  # noqa: ANN001
    """posteriors_many (16 lanes) vs posterior_matrix pair by pair: 1 query x 32 targets."""
    rng = np.random.default_rng(11)
    lq, lts = 300, rng.integers(250, 351, 32)

    def learned(lt: int) -> np.ndarray:
        S = rng.normal(-1.0, 2.0, (lq, lt))
        d = np.arange(min(lq, lt))
        S[d, d] += 3.0
        return S.astype(np.float32)

    S = [learned(int(lt)) for lt in lts]
    qo, qe = rng.uniform(1.0, 4.0, lq), rng.uniform(0.1, 1.0, lq)
    to = [rng.uniform(1.0, 4.0, lt) for lt in lts]
    te = [rng.uniform(0.1, 1.0, lt) for lt in lts]
    gaps = [GapCosts.from_vectors(lq, int(lt), q_ins_open=qo, q_ins_ext=qe, t_del_open=to[k],
                                  t_del_ext=te[k]) for k, lt in enumerate(lts)]
    mode = "semiglobal"
    P, _ = posteriors_many(S, qo, qe, to, te, mode)
    for k in range(len(S)):
        ref = posterior_matrix(S[k], gaps[k], mode)
        assert np.allclose(P[k], ref, rtol=0.0, atol=2e-5), "posteriors_many disagrees"
    del P, ref  # timed runs drop their results (held results make every run page-fault)
    cells = float(lq * lts.sum())
    reps = max(3, args.reps // 3)
    t_pair = timed(lambda: [posterior_matrix(S[k], gaps[k], mode) for k in range(len(S))], reps)
    size = f"{lq}x250-350"
    old = numba.get_num_threads()
    try:
        for threads in sorted({1, old}):
            numba.set_num_threads(threads)
            t_many = timed(lambda: posteriors_many(S, qo, qe, to, te, mode), reps)
            add("posteriors_many (16 lanes), semiglobal, position-specific gaps, "
                "1 query x 32 targets", size, cells, t_many,
                f"{threads} thread(s), {t_many[0] * 1e3:.1f} ms; {t_pair[0] / t_many[0]:.2f}x "
                f"posterior_matrix (wall), {t_pair[2] / t_many[2]:.2f}x (CPU)")
            if threads == 1:  # a part-filled group: the first 12 targets (a search's hits)
                part = float(lq * lts[:12].sum())
                t_part = timed(lambda: posteriors_many(S[:12], qo, qe, to[:12], te[:12], mode),
                               reps)
                add("posteriors_many (16 lanes), semiglobal, position-specific gaps, "
                    "1 query x 12 targets (one part-filled group)", size, part, t_part,
                    f"1 thread(s), {t_part[0] * 1e3:.1f} ms")
    finally:
        numba.set_num_threads(old)
    add("posterior_matrix pair by pair, same 32 pairs", size, cells, t_pair,
        f"{t_pair[0] * 1e3:.1f} ms wall")


def write_csv(path: Path, rows: list[dict], cmd: str) -> None:
    """The head-to-head rows as CSV (atomically), the command in a leading comment line."""
    keys = ["kernel", "threads", "pairs", "size", "cells", "best_wall_s", "median_wall_s",
            "best_cpu_s", "gcups_best_wall", "gcups_best_cpu", "vs_parasail_wall"]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".dp.", suffix=".csv")
    with os.fdopen(fd, "w", newline="") as fh:
        fh.write(f"# {cmd}\n")
        w = csv.DictWriter(fh, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v)
                        for k, v in r.items()})
    os.replace(tmp, path)


if __name__ == "__main__":
    raise SystemExit(main())
