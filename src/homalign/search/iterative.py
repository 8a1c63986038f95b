"""PSI-BLAST-class iterative search of one query against a database.

:func:`iterative_search` is the PSI-BLAST-class search itself: ``iterations - 1`` rounds of
:func:`homalign.search.msa_build.build_msa`, then the last MSA's profile ranks the prefilter candidates (what ``psiblast
-num_iterations N`` reports), the prefilter seeded by that profile's PSSM (:data:`PROFILE_SEEDS`). With another ``method`` (e.g. ``learned``), the PSSM round ranks the
candidates, that method's search ranks those that can matter (:func:`fusion_candidates`), and each
target's E-value is their weighted geometric mean (:func:`homalign.search.fuse_hits`; weight
:data:`DEFAULT_FUSION_WEIGHT` on the method): the learned scores and the query's family profile
see different evidence (docs/learned.md).
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import numpy as np

from homalign.profile.profile import Profile
from homalign.search.database import cached_database
from homalign.search.msa_build import (
    DEFAULT_INCLUSION_EVALUE,
    DEFAULT_MAX_CANDIDATES,
    build_msa,
)
from homalign.sequence import Sequence

DEFAULT_FUSION_WEIGHT = 0.5  # weight of the method's ln E against the PSSM round's (held-out tuned)
# (method, PSSM round, MSA-database round) weights of ln E with target_msa (held-out tuned)
MSADB_FUSION_WEIGHTS = (0.25, 0.25, 0.5)
PROFILE_DB_METHOD = "hhm"  # scores the query MSA against the database MSAs (HHsearch class)
# HHsearch's own column-score shift: with real MSAs on both sides its null is Karlin-Altschul-like
# (lambda 0.62 per bit, length exponent 0.98 on cross-fold pairs) and it ranked best on held-out
# train-fold queries (docs/learned.md); the method's "auto" shift is for single sequences.
PROFILE_DB_OPTIONS = {"hh_shift": -0.03}
#: a batched ranking (learned) scores the PSSM round's best 200 candidates and its own best 80
#: by SW: 563 held-out train-fold queries, learned@3 end to end superfamily / family 0.1408 /
#: 0.4948 at 134 ms a query against 0.1408 / 0.4942 at 149 ms for 300 (150: 0.1406 / 0.4884)
FUSION_RESCORE = 200
#: the last round's prefilter seeds and extends with the query's PSSM, as PSI-BLAST's later
#: rounds do (:func:`homalign.search.prefilter.seed_words`); the MSA rounds keep the query
#: sequence's seeds (and share one scan). 563 held-out train-fold queries, superfamily / family:
#: learned@3 0.1282 / 0.4761 -> 0.1316 / 0.4816, pssm@3 0.1111 / 0.4199 -> 0.1145 / 0.4262, for
#: ~6% more time (every round seeded by its PSSM: 0.1323 / 0.4814 for ~21%). Not measured, and
#: not used, with database MSAs (target_msa).
PROFILE_SEEDS = True
#: the MSA rounds score the database's best ``max_candidates`` by Smith-Waterman (one pass,
#: :func:`homalign.search.engine.best_by_sw`, which a learned fusion's own candidates reuse),
#: not the k-mer prefilter's: 563 held-out train-fold queries, learned@3 superfamily / family 0.1408 / 0.4948
#: at 137 ms -> 0.1419 / 0.4962 at 117 ms, pssm@3 0.1145 / 0.4262 -> 0.1151 / 0.4271 at 70 ms
#: both. Not with ``target_msa`` or ``msa_db`` (unmeasured).
SW_CANDIDATES = True
PSSM_METHODS = ("pssm", "sw")  # --iterations with these is plain PSI-BLAST (no fusion)
#: the ``pssm`` options a PSI-BLAST-class search applies: ``pseudocounts`` to every round's
#: profile, ``admix`` and ``pssm_kind`` to the last one's (what ranks the reported hits)
PSIBLAST_PROFILE_OPTIONS = ("pseudocounts", "admix", "pssm_kind")
#: the ``pssm`` options that name the query's MSA, which an iterative search builds itself
QUERY_SOURCE_OPTIONS = ("query_msa", "query_hhm", "msa", "db")


def psiblast_options(options: dict[str, Any]) -> dict[str, Any]:
    """The profile options (:data:`PSIBLAST_PROFILE_OPTIONS`) of a PSI-BLAST-class search's
    ``options``; ValueError for one that names the query's MSA (:data:`QUERY_SOURCE_OPTIONS`):
    the search's rounds build that MSA from the database."""
    given = [k for k in QUERY_SOURCE_OPTIONS
             if options.get(k) is not None and not (k == "msa" and options[k] == "single")]
    if given:
        raise ValueError(f"{', '.join(given)}: an iterative search (iterations > 1 or "
                         "target_msa) builds the query's MSA itself by searching the database; "
                         "to search with a given MSA, leave out iterations and target_msa")
    return {k: options[k] for k in PSIBLAST_PROFILE_OPTIONS if options.get(k) is not None}


