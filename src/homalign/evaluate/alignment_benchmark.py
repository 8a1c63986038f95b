"""The alignment benchmark: every method on every reference pair, scored against the structure.

For each family under ``data_dir`` (see :mod:`homalign.evaluate.reference`) and each unordered
pair of members (query = the earlier member in file order), each method aligns query to target
once; the prediction is scored with :func:`homalign.evaluate.metrics.score_pair`. Outputs, written
atomically into ``out_dir``:

- ``summary.csv`` — one row per method: means over pairs and over the twilight subset
  (reference identity < 30%), and ``seconds``, the summed time of the method's align calls.
- ``pairs.csv`` — one row per method and pair.
- ``f1_vs_identity.png`` — mean F1 per reference-identity bin, one line per method.

Parallel runs (``jobs > 1``) use a process pool over (method, pair) tasks and give the same
scores as ``jobs=1`` (only the timings differ). The pool starts its workers with ``forkserver``
(safe next to threads of numba/torch in the caller), so a script that calls this with
``jobs > 1`` needs the usual ``if __name__ == "__main__":`` guard. Each worker runs with one
thread in numba, torch, OpenMP and BLAS (:func:`_pin_worker`): ``jobs`` workers with a pool of
threads each would oversubscribe the cores (on a loaded 2-core machine ``learned`` took 0.6 s a
pair instead of 4 ms). The pool's tasks are runs of one method over consecutive pairs of one
family (:func:`family_chunks`), so that a worker meets each protein's pairs together and its
in-process caches (``learned-homologs``' homologue searches and posteriors against them) are
filled once rather than once per worker; the scores do not depend on it.
"""

from __future__ import annotations

import csv
import math
import multiprocessing
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import numpy as np

from homalign.errors import WorkerError
from homalign.evaluate.metrics import PairMetrics, score_pair, summarise
from homalign.evaluate.reference import ReferencePair, load_reference_pairs

SUMMARY_COLUMNS = (
    "method", "pairs", "S_dev", "S_mod", "balanced", "precision", "recall", "F1",
    "twilight_pairs", "twilight_S_dev", "twilight_S_mod", "twilight_balanced", "twilight_F1",
    "seconds",
)
PAIR_COLUMNS = (
    "method", "family", "query", "target", "Lq", "Lt", "ref_identity", "N_ref", "L_ali",
    "N_correct", "S_dev", "S_mod", "F1", "seconds",
)


def select_pairs(pairs: list[ReferencePair], max_pairs: int | None) -> list[ReferencePair]:
    """At most ``max_pairs`` pairs, evenly spaced over the sorted list (so a quick run still
    covers many families); all of them when ``max_pairs`` is None."""
    if max_pairs is None or max_pairs >= len(pairs):
        return pairs
    if max_pairs <= 0:
        raise ValueError(f"max_pairs must be positive, got {max_pairs}")
    idx = np.unique(np.linspace(0, len(pairs) - 1, max_pairs).round().astype(int))
    return [pairs[i] for i in idx]


