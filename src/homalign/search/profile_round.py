"""One light PSSM round inside a learned search: the query's family profile as second evidence.

The learned ranking sees one sequence; a profile of the query's clear homologues sees which of
its positions vary. A learned search (``homalign.search(..., method="learned")``, ``homalign search
--method learned``) adds that evidence by default (:data:`BY_DEFAULT`; ``profile_round=False``,
``--no-profile-round``: without it), at a fraction of an iterative search's cost:

1. the learned search's own candidates (the database's best 80 by Smith-Waterman score) are
   searched with Smith-Waterman (BLOSUM62 11/1, as a first PSI-BLAST round), and those with
   E <= :data:`INCLUSION_EVALUE` (PSI-BLAST's inclusion threshold) after the reverse null
   (:mod:`homalign.search.reverse_null`) form the query's MSA
   (:func:`homalign.search.hits.msa_from_alignments`);
2. that MSA's PSSM, rounded to integers with uniform gaps as PSI-BLAST scores (the int8
   kernel's lanes), scores the learned candidates and the database's best
   :data:`PSSM_CANDIDATES` by Smith-Waterman score (Karlin-Altschul E-values, as ``pssm``; the
   reverse null for those with E <= :data:`REVERSE_CHECK`);
3. the PSSM's best :data:`EXTRA_CANDIDATES` outside the learned candidates are scored by the
   learned ranking too;
4. each target's value is the weighted geometric mean of its learned and PSSM E-values
   (:func:`homalign.search.hits.fuse_hits`, :data:`WEIGHT` on the learned one).

:func:`profile_search` is the whole search (steps 1-4, then the E-value cut and the hits'
learned alignments); :func:`search_one` runs it where it applies (:func:`wanted`) and the plain
engine (:func:`homalign.search.engine.search`) otherwise: every one-query search of the
package's API, CLI, worker processes and benchmark goes through it. A fusion's own list
(``candidates=``) and a database shard (``db_size=``) stay plain, as does a database's
intermediate-sequence search (its neighbour lists are used only without the round).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from homalign.sequence import Sequence

#: a learned search runs the round unless told not to (dev superfamily 0.252 -> 0.274)
BY_DEFAULT = True
#: PSI-BLAST's inclusion E-value for the MSA (1e-2 ranked held-out queries within noise)
INCLUSION_EVALUE = 1e-3
#: the PSSM scores the database's best 300 by Smith-Waterman score besides the learned ones
PSSM_CANDIDATES = 300
#: the PSSM round's best 20 outside the learned candidates join the learned ranking
EXTRA_CANDIDATES = 20
#: weight of the learned ln E against the PSSM round's (0.4 and 0.7 ranked lower, held-out)
WEIGHT = 0.5
MATRIX, GAP_OPEN, GAP_EXTEND = "BLOSUM62", 11.0, 1.0
#: the reverse null (:mod:`homalign.search.reverse_null`) against PSI-BLAST's drift on sequences
#: of biased composition: each MSA member and each round hit with E <= ``REVERSE_CHECK`` is also
#: scored against its target read backwards; the excess over ``REVERSE_MARGIN`` units raises its
#: E-value as much, and an MSA member must still pass the inclusion E-value (held-out train-fold
#: queries and shuffled UniProt decoys, homalign.tuned)
REVERSE_CHECK = 1.0
REVERSE_MARGIN = 5.0


def pssm_round(q: Sequence, db: Any, cand: np.ndarray) -> list:
    """The hits (no alignments; best first) of the query's one-round PSSM over ``cand`` (the
    learned search's candidates) and the database's best :data:`PSSM_CANDIDATES` by
    Smith-Waterman score."""
    import math
    from dataclasses import replace

    from homalign.methods.profile import ProteinRep
    from homalign.profile.profile import Profile
    from homalign.search.engine import best_by_sw, search
    from homalign.search.hits import msa_from_alignments, rank_hits
    from homalign.search.msa_build import hit_alignments
    from homalign.search.reverse_null import reverse_excess, sw_reverse_excess
    from homalign.stats import karlin_altschul

    cand = np.asarray(cand, dtype=np.int64)
    # the MSA: Smith-Waterman hits (the 16-lane traceback), as a first PSI-BLAST round ranks
    ka = karlin_altschul(MATRIX, GAP_OPEN, GAP_EXTEND)
    gaps = {"matrix": MATRIX, "gap_open": GAP_OPEN, "gap_extend": GAP_EXTEND}
    inc = search(q, db, method="sw", evalue=INCLUSION_EVALUE, max_hits=None, candidates=cand,
                 **gaps)
    if inc:
        ex = sw_reverse_excess(q, db, [h.target_index for h in inc], REVERSE_MARGIN, MATRIX,
                               GAP_OPEN, GAP_EXTEND)
        inc = [h for h, x in zip(inc, ex, strict=True)
               if h.evalue * math.exp(x) <= INCLUSION_EVALUE]
    msa = msa_from_alignments(q, hit_alignments(q, inc))
    rep = ProteinRep(q, source=Profile.from_msa(msa, pseudocounts="matrix", matrix=MATRIX),
                     blast_scores=True)
    wider = best_by_sw(q, db, np.arange(len(db), dtype=np.int64), PSSM_CANDIDATES)
    hits = search(q, db, method="pssm", evalue=math.inf, max_hits=None,
                  candidates=np.union1d(wider, cand), traceback=False, query_rep=rep,
                  params=ka, **gaps)
    check = [n for n, h in enumerate(hits) if h.evalue <= REVERSE_CHECK]
    if check:
        ex = reverse_excess(search, q, db, np.array([hits[n].target_index for n in check]),
                            REVERSE_MARGIN, "pssm", ka, query_rep=rep, **gaps)
        for n, x in zip(check, ex, strict=True):
            if x > 0:  # E grows by e per unit, the bits fall by as much
                hits[n] = replace(hits[n], bits=hits[n].bits - x / math.log(2),
                                  evalue=hits[n].evalue * math.exp(x))
        hits = rank_hits(hits)
    return hits


def wanted(method: str, options: Mapping[str, Any]) -> bool:
    """Whether a search of ``method`` with ``options`` (the engine's keywords and
    ``profile_round``: True, False or None for :data:`BY_DEFAULT`) runs the round: a method with
    a batched ranking (``learned``) that picks its own candidates. ValueError when asked for
    where it cannot run."""
    from homalign.search.engine import batched_ranking

    flag = options.get("profile_round")
    own = (batched_ranking(method) is not None and options.get("candidates") is None
           and options.get("db_size") is None)
    if flag is None:
        return BY_DEFAULT and own
    if flag and not own:
        raise ValueError("profile_round needs a method with a learned ranking (learned) that "
                         "picks its own candidates (no candidates=, no db_size=)")
    return bool(flag)


def search_one(query: Sequence | str, db: Any, method: str = "sw", **options: Any) -> list:
    """One query's hits: :func:`profile_search` where the round applies (:func:`wanted`), else
    :func:`homalign.search.engine.search`; ``profile_round`` is taken out of ``options``."""
    from homalign.search.engine import search

    options = dict(options)
    if wanted(method, options):
        options.pop("profile_round", None)
        return profile_search(query, db, method, **options)
    options.pop("profile_round", None)
    return search(query, db, method, **options)


def profile_search(query: Sequence | str, db: Any, method: str = "learned", *,
                   evalue: float = 10.0, max_hits: int | None = 500, traceback: bool = True,
                   calibrated: bool = True, prefilter: bool = True,
                   prefilter_options: dict[str, Any] | None = None,
                   rescore: int | None | str = "default", max_query_length: int | None = None,
                   target_reps: Any = None, neighbours: bool = True,
                   **method_options: Any) -> list:
    """The learned search with its PSSM round (module docstring), the hits ranked as
    :func:`homalign.search.engine.search` ranks them: by the fused value (with the shipped
    ``METHOD+profile`` tail calibration unless ``calibrated`` is False; bits from it), then
    score, then database order; those with E <= ``evalue``, at most ``max_hits``, traced back
    with the method's own alignments. ``neighbours`` is accepted and unused."""
    import math

    from homalign.methods import get_method
    from homalign.search.database import SequenceDB, cached_database
    from homalign.search.engine import (
        MAX_QUERY_LENGTH,
        SEARCH_KEYWORDS,
        candidates_of,
        check_query,
        search,
    )
    from homalign.search.hits import Hit, fuse_hits, rank_hits
    from homalign.search.tail_calibration import bits_from_evalue, reported_evalues

    del neighbours
    if not evalue > 0:  # NaN too
        raise ValueError(f"evalue must be positive, got {evalue}")
    q = check_query(query, MAX_QUERY_LENGTH if max_query_length is None else max_query_length)
    if not isinstance(db, SequenceDB):
        db = cached_database(db)
    cand = candidates_of(q, db, method, prefilter=prefilter, prefilter_options=prefilter_options,
                         rescore=rescore, method_options=method_options)
    if len(cand) == 0:
        return []
    pssm = pssm_round(q, db, cand)
    cand = np.concatenate((cand, extra_targets(pssm, cand)))
    own = search(q, db, method, evalue=math.inf, max_hits=None, candidates=cand,
                 traceback=False, calibrated=False, target_reps=target_reps, **method_options)
    # the targets the method scored; a PSSM-only one would have no learned score to rank by
    scored = set(cand.tolist())
    fused = [h for h in fuse_hits([own, pssm], [WEIGHT, 1.0 - WEIGHT])
             if h.target_index in scored]
    evals = np.array([h.evalue for h in fused], dtype=np.float64)
    reported = (reported_evalues(evals, f"{method}+profile", method, len(q), db)
                if calibrated else None)
    if reported is not None:
        evals = reported
    bits = bits_from_evalue(evals, len(q), db.total_length)
    hits = rank_hits(Hit(h.query_id, h.target_id, h.target_index, h.score, float(b), float(e))
                     for h, e, b in zip(fused, evals.tolist(), bits.tolist(), strict=True))
    hits = [h for h in hits if h.evalue <= evalue][:max_hits]
    if not traceback or not hits:
        return hits
    m = get_method(method)
    if m.align_hits is not None and method_options.get("query_rep") is None:
        # as the engine traces its hits: one call, with their own scores
        opts = {**m.defaults, **{k: v for k, v in method_options.items()
                                 if k not in SEARCH_KEYWORDS}}
        alns = m.align_hits(q, [db.sequence(h.target_index) for h in hits],
                            np.array([h.score for h in hits], dtype=np.float64), **opts)
    else:
        keep = np.array([h.target_index for h in hits], dtype=np.int64)
        traced = {h.target_index: h.alignment
                  for h in search(q, db, method, evalue=math.inf, max_hits=None,
                                  candidates=keep, target_reps=target_reps, **method_options)}
        alns = [traced[h.target_index] for h in hits]
    for h, aln in zip(hits, alns, strict=True):
        h.alignment = aln
        aln.evalue, aln.bits = h.evalue, h.bits
    return hits


def extra_targets(pssm: list, cand: np.ndarray) -> np.ndarray:
    """The best :data:`EXTRA_CANDIDATES` targets of the PSSM round's hits (best first) that are
    not among ``cand``."""
    targets = np.array([h.target_index for h in pssm], dtype=np.int64)
    return targets[~np.isin(targets, cand)][:EXTRA_CANDIDATES]


__all__ = ["BY_DEFAULT", "EXTRA_CANDIDATES", "INCLUSION_EVALUE", "PSSM_CANDIDATES", "WEIGHT",
           "extra_targets", "profile_search", "pssm_round", "search_one",
           "wanted"]
