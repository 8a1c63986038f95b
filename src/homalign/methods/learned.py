"""The ``learned`` method: scores from the bundled learned aligner, posterior (MEA) decoding.

The network (``homalign.model``) turns both sequences into substitution scores S[i, j] (nats) and
per-residue affine gap costs; alignment then uses the exact DP engine's forward-backward posteriors
of the same path model the network was trained on, decoded by maximum expected accuracy (pairs
whose posterior beats ``threshold``; a search hit where none does takes the path with the most
expected correct pairs, so every hit has an alignment). Sequences only; works offline (weights ship in the package).
Options: ``threshold`` (MEA threshold, default from the bundled config), ``decode`` ("mea" or
"viterbi": the exact best path of the learned scores), ``mode`` (the path model of the posteriors,
default the config's ``decode_mode``), ``target_ss`` / ``target_acc`` (template mode: the target's
known secondary structure and accessibility, one letter per residue, read by the bundled
template-mode weights ``learned_template``; see :mod:`homalign.model.template`), ``homologs``
(a sequence database, FASTA or ``homalign makedb`` directory: each sequence's ``max_homologs``
best Smith-Waterman hits below ``homolog_evalue`` become intermediates of the consistency
transformation of :mod:`homalign.model.consistency`, and MEA reads the result at
``CONSISTENCY_THRESHOLD`` unless ``threshold`` is given; the sequences still are the only input
about the two proteins). Every option is declared in :data:`LEARNED_OPTIONS`; any other
(``matrix``, ``gap_open``...) is an error, as it would change nothing here.

Two bundled weight sets, one per job: ``learned`` aligns (``align``, and the tracebacks of search
hits), ``learned_search`` ranks (``prepare``/``score``/``null_params``: the aligner the search
benchmarks were measured with, its homology adapter and its null law). Search ranks targets by the
ranking weights' adapter local forward score when they carry one (:mod:`homalign.model.contrastive`),
else by the best local path of S, with E-values from the null law they carry (fitted on real
unrelated proteins, :func:`homalign.model.homology.fit_null`) when they carry one. ``align``
reports the ranking weights' score of the pair (``homology_score``) and its calibrated
``homology_probability`` (their head) in ``Alignment.extra``, so a pair's probability is that of
the score search ranks it by; search hits are traced back by ``align`` itself (the MEA alignment;
``Hit.score`` stays the ranking score). docs/decisions.md says why two weight sets.
"""

from __future__ import annotations

from collections import OrderedDict
from importlib import resources
from typing import Any, NamedTuple

import numpy as np

from homalign.alignment import Alignment
from homalign.methods import register
from homalign.methods.base import Method, Option, PairScores
from homalign.sequence import Sequence

ALIGN_WEIGHTS = "learned"
SEARCH_WEIGHTS = "learned_search"
TEMPLATE_WEIGHTS = "learned_template"


def _available() -> str | None:
    base = resources.files("homalign").joinpath("weights")
    for name in (ALIGN_WEIGHTS, SEARCH_WEIGHTS):
        if not base.joinpath(f"{name}.safetensors").is_file():
            return f"the bundled weights homalign/weights/{name}.safetensors are missing"
    return None


def _fingerprint() -> str:
    """sha256 (16 hex) of the ranking weights and their JSON (config, adapter, null law): what the
    search's scores, and so any cached score statistics, depend on."""
    import hashlib

    from homalign.model.weights import bundled_file

    h = hashlib.sha256(bundled_file(SEARCH_WEIGHTS, ".safetensors").read_bytes())
    h.update(bundled_file(SEARCH_WEIGHTS, ".json").read_bytes())
    return h.hexdigest()[:16]


def _model(name: str = ALIGN_WEIGHTS):
    """(model, metadata) of a bundled weight set for inference: the torch-free
    :class:`homalign.model.inference.InferenceAligner` (the same numbers as the torch model,
    without importing torch), or the torch model where the weights need it (a pair refiner)."""
    import os

    from homalign.model.weights import WEIGHTS_ENV, load_bundled_arrays

    key = (name, os.environ.get(WEIGHTS_ENV) or None)
    if key not in _INFERENCE:
        state, meta, _ = load_bundled_arrays(name)
        try:
            from homalign.model.inference import InferenceAligner

            _INFERENCE[key] = (InferenceAligner.from_state(state, meta), meta)
        except ValueError:
            from homalign.model import load_bundled

            _INFERENCE[key] = load_bundled(name)
    return _INFERENCE[key]


