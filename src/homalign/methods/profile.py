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

import math
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from homalign.alignment import Alignment
from homalign.methods import register
from homalign.methods.base import Method, PairScores
from homalign.profile.hmm import ProfileHMM, pair_gap_costs
from homalign.profile.profile import Profile
from homalign.profile.sources import get_profile, read_msa_file, resolve_source
from homalign.score.profile_scores import (
    compass_scores,
    hhsearch_scores,
    prof_sim_scores,
    pssm_sequence_scores,
)
from homalign.sequence import Sequence

BASE_DEFAULTS: dict[str, Any] = {"msa": "single", "matrix": "BLOSUM62"}
PSSM_DEFAULTS = {**BASE_DEFAULTS, "pseudocounts": "matrix", "admix": "psiblast",
                 "gap_open": 11.0, "gap_extend": 1.0, "pssm_kind": "logodds"}
COMPASS_DEFAULTS = {**PSSM_DEFAULTS, "score": "compass"}
PROF_SIM_DEFAULTS = {**BASE_DEFAULTS, "pseudocounts": "matrix", "admix": "psiblast",
                     "score": "prof_sim", "shift": 0.40, "scale": 48.0, "gap_open": 11.0,
                     "gap_extend": 1.0}
AUTO_SHIFT = 0.6
HHM_DEFAULTS = {**BASE_DEFAULTS, "pseudocounts": "dirichlet", "admix": "hhsuite",
                "hh_shift": "auto", "gap_weight": 0.4}
HHM_MAC_DEFAULTS = {**HHM_DEFAULTS, "mact": 0.35, "mac_temperature": 1.0}


class ProteinRep:
    """One protein prepared for a profile method: its sequence and, built on first use, its
    Profile and ProfileHMM (from the source the options name)."""

    def __init__(self, seq: Sequence, role: str | None = None, options: dict | None = None,
                 source: Profile | ProfileHMM | None = None) -> None:
        self.seq = seq
        self.role = role
        self.options = dict(options or {})
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
            self.__dict__[key] = self.profile.pssm(kind)
        return self.__dict__[key]

    def gap_vectors(self, open: float, extend: float) -> dict[str, np.ndarray]:
        """The profile's gap vectors (memoised per rep: a search reuses them per target)."""
        key = ("_gapvec", float(open), float(extend))
        if key not in self.__dict__:
            self.__dict__[key] = self.profile.gap_vectors(open, extend)
        return self.__dict__[key]

    def query_gap_costs(self, lt: int, open: float, extend: float):
        """GapCosts with only this (query) side's costs, memoised per target length."""
        key = ("_qgaps", lt, float(open), float(extend))
        if key not in self.__dict__:
            self.__dict__[key] = _gap_costs(self.gap_vectors(open, extend), None, len(self), lt)
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


def _gap_costs(vq: dict[str, np.ndarray], vt: dict[str, np.ndarray] | None, lq: int, lt: int,
               weight: float = 1.0):
    """GapCosts from per-side gap vectors (query delete → q_ins, query insert → q_del, ...)."""
    from homalign.dp import GapCosts

    vec: dict[str, np.ndarray] = {
        "q_ins_open": weight * vq["del_open"], "q_ins_ext": weight * vq["del_ext"],
        "q_del_open": weight * vq["ins_open"], "q_del_ext": weight * vq["ins_ext"],
    }
    if vt is not None:
        vec.update({
            "t_del_open": weight * vt["del_open"], "t_del_ext": weight * vt["del_ext"],
            "t_ins_open": weight * vt["ins_open"], "t_ins_ext": weight * vt["ins_ext"],
        })
    return GapCosts.from_vectors(lq, lt, **vec)


# --- score functions (two representations -> PairScores) ---------------------------------
def score_pssm(q: Any, t: Any, *, gap_open: float = 11.0, gap_extend: float = 1.0,
               pssm_kind: str = "logodds", **_: Any) -> PairScores:
    q, t = _rep(q), _rep(t)
    S = pssm_sequence_scores(q.pssm(pssm_kind), t.seq.codes)
    gaps = q.query_gap_costs(len(t), gap_open, gap_extend)
    return PairScores(S, gaps, "local")


def score_profile_profile(q: Any, t: Any, *, score: str = "compass", gap_open: float = 11.0,
                          gap_extend: float = 1.0, shift: float = 0.40, scale: float = 48.0,
                          **_: Any) -> PairScores:
    q, t = _rep(q), _rep(t)
    pq, pt = q.profile, t.profile
    if score == "compass":
        S = compass_scores(pq.freqs, pq.probs, pq.n_eff, pt.freqs, pt.probs, pt.n_eff,
                           pq.background, pq.lam)
    elif score in ("prof_sim", "prof-sim"):
        S = prof_sim_scores(pq.probs, pt.probs, pq.background, shift=shift, scale=scale)
    else:
        raise ValueError(f"unknown profile-profile score {score!r}; choose 'compass' or 'prof_sim'")
    gaps = _gap_costs(q.gap_vectors(gap_open, gap_extend), t.gap_vectors(gap_open, gap_extend),
                      len(pq), len(pt), 0.5)
    return PairScores(S, gaps, "local")


