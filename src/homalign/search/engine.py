"""The search engine: one query (or many) against a database, ranked hits with E-values.

Steps for each query:

1. **prefilter** (optional): k-mer neighbourhood matches and ungapped diagonal scores
   (:mod:`homalign.search.prefilter`) pick the targets worth a full DP;
2. **score**: for DP methods (``Method.prepare`` and ``Method.score`` exist) the query is prepared
   once (or ``query_rep`` is used) and scored against every candidate with the score-only
   :func:`homalign.dp.align_batch`, or in one ``Method.score_many`` call where the method has
   one (``pssm``: the query profile against the candidates' codes in a 16-lane kernel, same
   scores); ``sw`` with a plain substitution matrix takes a compiled fast
   path over the packed database (:mod:`homalign.search.sw_scores`, same scores); peers (methods
   without prepare/score) call ``Method.align`` per candidate, ``--threads`` pairs at a time;
3. **statistics**: E-values from :func:`homalign.search.calibration.evd_params`
   (Karlin–Altschul for ``sw`` with a published matrix/gap-cost pair, a cached Gumbel fit
   otherwise), over the whole
   database's residues and sequence count (the effective search space);
4. **traceback** only for the hits passing the E-value threshold (at most ``max_hits``): in one
   ``Method.align_hits`` call where the method has one (``learned``, the sequence methods),
   else hit by hit.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from homalign.alignment import Alignment
from homalign.dp.forward_batch import LANES
from homalign.errors import InputError
from homalign.methods import Method, get_method
from homalign.score.pair_scores import score_values
from homalign.search.calibration import evd_params
from homalign.search.database import SequenceDB, cached_database
from homalign.search.hits import Hit, rank_hits
from homalign.search.prefilter import best_n, exact_matches
from homalign.search.prefilter import prefilter as run_prefilter
from homalign.search.reverse_null import reversal, sw_reverse_excess
from homalign.search.sw_scores import is_every_target, sw_scores
from homalign.search.tail_calibration import (
    bits_from_evalue,
    calibration_for,
    reported_evalues,
)
from homalign.search.ungapped import ungapped_scores
from homalign.sequence import Sequence, as_sequence
from homalign.stats import EVDParams, bit_score, db_evalues, location_scale
from homalign.threads import get_threads

MAX_QUERY_LENGTH = 40_000
#: the learned ranking scores the database's best 80 targets by Smith-Waterman score (compiled,
#: :mod:`homalign.search.sw_scores`); provenance in homalign.tuned
LEARNED_RESCORE = 80
#: in a database of more sequences, the learned search's Smith-Waterman pass scores the best
#: 1,000 by ungapped score (:mod:`homalign.search.ungapped`); provenance in homalign.tuned
UNGAPPED_CANDIDATES = 1000
#: that pass's scoring (matrix, gap open, gap extend; BLAST convention): BLOSUM45 14/2 puts more
#: of a query's family among the learned search's candidates than BLOSUM62 11/1; provenance in
#: homalign.tuned
CANDIDATE_SW = ("BLOSUM45", 14.0, 2.0)
BATCH = 128
_FAST_SW_OPTIONS = {"matrix", "gap_open", "gap_extend"}


@lru_cache(maxsize=64)
def _cached_params(method: str, options_json: str) -> EVDParams:
    return evd_params(method, json.loads(options_json))


def method_params(method: str, options: dict[str, Any]) -> EVDParams:
    """E-value parameters of ``method`` with ``options`` (memoised per process)."""
    return _cached_params(method, json.dumps(options, sort_keys=True, default=str))


class TargetReps:
    """Prepared target representations, memoised across the queries of one run."""

    def __init__(self, method: Method, db: SequenceDB, options: dict[str, Any],
                 max_entries: int = 50_000) -> None:
        self.method, self.db, self.options, self.max_entries = method, db, options, max_entries
        self._reps: dict[int, Any] = {}

    def get(self, i: int) -> Any:
        rep = self._reps.get(i)
        if rep is None:
            assert self.method.prepare is not None
            rep = self.method.prepare(self.db.sequence(i), role="target", **self.options)
            if len(self._reps) < self.max_entries:
                self._reps[i] = rep
        return rep


def target_reps_for(method: Method, db: SequenceDB, options: dict[str, Any]) -> Any:
    """The prepared targets of a search: an MSA database's stored HMMs where they are what
    ``method`` would build (:func:`homalign.search.hmm_store.stored_targets`), else
    :class:`TargetReps`."""
    from homalign.search.hmm_store import stored_targets

    stored = stored_targets(method, db, options)
    return stored if stored is not None else TargetReps(method, db, options)


def check_query(query: Sequence | str, max_query_length: int) -> Sequence:
    """``query`` as a Sequence, or InputError naming it when longer than ``max_query_length``."""
    q = as_sequence(query, "query")
    if len(q) > max_query_length:
        raise InputError(f"query has {len(q)} residues, more than the limit of "
                         f"{max_query_length} (max_query_length)", record=q.id)
    return q


def _is_fast_sw(method: Method, query_rep: Any, options: dict[str, Any]) -> bool:
    return (method.name == "sw" and query_rep is None
            and set(options) <= _FAST_SW_OPTIONS)


def _dp_scores(method: Method, qrep: Any, reps: TargetReps, candidates: np.ndarray,
               options: dict[str, Any]) -> np.ndarray:
    if method.score_many is not None:  # one call, the same scores (pssm: a profile kernel)
        codes = [reps.db.codes_of(int(t)) for t in candidates]
        return np.asarray(method.score_many(qrep, codes, **options), dtype=np.float64)
    assert method.score is not None
    from homalign.threads import one_blas_thread

    out = np.empty(len(candidates), dtype=np.float64)
    with one_blas_thread():  # many small products (hhm's column sums): no thread pool
        for start in range(0, len(candidates), BATCH):
            chunk = candidates[start:start + BATCH]
            out[start:start + len(chunk)] = score_values(
                [method.score(qrep, reps.get(int(t)), **options) for t in chunk])
    return out


#: cells (query length x packed target residues) of one batched scoring pass: the float32 score
#: block is 4 bytes a cell, so 12 MB, written by the product and read back by the forward
#: (8M cells: 8% more time a query, 1M: 10% more; search_stages on the Xeon, same hits)
BATCH_CELLS = 3_000_000


def _batches(lengths: np.ndarray, budget: int) -> list[np.ndarray]:
    """Positions of ``lengths`` (sorted ascending) cut into runs of at most ``budget`` residues
    (a longer target alone), each a whole number of 16-target groups where it can be, so that
    only the last batch has a part-filled group (the forward pads a group to its longest
    target: similar lengths together, few empty lanes)."""
    out, start, n = [], 0, len(lengths)
    csum = np.concatenate(([0], np.cumsum(lengths)))
    while start < n:
        stop = max(start + 1, int(np.searchsorted(csum, csum[start] + budget, side="right")) - 1)
        if stop < n and stop - start > LANES:
            stop = start + (stop - start) // LANES * LANES
        out.append(np.arange(start, stop))
        start = stop
    return out


def _batched_scores(ranking: Any, q: Sequence, db: SequenceDB,
                    candidates: np.ndarray, *, reverse: bool = False,
                    prepared: Any = None) -> tuple[np.ndarray, Any]:
    """The ranking scores of ``candidates`` from the database's stored embeddings: one matrix
    product, one exp and one parallel DP per batch of targets (:mod:`homalign.model.ranking`),
    the targets taken in order of length, and the ranking's query side (``prepared``: reuse
    it). A target's score depends on that pair alone. ``reverse``: each target's residues and
    embeddings read backwards (the reverse null, :func:`_reverse_corrected`)."""
    from homalign.search.embeddings import store_for

    store = store_for(db, ranking)
    if prepared is not None:
        qr = prepared
    else:
        qr = ranking.query(q.codes)
    out = np.empty(len(candidates), dtype=np.float64)
    order = np.argsort(db.lengths[candidates], kind="stable")
    for part in _batches(db.lengths[candidates[order]], max(1, BATCH_CELLS // max(len(q), 1))):
        idx = order[part]
        codes, emb, lens = store.gather(db, candidates[idx])
        if reverse:
            back = reversal(lens)
            codes, emb = codes[back], emb[back]
        out[idx] = ranking.scores(qr, codes, emb, lens)
    return out, qr


#: the reverse null (:mod:`homalign.search.reverse_null`) of the learned ranking: a candidate
#: whose ranking value (the key law's E-value) is at most ``REVERSE_CHECK`` and whose reversed
#: target scores above ``REVERSE_GATE`` units by Smith-Waterman (BLOSUM62 11/1: a likeness the
#: learned score may share) is scored against its reversed target; the reversed score's excess
#: over ``REVERSE_MARGIN`` units of the chance law is taken off its score (held-out train-fold
#: queries and shuffled UniProt decoys, homalign.tuned)
REVERSE_CHECK = 1.0
REVERSE_GATE = 2.0
REVERSE_MARGIN = 3.0
_GATE_SW = ("BLOSUM62", 11.0, 1.0)


def _reverse_corrected(ranking: Any, q: Sequence, db: SequenceDB, cand: np.ndarray,
                       scores: np.ndarray, prepared: Any, key: EVDParams, law: EVDParams,
                       n_res: int, n_seq: int) -> np.ndarray:
    """``scores`` less the reverse null's excess (see :data:`REVERSE_CHECK`); the query side
    ``prepared`` as :func:`_batched_scores` returned it."""
    tlen = db.lengths[cand]
    check = np.flatnonzero(db_evalues(scores, key, len(q), tlen, n_res, n_seq) <= REVERSE_CHECK)
    if len(check):
        check = check[sw_reverse_excess(q, db, cand[check], REVERSE_GATE, *_GATE_SW) > 0]
    if len(check) == 0:
        return scores
    rev, _ = _batched_scores(ranking, q, db, cand[check], reverse=True, prepared=prepared)
    mu, beta = location_scale(law, len(q), tlen[check])
    out = scores.copy()
    out[check] -= beta * np.maximum((rev - mu) / beta - REVERSE_MARGIN, 0.0)
    return out


#: the query's hits with a (calibrated) E-value at most this pass their neighbours on, at
#: ``PATH_PENALTY`` times the weaker link's E-value (held-out train-fold queries, homalign.tuned)
LINK_EVALUE = 1e-2
PATH_PENALTY = 100.0


def _through_neighbours(q: Sequence, db: SequenceDB, ranking: Any,
                        cand: np.ndarray, scores: np.ndarray, evals: np.ndarray,
                        params: EVDParams, method: str) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray]:
    """Intermediate-sequence search (:mod:`homalign.search.neighbours`): each target's E-value
    becomes the best of its own and ``PATH_PENALTY · max(E(q, n), E(n, t))`` over the query's
    hits ``n`` with E ≤ :data:`LINK_EVALUE`; targets reached only so are scored too (one batched call).
    Unchanged when the database has no neighbour lists."""
    from homalign.search.neighbours import lifted_evalues, neighbours_of

    nb = neighbours_of(db, ranking.fingerprint)
    if nb is None:
        return cand, scores, evals
    reach, lifted = lifted_evalues(nb, cand, evals, LINK_EVALUE, PATH_PENALTY)
    tail = calibration_for(method)
    if tail is not None:  # the reported values' truncation (monotone): the same order as before it
        lifted = tail.truncate(lifted, len(db))
    extra = np.setdiff1d(reach, cand)
    if len(extra):
        xs, prepared = _batched_scores(ranking, q, db, extra)
        law = get_method(method).chance_params
        if law is not None:
            xs = _reverse_corrected(ranking, q, db, extra, xs, prepared, params, law(),
                                    db.total_length, len(db))
        xe = reported_evalues(db_evalues(xs, params, len(q), db.lengths[extra],
                                         db.total_length, len(db)), method, method, len(q), db)
        cand = np.concatenate((cand, extra))
        scores = np.concatenate((scores, xs))
        evals = np.concatenate((evals, xe))
    order = np.argsort(cand, kind="stable")
    pos = order[np.searchsorted(cand[order], reach)]
    evals = evals.copy()
    evals[pos] = np.minimum(evals[pos], lifted)
    return cand, scores, evals


def batched_ranking(method: str) -> Any:
    """The batched ranking of ``method`` (``learned``: its ranking model), or None."""
    m = get_method(method)
    return m.ranking() if m.ranking is not None else None


def _peer_alignments(m: Method, q: Sequence, db: SequenceDB, cand: np.ndarray,
                     opts: dict[str, Any]) -> dict[int, Alignment]:
    """A peer's alignment of the query with each candidate, ``--threads`` pairs at a time (each
    pair is its own program run or pyhmmer call, so the alignments do not depend on the thread
    count); one at a time with an ``msa`` option."""

    def one(t: int) -> Alignment:
        return m.align(q, db.sequence(t), **opts)

    targets = [int(t) for t in cand]
    # an MSA option builds the query's MSA in this process (numba kernels): one pair at a time
    workers = 1 if opts.get("msa") else min(get_threads(), len(targets))
    if workers <= 1:
        return {t: one(t) for t in targets}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(targets, pool.map(one, targets), strict=True))


def candidates_of(q: Sequence, db: SequenceDB, method: str, *, prefilter: bool = True,
                  prefilter_options: dict[str, Any] | None = None,
                  rescore: int | None | str = "default", query_rep: Any = None,
                  method_options: dict[str, Any] | None = None) -> np.ndarray:
    """The database indices ``search`` scores for query ``q``: the k-mer prefilter's (or all,
    without ``prefilter``). The SIMD Smith-Waterman kernels score every target faster than the
    k-mer scan selects 1,000 (docs/decisions.md), so unless ``prefilter_options`` are given
    (then the k-mer prefilter's candidates are used), ``sw`` on its compiled path
    (``query_rep``, ``method_options``: as :func:`search` gets them) scores every target, and a
    method with a batched ranking (``learned``) the database's best ``rescore`` targets by
    Smith-Waterman score (``"default"``: :data:`LEARNED_RESCORE`; None: all) of its best
    :data:`UNGAPPED_CANDIDATES` by ungapped score (:func:`best_by_sw`)."""
    if not prefilter or (not prefilter_options
                         and _is_fast_sw(get_method(method), query_rep, method_options or {})):
        return np.arange(len(db), dtype=np.int64)
    if rescore == "default":
        rescore = LEARNED_RESCORE
    ranked = rescore is not None and batched_ranking(method) is not None
    if ranked and not prefilter_options:
        cand = np.arange(len(db), dtype=np.int64)
    else:
        cand = run_prefilter(q.codes, db, **(prefilter_options or {}))
    if ranked and len(cand) > int(rescore):
        cand = best_by_sw(q, db, cand, int(rescore))
    return cand


def candidate_sw() -> dict[str, Any]:
    """:data:`CANDIDATE_SW` as :func:`homalign.search.sw_scores.sw_scores` keywords."""
    matrix, gap_open, gap_extend = CANDIDATE_SW
    return {"matrix": matrix, "gap_open": gap_open, "gap_extend": gap_extend}


def best_by_sw(q: Sequence, db: SequenceDB, cand: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` candidates with the best local scores under :data:`CANDIDATE_SW` (ascending
    indices); targets identical to the query always stay. Given every target of a database
    larger than :data:`UNGAPPED_CANDIDATES`, Smith–Waterman scores only the best that many (or
    ``n``) by ungapped score (:mod:`homalign.search.ungapped`). The scores are kept on the database for
    the last query, so the rounds of an iterative search and its learned ranking share one
    pass."""
    cand = np.asarray(cand, dtype=np.int64)
    every = is_every_target(db, cand)
    key = q.codes.tobytes()
    depth = min(max(int(n), UNGAPPED_CANDIDATES), len(cand))  # how many SW scores
    kept = db.cache.get("sw-pass") if every else None
    if kept is not None and kept[0] == key and len(kept[1]) >= depth:
        pool, sw = kept[1], kept[2].copy()
    else:  # pool: the positions in cand that SW scores
        pool = (np.flatnonzero(best_n(ungapped_scores(q.codes, db.codes, db.offsets, cand,
                                                      db=db), depth))
                if every and depth < len(cand) else np.arange(len(cand)))
        sw = sw_scores(q.codes, db.codes, db.offsets, cand[pool], **candidate_sw(),
                       db=db).astype(np.float64)
        if every:
            db.cache["sw-pass"] = (key, pool, sw.copy())
    exact = np.flatnonzero(np.isin(cand, exact_matches(q.codes, db)))
    missing = np.setdiff1d(exact, pool)
    if len(missing):
        pool = np.concatenate((pool, missing))
        sw = np.concatenate((sw, np.zeros(len(missing))))
        order = np.argsort(pool, kind="stable")
        pool, sw = pool[order], sw[order]
    sw[np.isin(pool, exact)] = np.inf
    return np.sort(cand[pool[best_n(sw, n)]])


#: hits traced back per ``align_batch`` call (their score matrices are held at once)
TRACE_BATCH = 64


def _tracebacks(method: Method, query: Sequence, qrep: Any, reps: TargetReps,
                targets: list[int], options: dict[str, Any]) -> dict[int, Alignment]:
    """The alignment of the query with each of ``targets`` for a method that scores pairs
    (``Method.score``, no ``align_prepared``): the pairs' scores one by one, their DPs in one
    :func:`homalign.dp.batch.align_batch` call per :data:`TRACE_BATCH` (and mode), the same
    alignments as per-pair :func:`homalign.dp.align`."""
    from homalign.dp.batch import align_batch
    from homalign.threads import one_blas_thread

    assert method.score is not None
    out: dict[int, Alignment] = {}
    for a in range(0, len(targets), TRACE_BATCH):
        part = targets[a:a + TRACE_BATCH]
        with one_blas_thread():  # the scores of _dp_scores, to the bit
            pss = [method.score(qrep, reps.get(t), **options) for t in part]
        for mode in dict.fromkeys(ps.mode for ps in pss):
            ks = [k for k, ps in enumerate(pss) if ps.mode == mode]
            results = align_batch([pss[k].S for k in ks], [pss[k].gaps for k in ks], mode=mode)
            for k, res in zip(ks, results, strict=True):
                target = reps.db.sequence(part[k])
                out[part[k]] = Alignment(query_id=query.id, target_id=target.id,
                                         query=query.residues, target=target.residues,
                                         pairs=res.pairs, score=float(res.score),
                                         method=method.name)
    return out


def search(
    query: Sequence | str,
    db: SequenceDB | str | Path,
    method: str = "sw",
    evalue: float = 10.0,
    max_hits: int | None = 500,
    prefilter: bool = True,
    query_rep: Any = None,
    *,
    prefilter_options: dict[str, Any] | None = None,
    db_size: tuple[int, int] | None = None,
    params: EVDParams | None = None,
    max_query_length: int = MAX_QUERY_LENGTH,
    target_reps: TargetReps | None = None,
    candidates: np.ndarray | None = None,
    traceback: bool = True,
    rescore: int | None | str = "default",
    calibrated: bool = True,
    neighbours: bool = True,
    **method_options: Any,
) -> list[Hit]:
    """Search ``query`` against ``db`` with a registered method; hits sorted by E-value.

    ``db_size`` = (residues, sequences) overrides the database size used for E-values (a shard
    of a larger database); ``params`` overrides the E-value parameters; ``candidates`` (database
    indices) replaces the prefilter; ``target_reps`` shares prepared targets across queries;
    ``traceback=False`` skips the alignments (``Hit.alignment`` is None; for rankings only);
    ``rescore`` (methods with a batched ranking, i.e. ``learned``): after the prefilter, only
    the best ``rescore`` candidates by Smith-Waterman score are scored (``"default"``:
    :data:`LEARNED_RESCORE`; None: all); ``calibrated``: the E-values the search reports
    (:func:`homalign.search.tail_calibration.reported_evalues`: for ``learned``, the database's
    chance hits over its lengths, then the shipped tail calibration) and BLAST's bits of them;
    False gives the null law's values (what a fused ranking combines); ``neighbours``: with a database that has neighbour lists
    (``homalign makedb --neighbours``), the learned search also reaches targets through its
    hits (:func:`_through_neighbours`); False: direct scores only. A learned score of a strong
    candidate is net of the reverse null (:func:`_reverse_corrected`).
    """
    if not evalue > 0:  # NaN too
        raise ValueError(f"evalue must be positive, got {evalue}")
    q = check_query(query, max_query_length)
    if not isinstance(db, SequenceDB):
        db = cached_database(db)
    m = get_method(method)
    reason = m.available()
    if reason is not None:
        raise RuntimeError(f"method {method!r} is not available here: {reason}")
    opts = {**m.defaults, **method_options}
    n_res, n_seq = db_size if db_size is not None else (db.total_length, len(db))

    ranking = batched_ranking(method)
    if candidates is not None:
        cand = np.asarray(candidates, dtype=np.int64)
    else:
        cand = candidates_of(q, db, method, prefilter=prefilter,
                             prefilter_options=prefilter_options, rescore=rescore,
                             query_rep=query_rep, method_options=method_options)

    is_dp = m.prepare is not None and m.score is not None
    peer_alns: dict[int, Alignment] = {}
    if is_dp and ranking is not None:
        scores, prepared = _batched_scores(ranking, q, db, cand)
        if m.chance_params is not None and m.null_params is not None:
            scores = _reverse_corrected(ranking, q, db, cand, scores, prepared,
                                        params if params is not None else m.null_params(),
                                        m.chance_params(), n_res, n_seq)
        qrep = query_rep
    elif is_dp and _is_fast_sw(m, query_rep, method_options):
        scores = sw_scores(q.codes, db.codes, db.offsets, cand, matrix=str(opts["matrix"]),
                           gap_open=float(opts["gap_open"]),
                           gap_extend=float(opts["gap_extend"]), db=db).astype(np.float64)
        qrep = None
    elif is_dp:
        assert m.prepare is not None
        qrep = query_rep if query_rep is not None else m.prepare(q, role="query", **opts)
        if target_reps is None or target_reps.db is not db:
            target_reps = target_reps_for(m, db, opts)
        scores = _dp_scores(m, qrep, target_reps, cand, opts)
    else:
        qrep = None
        peer_alns = _peer_alignments(m, q, db, cand, opts)
        scores = np.array([peer_alns[int(t)].score for t in cand], dtype=np.float64)

    if len(cand) == 0:
        return []
    tlen = db.lengths[cand]
    own = [peer_alns[int(t)] for t in cand] if peer_alns else []
    if own and all(a.evalue is not None and a.bits is not None for a in own):
        # a peer's own pairwise E-value, scaled from the target's length to the database size
        evals = np.array([a.evalue * n_res / max(int(n), 1) for a, n in zip(own, tlen,
                                                                           strict=True)])
        bits = np.array([a.bits for a in own], dtype=np.float64)
    else:
        ev_params = params if params is not None else method_params(method, method_options)
        evals = db_evalues(scores, ev_params, len(q), tlen, n_res, n_seq)
        if ev_params.model == "local" and ev_params.gamma is None:  # Karlin-Altschul: BLAST's
            bits = np.asarray(bit_score(scores, ev_params, len(q), tlen), dtype=np.float64)
        else:  # a law of the lengths: BLAST's bits of the E-value, so their orders agree
            bits = bits_from_evalue(evals, len(q), n_res)
        own_law = params is None or (m.null_params is not None and params == m.null_params())
        reported = (reported_evalues(evals, method, method, len(q), db, n_seq, chance=own_law)
                    if calibrated else None)
        if reported is not None:
            evals = reported
            if ranking is not None and neighbours and candidates is None and db_size is None:
                cand, scores, evals = _through_neighbours(q, db, ranking, cand, scores, evals,
                                                          ev_params, method)
                tlen = db.lengths[cand]
            bits = bits_from_evalue(evals, len(q), n_res)
    passing = np.flatnonzero(evals <= evalue)
    order = passing[np.lexsort((cand[passing], -scores[passing], evals[passing]))]
    if max_hits is not None:
        order = order[:max_hits]

    if not traceback:  # ``order`` is already rank_hits' order; plain lists build 2,000 hits in ~1 ms
        ids = db.ids
        return [Hit(q.id, ids[t], t, s, b, e, peer_alns.get(t)) for t, s, b, e in zip(
            cand[order].tolist(), scores[order].tolist(), bits[order].tolist(),
            evals[order].tolist(), strict=True)]
    if m.align_hits is not None and query_rep is None:
        # the hits are traced back in one call (learned: targets embedded in batches; sequence
        # methods: the 16-lane traceback kernel)
        alns = m.align_hits(q, [db.sequence(int(cand[n])) for n in order], scores[order],
                            **opts)
        hits = []
        for n, aln in zip(order, alns, strict=True):
            aln.evalue = float(evals[n])
            aln.bits = float(bits[n])
            hits.append(Hit(q.id, db.ids[int(cand[n])], int(cand[n]), float(scores[n]),
                            float(bits[n]), float(evals[n]), aln))
        return rank_hits(hits)
    if is_dp and target_reps is None:
        target_reps = target_reps_for(m, db, opts)
    if is_dp and qrep is None:
        assert m.prepare is not None
        qrep = m.prepare(q, role="query", **opts)
    hits: list[Hit] = []
    traced: dict[int, Alignment] = {}
    if is_dp and m.align_prepared is None:
        assert target_reps is not None
        traced = _tracebacks(m, q, qrep, target_reps, [int(cand[n]) for n in order], opts)
    for n in order:
        t = int(cand[n])
        if t in traced:
            aln = traced[t]
        elif is_dp:
            assert target_reps is not None and m.align_prepared is not None
            aln = m.align_prepared(q, db.sequence(t), qrep, target_reps.get(t), **opts)
        else:
            aln = peer_alns[t]
        aln.evalue = float(evals[n])
        aln.bits = float(bits[n])
        hits.append(Hit(q.id, db.ids[t], t, float(scores[n]), float(bits[n]), float(evals[n]),
                        aln))
    return rank_hits(hits)


#: the keywords of :func:`search` that are not method options
SEARCH_KEYWORDS = frozenset({"evalue", "max_hits", "prefilter", "query_rep", "prefilter_options",
                             "db_size", "params", "max_query_length", "candidates",
                             "traceback", "rescore", "calibrated", "neighbours"})