def iterative_search(
    query: Sequence,
    db: Any,
    iterations: int = 3,
    method: str = "pssm",
    *,
    evalue: float = 10.0,
    max_hits: int | None = 500,
    prefilter: bool = True,
    prefilter_options: dict[str, Any] | None = None,
    traceback: bool = True,
    inclusion_evalue: float | None = None,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    fusion_weight: float | None = None,
    matrix: str = "BLOSUM62",
    gap_open: float = 11.0,
    gap_extend: float = 1.0,
    target_reps: Any = None,
    target_msa: str | os.PathLike | None = None,
    profile_weight: float | None = None,
    neighbour_support: float | None = None,
    msa_db: Any = None,
    **method_options: Any,
) -> list:
    """Hits of an ``iterations``-round profile search of ``db`` (see the module docstring).

    ``method`` ``pssm`` (or ``sw``): PSI-BLAST class, the last round's hits. Any other registered
    method: its ranking fused with the last PSSM round's over the same prefilter candidates
    (``fusion_weight`` on the method's ln E); ``method_options`` and ``target_reps`` go to that
    method's search. With ``pssm``, ``method_options`` may hold the profile's ``pseudocounts``
    (every round), ``admix`` and ``pssm_kind`` (the last round's profile,
    :func:`psiblast_options`); options naming the query's MSA are refused. ``matrix`` and the
    gap costs are the PSSM rounds'; ``inclusion_evalue`` (default 1e-3; refused with one
    round, which builds no MSA) and ``max_candidates`` (prefilter targets per inclusion round)
    are :func:`build_msa`'s.
    ``msa_db``: the sequences the query's MSA is built from (a ``SequenceDB`` or a FASTA/makedb
    path; default ``db``), as HHblits builds it from UniRef and then searches PDB70; typically
    ``db`` plus more unlabelled sequences. Only ``db`` is searched and reported.

    ``target_msa``: an MSA database of ``db`` (:func:`homalign.search.msadb.build_msa_db`).
    The query's MSA then also ranks the candidates against every target's *own* MSA by the
    HHsearch-class ``hhm`` score (:data:`PROFILE_DB_OPTIONS`; E-values from the database's null
    law, :func:`homalign.search.msadb.null_params`), the candidates being the prefilter's plus
    those the query's MSA reaches through the database's MSAs
    (:func:`homalign.search.msadb.graph_candidates`): with ``method="hhm"`` (or ``pssm``/``sw``)
    that round is the result (HHblits class); with another method it joins the fusion with
    weight ``profile_weight``, the method keeps ``fusion_weight`` and the PSSM round the rest
    (defaults :data:`MSADB_FUSION_WEIGHTS`: method 0.25, PSSM 0.25, MSA database 0.5; without
    ``target_msa`` the method's default weight is :data:`DEFAULT_FUSION_WEIGHT`). Last, the
    ranking takes in the MSA graph's evidence (:func:`homalign.search.msadb.neighbour_support`,
    exponent ``neighbour_support``): a target whose MSA neighbour the query found moves up. Its
    default is :data:`homalign.search.msadb.NEIGHBOUR_SUPPORT` for a fused ranking (already a
    ranking value) and 0 (off) for the HHblits-class ``hhm`` result, whose E-values stay
    calibrated unless asked (docs/learned.md: the supported values admit more false positives
    at a given E).
    """
    import math

    from homalign.methods.profile import ProteinRep
    from homalign.search.engine import batched_ranking, best_by_sw, candidates_of, search
    from homalign.search.hits import fuse_hits
    from homalign.search.prefilter import prefilter as run_prefilter
    from homalign.sequence import as_sequence
    from homalign.stats import karlin_altschul

    if iterations < 1:
        raise ValueError("iterations must be at least 1")
    if inclusion_evalue is not None and iterations == 1:
        raise ValueError("inclusion_evalue applies to the MSA rounds of iterations > 1 "
                         "(--iterations N): one round builds no MSA")
    if inclusion_evalue is None:
        inclusion_evalue = DEFAULT_INCLUSION_EVALUE
    own_profile = psiblast_options(method_options) if method in PSSM_METHODS else {}
    pseudocounts = own_profile.get("pseudocounts", "matrix")
    if own_profile and target_msa is not None:
        raise ValueError(f"{', '.join(own_profile)}: with target_msa a {method} search ranks by "
                         f"the MSA database's {PROFILE_DB_METHOD} round, which reads no PSSM "
                         "options")
    if fusion_weight is None:
        fusion_weight = DEFAULT_FUSION_WEIGHT if target_msa is None else MSADB_FUSION_WEIGHTS[0]
    if not 0.0 <= fusion_weight <= 1.0:
        raise ValueError(f"fusion_weight must be in [0, 1], got {fusion_weight}")
    from homalign.search.engine import MAX_QUERY_LENGTH, check_query

    # the limit every round's search holds the query to, checked once before any round
    query = check_query(as_sequence(query, "query"),
                        method_options.get("max_query_length", MAX_QUERY_LENGTH))
    if isinstance(db, (str, os.PathLike)):
        db = cached_database(str(db))
    if msa_db is None:
        msa_db = db
    elif isinstance(msa_db, (str, os.PathLike)):
        msa_db = cached_database(str(msa_db))
    if iterations > 1:
        msa_cand = None
        if SW_CANDIDATES and prefilter and target_msa is None and msa_db is db:
            msa_cand = best_by_sw(query, db, np.arange(len(db), dtype=np.int64),
                                  max_candidates)
        msa = build_msa(query, msa_db, iterations - 1, inclusion_evalue=inclusion_evalue,
                        prefilter=prefilter, max_candidates=max_candidates, matrix=matrix,
                        gap_open=gap_open, gap_extend=gap_extend, candidates=msa_cand,
                        pseudocounts=pseudocounts)
        profile = Profile.from_msa(msa, pseudocounts=pseudocounts, matrix=matrix,
                                   admix=own_profile.get("admix", "psiblast"))
    else:
        profile = Profile.from_sequence(query, pseudocounts=pseudocounts, matrix=matrix,
                                        admix=own_profile.get("admix", "psiblast"))
    rep = ProteinRep(query, source=profile)
    if iterations > 1 and PROFILE_SEEDS and target_msa is None:
        prefilter_options = {**(prefilter_options or {}), "profile": rep.pssm()}
    params = karlin_altschul(matrix, gap_open, gap_extend)
    pssm_opts = {"query_rep": rep, "params": params, "matrix": matrix, "gap_open": gap_open,
                 "gap_extend": gap_extend}
    if method in PSSM_METHODS and target_msa is None:
        kind = {"pssm_kind": own_profile["pssm_kind"]} if "pssm_kind" in own_profile else {}
        return search(query, db, method="pssm", evalue=evalue, max_hits=max_hits,
                      prefilter=prefilter, prefilter_options=prefilter_options,
                      traceback=traceback, **pssm_opts, **kind)
    if prefilter:
        cand = run_prefilter(query.codes, db, **(prefilter_options or {}))
    else:
        cand = np.arange(len(db), dtype=np.int64)
    own_cand = None
    if target_msa is None and batched_ranking(method) is not None:
        # the targets the method's own search ranks get a PSSM value too, not the PSSM list's
        # worst in the fusion (held-out learned@3 superfamily 0.1329 -> 0.1408)
        own_cand = candidates_of(query, db, method)
        cand = np.union1d(cand, own_cand)
    if target_msa is not None:
        from homalign.search.msadb import NEIGHBOUR_SUPPORT, graph_candidates
        from homalign.search.msadb import neighbour_support as support

        hhblits = method in (*PSSM_METHODS, PROFILE_DB_METHOD)  # keeps calibrated E-values
        nb_weight = ((0.0 if hhblits else NEIGHBOUR_SUPPORT) if neighbour_support is None
                     else float(neighbour_support))
        if not nb_weight >= 0.0:
            raise ValueError(f"neighbour_support must be >= 0, got {neighbour_support}")
        members = list(msa.ids) if iterations > 1 else [query.id]
        cand = np.union1d(cand, graph_candidates(query.id, members, target_msa, db))
        profile_hits, (qrep, reps) = msa_db_round(query, db, msa if iterations > 1 else None,
                                                   cand, target_msa)
        if hhblits:
            return _finish(query, db, support(profile_hits, query.id, target_msa, nb_weight),
                           evalue, max_hits, traceback,
                           PROFILE_DB_METHOD, reps,
                           {"target_msa": str(target_msa), "query_rep": qrep,
                            **PROFILE_DB_OPTIONS})
    pssm = search(query, db, method="pssm", evalue=math.inf, max_hits=None, candidates=cand,
                  traceback=False, **pssm_opts)
    if target_msa is None:
        own_list = fusion_candidates(cand, pssm, own_cand)
    elif batched_ranking(method) is not None:
        own_list = _best_of(pssm, profile_hits)
    else:
        own_list = cand
    own = search(query, db, method=method, evalue=math.inf, max_hits=None,
                 candidates=own_list,
                 traceback=False, target_reps=target_reps, calibrated=False, **method_options)
    if target_msa is None:
        lists, weights = [own, pssm], [fusion_weight, 1.0 - fusion_weight]
    else:
        pw = MSADB_FUSION_WEIGHTS[2] if profile_weight is None else float(profile_weight)
        if not 0.0 <= pw <= 1.0 - fusion_weight + 1e-12:
            raise ValueError(f"profile_weight must be in [0, 1 - fusion_weight], got {pw}")
        lists = [own, pssm, profile_hits]
        weights = [fusion_weight, max(1.0 - fusion_weight - pw, 0.0), pw]
    fused = fuse_hits(lists, weights)
    if target_msa is not None:
        fused = support(fused, query.id, target_msa, nb_weight)
    else:
        fused = calibrated_hits(fused, f"{method}@{iterations}", method, len(query), db)
    return _finish(query, db, fused, evalue, max_hits, traceback, method, target_reps,
                   method_options)