def score_hhm(q: Any, t: Any, *, hh_shift: float | str = "auto", gap_weight: float = 0.4,
              units: float = 1.0, **_: Any) -> PairScores:
    """HHsearch column scores and transition gaps, in bits times ``units``.

    ``hh_shift="auto"``: ``0.6 / sqrt(Neff_q Neff_t)`` bits — +0.6 for two single sequences,
    shrinking towards HHsearch's ~0 as the MSAs get diverse."""
    q, t = _rep(q), _rep(t)
    hq, ht = q.hmm, t.hmm
    if hh_shift == "auto":
        hh_shift = AUTO_SHIFT / math.sqrt(max(hq.neff, 1.0) * max(ht.neff, 1.0))
    S = hhsearch_scores(hq.probs, ht.probs, hq.background, shift=hh_shift, scale=units)
    return PairScores(S, pair_gap_costs(hq, ht, gap_weight=gap_weight, scale=units), "local")


# --- align functions -----------------------------------------------------------------------
def _dp_align(name: str, scorer, defaults: dict[str, Any]):
    def align(query: Sequence, target: Sequence, **options: Any) -> Alignment:
        from homalign.dp import align as dp_align

        opts = {**defaults, **options}
        ps = scorer(prepare(query, "query", **opts), prepare(target, "target", **opts), **opts)
        res = dp_align(ps.S, ps.gaps, mode=ps.mode)
        return Alignment(query.id, target.id, query.residues, target.residues, res.pairs,
                         float(res.score), name)

    return align


def align_hhm_mac(query: Sequence, target: Sequence, **options: Any) -> Alignment:
    """HMM–HMM maximum-accuracy alignment from forward–backward posteriors (HHsearch's MAC)."""
    from homalign.dp import align_score
    from homalign.dp.posterior import mac_align, posterior_matrix

    opts = {**HHM_MAC_DEFAULTS, **options}
    q, t = prepare(query, "query", **opts), prepare(target, "target", **opts)
    ps_nats = score_hhm(q, t, **{**opts, "units": math.log(2.0)})
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
    elif kind == "iterative":
        from homalign.search.iterative import cached_msa

        n, db, inc = arg.split("|")
        msa = cached_msa(seq, db, int(n), inclusion_evalue=float(inc))
    else:
        raise ValueError("the hmm method cannot use an HH-suite .hhm; pass an MSA or a .hmm")
    return build_hmm(seq, msa)


def align_hmmer(query: Sequence, target: Sequence, **options: Any) -> Alignment:
    """HMMER3 (pyhmmer): the query's profile HMM aligns the target (``query_hmm=`` a .hmm file)."""
    from homalign.profile.pyhmmer_adapter import hmm_align

    opts = {**BASE_DEFAULTS, **options}
    if opts.get("query_hmm"):
        kind, arg = "hmmfile", str(opts["query_hmm"])
    else:
        kind, arg = resolve_source(query, "query", opts)
    model = _hmmer_model(query, kind, arg)
    if model.M != len(query):
        from homalign.errors import InputError

        raise InputError(f"the HMM has {model.M} match states but the query has {len(query)} "
                         "residues", path=arg or None, record=query.id)
    return hmm_align(model, query, target, method="hmm")


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


def _entry(name: str, kind: str, description: str, scorer, defaults: dict[str, Any],
           align=None, available=None) -> Method:
    def score(q: Any, t: Any, **options: Any) -> PairScores:
        return scorer(q, t, **{**defaults, **options})

    return Method(name, kind, description, align or _dp_align(name, scorer, defaults),
                  prepare, score, available or (lambda: None), defaults=defaults)


register(_entry("pssm", "profile",
                "PSI-BLAST class: query PSSM against the target sequence, MSA-derived gap costs",
                score_pssm, PSSM_DEFAULTS))
register(_entry("profile-profile", "profile",
                "profile against profile; score='compass' (default) or 'prof_sim'",
                score_profile_profile, COMPASS_DEFAULTS))
register(_entry("compass", "profile",
                "COMPASS-like Neff-weighted log-odds profile-profile alignment",
                score_profile_profile, COMPASS_DEFAULTS))
register(_entry("prof-sim", "profile",
                "PROF_SIM-like Jensen-Shannon profile-profile alignment",
                score_profile_profile, PROF_SIM_DEFAULTS))
register(_entry("hhm", "hmm",
                "HHsearch class: HMM-HMM Viterbi, log2 sum q p / f column score, transition gaps",
                score_hhm, HHM_DEFAULTS))
register(_entry("hhm-mac", "hmm",
                "HHsearch class with maximum-accuracy (MAC) realignment from posteriors",
                score_hhm, HHM_MAC_DEFAULTS, align=align_hhm_mac, available=_mac_available))
register(Method("hmm", "hmm", "HMMER3 via pyhmmer: query profile HMM aligns the target",
                align_hmmer, available=_pyhmmer_available, defaults=dict(BASE_DEFAULTS)))
