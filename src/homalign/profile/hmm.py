"""Profile HMMs with match, insert and delete states (the HHsearch-class representation).

A :class:`ProfileHMM` has, per match column, emission probabilities over the 20 amino acids and
the seven transition probabilities MM, MI, MD (from the match state), IM, II (from the insert
state after the column) and DM, DD (from the delete state). They come from a
:class:`~homalign.profile.Profile`'s weighted transition counts with HMMER3's transition priors
(posterior mean of a Dirichlet, :mod:`homalign.profile.mixtures`), or from an HH-suite ``.hhm``.

Gap model for HMM–HMM alignment (:func:`hmm_gap_vectors`, :func:`pair_gap_costs`), in bits: a run
of k skipped columns starting at column i costs ``open[i] + k ext`` with
``ext = -log2 t_DD`` and ``open = -log2 t_MD - log2 t_DM + log2 t_DD + log2 t_MM`` (the delete
path relative to staying in the match states), all taken at column i - 1; inserts likewise with
MI, IM, II. A query's delete costs go on ``q_ins_*`` and its insert costs on ``q_del_*``
(symmetrically for the target), as the DP contract says. Both HMMs contribute, each with weight
``gap_weight`` (0.5 would be the geometric mean of the two HMMs' transition probabilities; the
``hhm`` method uses 0.4, tuned on HOMSTRAD train), since a query column against nothing is
explained by the query's delete or the target's insert. Unlike HHsearch we do not add the
M→M transition scores to the column scores (they are close to 0 bits and we keep S a pure column
score); this simplification and the summed two-sided gaps are the main differences from
HHsearch's pair-state Viterbi.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from homalign.alphabet import BACKGROUND
from homalign.profile.mixtures import TRANSITION_PRIOR_D, TRANSITION_PRIOR_I, TRANSITION_PRIOR_M
from homalign.profile.profile import TRANSITIONS, Profile
from homalign.sequence import Sequence

MM, MI, MD, IM, II, DM, DD = range(7)


@dataclass(frozen=True, eq=False)
class ProfileHMM:
    """A profile HMM over the columns of its query sequence.

    Attributes:
        query: the sequence the match states index.
        probs: float64 (L, 20) match emission probabilities (ALPHABET order).
        transitions: float64 (L, 7) probabilities MM, MI, MD, IM, II, DM, DD leaving column i.
        n_eff: float64 (L,) effective number of sequences per column.
        neff: Neff of the whole MSA.
        freqs: observed frequencies when known (from an MSA), else None (e.g. from a .hhm).
    """

    query: Sequence
    probs: np.ndarray
    transitions: np.ndarray
    n_eff: np.ndarray
    neff: float = 1.0
    freqs: np.ndarray | None = None
    name: str = ""
    background: np.ndarray = field(default_factory=lambda: BACKGROUND.copy())

    def __len__(self) -> int:
        return len(self.query)

    @cached_property
    def query_odds(self) -> np.ndarray:
        """The HMM as a query of :func:`homalign.score.profile_scores.hhsearch_scores`: its
        emissions over its background, float32 (L, 20), made once (a query meets every target;
        a target's float32 columns are made per pair, not kept: 80 bytes a residue of every
        target a search holds)."""
        from homalign.score.profile_scores import hhsearch_query_odds

        return hhsearch_query_odds(self.probs, self.background)

    def side_costs(self, weight: float) -> Any:
        """This HMM's half of a pair's gap costs at ``weight`` (a
        :class:`homalign.dp.gaps.SideCosts`: its delete costs on its residues, its insert costs
        on its slots, times ``weight``), made once per weight: a search pairs a target's HMM
        with every query."""
        from homalign.dp.gaps import SideCosts

        cache = self.__dict__.setdefault("_side_costs", {})
        side = cache.get(weight)
        if side is None:
            g = hmm_gap_vectors(self)
            try:
                side = SideCosts(weight * g["del_open"], weight * g["del_ext"],
                                 weight * g["ins_open"], weight * g["ins_ext"])
            except ValueError as err:
                raise ValueError(f"HMM {self.name or self.query.id!r}: gap costs {err}") from None
            cache[weight] = side
        return side

    @classmethod
    def from_profile(cls, profile: Profile, name: str | None = None) -> ProfileHMM:
        """Estimate transitions from the profile's weighted counts with HMMER3's priors."""
        return cls(profile.query, profile.probs, estimate_transitions(profile.trans_counts),
                   profile.n_eff, profile.neff, profile.freqs, name or profile.query.id,
                   profile.background)

    @classmethod
    def from_sequence(cls, seq: Sequence | str, **options: Any) -> ProfileHMM:
        return cls.from_profile(Profile.from_sequence(seq, **options))

    @classmethod
    def from_msa(cls, msa: Any, **options: Any) -> ProfileHMM:
        return cls.from_profile(Profile.from_msa(msa, **options))

    def to_profile(self) -> Profile:
        """A :class:`Profile` with these emissions (observed freqs = emissions if unknown)."""
        L = len(self)
        occ = np.zeros((L, 2))
        occ[:, 0] = self.n_eff
        return Profile(self.query, self.freqs if self.freqs is not None else self.probs,
                       self.probs, self.n_eff, self.neff, self.transitions * self.neff, occ,
                       background=self.background)


def estimate_transitions(counts: np.ndarray) -> np.ndarray:
    """(L, 7) transition probabilities: posterior means under HMMER3's Dirichlet priors."""
    c = np.asarray(counts, dtype=np.float64)
    out = np.empty_like(c)
    for sl, prior in ((slice(0, 3), TRANSITION_PRIOR_M), (slice(3, 5), TRANSITION_PRIOR_I),
                      (slice(5, 7), TRANSITION_PRIOR_D)):
        x = c[:, sl] + prior
        out[:, sl] = x / x.sum(axis=1, keepdims=True)
    return out


