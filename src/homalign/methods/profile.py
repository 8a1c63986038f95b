"""Profile and HMM methods: PSI-BLAST, PROF_SIM/COMPASS, HHsearch and HMMER classes.

Registry entries (all take ``msa=``, ``db=``, ``query_msa=``, ``target_msa=``, ``query_hhm=``,
``target_hhm=``, ``pseudocounts=``, ``admix=``; see :mod:`homalign.profile.sources`):

* ``pssm`` — the query's log-odds PSSM (matrix units, BLOSUM62 pseudocounts, PSI-BLAST admixture)
  against the target sequence; position-specific gap costs from the query MSA's gap statistics
  (:meth:`homalign.profile.Profile.gap_vectors`); local. From one sequence it equals ``sw`` up to
  the matrix's rounding.
* ``compass``, ``prof-sim`` and ``profile-profile`` (``score="compass"`` default, or
  ``"prof_sim"``) — profile against profile with the column scores of
  :mod:`homalign.score.profile_scores`; each side's gap vectors at half weight, so two single
  sequences get the plain ``gap_open``/``gap_extend``.
* ``hhm`` — HMM against HMM (HHsearch class): ``log2 sum_a q_i(a) p_j(a) / f(a) + shift`` in bits,
  transition-derived gap costs from both HMMs (:func:`homalign.profile.hmm.pair_gap_costs`),
  Viterbi local alignment. ``hhm-mac`` — the same model, then forward–backward posteriors
  (:func:`homalign.dp.posterior.posterior_matrix`, in nats) and maximum-accuracy decoding
  (:func:`homalign.dp.posterior.mac_align`, threshold ``mact``); score = the Viterbi score.
* ``hmm`` — HMMER3 itself through pyhmmer (:mod:`homalign.profile.pyhmmer_adapter`): the query
  MSA (or the sequence, as phmmer does) becomes a HMMER profile HMM that aligns the target.

Defaults (chosen on 150 HOMSTRAD *train* pairs, single-sequence profiles, mean F1; the
alternatives we tried are in benchmarks/results/profile.md): ``prof-sim`` ``scale=48, shift=0.40``
(scale set so that one-sequence identities score about +5.5 and random pairs about -1, like
BLOSUM62 in half bits, so that the 11/1 gap costs carry over; shift then tuned: 0.45 → F1 0.789,
0.40 → 0.817); ``hhm`` Dirichlet-mixture pseudocounts, ``gap_weight=0.4`` and a column-score
shift of +0.6 bits for two single sequences (F1 0.814 vs 0.730 with HHsearch's -0.03 shift,
matrix pseudocounts and weight 0.5: a single-sequence HMM needs a positive shift to extend local
alignments). With iterative MSAs that shift made alignments too long (150 HOMSTRAD *dev* pairs,
hhm-mac: shift 0.6 / mact 0.1 F1 0.757, shift 0 / mact 0.35 0.777), so ``hh_shift="auto"`` is
``0.6 / sqrt(Neff_q Neff_t)`` (0.775 there, unchanged 0.832 on the single-sequence train pairs)
and ``hhm-mac`` uses HHsearch's own ``mact=0.35``.
"""

from __future__ import annotations

import inspect
import math
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from homalign.alignment import Alignment
from homalign.errors import InputError
from homalign.methods import register
from homalign.methods.base import Method, Option, PairScores
from homalign.profile.hmm import ProfileHMM, pair_gap_costs
from homalign.profile.profile import Profile
from homalign.profile.pseudocounts import PSEUDOCOUNT_METHODS
from homalign.profile.sources import (
    check_inclusion_evalue,
    get_profile,
    read_msa_file,
    resolve_source,
)
from homalign.score.pair_scores import score_values
from homalign.score.profile_scores import (
    compass_scores,
    hhsearch_scores_of,
    hhsearch_target_columns,
    prof_sim_scores,
    pssm_sequence_scores,
)
from homalign.sequence import Sequence