_INFERENCE: dict[tuple[str, str | None], tuple[Any, dict]] = {}


class LearnedRep(NamedTuple):
    """A prepared protein: codes and embeddings (1, L, dim) by the bundled weights named
    ``weights``."""

    codes: np.ndarray
    embedding: Any
    weights: str = SEARCH_WEIGHTS


def _prepare(seq: Sequence, role: str | None = None, **_options: Any) -> LearnedRep:
    """Codes and ranking-weights embeddings of one sequence (once per protein in ``search``);
    the options (checked against :data:`LEARNED_OPTIONS` by the registry) are the aligner's
    and do not change the ranking representation."""
    model, _meta = _model(SEARCH_WEIGHTS)
    return LearnedRep(seq.codes, model.embed(seq.codes))


def _score(q: LearnedRep, t: LearnedRep, **_options: Any) -> PairScores:
    """What ``search`` ranks: the ranking weights' homology adapter local forward score when they
    have one (``homalign.model.contrastive``), else their S's best local path. The options
    (checked by the registry) are the aligner's: the ranking score has none."""
    from homalign.model.homology import ranking_scores

    model, meta = _model(SEARCH_WEIGHTS)
    return ranking_scores(model, meta, q.codes, q.embedding, t.codes, t.embedding)


def ranking_model():
    """The ranking weights in closed form for batched search scoring
    (:class:`homalign.model.ranking.RankingModel`, cached), or None when they cannot be written
    so (no homology adapter, or a pair refiner): ``search`` then scores pair by pair."""
    global _RANKING
    if _RANKING is None:
        from homalign.model.ranking import RankingModel
        from homalign.model.weights import load_bundled_arrays

        state, meta, raw = load_bundled_arrays(SEARCH_WEIGHTS)
        try:
            _RANKING = RankingModel.from_state(state, meta, raw) if meta.get(
                "homology_score") else False
        except ValueError:  # a pair refiner: search scores pair by pair
            _RANKING = False
    return _RANKING or None


_RANKING: Any = None


def _null_params():
    """The ranking key's law the ranking weights carry (``meta["null"]``, fitted by ``python -m
    homalign.model.homology --null-pairs N`` on cross-fold SCOPe train-fold pairs), or None."""
    from homalign.model.homology import null_law

    return null_law(_model(SEARCH_WEIGHTS)[1])


def _chance_params():
    """The ranking score's null law over all lengths (``meta["chance"]``, ``--chance-pairs N``:
    unrelated chains of SCOPe train-fold domains), or None: what E-values count chance hits
    with (:func:`homalign.stats.chance_evalues`)."""
    from homalign.model.homology import null_law

    return null_law(_model(SEARCH_WEIGHTS)[1], "chance")


#: intermediates per sequence, E-value cut and flank (residues kept either side of a hit's
#: aligned region) of the ``homologs`` option (chosen on held-out train pairs, docs/learned.md)
MAX_HOMOLOGS = 4
HOMOLOG_EVALUE = 1e-3
HOMOLOG_FLANK = 30


def _align(query: Sequence, target: Sequence, *, threshold: float | None = None,
           decode: str = "mea", mode: str | None = None, target_ss: str | None = None,
           target_acc: str | None = None, homologs: Any = None,
           max_homologs: int = MAX_HOMOLOGS, homolog_evalue: float = HOMOLOG_EVALUE
           ) -> Alignment:
    return _align_prepared(query, target, None, None, threshold=threshold, decode=decode,
                           mode=mode, target_ss=target_ss, target_acc=target_acc,
                           homologs=homologs, max_homologs=max_homologs,
                           homolog_evalue=homolog_evalue)