def family_chunks(refs: Sequence[ReferencePair], jobs: int) -> list[list[int]]:
    """Indices of ``refs`` in runs of consecutive pairs of one family, each at most
    ``ceil(len(refs) / (4 * jobs))`` long (so a large family still spreads over the workers, and
    no run holds more than a quarter of a worker's share)."""
    size = max(1, -(-len(refs) // (4 * jobs)))
    chunks: list[list[int]] = []
    for k, ref in enumerate(refs):
        if chunks and refs[chunks[-1][-1]].family == ref.family and len(chunks[-1]) < size:
            chunks[-1].append(k)
        else:
            chunks.append([k])
    return chunks


def _align_chunk(method: str, refs: list[ReferencePair], options: dict, shift: int
                 ) -> list[tuple[PairMetrics, float]]:
    """One pool task: :func:`_align_pair` on each pair of a chunk, in order."""
    return [_align_pair(method, ref, options, shift) for ref in refs]


_WARM: set[str] = set()
_WARMUP_RESIDUES = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQFEV"


def _warm_up(method: str, options: dict) -> None:
    """Run a method once, untimed, in this process: JIT compilation and library loading would
    otherwise be charged to the first timed pair."""
    from homalign.methods import get_method
    from homalign.sequence import Sequence

    if method not in _WARM:
        q = Sequence("warmup_q", _WARMUP_RESIDUES[:60])
        t = Sequence("warmup_t", _WARMUP_RESIDUES[5:70])
        get_method(method).align(q, t, **options)
        _WARM.add(method)


def _pin_worker() -> None:
    """Pool initializer: one thread for everything that computes in this worker (the pool is
    the parallelism); the environment too, for libraries that read it when they load. Not
    ``NUMBA_NUM_THREADS``: numba, already loaded in a forked worker, refuses to compile once that
    variable differs from the pool it launched; ``set_threads`` limits numba instead."""
    import os

    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"
    from homalign.threads import set_threads

    set_threads(1)


def options_for(method: str, options: dict) -> dict:
    """The ``options`` that ``method`` declares (the benchmark's ``--msa``/``--db`` are for the
    profile methods; a method that does not read them is run without them)."""
    from homalign.methods import get_method

    names = get_method(method).option_names
    return dict(options) if names is None else {k: v for k, v in options.items() if k in names}


def _align_pair(method: str, ref: ReferencePair, options: dict, shift: int
                ) -> tuple[PairMetrics, float]:
    """One task: align a reference pair with one method and score it (runs in a worker)."""
    from homalign.methods import get_method

    m = get_method(method)
    _warm_up(method, options)
    t0 = time.perf_counter()
    try:
        aln = m.align(ref.query, ref.target, **options)
    except Exception as exc:
        raise RuntimeError(f"{method} failed on {ref.family} {ref.query.id} vs {ref.target.id}: "
                           f"{exc}") from exc
    seconds = time.perf_counter() - t0
    metrics = score_pair(aln.pairs, ref.pairs, len(ref.query), len(ref.target), shift=shift,
                         ref_identity=ref.identity)
    return metrics, seconds


def _pair_row(method: str, ref: ReferencePair, m: PairMetrics, seconds: float) -> dict:
    return {
        "method": method, "family": ref.family, "query": ref.query.id, "target": ref.target.id,
        "Lq": m.Lq, "Lt": m.Lt, "ref_identity": m.ref_identity, "N_ref": m.N_ref,
        "L_ali": m.L_ali, "N_correct": m.N_correct, "S_dev": m.S_dev, "S_mod": m.S_mod,
        "F1": m.F1, "seconds": seconds,
    }


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.6f}"
    return str(value)


def write_csv(path: Path, columns: Sequence[str], rows: Sequence[dict]) -> None:
    """Write rows (dicts) with exactly ``columns``, atomically."""
    from homalign.io.atomic import atomic_write

    with atomic_write(path, "w") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_fmt(row[c]) for c in columns])


def format_summary(rows: Sequence[dict]) -> str:
    """The summary rows as an aligned plain-text table."""
    cols = ("method", "pairs", "S_dev", "S_mod", "balanced", "F1", "twilight_pairs",
            "twilight_balanced", "twilight_F1", "seconds")
    cells = [list(cols)] + [
        [f"{r[c]:.3f}" if isinstance(r[c], float) and c != "seconds"
         else f"{r[c]:.1f}" if c == "seconds" else str(r[c]) for c in cols]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    return "\n".join(
        "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths,
                                                                                   strict=True)))
        for row in cells
    )