# --- options: the one place each profile method's options are declared -------------------
_SOURCE_OPTIONS = (
    Option("msa", str, "single", "the MSAs: single | iterative[:N] (N rounds against db=) | a "
           "directory of <id>.a3m/.sto/.hhm files"),
    Option("db", str, None, "sequence database (FASTA or makedb directory) for msa=iterative:N",
           api_types=None),
    Option("inclusion_evalue", float, None, "msa=iterative:N (search: --iterations N): E-value "
           "to include a hit in the next round's profile (default 1e-3)", low=0.0, open="low"),
    Option("query_msa", str, None, "the query's MSA file (A3M, aligned FASTA, Stockholm) or "
           "directory; overrides msa", api_types=None),
    Option("target_msa", str, None, "the target's MSA file or directory; overrides msa",
           api_types=None),
)
_HHM_FILES = (
    Option("query_hhm", str, None, "the query's HH-suite .hhm file; overrides msa",
           api_types=None),
    Option("target_hhm", str, None, "the target's HH-suite .hhm file; overrides msa",
           api_types=None),
)
_MATRIX = Option("matrix", str, "BLOSUM62", "substitution matrix of the pseudocounts")
_GAPS = (
    Option("gap_open", float, 11.0, "gap open cost (a gap of length k costs open + k * extend)",
           low=0.0),
    Option("gap_extend", float, 1.0, "gap extend cost", low=0.0),
)


def _counts(pseudocounts: str, admix: str) -> tuple[Option, ...]:
    return (
        Option("pseudocounts", str, pseudocounts,
               f"pseudocount source: {' | '.join(PSEUDOCOUNT_METHODS)}",
               choices=PSEUDOCOUNT_METHODS),
        Option("admix", str, admix, "pseudocount admixture: psiblast | hhsuite",
               choices=("psiblast", "hhsuite")),
    )


def _profile_score(shift: float | None, scale: float | None) -> tuple[Option, ...]:
    return (Option("shift", float, shift, "score=prof_sim: column-score shift (default 0.40)",
                   low=-100.0, high=100.0),
            Option("scale", float, scale, "score=prof_sim: column-score scale (default 48)",
                   low=0.0, open="low"))


def _float_or_auto(text: str) -> float | str:
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        import argparse

        raise argparse.ArgumentTypeError(f"a number or 'auto', not {text!r}") from None


_QUERY_SIDE = ("target_msa", "target_hhm")  # a PSSM scores the target's sequence itself
PSSM_OPTIONS = (*(o for o in (*_SOURCE_OPTIONS, *_HHM_FILES) if o.name not in _QUERY_SIDE),
                _MATRIX, *_counts("matrix", "psiblast"), *_GAPS,
                Option("pssm_kind", str, "logodds", "PSSM scores: logodds (matrix units) | "
                       "average (Gribskov: observed frequencies times the matrix)",
                       choices=("logodds", "average")))
COMPASS_OPTIONS = (*_SOURCE_OPTIONS, *_HHM_FILES, _MATRIX, *_counts("matrix", "psiblast"),
                   *_GAPS, Option("score", str, "compass", "column score",
                                  choices=("compass", "prof_sim", "prof-sim")),
                   *_profile_score(None, None))
PROF_SIM_OPTIONS = (*_SOURCE_OPTIONS, *_HHM_FILES, _MATRIX, *_counts("matrix", "psiblast"),
                    *_GAPS, Option("score", str, "prof_sim", "column score",
                                   choices=("compass", "prof_sim", "prof-sim")),
                    *_profile_score(0.40, 48.0))
HHM_OPTIONS = (*_SOURCE_OPTIONS, *_HHM_FILES, _MATRIX, *_counts("dirichlet", "hhsuite"),
               Option("hh_shift", _float_or_auto, "auto", "column-score shift in bits, or 'auto': "
                      "0.6 / sqrt(Neff_q Neff_t)", api_types=(int, float, np.number, str),
                      low=-100.0, high=100.0),
               Option("gap_weight", float, 0.4, "weight of the HMM transition gap costs",
                      low=0.0))
HHM_MAC_OPTIONS = (*HHM_OPTIONS,
                   Option("mact", float, 0.35, "MAC threshold (HHsearch's -mact)", low=0.0,
                          high=1.0, open="high"),
                   Option("mac_temperature", float, 1.0, "posterior temperature of the MAC step",
                          low=0.0, open="low"))
# HMMER builds its models with its own BLOSUM62 mixture: no matrix option
HMMER_OPTIONS = (*(o for o in _SOURCE_OPTIONS if o.name != "target_msa"),
                 Option("query_hmm", str, None, "the query's HMMER3 .hmm file", api_types=None))


