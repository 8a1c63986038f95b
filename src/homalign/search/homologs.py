"""Homologue regions of a sequence in a database, for ``learned-homologs``' consistency transform.

:func:`find_homologs` runs a Smith-Waterman/BLOSUM62 search and keeps each hit's aligned span
plus a flank. The ``learned-homologs`` method (:mod:`homalign.methods.learned`) reaches it through
:mod:`homalign.database_search`, because methods may not import the search engine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from homalign.methods import get_method
from homalign.methods.learned import HOMOLOG_EVALUE, HOMOLOG_FLANK, MAX_HOMOLOGS
from homalign.search.database import open_database
from homalign.search.engine import search
from homalign.sequence import Sequence

#: the homologue search's k-mer prefilter: only E < HOMOLOG_EVALUE hits are used, but weak ones
#: help remote pairs, so every 4-mer hit of neighbourhood 20 is extended (one hit, X-drop 10),
#: through the database's 4-mer index, and the best 20 go to Smith-Waterman (held-out provenance:
#: homalign.tuned; docs/decisions.md, "The homologue search walks a 4-mer index")
HOMOLOG_PREFILTER = {"k": 4, "threshold": 20.0, "max_seqs": 20, "two_hit": False, "xdrop": 10.0,
                     "index": True}

#: above this many residues the homologue search scans its database instead of indexing it:
#: the same scores (the scan and the walk are tested equal), slower, without the index's 8
#: bytes a residue in memory (2 GB here; 72 MB for the UniProt sample's 9 M residues)
INDEX_MAX_RESIDUES = 250_000_000

#: the searches of one database (per process) that scan it before its index is built: the build
#: (~0.3 s for the UniProt sample's 9 M residues) pays after ~20 sequences (a 4-mer scan costs 22
#: ms a sequence there, the walk 9), so a one-off pair never builds it; the same scores either way
INDEX_AFTER = 4

# (database object, homologues): the object is kept so that an id() reused by a new database
# after the old one was freed can never return the old one's hits
_HOMOLOG_CACHE: dict[tuple, tuple[Any, list[Sequence]]] = {}
_DB_CACHE: dict[str, Any] = {}


def find_homologs(seq: Sequence, db: Any, max_homologs: int = MAX_HOMOLOGS,
                  evalue: float = HOMOLOG_EVALUE, flank: int = HOMOLOG_FLANK) -> list[Sequence]:
    """The regions of ``seq``'s best Smith-Waterman/BLOSUM62 hits in ``db`` (a
    ``SequenceDB``, a FASTA file or a makedb directory) with E-value below ``evalue``: each hit's
    aligned span plus ``flank`` residues either side, at most ``max_homologs``, distinct, best
    first, none identical to ``seq``. Cached per database and sequence within the process."""
    if max_homologs < 0:
        raise ValueError(f"max_homologs must be >= 0, got {max_homologs}")
    if flank < 0:
        raise ValueError(f"flank must be >= 0, got {flank}")
    db = _opened(db)
    key = (id(db), seq.residues, max_homologs, float(evalue), flank)
    cached = _HOMOLOG_CACHE.get(key)
    if cached is None or cached[0] is not db:
        out: list[Sequence] = []
        if max_homologs > 0:
            options = {**HOMOLOG_PREFILTER, "index": _walk_index(db)}
            hits = search(seq, db, method="sw", evalue=evalue, max_hits=max(4 * max_homologs, 10),
                          prefilter_options=options, traceback=False)
            # traced back a few at a time, best first, until enough distinct regions (the
            # search's own traceback kernel: the same alignments, for the hits that are used)
            align_hits = get_method("sw").align_hits
            step = max_homologs + 2
            for g in range(0, len(hits), step):
                batch = hits[g:g + step]
                alns = align_hits(seq, [db.sequence(h.target_index) for h in batch],
                                  np.array([h.score for h in batch]))
                for h, aln in zip(batch, alns, strict=True):
                    if len(aln.pairs) == 0:
                        continue
                    j = aln.pairs[:, 1]
                    lo, hi = max(0, int(j.min()) - flank), int(j.max()) + 1 + flank
                    region = aln.target[lo:hi]
                    if region == seq.residues or any(region == z.residues for z in out):
                        continue
                    out.append(Sequence(f"{h.target_id}/{lo + 1}-{min(hi, len(aln.target))}",
                                        region))
                    if len(out) == max_homologs:
                        break
                if len(out) == max_homologs:
                    break
        if len(_HOMOLOG_CACHE) > 4096:
            _HOMOLOG_CACHE.clear()
        _HOMOLOG_CACHE[key] = (db, out)
        return out
    return cached[1]


def _walk_index(db: Any) -> bool:
    """Whether this search of ``db`` walks its k-mer index (see :data:`INDEX_AFTER` and
    :data:`INDEX_MAX_RESIDUES`); counts the search."""
    if not HOMOLOG_PREFILTER.get("index") or len(db.codes) > INDEX_MAX_RESIDUES:
        return False
    count = db.cache.get("homolog_searches", 0) + 1
    db.cache["homolog_searches"] = count
    return count > INDEX_AFTER or db.has_kmer_index(HOMOLOG_PREFILTER.get("k", db.k))


def _opened(db: Any) -> Any:
    """``db`` itself if it is a ``SequenceDB``, else the path opened once per process."""
    if hasattr(db, "codes"):
        return db
    key_db = str(db)
    if key_db not in _DB_CACHE:
        _DB_CACHE[key_db] = open_database(key_db)
    return _DB_CACHE[key_db]


__all__ = ["find_homologs"]
