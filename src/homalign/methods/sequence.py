"""Sequence–sequence methods: a substitution matrix lookup aligned by the exact DP engine.

Gap costs follow BLAST's convention: a gap of length k costs ``gap_open + k * gap_extend``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from homalign.alignment import Alignment
from homalign.matrices import score_matrix, substitution_matrix
from homalign.methods import register
from homalign.methods.base import Option, PairScores, dp_method
from homalign.sequence import Sequence

#: the options of every sequence method (the one place they are declared)
SEQUENCE_OPTIONS = (
    Option("matrix", str, "BLOSUM62", "substitution matrix (BLOSUM62, BLOSUM45, PAM250, ...)"),
    Option("gap_open", float, 11.0, "gap open cost: a gap of length k costs open + k * extend",
           low=0.0),
    Option("gap_extend", float, 1.0, "gap extend cost (per gap residue)", low=0.0),
)
SEQUENCE_DEFAULTS = {o.name: o.default for o in SEQUENCE_OPTIONS}


def _prepare(seq: Sequence, role: str | None = None, **_options: Any) -> np.ndarray:
    """The sequence's codes (the options, checked by the registry, are the score's)."""
    return seq.codes


def _scorer(mode: str):
    def score(q: np.ndarray, t: np.ndarray, *, matrix: str = "BLOSUM62", gap_open: float = 11.0,
              gap_extend: float = 1.0) -> PairScores:
        from homalign.dp import GapCosts

        S = score_matrix(q, t, matrix)
        return PairScores(S, GapCosts.uniform(len(q), len(t), gap_open, gap_extend), mode)

    return score


def _hits_aligner(name: str, mode: str):
    def align_hits(query: Sequence, targets: list[Sequence], scores: np.ndarray, *,
                   matrix: str = "BLOSUM62", gap_open: float = 11.0,
                   gap_extend: float = 1.0) -> list[Alignment]:
        """``align`` of ``query`` with each of its search hits in one call: the 16-lane
        traceback kernel on the codes (:func:`homalign.dp.align_codes`, the same alignments)."""
        from homalign.dp import align_codes

        res = align_codes([query.codes] * len(targets), [t.codes for t in targets],
                          substitution_matrix(matrix), gap_open, gap_extend, mode)
        return [Alignment(query_id=query.id, target_id=t.id, query=query.residues,
                          target=t.residues, pairs=r.pairs, score=float(r.score), method=name,
                          extra={"mode": mode})
                for t, r in zip(targets, res, strict=True)]

    return align_hits


for _name, _mode, _desc in (
    ("sw", "local", "Smith-Waterman local alignment, substitution matrix, affine gaps"),
    ("nw", "global", "Needleman-Wunsch global alignment, substitution matrix, affine gaps"),
    ("glocal", "glocal", "query end to end, target local; substitution matrix, affine gaps"),
    ("semiglobal", "semiglobal", "free end gaps on both sequences; substitution matrix"),
):
    register(replace(dp_method(_name, "sequence", _desc, _prepare, _scorer(_mode),
                               options=SEQUENCE_OPTIONS),
                     align_hits=_hits_aligner(_name, _mode)))