def _align_prepared(query: Sequence, target: Sequence, qrep: LearnedRep | None,
                    trep: LearnedRep | None,
                    *, threshold: float | None = None, decode: str = "mea",
                    mode: str | None = None, target_ss: str | None = None,
                    target_acc: str | None = None, homologs: Any = None,
                    max_homologs: int = MAX_HOMOLOGS, homolog_evalue: float = HOMOLOG_EVALUE
                    ) -> Alignment:
    """``align`` reusing prepared embeddings where they are the aligner's own (``search`` traces
    its hits back with it; its reps hold the ranking weights' embeddings, so the aligner embeds
    the two sequences itself)."""
    from homalign.model.homology import ranking_score

    extra: dict[str, Any] = {}
    search_reps = tuple(r if r is not None and r.weights == SEARCH_WEIGHTS else None
                        for r in (qrep, trep))
    if homologs is not None and (target_ss is not None or decode != "mea"):
        raise ValueError("homologs (consistency through database homologues) works with "
                         "decode='mea' and without template mode")
    if target_ss is not None:  # template mode: its own weights, so no prepared embeddings
        from homalign.model.template import parse_template

        tokens = parse_template(len(target), target_ss, target_acc, record=target.id)
        model, _meta = _model(TEMPLATE_WEIGHTS)
        qrep = None
        trep = LearnedRep(target.codes, model.embed(target.codes, tokens), TEMPLATE_WEIGHTS)
        extra["template"] = True
    elif target_acc is not None:
        raise ValueError("target_acc needs target_ss (template mode reads both)")
    else:
        model, _meta = _model(ALIGN_WEIGHTS)
        if qrep is not None and qrep.weights != ALIGN_WEIGHTS:
            qrep = None
        if trep is not None and trep.weights != ALIGN_WEIGHTS:
            trep = None
    e_q = qrep.embedding if qrep is not None else model.embed(query.codes)
    e_t = trep.embedding if trep is not None else model.embed(target.codes)
    aln = _decode_pair(model, query, target, e_q, e_t, decode=decode, mode=mode,
                       threshold=threshold, homologs=homologs, max_homologs=max_homologs,
                       homolog_evalue=homolog_evalue)
    aln.extra.update(extra)
    # the probability of the score search ranks the pair by (the ranking weights, sequence only)
    smodel, smeta = _model(SEARCH_WEIGHTS)
    if smeta.get("homology"):
        sq = search_reps[0] or _prepare(query)
        st = search_reps[1] or _prepare(target)
        rank = ranking_score(smodel, smeta, query.codes, sq.embedding, target.codes, st.embedding)
        _add_homology(aln, smeta, rank)
    return aln


def _add_homology(aln: Alignment, meta: dict, rank: float) -> None:
    aln.extra["homology_score"] = rank
    from homalign.model.homology import homology_probability, standardized_score

    z = standardized_score(meta, rank, len(aln.query), len(aln.target))
    aln.extra["homology_probability"] = homology_probability(meta["homology"], z)


def _hit_path(P: np.ndarray, threshold: float) -> Any:
    """A search hit's MEA path: the pairs whose posterior beats ``threshold``; where none does,
    the path with the most expected correct pairs (threshold 0), so that a hit the search
    reports always has an alignment, as BLAST's hits do (``align`` leaves such a pair
    empty)."""
    from homalign.model.decode import mea_align

    path = mea_align(P, threshold)
    if len(path.pairs) == 0 and threshold > 0.0:
        path = mea_align(P, 0.0)
    return path


def _decode_pair(model: Any, query: Sequence, target: Sequence, e_q: Any, e_t: Any,
                 *, decode: str, mode: str | None,
                 threshold: float | None, homologs: Any = None,
                 max_homologs: int = MAX_HOMOLOGS, homolog_evalue: float = HOMOLOG_EVALUE,
                 scores: tuple[np.ndarray, Any] | None = None,
                 posterior: np.ndarray | None = None, mea: Any = None,
                 local: float | None = None) -> Alignment:
    """The aligner's alignment of one pair from its embeddings: MEA of the posteriors (through
    the homologues' consistency transform when ``homologs`` is given) or the best path;
    ``score`` is the local best-path score of the learned S. ``scores``: the pair's
    ``score_embedded`` (S, gaps), ``posterior`` its posterior matrix in ``mode``, ``mea`` the
    MEA path of that posterior and ``local`` the local score, when already computed."""
    from homalign.dp import align as dp_align
    from homalign.dp import align_score
    from homalign.model.decode import mea_align, posterior_matrix

    extra: dict[str, Any] = {}
    cfg = model.cfg
    mode = mode or cfg.decode_mode
    S, gaps = scores if scores is not None else model.score_embedded(query.codes, e_q,
                                                                     target.codes, e_t)
    if decode == "mea":
        P = posterior if posterior is not None else posterior_matrix(S, gaps, mode=mode)
        if homologs is not None:
            P, inter = consistent_posterior(model, query, target, homologs, mode=mode,
                                            max_homologs=max_homologs, evalue=homolog_evalue,
                                            P=P, e_q=e_q, e_t=e_t)
            extra["homologs"] = [z.id for z in inter]
            if threshold is None:
                from homalign.model.consistency import CONSISTENCY_THRESHOLD

                threshold = CONSISTENCY_THRESHOLD
        if mea is None or homologs is not None:
            mea = mea_align(P, cfg.mea_threshold if threshold is None else float(threshold))
        pairs = mea.pairs
        extra["expected_correct"] = float(P[pairs[:, 0], pairs[:, 1]].sum()) if len(pairs) else 0.0
    elif decode == "viterbi":
        pairs = dp_align(S, gaps, mode=mode).pairs
    else:
        raise ValueError(f"unknown decode {decode!r}; expected 'mea' or 'viterbi'")
    local = float(align_score(S, gaps, mode="local")) if local is None else float(local)
    aln = Alignment(query_id=query.id, target_id=target.id, query=query.residues,
                    target=target.residues, pairs=pairs, score=local, method="learned")
    aln.extra.update(extra)
    return aln