def _defaults(options: tuple[Option, ...]) -> dict[str, Any]:
    return {o.name: o.default for o in options if o.default is not None}


BASE_DEFAULTS: dict[str, Any] = {"msa": "single"}
PSSM_DEFAULTS = _defaults(PSSM_OPTIONS)
COMPASS_DEFAULTS = _defaults(COMPASS_OPTIONS)
PROF_SIM_DEFAULTS = _defaults(PROF_SIM_OPTIONS)
AUTO_SHIFT = 0.6
HHM_DEFAULTS = _defaults(HHM_OPTIONS)
HHM_MAC_DEFAULTS = _defaults(HHM_MAC_OPTIONS)


class ProteinRep:
    """One protein prepared for a profile method: its sequence and, built on first use, its
    Profile and ProfileHMM (from the source the options name). ``blast_scores``: PSI-BLAST's
    scoring, the PSSM rounded to integers and uniform gaps instead of the MSA's gap statistics
    (the integer kernels then score it)."""

    def __init__(self, seq: Sequence, role: str | None = None, options: dict | None = None,
                 source: Profile | ProfileHMM | None = None, blast_scores: bool = False) -> None:
        self.seq = seq
        self.role = role
        self.options = dict(options or {})
        self.blast_scores = blast_scores
        if source is not None:
            self.__dict__["source"] = source

    @cached_property
    def source(self) -> Profile | ProfileHMM:
        return get_profile(self.seq, self.role, **self.options)

    @cached_property
    def profile(self) -> Profile:
        src = self.source
        return src if isinstance(src, Profile) else src.to_profile()

    @cached_property
    def hmm(self) -> ProfileHMM:
        src = self.source
        return src if isinstance(src, ProfileHMM) else ProfileHMM.from_profile(src)

    def pssm(self, kind: str = "logodds") -> np.ndarray:
        key = f"_pssm_{kind}"
        if key not in self.__dict__:
            pssm = self.profile.pssm(kind)
            self.__dict__[key] = np.rint(pssm) if self.blast_scores else pssm
        return self.__dict__[key]

    def gap_vectors(self, open: float, extend: float) -> dict[str, np.ndarray]:
        """The profile's gap vectors (memoised per rep: a search reuses them per target)."""
        key = ("_gapvec", float(open), float(extend))
        if key not in self.__dict__:
            n = len(self.profile)
            self.__dict__[key] = ({"del_open": np.full(n, float(open)),
                                   "del_ext": np.full(n, float(extend)),
                                   "ins_open": np.full(n + 1, float(open)),
                                   "ins_ext": np.full(n + 1, float(extend))}
                                  if self.blast_scores else self.profile.gap_vectors(open, extend))
        return self.__dict__[key]

    def side_costs(self, open: float, extend: float, weight: float):
        """This profile's half of a profile-profile pair's gap costs (a
        :class:`homalign.dp.gaps.SideCosts` of ``weight`` times :meth:`gap_vectors`), made once
        per setting: a search pairs a target with every query."""
        from homalign.dp.gaps import SideCosts

        key = ("_side", float(open), float(extend), float(weight))
        if key not in self.__dict__:
            v = self.gap_vectors(open, extend)
            self.__dict__[key] = SideCosts(weight * v["del_open"], weight * v["del_ext"],
                                           weight * v["ins_open"], weight * v["ins_ext"])
        return self.__dict__[key]

    def query_gap_costs(self, lt: int, open: float, extend: float):
        """GapCosts with only this (query) side's costs, memoised per target length."""
        key = ("_qgaps", lt, float(open), float(extend))
        if key not in self.__dict__:
            self.__dict__[key] = _gap_costs(self.gap_vectors(open, extend), len(self), lt)
        return self.__dict__[key]

    def __len__(self) -> int:
        return len(self.seq)


def prepare(seq: Sequence, role: str | None = None, **options: Any) -> ProteinRep:
    """A lazy :class:`ProteinRep` (nothing is built until a score needs it)."""
    return ProteinRep(seq, role, options)


def _rep(x: Any) -> ProteinRep:
    if isinstance(x, ProteinRep):
        return x
    if isinstance(x, (Profile, ProfileHMM)):
        return ProteinRep(x.query, source=x)
    if isinstance(x, Sequence):
        return ProteinRep(x)
    raise TypeError(f"cannot use {type(x).__name__} as a profile representation")