#: the keywords of :func:`iterative_search` that are not the method's options
ITERATIVE_KEYWORDS = frozenset(
    name for name, par in inspect.signature(iterative_search).parameters.items()
    if par.kind is inspect.Parameter.KEYWORD_ONLY)


def fusion_candidates(cand: np.ndarray, pssm: list, own: np.ndarray | None) -> np.ndarray:
    """The candidates the method ranks for the fusion: all of ``cand``, or for a method with a
    batched ranking (``learned``; ``own`` is None for any other) the PSSM round's best
    :data:`FUSION_RESCORE` (by E-value) together with ``own``, those its own search ranks
    (:func:`homalign.search.engine.candidates_of`: the database's best ``LEARNED_RESCORE`` by
    Smith-Waterman score). A target outside both needs a poor PSSM E-value and would need a
    learned one the single-sequence search never finds, to rank; it takes the method's worst
    E-value in :func:`homalign.search.hits.fuse_hits`."""
    if own is None or len(cand) <= FUSION_RESCORE:
        return cand
    best_pssm = np.array([h.target_index for h in pssm[:FUSION_RESCORE]], dtype=np.int64)
    return np.union1d(best_pssm, own)


def _best_of(*lists: list) -> np.ndarray:
    """The targets among the best :data:`FUSION_RESCORE` of any of ``lists`` (hits, best
    first): what a batched ranking (learned) ranks in the fusion with database MSAs, the PSSM
    round's and the database round's best; a target outside takes the method's worst E-value
    in :func:`homalign.search.hits.fuse_hits` (held-out learned@3+msadb: the same sensitivity
    as ranking every candidate, 0.81x the time)."""
    return np.unique(np.array([h.target_index for hits in lists for h in hits[:FUSION_RESCORE]],
                              dtype=np.int64))


