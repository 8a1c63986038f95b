"""Speed of ``homalign.align(q, t, method="learned")`` at L = 300 on one thread, stage by stage.

Usage::

    python benchmarks/bench_learned_speed.py [--length 300] [--pairs 20] [--reps 5] [--parity]
        [--homologs DB] [--out benchmarks/results/learned_speed.md]

Random protein pairs (20 amino acids, uniform), the bundled weights, one thread everywhere
(``OMP_NUM_THREADS``, ``NUMBA_NUM_THREADS``, ``torch.set_num_threads``), every kernel compiled
and run once before timing. Costs are per pair, the median over ``--reps`` passes over the same
``--pairs`` pairs, by process CPU time (what one dedicated core gives on a shared machine: the
target) and by wall time:

* the whole public call ``homalign.align(q, t, method="learned")``;
* its stages timed one after the other inside the same flow (timing a stage alone in a tight
  loop keeps its data in cache and underestimates it): ``encode`` (``model.embed`` of both
  sequences, torch), ``score`` (``model.score_embedded``: S and GapCosts), ``posterior``
  (``posterior_matrix`` in the decode mode), ``MAC decoding`` (``mea_align``), ``local score``
  (``align_score(S, gaps, "local")``: the reported score), ``homology score`` (the ranking
  weights' embeddings and adapter forward score: ``homology_probability``'s input); once with
  the default (scaled) posterior and once with ``method="log"``, the float64 log-space reference
  the call used before.

``--homologs DB`` (a ``homalign makedb`` directory, e.g. ``runs/uniprot20k/db``) also times
``homalign.align(q, t, method="learned-homologs", homologs=DB)`` once per pair over ``--pairs``
pairs of real SCOPe domains within 10% of ``--length`` (``astral-2.07-40.trainval.fa``; random
sequences would find no homologues), every sequence new to the process, after one warm-up pair:
the cost per pair once the database is built.

``--parity`` also runs every HOMSTRAD dev pair through both posterior implementations and
reports the largest posterior difference and how many MEA alignments differ.

The Markdown table is printed and written atomically to ``--out`` with the command and date.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import homalign  # noqa: E402
from homalign.alphabet import ALPHABET  # noqa: E402
from homalign.dp import align_score  # noqa: E402
from homalign.dp.posterior import posterior_matrix  # noqa: E402
from homalign.model import load_bundled  # noqa: E402
from homalign.model.decode import mea_align  # noqa: E402
from homalign.model.homology import ranking_score  # noqa: E402
from homalign.paths import shared_data_root  # noqa: E402
from homalign.sequence import Sequence  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "learned_speed.md"
DEV = shared_data_root() / "homstrad/dev"


def random_pairs(n: int, length: int, seed: int = 0) -> list[tuple[Sequence, Sequence]]:
    """``n`` pairs of random protein sequences of ``length`` residues."""
    rng = np.random.default_rng(seed)
    aa = list(ALPHABET[:20])

    def seq(k: int) -> Sequence:
        return Sequence(f"s{k}", "".join(rng.choice(aa, length)))

    return [(seq(2 * k), seq(2 * k + 1)) for k in range(n)]


def per_pair(fn: Callable[[int], object], n: int, reps: int) -> tuple[float, float]:
    """Median over ``reps`` of (CPU seconds, wall seconds) per call of ``fn(k)``, k < n."""
    fn(0)  # warm-up
    cpu, wall = [], []
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        for k in range(n):
            fn(k)
        cpu.append((time.process_time() - c0) / n)
        wall.append((time.perf_counter() - t0) / n)
    return statistics.median(cpu), statistics.median(wall)


STAGES = ("encode (both sequences)", "score (S, GapCosts)", "posterior", "MAC decoding",
          "local score", "homology score (ranking weights)")


def flow(pairs: list[tuple[Sequence, Sequence]], method: str) -> np.ndarray:
    """(CPU, wall) seconds of each stage, run in sequence as the call runs them, summed over
    the pairs: float64 (len(STAGES), 2)."""
    model, _meta = load_bundled()
    smodel, smeta = load_bundled("learned_search")
    cfg = model.cfg
    out = np.zeros((len(STAGES), 2))
    for q, t in pairs:
        marks = [(time.process_time(), time.perf_counter())]
        eq, et = model.embed(q.codes), model.embed(t.codes)
        marks.append((time.process_time(), time.perf_counter()))
        S, gaps = model.score_embedded(q.codes, eq, t.codes, et)
        marks.append((time.process_time(), time.perf_counter()))
        P = posterior_matrix(S, gaps, mode=cfg.decode_mode, method=method)
        marks.append((time.process_time(), time.perf_counter()))
        mea_align(P, cfg.mea_threshold)
        marks.append((time.process_time(), time.perf_counter()))
        align_score(S, gaps, mode="local")
        marks.append((time.process_time(), time.perf_counter()))
        ranking_score(smodel, smeta, q.codes, smodel.embed(q.codes), t.codes,
                      smodel.embed(t.codes))
        marks.append((time.process_time(), time.perf_counter()))
        out += np.diff(np.array(marks), axis=0)
    return out


def measure(pairs: list[tuple[Sequence, Sequence]], reps: int) -> dict[str, object]:
    """The whole call and the in-flow stage costs (per pair, medians over ``reps``) with both
    posterior implementations."""
    n = len(pairs)
    whole = per_pair(lambda k: homalign.align(*pairs[k], method="learned"), n, reps)
    print(f"align (whole call): {1e3 * whole[0]:.2f} ms CPU, {1e3 * whole[1]:.2f} ms wall",
          flush=True)
    res: dict[str, object] = {"whole": whole}
    for method in ("scaled", "log"):
        flow(pairs[:1], method)  # warm-up
        runs = [flow(pairs, method) / n for _ in range(reps)]
        res[method] = np.median(np.stack(runs), axis=0)
        print(f"stages with the {method} posterior: "
              f"{1e3 * res[method][:, 0].sum():.2f} ms CPU", flush=True)
    return res


def parity(data: Path) -> tuple[int, float, int]:
    """(pairs, max |P_scaled - P_log|, MEA alignments that differ) over the dev pairs."""
    from homalign.evaluate.reference import load_reference_pairs

    model, _meta = load_bundled()
    cfg = model.cfg
    refs = load_reference_pairs(data)
    worst, differ = 0.0, 0
    for r in refs:
        S, g = model.score_pair(r.query.codes, r.target.codes)
        P = posterior_matrix(S, g, mode=cfg.decode_mode)
        P_log = posterior_matrix(S, g, mode=cfg.decode_mode, method="log")
        worst = max(worst, float(np.abs(P - P_log).max()))
        a = mea_align(P, cfg.mea_threshold).pairs
        b = mea_align(P_log, cfg.mea_threshold).pairs
        differ += int(a.shape != b.shape or not np.array_equal(a, b))
    return len(refs), worst, differ


def homolog_pairs(n: int, length: int, seed: int = 0) -> list[tuple[Sequence, Sequence]]:
    """``n + 1`` pairs of distinct ASTRAL domains within 10% of ``length`` (the first: warm-up)."""
    from homalign.io import read_fasta

    fasta = shared_data_root() / "scope" / "astral-2.07-40.trainval.fa"
    lo, hi = int(0.9 * length), int(1.1 * length)
    seqs = [Sequence(r.id, r.sequence.upper()) for r in read_fasta(fasta)
            if lo <= len(r.sequence) <= hi]
    pick = np.random.default_rng(seed).choice(len(seqs), 2 * n + 2, replace=False)
    chosen = [seqs[int(i)] for i in pick]
    return [(chosen[2 * k], chosen[2 * k + 1]) for k in range(n + 1)]


def measure_homologs(db: str, n: int, length: int) -> tuple[float, float]:
    """(CPU, wall) seconds a pair of ``learned-homologs`` against the database ``db``, once
    the database is open and its homologue-search index built (~0.3 s for the UniProt sample,
    once per process; a process builds it after its first few searches of a database)."""
    from homalign.search import open_database
    from homalign.search.homologs import HOMOLOG_PREFILTER

    hdb = open_database(db)
    hdb.kmer_index(HOMOLOG_PREFILTER["k"])
    pairs = homolog_pairs(n, length)
    homalign.align(*pairs[0], method="learned-homologs", homologs=hdb)  # compile, map the db
    c0, w0 = time.process_time(), time.perf_counter()
    for q, t in pairs[1:]:
        homalign.align(q, t, method="learned-homologs", homologs=hdb)
    return (time.process_time() - c0) / n, (time.perf_counter() - w0) / n


def markdown(res: dict, args: argparse.Namespace, command: str,
             par: tuple[int, float, int] | None) -> str:
    """The results page."""
    cpu, wall = res["whole"]
    now, before = res["scaled"], res["log"]
    lines = [
        "# Learned aligner speed, stage by stage",
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}); "
        f"{platform.machine()}, one thread (torch, numba, OpenMP), load average at the end "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} shared cores.",
        "",
        f"{args.pairs} random pairs of length {args.length}, bundled weights; per-pair cost, "
        f"median over {args.reps} repetitions. CPU = process CPU time (what one dedicated core "
        "gives; the target), wall = elapsed time on the shared machine.",
        "",
        "## `homalign.align(q, t, method=\"learned\")`",
        "",
        "| measure | ms/pair | pairs/s |",
        "|---|---|---|",
        f"| CPU time | {1e3 * cpu:.2f} | {1 / cpu:.1f} |",
        f"| wall time | {1e3 * wall:.2f} | {1 / wall:.1f} |",
        "",
        "## Stages, timed one after the other as the call runs them",
        "",
        "Measured inside the flow (each pair's stages in sequence), so that caches are as cold "
        "as in the real call; `before` swaps in the float64 log-space posterior (`method=\"log\"`, "
        "what the call used before the scaled one).",
        "",
        "| stage | before: ms/pair (CPU) | now: ms/pair (CPU) | now: ms/pair (wall) |",
        "|---|---|---|---|",
    ]
    for k, name in enumerate(STAGES):
        lines.append(f"| {name} | {1e3 * before[k, 0]:.2f} | {1e3 * now[k, 0]:.2f} | "
                     f"{1e3 * now[k, 1]:.2f} |")
    b, n = before[:, 0].sum(), now[:, 0].sum()
    lines += [
        f"| **sum** | {1e3 * b:.2f} | {1e3 * n:.2f} | {1e3 * now[:, 1].sum():.2f} |",
        f"| **pairs/s from the sum** | {1 / b:.1f} | {1 / n:.1f} | {1 / now[:, 1].sum():.1f} |",
        "",
        "The whole call adds Python glue (sequence handling, the homology head, the `Alignment`) "
        "to the sum of the stages.",
    ]
    if "homologs" in res:
        hc, hw = res["homologs"]
        lines += ["", f"## `learned-homologs` against `{args.homologs}`", "",
                  f"{args.pairs} pairs of real SCOPe domains of length {int(0.9 * args.length)}"
                  f"-{int(1.1 * args.length)}, each sequence new to the process (its homologue "
                  "search runs), one warm-up pair first: "
                  f"{1e3 * hc:.1f} ms a pair CPU, {1e3 * hw:.1f} ms wall."]
    if par is not None:
        npairs, worst, differ = par
        lines += ["", f"Parity on HOMSTRAD dev ({npairs} pairs, decode mode): largest "
                  f"|P_scaled - P_log| = {worst:.2e}; MEA alignments that differ: {differ}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--length", type=int, default=300)
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--parity", action="store_true", help="compare both posteriors on dev")
    ap.add_argument("--data", type=Path, default=DEV)
    ap.add_argument("--homologs", help="also time learned-homologs against this makedb directory")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    with torch.no_grad():
        res = measure(random_pairs(args.pairs, args.length), args.reps)
        if args.homologs:
            res["homologs"] = measure_homologs(args.homologs, args.pairs, args.length)
    par = parity(args.data) if args.parity else None
    if par is not None:
        print(f"parity: {par[0]} pairs, max |dP| {par[1]:.2e}, differing MEA alignments {par[2]}")
    command = "python benchmarks/bench_learned_speed.py " + shlex.join(
        argv if argv is not None else sys.argv[1:])
    text = markdown(res, args, command.strip(), par)
    print(text)
    from homalign.io.atomic import atomic_write

    with atomic_write(args.out) as fh:
        fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