def _gap_costs(vq: dict[str, np.ndarray], lq: int, lt: int):
    """GapCosts with only the query's side (its delete costs on q_ins, its insert costs on
    q_del) for a target of length ``lt``."""
    from homalign.dp import GapCosts

    return GapCosts.from_vectors(lq, lt, q_ins_open=vq["del_open"], q_ins_ext=vq["del_ext"],
                                 q_del_open=vq["ins_open"], q_del_ext=vq["ins_ext"])


# --- score functions (two representations -> PairScores) ---------------------------------
def score_pssm(q: Any, t: Any, *, gap_open: float = 11.0, gap_extend: float = 1.0,
               pssm_kind: str = "logodds") -> PairScores:
    q, t = _rep(q), _rep(t)
    S = pssm_sequence_scores(q.pssm(pssm_kind), t.seq.codes)
    gaps = q.query_gap_costs(len(t), gap_open, gap_extend)
    return PairScores(S, gaps, "local")


def score_many_pssm(q: Any, target_codes: list[np.ndarray], *, gap_open: float = 11.0,
                    gap_extend: float = 1.0, pssm_kind: str = "logodds") -> np.ndarray:
    """float64 :func:`score_pssm` local scores of the query against each target's residue
    codes, equal to ``score_values([score_pssm(q, t) ...])``: the query's PSSM and query-side
    gap vectors (the GapCosts ``score_pssm`` builds, whose target side is zero) through
    :func:`homalign.dp.lanes.score_local_profile`, no score matrix per target. A PSSM that is
    not finite takes ``score_pssm``'s path, target by target."""
    from homalign.dp.lanes import score_local_profile

    q = _rep(q)
    pssm = q.pssm(pssm_kind)
    if not np.all(np.isfinite(pssm)):
        return score_values([PairScores(pssm_sequence_scores(pssm, c),
                                        q.query_gap_costs(len(c), gap_open, gap_extend), "local")
                             for c in target_codes])
    g = q.query_gap_costs(0, gap_open, gap_extend)  # the query side alone (any Lt: the same)
    return score_local_profile(pssm, target_codes, g.q_ins_open, g.q_ins_ext, g.q_del_open,
                               g.q_del_ext).astype(np.float64)


def score_profile_profile(q: Any, t: Any, *, score: str = "compass", gap_open: float = 11.0,
                          gap_extend: float = 1.0, shift: float = 0.40, scale: float = 48.0
                          ) -> PairScores:
    q, t = _rep(q), _rep(t)
    pq, pt = q.profile, t.profile
    if score == "compass":
        S = compass_scores(pq.freqs, pq.probs, pq.n_eff, pt.freqs, pt.probs, pt.n_eff,
                           pq.background, pq.lam)
    elif score in ("prof_sim", "prof-sim"):
        S = prof_sim_scores(pq.probs, pt.probs, pq.background, shift=shift, scale=scale)
    else:
        raise ValueError(f"unknown profile-profile score {score!r}; choose 'compass' or 'prof_sim'")
    from homalign.dp import GapCosts

    gaps = GapCosts.from_sides(q.side_costs(gap_open, gap_extend, 0.5),
                               t.side_costs(gap_open, gap_extend, 0.5))
    return PairScores(S, gaps, "local")


def score_hhm(q: Any, t: Any, *, hh_shift: float | str = "auto", gap_weight: float = 0.4,
              units: float = 1.0) -> PairScores:
    """HHsearch column scores and transition gaps, in bits times ``units``.

    ``hh_shift="auto"``: ``0.6 / sqrt(Neff_q Neff_t)`` bits — +0.6 for two single sequences,
    shrinking towards HHsearch's ~0 as the MSAs get diverse."""
    q, t = _rep(q), _rep(t)
    hq, ht = q.hmm, t.hmm
    if hh_shift == "auto":
        hh_shift = AUTO_SHIFT / math.sqrt(max(hq.neff, 1.0) * max(ht.neff, 1.0))
    S = hhsearch_scores_of(hq.query_odds, hhsearch_target_columns(ht.probs), shift=hh_shift,
                           scale=units)
    return PairScores(S, pair_gap_costs(hq, ht, gap_weight=gap_weight, scale=units), "local")


