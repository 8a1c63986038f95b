"""Scale-out of :func:`homalign.search.search_many` over Ray workers.

Two ways to split the work, both giving exactly the single-process results:

* ``shard="queries"``: each worker searches a contiguous slice of the queries against the whole
  database (the database is put once into Ray's object store);
* ``shard="db"``: the database is cut into contiguous slices. The prefilter's candidate set of a
  query depends on the whole database (its top ``max_seqs`` by ungapped score, and for the
  learned ranking the best of those by Smith-Waterman score), so it is computed first by the
  driver; each worker then scores the candidates falling in its slice, with the E-values of the
  whole database, and the driver merges, re-ranks and truncates to ``max_hits``.

A database directory (``homalign makedb``) travels as its path: every worker opens it itself, so
its arrays and the learned search's stored target embeddings are memory-mapped from disk, never
pickled through the driver. An in-memory database goes once into Ray's object store, without its
per-process caches. ``iterations > 1`` or ``target_msa`` (the iterative and database-MSA modes)
shard the queries. Each task uses one thread (``homalign.threads``), since Ray runs one task
per CPU. A worker that dies makes its task fail, and the search raises: hits are never missing
silently.

``address=None`` or ``"local"`` starts a local Ray with ``workers`` CPUs; any other address
connects to that cluster. Ray is an optional dependency (the ``ray`` extra).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from homalign.errors import WorkerError
from homalign.search.database import SequenceDB, open_database
from homalign.search.hits import Hit, rank_hits
from homalign.search.neighbours import NEIGHBOURS_JSON
from homalign.sequence import Sequence


def _require_ray():
    try:
        import ray
    except ImportError:
        raise RuntimeError("--ray needs the optional dependency ray: pip install 'homalign[ray]'"
                           ) from None
    return ray


def _init(ray, address: str | None, workers: int) -> bool:
    """Start or join Ray; True when this call started it (and should shut it down)."""
    if address not in (None, "local"):
        _check_reachable(address)
    if ray.is_initialized():
        return False
    if address in (None, "local"):
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    else:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    return True


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse a ``HOST:PORT`` (or ``ray://HOST:PORT``) address nothing answers at within
    ``timeout`` seconds: Ray itself waits minutes on a wrong one. ``auto`` and other forms are
    Ray's to resolve."""
    import socket

    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit():
        if address == "auto":
            return
        raise ValueError(f"--ray {address!r}: expected local, auto or HOST:PORT")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise ValueError(f"--ray {address!r}: no Ray cluster answers there ({reason})") from None


