"""Scale-out of :func:`homalign.search.search_many` over Ray workers.

Two ways to split the work, both giving exactly the single-process results:

* ``shard="queries"``: each worker searches a contiguous slice of the queries against the whole
  database (the database is put once into Ray's object store);
* ``shard="db"``: the database is cut into contiguous slices. The prefilter's candidate set of a
  query depends on the whole database (its top ``max_seqs`` by ungapped score), so it is computed
  first by the driver; each worker then scores the candidates falling in its slice with the E-values
  of the *whole* database (``db_size``), and the driver merges, re-ranks and truncates to
  ``max_hits``.

``address=None`` or ``"local"`` starts a local Ray with ``workers`` CPUs; any other address
connects to that cluster. Ray is an optional dependency (the ``ray`` extra).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from homalign.search.database import SequenceDB, open_database
from homalign.search.hits import Hit, rank_hits
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
    if ray.is_initialized():
        return False
    if address in (None, "local"):
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    else:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    return True


def _split(n: int, parts: int) -> list[tuple[int, int]]:
    bounds = np.linspace(0, n, parts + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


def _search_queries(queries: list[Sequence], db: SequenceDB, method: str,
                    kwargs: dict[str, Any]) -> list[list[Hit]]:
    from homalign.search.engine import search_many

    return [hits for _q, hits in search_many(queries, db, method, progress=False, **kwargs)]


def _search_candidates(queries: list[Sequence], shard: SequenceDB, offset: int,
                       candidates: list[np.ndarray], db_size: tuple[int, int], method: str,
                       kwargs: dict[str, Any]) -> list[list[Hit]]:
    from homalign.search.engine import search

    out = []
    opts = {k: v for k, v in kwargs.items() if k not in ("prefilter", "prefilter_options")}
    max_hits = opts.pop("max_hits", 500)
    for q, cand in zip(queries, candidates, strict=True):
        hits = search(q, shard, method, candidates=cand - offset, db_size=db_size,
                      max_hits=max_hits, **opts)
        for h in hits:
            h.target_index += offset
        out.append(hits)
    return out


def search_ray(
    queries: list[Sequence],
    db: SequenceDB | str,
    method: str = "sw",
    *,
    address: str | None = None,
    workers: int = 2,
    shard: str = "queries",
    **kwargs: Any,
) -> list[tuple[Sequence, list[Hit]]]:
    """:func:`homalign.search.search_many` run on Ray workers; the same [(query, hits), ...]."""
    if shard not in ("queries", "db"):
        raise ValueError(f"shard must be 'queries' or 'db', not {shard!r}")
    ray = _require_ray()
    if not isinstance(db, SequenceDB):
        db = open_database(db)
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
            return _by_queries(ray, queries, db, method, workers, kwargs)
        return _by_db(ray, queries, db, method, workers, kwargs)
    finally:
        if started:
            ray.shutdown()


_ENGINE_KEYS = {"evalue", "max_hits", "prefilter", "query_rep", "prefilter_options", "db_size",
                "params", "max_query_length", "candidates", "traceback"}


def _by_queries(ray, queries, db, method, workers, kwargs):
    task = ray.remote(_search_queries)
    db_ref = ray.put(db)
    parts = _split(len(queries), workers)
    futures = [task.remote(queries[a:b], db_ref, method, kwargs) for a, b in parts]
    hits: list[list[Hit]] = []
    for chunk in ray.get(futures):
        hits.extend(chunk)
    return list(zip(queries, hits, strict=True))


def _by_db(ray, queries, db, method, workers, kwargs):
    from homalign.search.prefilter import prefilter

    if kwargs.get("prefilter", True):
        cands = [prefilter(q.codes, db, **(kwargs.get("prefilter_options") or {}))
                 for q in queries]
    else:
        cands = [np.arange(len(db), dtype=np.int64) for _ in queries]
    db_size = (db.total_length, len(db))
    task = ray.remote(_search_candidates)
    futures = []
    for a, b in _split(len(db), workers):
        shard = db.subset(range(a, b))
        local = [c[(c >= a) & (c < b)] for c in cands]
        futures.append(task.remote(queries, shard, a, local, db_size, method, kwargs))
    merged: list[list[Hit]] = [[] for _ in queries]
    for part in ray.get(futures):
        for k, hits in enumerate(part):
            merged[k].extend(hits)
    max_hits = kwargs.get("max_hits", 500)
    out = []
    for q, hits in zip(queries, merged, strict=True):
        ranked = rank_hits(hits)
        out.append((q, ranked if max_hits is None else ranked[:max_hits]))
    return out