_SCORE_KEYWORDS = {
    scorer: frozenset(k for k, p in inspect.signature(scorer).parameters.items()
                      if p.kind is inspect.Parameter.KEYWORD_ONLY)
    for scorer in (score_pssm, score_profile_profile, score_hhm)
}


def _score_options(scorer, options: dict[str, Any]) -> dict[str, Any]:
    """The options a score function reads (the others, checked by the registry against the
    method's declaration, say where the profiles come from: ``prepare`` reads them)."""
    keys = _SCORE_KEYWORDS[scorer]
    return {k: v for k, v in options.items() if k in keys and v is not None}


# --- align functions -----------------------------------------------------------------------
def _dp_align(name: str, scorer, defaults: dict[str, Any]):
    def align(query: Sequence, target: Sequence, **options: Any) -> Alignment:
        from homalign.dp import align as dp_align

        opts = {**defaults, **options}
        ps = scorer(prepare(query, "query", **opts), prepare(target, "target", **opts),
                    **_score_options(scorer, opts))
        res = dp_align(ps.S, ps.gaps, mode=ps.mode)
        return Alignment(query.id, target.id, query.residues, target.residues, res.pairs,
                         float(res.score), name)

    return align


def align_hhm_mac(query: Sequence, target: Sequence, **options: Any) -> Alignment:
    """HMM–HMM maximum-accuracy alignment from forward–backward posteriors (HHsearch's MAC)."""
    opts = {**HHM_MAC_DEFAULTS, **options}
    return align_prepared_hhm_mac(query, target, prepare(query, "query", **opts),
                                  prepare(target, "target", **opts), **opts)


def align_prepared_hhm_mac(query: Sequence, target: Sequence, q: Any, t: Any,
                           **options: Any) -> Alignment:
    """:func:`align_hhm_mac` of two prepared representations (how ``search`` traces its hits
    back: the MAC alignment, not the Viterbi path that ranks them)."""
    from homalign.dp import align_score
    from homalign.dp.posterior import mac_align, posterior_matrix

    opts = {**HHM_MAC_DEFAULTS, **options}
    ps_nats = score_hhm(q, t, **_score_options(score_hhm, opts), units=math.log(2.0))
    P = posterior_matrix(ps_nats.S, ps_nats.gaps, mode="local",
                         temperature=float(opts["mac_temperature"]))
    res = mac_align(P, threshold=float(opts["mact"]))
    viterbi_bits = align_score(ps_nats.S, ps_nats.gaps, mode="local") / math.log(2.0)
    return Alignment(query.id, target.id, query.residues, target.residues, res.pairs,
                     float(viterbi_bits), "hhm-mac", extra={"mac_score": float(res.score)})


# --- HMMER via pyhmmer ---------------------------------------------------------------------
@lru_cache(maxsize=512)
def _hmmer_model(seq: Sequence, kind: str, arg: str):
    from homalign.profile.pyhmmer_adapter import build_hmm, read_hmm

    if kind == "hmmfile":
        return read_hmm(arg)
    if kind == "single":
        return build_hmm(seq)
    if kind == "file":
        msa = read_msa_file(arg)
        first = msa.rows[0].replace("-", "").replace(".", "").upper()
        if first != seq.residues:  # as the other profile methods' sources require
            raise InputError(f"the MSA's first row ({len(first)} residues) is not the sequence "
                             f"{seq.id!r} ({len(seq)} residues)", path=arg, record=msa.ids[0])
    elif kind == "iterative":
        from homalign.database_search import current

        n, db, inc = arg.split("|")
        msa = current().cached_msa(seq, db, int(n), inclusion_evalue=float(inc))
    else:
        raise ValueError("the hmm method cannot use an HH-suite .hhm; pass an MSA or a .hmm")
    return build_hmm(seq, msa)


@lru_cache(maxsize=512)
def query_on_model(seq: Sequence, path: str) -> bool:
    """Whether HMMER places any residue of ``seq`` on the model in ``path`` (a query model
    aligns targets to its own query: an off-model query's alignments have no pairs)."""
    from homalign.profile.pyhmmer_adapter import node_map

    return bool((node_map(_hmmer_model(seq, "hmmfile", path), seq) >= 0).any())