def _split(n: int, parts: int) -> list[tuple[int, int]]:
    bounds = np.linspace(0, n, parts + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


def _worker_db(db: SequenceDB | str) -> SequenceDB:
    from homalign.threads import set_threads

    set_threads(1)
    return open_database(db) if isinstance(db, str) else db


def _search_queries(queries: list[Sequence], db: SequenceDB | str, method: str,
                    kwargs: dict[str, Any], iterative: dict[str, Any] | None = None
                    ) -> list[list[Hit]]:
    from homalign.search.parallel import search_many

    db = _worker_db(db)
    if iterative:
        from homalign.search.iterative import iterative_search

        opts = {k: v for k, v in kwargs.items() if k != "params"}
        return [iterative_search(q, db, method=method, **iterative, **opts) for q in queries]
    return [hits for _q, hits in search_many(queries, db, method, progress=False, **kwargs)]


def _search_candidates(queries: list[Sequence], db: SequenceDB | str,
                       candidates: list[np.ndarray], method: str,
                       kwargs: dict[str, Any]) -> list[list[Hit]]:
    from homalign.search.engine import search

    db = _worker_db(db)
    out = []
    opts = {k: v for k, v in kwargs.items() if k not in ("prefilter", "prefilter_options",
                                                         "rescore", "profile_round")}
    max_hits = opts.pop("max_hits", 500)
    for q, cand in zip(queries, candidates, strict=True):
        out.append(search(q, db, method, candidates=cand, max_hits=max_hits, **opts))
    return out


def search_ray(
    queries: list[Sequence],
    db: SequenceDB | str,
    method: str = "sw",
    *,
    address: str | None = None,
    workers: int = 2,
    shard: str = "queries",
    iterations: int = 1,
    target_msa: str | None = None,
    iterative_options: dict[str, Any] | None = None,
    **kwargs: Any,
) -> list[tuple[Sequence, list[Hit]]]:
    """:func:`homalign.search.search_many` run on Ray workers; the same [(query, hits), ...].

    ``iterations > 1`` / ``target_msa``: :func:`homalign.search.iterative.iterative_search`
    per query instead (``iterative_options`` its other arguments), sharded by queries, as is a
    database with neighbour lists (:mod:`homalign.search.neighbours`)."""
    if shard not in ("queries", "db"):
        raise ValueError(f"shard must be 'queries' or 'db', not {shard!r}")
    ray = _require_ray()
    if not isinstance(db, SequenceDB):
        db = open_database(db)
    iterative = None
    if iterations > 1 or target_msa is not None:
        iterative = {"iterations": iterations, "target_msa": target_msa,
                     **(iterative_options or {})}
        shard = "queries"
    if shard == "db" and db.source is not None and (Path(db.source) / NEIGHBOURS_JSON).is_file() \
            and kwargs.get("neighbours", True):
        shard = "queries"  # a target reached through a neighbour may lie in another shard
    if shard == "db" and iterative is None:
        from homalign.search.profile_round import wanted

        if wanted(method, {"profile_round": kwargs.get("profile_round")}):
            shard = "queries"  # the PSSM round's MSA and candidates come from the whole database
    queries = list(queries)
    from homalign.search.engine import method_params

    # E-value parameters are fitted (or read from the cache) once, here, not in every worker
    if kwargs.get("params") is None:
        from homalign.methods import get_method

        get_method(method)
        options = {k: v for k, v in kwargs.items() if k not in _ENGINE_KEYS}
        kwargs = {**kwargs, "params": method_params(method, options)}
    started = _init(ray, address, workers)
    try:
        if shard == "queries":
            return _by_queries(ray, queries, db, method, workers, kwargs, iterative)
        return _by_db(ray, queries, db, method, workers, kwargs)
    finally:
        if started:
            ray.shutdown()


_ENGINE_KEYS = {"evalue", "max_hits", "prefilter", "query_rep", "prefilter_options", "db_size",
                "params", "max_query_length", "candidates", "traceback", "rescore",
                "calibrated", "neighbours", "profile_round"}


def _db_ref(ray, db: SequenceDB):  # noqa: ANN001, ANN202
    """What the workers get: a makedb directory's path (each opens and memory-maps it), else
    the in-memory database in the object store."""
    from pathlib import Path

    if db.source is not None and Path(db.source).is_dir():
        return str(db.source)
    return ray.put(db)


#: a task whose worker dies (killed, out of memory) is run again this many times by Ray before
#: the search fails; a task that raises is not retried (the same input raises again)
TASK_RETRIES = 3


def _gather(ray, futures):  # noqa: ANN001, ANN202
    """``ray.get`` of the shards: every shard's hits, or an error naming what failed (a search
    never returns with a shard missing)."""
    try:
        return ray.get(futures)
    except ray.exceptions.RayTaskError as exc:  # the search raised inside a shard
        raise RuntimeError(f"a Ray search shard failed: {type(exc).__name__}: {exc}") from exc
    except ray.exceptions.RayError as exc:  # its worker died, every retry
        raise WorkerError(f"a Ray search shard failed after {TASK_RETRIES} retries: "
                          f"{type(exc).__name__}: {exc}") from exc


def _by_queries(ray, queries, db, method, workers, kwargs, iterative=None):
    task = ray.remote(max_retries=TASK_RETRIES)(_search_queries)
    db_ref = _db_ref(ray, db)
    parts = _split(len(queries), workers)
    futures = [task.remote(queries[a:b], db_ref, method, kwargs, iterative) for a, b in parts]
    hits: list[list[Hit]] = []
    for chunk in _gather(ray, futures):
        hits.extend(chunk)
    return list(zip(queries, hits, strict=True))


def _by_db(ray, queries, db, method, workers, kwargs):
    from homalign.search.engine import SEARCH_KEYWORDS, candidates_of

    cands = [candidates_of(q, db, method, prefilter=kwargs.get("prefilter", True),
                           prefilter_options=kwargs.get("prefilter_options"),
                           rescore=kwargs.get("rescore", "default"),
                           query_rep=kwargs.get("query_rep"),
                           method_options={k: v for k, v in kwargs.items()
                                           if k not in SEARCH_KEYWORDS}) for q in queries]
    db_ref = _db_ref(ray, db)
    task = ray.remote(max_retries=TASK_RETRIES)(_search_candidates)
    futures = []
    for a, b in _split(len(db), workers):
        local = [c[(c >= a) & (c < b)] for c in cands]
        futures.append(task.remote(queries, db_ref, local, method, kwargs))
    merged: list[list[Hit]] = [[] for _ in queries]
    for part in _gather(ray, futures):
        for k, hits in enumerate(part):
            merged[k].extend(hits)
    max_hits = kwargs.get("max_hits", 500)
    out = []
    for q, hits in zip(queries, merged, strict=True):
        ranked = rank_hits(hits)
        out.append((q, ranked if max_hits is None else ranked[:max_hits]))
    return out
