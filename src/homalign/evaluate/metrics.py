"""Alignment-quality scores of a predicted pairwise alignment against a reference alignment.

Both alignments are sets of aligned residue pairs ``(i, j)`` on the ungapped sequences (int32
``(k, 2)`` arrays, as in :class:`homalign.alignment.Alignment`). The scores are the usual ones of
structure-based alignment benchmarks:

- ``N_correct``: predicted pairs that the reference also aligns. With a shift tolerance ``k`` a
  predicted ``(i, j)`` counts when the reference aligns query residue ``i`` to some ``j'`` with
  ``|j' - j| <= k`` (``k = 0``: exact match).
- ``S_dev = N_correct / min(Lq, Lt)``: the "developer" score, normalised here by the length of the
  shorter sequence (the most pairs any alignment can have). Benchmarks that normalise by the
  number of reference pairs instead call that quantity recall; both are reported.
- ``S_mod = N_correct / L_ali``: the "modeler" score, the fraction of predicted pairs that are
  correct (0 for an empty prediction). It is the precision.
- ``recall = N_correct / N_ref`` and ``F1`` (harmonic mean of precision and recall).
- ``balanced = (S_dev + S_mod) / 2``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, fields

import numpy as np

TWILIGHT_IDENTITY = 0.30
"""Reference pairs below this sequence identity form the twilight-zone subset."""


@dataclass(frozen=True)
class PairMetrics:
    """The scores of one predicted alignment against its reference (see the module docstring).

    ``balanced`` is the mean, not the sum, of ``S_dev`` and ``S_mod`` so that it stays in [0, 1]
    like the others. ``ref_identity`` is the reference alignment's sequence identity (NaN when
    unknown); it only selects the twilight subset in :func:`summarise`.
    """

    Lq: int
    Lt: int
    N_ref: int
    L_ali: int
    N_correct: int
    S_dev: float
    S_mod: float
    balanced: float
    precision: float
    recall: float
    F1: float
    ref_identity: float = math.nan


def _as_pairs(pairs: np.ndarray | Iterable) -> np.ndarray:
    arr = np.asarray(pairs, dtype=np.int64)
    return arr.reshape(-1, 2)


def count_correct(
    predicted: np.ndarray, reference: np.ndarray, query_length: int, shift: int = 0
) -> int:
    """Number of predicted pairs ``(i, j)`` whose reference partner of ``i`` lies within ±shift of j.

    Vectorised: the reference becomes a partner array over the query (-1 = not aligned).
    """
    if shift < 0:
        raise ValueError(f"shift tolerance must be >= 0, got {shift}")
    pred = _as_pairs(predicted)
    ref = _as_pairs(reference)
    if len(pred) == 0 or len(ref) == 0:
        return 0
    partner = np.full(query_length, -1, dtype=np.int64)
    partner[ref[:, 0]] = ref[:, 1]
    p = partner[pred[:, 0]]
    return int(((p >= 0) & (np.abs(p - pred[:, 1]) <= shift)).sum())


def score_pair(
    predicted: np.ndarray,
    reference: np.ndarray,
    query_length: int,
    target_length: int,
    *,
    shift: int = 0,
    ref_identity: float = math.nan,
) -> PairMetrics:
    """Score one predicted alignment against the reference alignment of the same two sequences."""
    if query_length <= 0 or target_length <= 0:
        raise ValueError("sequence lengths must be positive")
    pred = _as_pairs(predicted)
    ref = _as_pairs(reference)
    for name, arr in (("predicted", pred), ("reference", ref)):
        if len(arr) and (
            arr[:, 0].min() < 0 or arr[:, 0].max() >= query_length
            or arr[:, 1].min() < 0 or arr[:, 1].max() >= target_length
        ):
            raise ValueError(f"{name} pairs index outside the sequences")
        if len(arr) > 1 and (np.diff(arr, axis=0) <= 0).any():
            raise ValueError(f"{name} pairs must be strictly increasing in both sequences (an "
                             "alignment aligns each residue once, in order)")
    n_correct = count_correct(pred, ref, query_length, shift)
    l_ali, n_ref = len(pred), len(ref)
    s_dev = n_correct / min(query_length, target_length)
    s_mod = n_correct / l_ali if l_ali else 0.0
    recall = n_correct / n_ref if n_ref else 0.0
    f1 = 2 * s_mod * recall / (s_mod + recall) if s_mod + recall > 0 else 0.0
    return PairMetrics(
        Lq=query_length, Lt=target_length, N_ref=n_ref, L_ali=l_ali, N_correct=n_correct,
        S_dev=s_dev, S_mod=s_mod, balanced=(s_dev + s_mod) / 2, precision=s_mod, recall=recall,
        F1=f1, ref_identity=float(ref_identity),
    )


SUMMARY_SCORES = ("S_dev", "S_mod", "balanced", "precision", "recall", "F1")


def summarise(rows: Iterable[PairMetrics], twilight: float = TWILIGHT_IDENTITY) -> dict:
    """Means over pairs of every score, and over the twilight subset (reference identity < 30%).

    Returns ``{"pairs": n, "S_dev": ..., ..., "F1": ..., "twilight_pairs": m, "twilight_S_dev": ...,
    ...}``; means of an empty set are NaN. Pairs with unknown identity are not in the subset.
    """
    rows = list(rows)
    names = [f.name for f in fields(PairMetrics)]
    table = {n: np.array([getattr(r, n) for r in rows], dtype=np.float64) for n in names}
    tw = table["ref_identity"] < twilight if rows else np.zeros(0, dtype=bool)
    out: dict = {"pairs": len(rows)}
    for n in SUMMARY_SCORES:
        out[n] = float(table[n].mean()) if rows else math.nan
    out["twilight_pairs"] = int(tw.sum())
    for n in SUMMARY_SCORES:
        out[f"twilight_{n}"] = float(table[n][tw].mean()) if tw.any() else math.nan
    return out


__all__ = [
    "SUMMARY_SCORES", "TWILIGHT_IDENTITY", "PairMetrics", "count_correct", "score_pair", "summarise",
]