def hmm_gap_vectors(hmm: ProfileHMM) -> dict[str, np.ndarray]:
    """Per-side gap costs in bits: ``del_open``/``del_ext`` (L,) for skipping column i onwards,
    ``ins_open``/``ins_ext`` (L + 1,) for residues inserted in slot i (after column i - 1)."""
    lt = np.log2(np.maximum(hmm.transitions, 1e-6))
    L = len(hmm)
    prev = np.concatenate([[0], np.arange(L - 1)])  # column i - 1 (column 0 uses itself)
    t = lt[prev]
    del_open = -t[:, MD] - t[:, DM] + t[:, DD] + t[:, MM]
    del_ext = -t[:, DD]
    ins_open_c = -lt[:, MI] - lt[:, IM] + lt[:, II] + lt[:, MM]  # insert after column c
    ins_ext_c = -lt[:, II]
    slot = np.concatenate([[0], np.arange(L)])  # slot i lies after column i - 1 (slot 0: col 0)
    return {
        "del_open": np.maximum(del_open, 0.0), "del_ext": np.maximum(del_ext, 0.0),
        "ins_open": np.maximum(ins_open_c[slot], 0.0), "ins_ext": np.maximum(ins_ext_c[slot], 0.0),
    }


def pair_gap_costs(q: ProfileHMM, t: ProfileHMM, *, gap_weight: float = 0.5, scale: float = 1.0):
    """``GapCosts`` for aligning two HMMs: both sides' transition costs, weighted (see above;
    each HMM's weighted half is made once, :meth:`ProfileHMM.side_costs`)."""
    from homalign.dp import GapCosts

    w = gap_weight * scale
    return GapCosts.from_sides(q.side_costs(w), t.side_costs(w))


__all__ = ["TRANSITIONS", "ProfileHMM", "estimate_transitions", "hmm_gap_vectors",
           "pair_gap_costs"]