def _align_hits(query: Sequence, targets: list[Sequence], scores: np.ndarray,
                *, threshold: float | None = None, decode: str = "mea",
                mode: str | None = None, **options: Any) -> list[Alignment]:
    """``align`` of ``query`` with each of its search hits, at once: the aligner embeds the query
    once and the targets in packed rows, scores them in closed form and computes their
    posteriors 16 targets at a time (:func:`homalign.dp.posterior_batch.posteriors_many`, float32;
    equal to ``align``'s float64 posteriors within ~1e-5, so the same pairs except where two
    paths' expected accuracies tie that closely), and each hit's ranking score (``scores``: what
    search ranked it by, the batched form of ``homology_score``) gives ``homology_score`` and
    ``homology_probability`` without scoring the pair again. Template mode and ``homologs`` go
    pair by pair (:func:`_align_prepared`)."""
    if any(options.get(k) is not None for k in ("target_ss", "target_acc", "homologs")):
        return [_align_prepared(query, t, None, None, threshold=threshold, decode=decode,
                                mode=mode, **options) for t in targets]
    if not targets:
        return []
    from homalign.dp.batch import align_batch

    model, _meta = _model(ALIGN_WEIGHTS)
    _smodel, smeta = _model(SEARCH_WEIGHTS)
    codes = [t.codes for t in targets]
    e_q, *embs = model.embed_many([query.codes, *codes])  # the query in the targets' rows
    scored = model.score_many(query.codes, e_q, codes, embs)
    n = len(targets)
    posteriors: list[np.ndarray | None] = [None] * n
    paths: list[Any] = [None] * n
    pmode = mode or model.cfg.decode_mode
    if decode == "mea" and pmode in ("local", "semiglobal"):
        posteriors = _posteriors_of(scored, pmode)
        cut = model.cfg.mea_threshold if threshold is None else float(threshold)
        paths = [_hit_path(P, cut) for P in posteriors]
    local = align_batch([S for S, _ in scored], [g for _, g in scored], mode="local",
                        score_only=True)
    out = []
    for t, e_t, st, P, path, sc, rank in zip(targets, embs, scored, posteriors, paths, local,
                                             scores, strict=True):
        aln = _decode_pair(model, query, t, e_q, e_t, decode=decode, mode=mode,
                           threshold=threshold, scores=st, posterior=P, mea=path, local=sc)
        if smeta.get("homology"):
            _add_homology(aln, smeta, float(rank))
        out.append(aln)
    return out


_POSTERIOR_CACHE: OrderedDict[tuple, np.ndarray] = OrderedDict()
_POSTERIOR_CACHE_BYTES = 128 * 2**20  # a protein's posteriors against its homologues recur


def _posteriors_of(scored: list, mode: str) -> list[np.ndarray]:
    """Posterior matrices of one query's ``scored`` pairs ((S, GapCosts) from ``score_many``:
    the query's gap vectors shared, the targets' their own), 16 targets at a time
    (:func:`homalign.dp.posterior_batch.posteriors_many`), local or semiglobal ``mode``."""
    from homalign.dp.posterior_batch import posteriors_many

    g0 = scored[0][1]
    return list(posteriors_many([S for S, _ in scored], g0.q_ins_open, g0.q_ins_ext,
                                [g.t_del_open for _, g in scored],
                                [g.t_del_ext for _, g in scored], mode=mode)[0])


def _cache_put(key: tuple, P: np.ndarray) -> np.ndarray:
    """Keep ``P`` (as float32) in the posterior cache, the oldest entries dropped past
    :data:`_POSTERIOR_CACHE_BYTES`; returns it."""
    P = np.asarray(P, dtype=np.float32)
    _POSTERIOR_CACHE[key] = P
    total = sum(v.nbytes for v in _POSTERIOR_CACHE.values())
    while total > _POSTERIOR_CACHE_BYTES and len(_POSTERIOR_CACHE) > 1:
        _, old = _POSTERIOR_CACHE.popitem(last=False)
        total -= old.nbytes
    return P