def calibrated_hits(hits: list, ranking: str, method: str, query_length: int, db: Any) -> list:
    """``hits`` with the E-values the search reports for the ranking's values (the method's
    chance hits over the database's lengths, then the ranking's shipped empirical calibration:
    :func:`homalign.search.tail_calibration.reported_evalues`) and BLAST's bits of them;
    unchanged where neither applies."""
    from homalign.search.tail_calibration import bits_from_evalue, reported_evalues

    if not hits:
        return hits
    evals = reported_evalues([h.evalue for h in hits], ranking, method, query_length, db)
    if evals is None:
        return hits
    bits = bits_from_evalue(evals, query_length, db.total_length)
    for h, e, b in zip(hits, evals, bits, strict=True):
        h.evalue, h.bits = float(e), float(b)
        if h.alignment is not None:
            h.alignment.evalue, h.alignment.bits = h.evalue, h.bits
    return hits


def msa_db_round(query: Sequence, db: Any, msa: Any, cand: np.ndarray,
                  target_msa: str | os.PathLike) -> tuple[list, tuple[Any, Any]]:
    """(hits, (query representation, target representations)) of the query's MSA (None: its
    sequence alone) against the candidates' own MSAs, the query left out of every target's MSA
    (:class:`homalign.search.msadb.LeaveQueryOut`)."""
    import math

    from homalign.methods.profile import ProteinRep
    from homalign.search.engine import search
    from homalign.search.hmm_store import round_options
    from homalign.search.msadb import LeaveQueryOut

    shared, params = _msa_db_state(str(target_msa), db)
    opts = round_options()
    if msa is None:
        from homalign.io import MSA

        msa = MSA([query.id], [query.residues])
    qrep = ProteinRep(query, source=Profile.from_msa(msa, **opts))
    reps = LeaveQueryOut(shared, target_msa, query.id, opts)
    hits = search(query, db, method=PROFILE_DB_METHOD, evalue=math.inf, max_hits=None,
                  candidates=cand, traceback=False, query_rep=qrep, target_reps=reps,
                  params=params, target_msa=str(target_msa), **PROFILE_DB_OPTIONS)
    return hits, (qrep, reps)