def align_hmmer(query: Sequence, target: Sequence, **options: Any) -> Alignment:
    """HMMER3 (pyhmmer): the query's profile HMM aligns the target (``query_hmm=`` a .hmm file)."""
    from homalign.profile.pyhmmer_adapter import hmm_align

    opts = {**BASE_DEFAULTS, **options}
    if opts.get("query_hmm") and opts.get("query_msa"):
        raise ValueError("query_hmm and query_msa both name the query's model; give one")
    if opts.get("query_hmm"):
        check_inclusion_evalue(opts)  # resolve_source checks the other sources
        kind, arg = "hmmfile", str(opts["query_hmm"])
    else:
        kind, arg = resolve_source(query, "query", opts)
    model = _hmmer_model(query, kind, arg)
    # a .hmm file of any provenance (hmmbuild defaults, Pfam): its nodes are mapped to the query;
    # a query off the model gets the model's score without pairs (a search refuses such a query:
    # homalign.search.entry.check_query_model; the model's E-value fit scores it against random
    # sequences)
    return hmm_align(model, query, target, method="hmm", nodes_are_query=kind != "hmmfile")


def _pyhmmer_available() -> str | None:
    try:
        import pyhmmer  # noqa: F401
    except ImportError:
        return "pyhmmer is not installed (pip install pyhmmer)"
    return None


def _mac_available() -> str | None:
    try:
        from homalign.dp.posterior import mac_align, posterior_matrix  # noqa: F401
    except ImportError:
        return "homalign.dp.posterior (posterior_matrix, mac_align) is not available"
    return None


def _entry(name: str, kind: str, description: str, scorer, options: tuple[Option, ...],
           align=None, available=None, many=None, align_prepared=None,
           null_law: str = "gumbel") -> Method:
    """A registry entry of ``scorer``; ``many`` (optional): its one-query-many-targets form
    (``Method.score_many``), taking the same keyword options as ``scorer``; ``null_law``: the
    law its E-value fit takes (:attr:`Method.null_law`)."""
    defaults = _defaults(options)

    def score(q: Any, t: Any, **opts: Any) -> PairScores:
        return scorer(q, t, **_score_options(scorer, {**defaults, **opts}))

    score_many = None
    if many is not None:
        def score_many(q: Any, target_codes: list[np.ndarray], **opts: Any) -> np.ndarray:
            return many(q, target_codes, **_score_options(scorer, {**defaults, **opts}))

    return Method(name, kind, description, align or _dp_align(name, scorer, defaults),
                  prepare, score, available or (lambda: None), defaults=defaults,
                  options=options, score_many=score_many, align_prepared=align_prepared,
                  null_law=null_law)


register(_entry("pssm", "profile",
                "PSI-BLAST class: query PSSM against the target sequence, MSA-derived gap costs",
                score_pssm, PSSM_OPTIONS, many=score_many_pssm))
register(_entry("profile-profile", "profile",
                "profile against profile; score='compass' (default) or 'prof_sim'",
                score_profile_profile, COMPASS_OPTIONS))
register(_entry("compass", "profile",
                "COMPASS-like Neff-weighted log-odds profile-profile alignment",
                score_profile_profile, COMPASS_OPTIONS))
register(_entry("prof-sim", "profile",
                "PROF_SIM-like Jensen-Shannon profile-profile alignment",
                score_profile_profile, PROF_SIM_OPTIONS, null_law="regression"))
# unrelated single-sequence HMMs (and PROF_SIM profiles) score ~0.4 bits a residue: in
# proportion to the lengths, which a Karlin-Altschul law cannot describe
register(_entry("hhm", "hmm",
                "HHsearch class: HMM-HMM Viterbi, log2 sum q p / f column score, transition gaps",
                score_hhm, HHM_OPTIONS, null_law="regression"))
register(_entry("hhm-mac", "hmm",
                "HHsearch class with maximum-accuracy (MAC) realignment from posteriors",
                score_hhm, HHM_MAC_OPTIONS, align=align_hhm_mac, available=_mac_available,
                align_prepared=align_prepared_hhm_mac, null_law="regression"))
register(Method("hmm", "hmm", "HMMER3 via pyhmmer: query profile HMM aligns the target",
                align_hmmer, available=_pyhmmer_available, options=HMMER_OPTIONS))