def _cached_posterior(model: Any, mode: str, a: Sequence, e_a: Any, b: Sequence,
                      e_b: Any | None) -> np.ndarray:
    """The posterior matrix of ``a`` against ``b`` (``b`` embedded here if ``e_b`` is None),
    kept in a byte-bounded LRU cache within the process: a sequence aligned with several
    partners meets its own homologues every time."""
    from homalign.model.decode import posterior_matrix

    key = (id(model), mode, a.residues, b.residues)
    P = _POSTERIOR_CACHE.get(key)
    if P is not None:
        _POSTERIOR_CACHE.move_to_end(key)
        return P
    if e_b is None:
        e_b = model.embed(b.codes)
    P = posterior_matrix(*model.score_embedded(a.codes, e_a, b.codes, e_b), mode=mode)
    return _cache_put(key, P)


def _cached_posteriors(model: Any, mode: str, a: Sequence, e_a: Any, bs: list[Sequence],
                       embedded: dict[str, Any]) -> list[np.ndarray]:
    """:func:`_cached_posterior` of ``a`` against each of ``bs``: the ones not cached are
    computed together, their embeddings in one packed call (kept in ``embedded`` by residues
    for the caller's next call) and, in local or semiglobal mode, their posteriors 16 targets at
    a time (:func:`homalign.dp.posterior_batch.posteriors_many`)."""
    out: list[np.ndarray | None] = []
    missing: list[int] = []
    for k, b in enumerate(bs):
        P = _POSTERIOR_CACHE.get((id(model), mode, a.residues, b.residues))
        if P is not None:
            _POSTERIOR_CACHE.move_to_end((id(model), mode, a.residues, b.residues))
        else:
            missing.append(k)
        out.append(P)
    if not missing:
        return out  # type: ignore[return-value]
    new = [bs[k] for k in missing if bs[k].residues not in embedded]
    if new:
        for b, e in zip(new, model.embed_many([b.codes for b in new]), strict=True):
            embedded[b.residues] = e
    if mode not in ("local", "semiglobal"):
        for k in missing:
            out[k] = _cached_posterior(model, mode, a, e_a, bs[k], embedded[bs[k].residues])
        return out  # type: ignore[return-value]
    scored = model.score_many(a.codes, e_a, [bs[k].codes for k in missing],
                              [embedded[bs[k].residues] for k in missing])
    for k, P in zip(missing, _posteriors_of(scored, mode), strict=True):
        out[k] = _cache_put((id(model), mode, a.residues, bs[k].residues), P)
    return out  # type: ignore[return-value]


def consistent_posterior(model: Any, query: Sequence, target: Sequence, db: Any, *,
                         mode: str | None = None, max_homologs: int = MAX_HOMOLOGS,
                         evalue: float = HOMOLOG_EVALUE, P: np.ndarray | None = None,
                         e_q: Any = None, e_t: Any = None) -> tuple[np.ndarray, list[Sequence]]:
    """``model``'s posterior of ``query`` x ``target`` (``P``, computed if not given) transformed
    through both sequences' homologues in ``db``
    (:func:`homalign.model.consistency.consistency_transform`), and those intermediates."""
    from homalign.model.consistency import consistency_transform

    mode = mode or model.cfg.decode_mode
    e_q = model.embed(query.codes) if e_q is None else e_q
    e_t = model.embed(target.codes) if e_t is None else e_t
    if P is None:
        P = _cached_posterior(model, mode, query, e_q, target, e_t)
    inter: list[Sequence] = []
    from homalign.database_search import current

    find = current().find_homologs
    for z in find(query, db, max_homologs, evalue) + find(target, db, max_homologs, evalue):
        if all(z.residues != w.residues for w in inter):
            inter.append(z)
    embedded: dict[str, Any] = {}
    P_xz = _cached_posteriors(model, mode, query, e_q, inter, embedded)
    # P(z ~ y) as the transpose of P(y ~ z): the same cache entries serve y's other pairs
    P_yz = _cached_posteriors(model, mode, target, e_t, inter, embedded)
    through = [(a, b.T) for a, b in zip(P_xz, P_yz, strict=True)]
    return consistency_transform(P, through), inter