def run_alignment_benchmark(
    data_dir: str | Path,
    methods: list[str],
    out_dir: str | Path,
    *,
    max_pairs: int | None = None,
    jobs: int = 1,
    method_options: dict | None = None,
    progress: bool = True,
    shift: int = 0,
    echo: bool = True,
) -> list[dict]:
    """Run the alignment benchmark and write its outputs; returns the summary rows.

    Args:
        data_dir: a directory of ``<FAMILY>/<FAMILY>.ali`` structure-based alignments.
        methods: registered method names; one that is not available here (a peer whose program
            is missing) is skipped with a one-line message on stderr. An unknown name is an error.
        out_dir: created if needed; receives ``summary.csv``, ``pairs.csv``,
            ``f1_vs_identity.png``.
        max_pairs: at most this many pairs (evenly spaced over the family-sorted list).
        jobs: worker processes (1: run in this process).
        method_options: keyword options for the methods' ``align``, each method getting those
            it declares, e.g. ``{"msa": "single", "db": "db.fa"}``; one that no chosen method
            declares is an error.
        progress: a tqdm progress bar on stderr.
        shift: shift tolerance of the correctness count (0: exact pairs).
        echo: print the summary table to stdout.
    """
    from tqdm import tqdm

    from homalign.evaluate.plots import plot_f1_vs_identity
    from homalign.methods import get_method

    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    options = dict(method_options or {})
    runnable: list[str] = []
    for name in methods:
        reason = get_method(name).available()
        if reason is None:
            runnable.append(name)
        else:
            print(f"homalign benchmark: skipping {name}: {reason}", file=sys.stderr)
    unread = [k for k in options if not any(k in options_for(n, {k: None}) for n in methods)]
    if unread:
        from homalign.methods import OptionError

        raise OptionError(f"no method of {', '.join(methods)} reads the option(s) "
                          f"{', '.join(unread)}")
    refs = select_pairs(load_reference_pairs(data_dir), max_pairs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    tasks = [(name, k) for name in runnable for k in range(len(refs))]
    results: list[tuple[PairMetrics, float] | None] = [None] * len(tasks)
    bar = tqdm(total=len(tasks), desc="alignment benchmark", unit="aln", file=sys.stderr,
               disable=not progress)
    try:
        if jobs == 1:
            for t, (name, k) in enumerate(tasks):
                bar.set_postfix_str(name, refresh=False)
                results[t] = _align_pair(name, refs[k], options_for(name, options), shift)
                bar.update()
        else:
            ctx = multiprocessing.get_context("forkserver")
            with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx,
                                     initializer=_pin_worker) as pool:
                task_of = {task: t for t, task in enumerate(tasks)}
                futures = {pool.submit(_align_chunk, name, [refs[k] for k in chunk],
                                       options_for(name, options), shift):
                           [task_of[name, k] for k in chunk]
                           for name in runnable for chunk in family_chunks(refs, jobs)}
                try:
                    for fut in as_completed(futures):
                        for t, res in zip(futures[fut], fut.result(), strict=True):
                            results[t] = res
                        bar.update(len(futures[fut]))
                except BaseException as exc:
                    for fut in futures:
                        fut.cancel()
                    if isinstance(exc, BrokenProcessPool):
                        raise WorkerError("an alignment worker process died (killed, or out of "
                                          "memory); rerun with fewer --threads") from None
                    raise
    finally:
        bar.close()

    pair_rows: list[dict] = []
    summary_rows: list[dict] = []
    for name in runnable:
        mine = [(refs[k], results[t]) for t, (n, k) in enumerate(tasks) if n == name]
        rows = [_pair_row(name, ref, m, s) for ref, (m, s) in mine]
        pair_rows.extend(rows)
        summary = summarise(m for _, (m, _) in mine)
        summary_rows.append({"method": name, **{c: summary[c] for c in SUMMARY_COLUMNS[1:-1]},
                             "seconds": float(sum(s for _, (_, s) in mine))})

    write_csv(out / "summary.csv", SUMMARY_COLUMNS, summary_rows)
    write_csv(out / "pairs.csv", PAIR_COLUMNS, pair_rows)
    plot_f1_vs_identity(pair_rows, out / "f1_vs_identity.png")
    if echo:
        print(format_summary(summary_rows))
    return summary_rows


__all__ = [
    "PAIR_COLUMNS", "SUMMARY_COLUMNS", "family_chunks", "format_summary",
    "run_alignment_benchmark",
    "select_pairs", "write_csv",
]
