"""The score step's output for one pair, and its score.

:class:`PairScores` is what a method's ``score`` returns for two prepared proteins: the
substitution scores S[i, j], position-specific gap costs and the DP mode. :func:`score_values`
turns a batch of them into one number each (best path, or log-partition for ``kind="forward"``),
the one scoring entry that search, E-value calibration and the learned ranking share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class PairScores:
    """The score step's output: S[i, j] plus position-specific gaps and the DP mode to use."""

    S: np.ndarray
    gaps: Any  # homalign.dp.GapCosts
    mode: str = "local"
    kind: str = "viterbi"  # the pair's score: best path ("viterbi") or log-partition ("forward")


def score_values(scores: list[PairScores]) -> np.ndarray:
    """float64 score of each pair: its best-path score (batched, score-only DP) or, for
    ``kind="forward"``, the log-partition over all its alignments (HMMER3's forward score)."""
    from homalign.dp import align_batch
    from homalign.dp.posterior import log_partition

    out = np.empty(len(scores), dtype=np.float64)
    groups: dict[tuple[str, str], list[int]] = {}
    for n, ps in enumerate(scores):
        if ps.kind not in ("viterbi", "forward"):
            raise ValueError(f"unknown score kind {ps.kind!r}; expected 'viterbi' or 'forward'")
        groups.setdefault((ps.kind, ps.mode), []).append(n)
    for (kind, mode), idx in groups.items():
        if kind == "forward":
            for n in idx:
                out[n] = log_partition(scores[n].S, scores[n].gaps, mode=mode)
            continue
        res = align_batch([scores[n].S for n in idx], [scores[n].gaps for n in idx], mode=mode,
                          score_only=True)
        for n, r in zip(idx, res, strict=True):
            out[n] = float(r) if np.isscalar(r) else float(r.score)
    return out


__all__ = ["PairScores", "score_values"]
