"""Database search: ranked hits with E-values for a query against a protein database.

Contract (other modules rely on these names)::

    from homalign.search import SequenceDB, Hit, search
    db = SequenceDB.from_fasta(path)          # or SequenceDB.load(dbdir) for a makedb directory
    hits = search(query, db, method="sw", evalue=10.0, max_hits=500, prefilter=True,
                  query_rep=None, **method_options)
    # query: homalign.sequence.Sequence; method: a registry name (homalign.methods.get_method);
    # query_rep: an already prepared query representation (e.g. a Profile) passed to
    #   method.score instead of method.prepare(query)
    # Hit: .target_id, .alignment (homalign.alignment.Alignment), .score, .bits, .evalue;
    #   sorted by evalue then score

``search`` is the engine's one pass. ``homalign.search(...)`` (this package called),
:func:`search_many` and ``homalign search`` run a single-pass ``learned`` search with its PSSM
round (:mod:`homalign.search.profile_round`) unless ``profile_round=False``.

Also: :func:`makedb` (an on-disk database directory; :func:`save_database` writes one of a
database in memory), :func:`search_many`
(many queries, progress bar), :func:`write_hits` (BLAST tabular, A3M, pairwise text), :func:`fuse_hits` (one ranking from
several searches) and
:func:`homalign.search.ray_backend.search_ray` (the same search sharded over Ray workers).
The k-mer prefilter is :func:`homalign.search.prefilter.prefilter`. E-value statistics live in
:mod:`homalign.stats`.
"""

import sys as _sys
import types as _types

from homalign.search.database import SequenceDB, makedb, open_database, save_database
from homalign.search.engine import TargetReps, search
from homalign.search.hits import BLAST_TAB_COLUMNS, Hit, fuse_hits, rank_hits, write_hits
from homalign.search.parallel import search_many

__all__ = [
    "BLAST_TAB_COLUMNS",
    "Hit",
    "SequenceDB",
    "TargetReps",
    "fuse_hits",
    "makedb",
    "open_database",
    "rank_hits",
    "save_database",
    "search",
    "search_many",
    "write_hits",
]


class _CallableModule(_types.ModuleType):
    """``homalign.search(query, db, ...)`` calls :func:`homalign.search.entry.run_search` (what
    :func:`homalign.api.search` calls); the package's names (``homalign.search.SequenceDB``,
    ``homalign.search.search``...) stay as they are."""

    def __call__(self, *args, **kwargs):
        from homalign.search.entry import run_search

        return run_search(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