#: where ``learned-homologs`` finds its database when not given ``homologs=``: the
#: ``HOMALIGN_HOMOLOGS`` environment variable, else Debian's mmseqs2-examples UniProt sample
HOMOLOGS_ENV = "HOMALIGN_HOMOLOGS"
DEBIAN_UNIPROT = "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz"


def default_homolog_db() -> str | None:
    """The database ``learned-homologs`` uses by default (a path), or None if there is none."""
    import os

    env = os.environ.get(HOMOLOGS_ENV)
    if env:
        return env
    return DEBIAN_UNIPROT if os.path.exists(DEBIAN_UNIPROT) else None


def _homologs_available() -> str | None:
    reason = _available()
    if reason is None and default_homolog_db() is None:
        reason = (f"no homologue database: set {HOMOLOGS_ENV}=DB (FASTA or makedb directory) "
                  f"or install Debian's mmseqs2-examples ({DEBIAN_UNIPROT}); or pass homologs=DB")
    return reason


def _align_homologs(query: Sequence, target: Sequence, *, homologs: Any = None,
                    **options: Any) -> Alignment:
    """``learned`` with ``homologs`` defaulting to :func:`default_homolog_db`."""
    if homologs is None:
        homologs = default_homolog_db()
        if homologs is None:
            raise RuntimeError(_homologs_available() or "no homologue database")
    aln = _align(query, target, homologs=homologs, **options)
    aln.method = "learned-homologs"
    return aln


def _align_hits_homologs(query: Sequence, targets: list[Sequence], scores: np.ndarray, *,
                         homologs: Any = None, **options: Any) -> list[Alignment]:
    """:func:`_align_hits` with ``homologs`` defaulting to :func:`default_homolog_db`: a
    ``learned-homologs`` search ranks as ``learned`` does (its scores and E-values) and aligns
    its hits through the homologues."""
    if homologs is None:
        homologs = default_homolog_db()
        if homologs is None:
            raise RuntimeError(_homologs_available() or "no homologue database")
    alns = _align_hits(query, targets, scores, homologs=homologs, **options)
    for aln in alns:
        aln.method = "learned-homologs"
    return alns


#: the options of ``learned`` and ``learned-homologs`` (the one place they are declared)
LEARNED_OPTIONS = (
    Option("threshold", float, None, "MEA threshold: pairs whose posterior beats it (default: "
           "the bundled config's; with homologs, the consistency threshold)", low=0.0, high=1.0,
           open="high"),
    Option("decode", str, "mea", "mea (maximum expected accuracy) or viterbi (best path)",
           choices=("mea", "viterbi")),
    Option("mode", str, None, "path model of the posteriors: local, glocal, global... "
           "(default: the bundled config's)"),
    Option("target_ss", str, None, "template mode: the target's secondary structure, one letter "
           "a residue (the CLI's --template reads it from a .tem file)", cli=False),
    Option("target_acc", str, None, "template mode: the target's accessibility (T/F a residue)",
           cli=False),
    Option("homologs", str, None, "sequence database (FASTA or makedb directory): consistency "
           "through both sequences' homologues in it", api_types=None),
    Option("max_homologs", int, MAX_HOMOLOGS, "with homologs: intermediates per sequence",
           low=1),
    Option("homolog_evalue", float, HOMOLOG_EVALUE, "with homologs: E-value cut of an "
           "intermediate", low=0.0, open="low"),
)

register(Method(
    name="learned", kind="learned",
    description="learned substitution scores and position-specific gaps (CRF-trained encoder), "
                "exact posteriors, maximum-expected-accuracy decoding",
    align=_align, prepare=_prepare, score=_score, available=_available,
    defaults={"decode": "mea"}, fingerprint=_fingerprint, align_prepared=_align_prepared,
    align_hits=_align_hits, null_params=_null_params, chance_params=_chance_params,
    ranking=ranking_model,
    options=LEARNED_OPTIONS,
))

register(Method(
    name="learned-homologs", kind="learned",
    description="learned, with each pair's posteriors made consistent through both sequences' "
                "homologues in a sequence database (homologs=, default $HOMALIGN_HOMOLOGS or "
                "Debian's mmseqs2-examples UniProt sample)",
    align=_align_homologs, available=_homologs_available, defaults={"decode": "mea"},
    # a search ranks as learned's (the same scores and E-values); its hits' alignments go
    # through the homologues
    prepare=_prepare, score=_score, fingerprint=_fingerprint, align_prepared=_align_prepared,
    align_hits=_align_hits_homologs, null_params=_null_params, chance_params=_chance_params,
    ranking=ranking_model,
    options=LEARNED_OPTIONS,
))
