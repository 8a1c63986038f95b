"""Sequence–sequence methods: a substitution matrix lookup aligned by the exact DP engine.

Gap costs follow BLAST's convention: a gap of length k costs ``gap_open + k * gap_extend``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from homalign.matrices import score_matrix
from homalign.methods import register
from homalign.methods.base import PairScores, dp_method
from homalign.sequence import Sequence

SEQUENCE_DEFAULTS = {"matrix": "BLOSUM62", "gap_open": 11.0, "gap_extend": 1.0}


def _prepare(seq: Sequence, **_: Any) -> np.ndarray:
    return seq.codes


def _scorer(mode: str):
    def score(q: np.ndarray, t: np.ndarray, *, matrix: str = "BLOSUM62", gap_open: float = 11.0,
              gap_extend: float = 1.0, **_: Any) -> PairScores:
        from homalign.dp import GapCosts

        S = score_matrix(q, t, matrix)
        return PairScores(S, GapCosts.uniform(len(q), len(t), gap_open, gap_extend), mode)

    return score


for _name, _mode, _desc in (
    ("sw", "local", "Smith-Waterman local alignment, substitution matrix, affine gaps"),
    ("nw", "global", "Needleman-Wunsch global alignment, substitution matrix, affine gaps"),
    ("glocal", "glocal", "query end to end, target local; substitution matrix, affine gaps"),
    ("semiglobal", "semiglobal", "free end gaps on both sequences; substitution matrix"),
):
    register(dp_method(_name, "sequence", _desc, _prepare, _scorer(_mode), SEQUENCE_DEFAULTS))
