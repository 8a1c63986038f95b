"""Queries searched side by side: worker processes, one thread each, whole queries each.

One query's search is a few short compiled passes (prefilter scan, Smith-Waterman rescoring,
learned scoring) with serial work between them (embeddings, numpy, the tracebacks), so
threads inside one query leave cores idle. :func:`iter_search` with ``workers=N`` instead hands
whole queries to N worker processes on one thread each and yields each query's hits in query
order as they come; fewer than :data:`MIN_WORKER_QUERIES` queries do not pay for the workers'
start and are searched here, with N threads inside each query. The hits are the one-process search's: a query's arithmetic never depends
on the thread count (:mod:`homalign.threads`), and each query is searched alone.

Workers open the database themselves, so nothing large crosses a pipe: a ``homalign makedb``
directory is memory-mapped with its stored embeddings and neighbour lists. A database read from
a FASTA file first becomes such a directory in a temporary folder (``save_database``, from the
records in memory; for a learned search with its embeddings, made once with all threads),
removed when the search ends; one
built in Python is searched in this process, with the threads inside each query. Workers are
spawned (a fresh interpreter: no fork of a process whose numba, torch and OpenMP pools may be
running), end with their parent (:func:`homalign.workers.init_worker`), and a worker's exception
is raised here; a worker that dies is a RuntimeError, never missing hits. Ray
(:mod:`homalign.search.ray_backend`) spreads queries over machines the same way.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from homalign.errors import WorkerError
from homalign.io.atomic import remove_abandoned_dirs
from homalign.search.database import SequenceDB, open_database
from homalign.search.engine import (
    SEARCH_KEYWORDS,
    TargetReps,
    batched_ranking,
    target_reps_for,
)
from homalign.search.hits import Hit
from homalign.sequence import Sequence

_WORKER: dict[str, Any] = {}


def _target_reps(db: SequenceDB, method: str, options: dict[str, Any]) -> TargetReps | None:
    from homalign.methods import get_method

    m = get_method(method)
    if m.prepare is None or m.score is None:
        return None
    return target_reps_for(m, db, {**m.defaults, **{k: v for k, v in options.items()
                                                     if k not in SEARCH_KEYWORDS}})


def _init(parent_pid: int, db_dir: str, method: str, options: dict[str, Any],
          iterations: int | None = None) -> None:
    from homalign.search.database import open_database
    from homalign.threads import set_threads
    from homalign.workers import init_worker

    init_worker(parent_pid)
    set_threads(1)
    db = open_database(db_dir)
    _WORKER.update(db=db, method=method, options=options, iterations=iterations,
                   reps=_reps_for(db, method, options, iterations))


def _search_options(options: dict[str, Any], iterations: int | None) -> dict[str, Any]:
    """The options a method's targets are prepared with: an iterative search's own keywords
    (its PSSM rounds', ``target_msa``, ...) are not the method's."""
    if iterations is None:
        return {k: v for k, v in options.items() if k != "profile_round"}
    from homalign.search.iterative import ITERATIVE_KEYWORDS

    return {k: v for k, v in options.items() if k not in ITERATIVE_KEYWORDS}


def _reps_for(db: SequenceDB, method: str, options: dict[str, Any],
              iterations: int | None) -> TargetReps | None:
    """Prepared targets shared across the queries (none for a PSI-BLAST-class search)."""
    if iterations is not None:
        from homalign.search.iterative import PSSM_METHODS

        if method in PSSM_METHODS:
            return None
    return _target_reps(db, method, _search_options(options, iterations))


def _one(query: Sequence, db: SequenceDB, method: str, iterations: int | None, reps: Any,
         options: dict[str, Any]) -> list[Hit]:
    if iterations is None:
        from homalign.search.profile_round import search_one

        return search_one(query, db, method, target_reps=reps, **options)
    from homalign.search.iterative import iterative_search

    return iterative_search(query, db, iterations, method, target_reps=reps, **options)


#: a query's hits as they cross the pipe: the query id, then the hits' columns (target ids,
#: indices, scores, bits, E-values, alignments or None); 2,000 Hit objects pickle ~10x slower
HitColumns = tuple[str, list[str], list[int], list[float], list[float], list[float], list | None]


def pack_hits(query_id: str, hits: list[Hit]) -> HitColumns:
    """The hits of one query as columns (:data:`HitColumns`)."""
    alns = [h.alignment for h in hits]
    return (query_id, [h.target_id for h in hits], [h.target_index for h in hits],
            [h.score for h in hits], [h.bits for h in hits], [h.evalue for h in hits],
            None if all(a is None for a in alns) else alns)


def unpack_hits(cols: HitColumns) -> list[Hit]:
    """The hits of :func:`pack_hits`, in their order."""
    qid, tids, tis, scores, bits, evals, alns = cols
    alns = alns if alns is not None else [None] * len(tids)
    return [Hit(qid, *h) for h in zip(tids, tis, scores, bits, evals, alns, strict=True)]


def _search_one(query: Sequence) -> HitColumns:
    w = _WORKER
    return pack_hits(query.id, _one(query, w["db"], w["method"], w["iterations"], w["reps"],
                                    w["options"]))


def database_dir(db: SequenceDB) -> str | None:
    """The ``homalign makedb`` directory ``db`` was opened from, or None."""
    src = db.source
    if src is not None and Path(src).is_dir() and (Path(src) / "manifest.json").is_file():
        return src
    return None


#: fewer queries than this are searched in this process, with the threads inside each query: a
#: worker process costs ~0.9 s to start (interpreter, imports, compiled-code cache, database).
#: `homalign search -j 2` on the Intel Xeon, learned with tracebacks, in this process / in two
#: workers: 10 queries 1.50 / 1.65 s, 20 1.89 / 1.92, 30 2.44 / 2.16, 50 3.36 / 2.73; sw, whose
#: kernels thread well inside a query, breaks even near 100 (50: 1.33 / 1.67, 200: 5.04 / 4.51)
MIN_WORKER_QUERIES = 20


def iter_search(queries: Iterable[Sequence], db: SequenceDB, method: str = "sw", *,
                workers: int = 1, iterations: int | None = None,
                **options: Any) -> Iterator[tuple[Sequence, list[Hit]]]:
    """(query, hits) of each query in order: :func:`homalign.search.search` with ``options``
    (with ``iterations``: :func:`homalign.search.iterative.iterative_search`), in ``workers``
    processes when there are at least :data:`MIN_WORKER_QUERIES` queries and ``db`` is a makedb
    directory (or a FASTA file, saved as one for them), else here (prepared targets shared
    across the queries)."""
    qs = list(queries)
    db_dir = database_dir(db)
    n = min(int(workers), len(qs)) if len(qs) >= MIN_WORKER_QUERIES else 1
    if n > 1 and db_dir is None and _fasta_source(db) is not None:
        remove_stale_search_folders()
        with tempfile.TemporaryDirectory(prefix=_TMP_PREFIX) as tmp:
            (Path(tmp) / ".pid").write_text(str(os.getpid()))
            try:
                built = _database_of(db, Path(tmp) / "db",
                                     learned=batched_ranking(method) is not None)
            except OSError as exc:  # no room or no write access in the temporary folder
                warnings.warn(f"searching {db.source} in one process: no temporary database "
                              f"for worker processes ({exc})", RuntimeWarning, stacklevel=2)
                built = None
            if built is not None:
                yield from _in_workers(qs, built, n, method, options, iterations)
                return
    if n <= 1 or db_dir is None:
        reps = _reps_for(db, method, options, iterations)
        for q in qs:
            yield q, _one(q, db, method, iterations, reps, options)
        return
    yield from _in_workers(qs, db_dir, n, method, options, iterations)


_TMP_PREFIX = "homalign-search-"
_UNMARKED_AGE = 3600.0  # seconds: a folder without a pid is stale this long after its creation


def remove_stale_search_folders(root: str | Path | None = None) -> list[Path]:
    """Delete the temporary databases (``homalign-search-*`` in ``root``, by default the
    temporary folder) that killed searches left: those whose ``.pid`` names a process that is
    gone, or that have no ``.pid`` an hour after they were made; returns what was removed.
    A folder whose search is still running is left alone."""
    return remove_abandoned_dirs(Path(root or tempfile.gettempdir()).glob(f"{_TMP_PREFIX}*"),
                                 unmarked_age=_UNMARKED_AGE)


def _fasta_source(db: SequenceDB) -> str | None:
    """The FASTA file ``db`` was read from, or None."""
    src = db.source
    return src if src is not None and Path(src).is_file() else None


def _database_of(db: SequenceDB, out: Path, *, learned: bool) -> str:
    """A ``homalign makedb`` directory at ``out`` of the records of ``db``, for worker processes
    to open (with the learned search's embeddings when ``learned``: the same float16 numbers an
    in-memory database ranks with)."""
    from homalign.search.database import save_database

    return str(save_database(db, out, learned=learned))


def _in_workers(qs: list[Sequence], db_dir: str, n: int, method: str, options: dict[str, Any],
                iterations: int | None) -> Iterator[tuple[Sequence, list[Hit]]]:
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(n, mp_context=ctx, initializer=_init,
                             initargs=(os.getpid(), db_dir, method, options,
                                       iterations)) as pool:
        try:
            for q, cols in zip(qs, pool.map(_search_one, qs), strict=True):
                yield q, unpack_hits(cols)
        except BrokenProcessPool:
            raise WorkerError(f"a search worker process died (killed, or out of memory) "
                               f"while searching {db_dir}: no hits are reported for the "
                               f"queries it held; rerun with fewer --threads") from None


def search_many(
    queries: Iterable[Sequence],
    db: SequenceDB | str | Path,
    method: str = "sw",
    *,
    progress: bool = True,
    workers: int = 1,
    **kwargs: Any,
) -> list[tuple[Sequence, list[Hit]]]:
    """:func:`search` for each query (a tqdm progress bar on stderr); [(query, hits), ...].
    ``workers`` > 1 searches whole queries side by side in that many one-thread processes
    when ``db`` is a makedb directory (:func:`iter_search`; the same hits)."""
    from tqdm import tqdm

    if not isinstance(db, SequenceDB):
        db = open_database(db)
    qs = list(queries)
    return list(tqdm(iter_search(qs, db, method, workers=workers, **kwargs), total=len(qs),
                     desc=f"search {method}", unit="query", disable=not progress,
                     dynamic_ncols=True))


__all__ = ["database_dir", "iter_search", "remove_stale_search_folders", "search_many"]