_MSA_DB_STATE: dict[tuple[str, int], tuple[Any, Any]] = {}


def _msa_db_state(target_msa: str, db: Any) -> tuple[Any, Any]:
    """(prepared target HMMs, null law) of an MSA database, checked against ``db`` and set up
    once, then shared by the queries of one process; the HMMs are the database's stored ones
    (:mod:`homalign.search.hmm_store`)."""
    from homalign.methods import get_method
    from homalign.search.hmm_store import StoredTargets, open_hmm_store
    from homalign.search.msadb import null_params

    key = (target_msa, id(db))
    if key not in _MSA_DB_STATE:
        store = open_hmm_store(target_msa, db)  # built for this database, complete, current
        m = get_method(PROFILE_DB_METHOD)
        _MSA_DB_STATE.clear()
        _MSA_DB_STATE[key] = (
            StoredTargets(m, db, {**m.defaults, "target_msa": target_msa}, store),
            null_params(target_msa, db, PROFILE_DB_METHOD, options=PROFILE_DB_OPTIONS))
    return _MSA_DB_STATE[key]


def _finish(query: Sequence, db: Any, hits: list, evalue: float, max_hits: int | None,
            traceback: bool, method: str, target_reps: Any, method_options: dict) -> list:
    """Threshold and cut a ranked hit list, then trace the kept hits back with ``method``. Each
    hit's bits are BLAST's of its (fused, supported) E-value, ``log2(m n / E)``, so the two
    orders agree."""
    import math

    from homalign.search.engine import search
    from homalign.search.tail_calibration import bits_from_evalue

    fused = [h for h in hits if h.evalue <= evalue][:max_hits]
    if fused:
        bits = bits_from_evalue([h.evalue for h in fused], len(query), db.total_length)
        for h, b in zip(fused, bits, strict=True):
            h.bits = float(b)
    if not traceback or not fused:
        return fused
    keep = np.array([h.target_index for h in fused], dtype=np.int64)
    traced = {h.target_index: h
              for h in search(query, db, method=method, evalue=math.inf, max_hits=None,
                              candidates=keep, target_reps=target_reps, **method_options)}
    for h in fused:  # the method's score and alignment (a fused hit may be another list's)
        h.score, h.alignment = traced[h.target_index].score, traced[h.target_index].alignment
        h.alignment.evalue, h.alignment.bits = h.evalue, h.bits
    return fused
