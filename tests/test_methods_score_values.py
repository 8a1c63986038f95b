"""``score_values``: one scoring entry for search and calibration (best path or forward score)."""

from __future__ import annotations

import numpy as np
import pytest

from homalign.dp import GapCosts, align_score
from homalign.dp.posterior import log_partition
from homalign.score.pair_scores import PairScores, score_values


def _pair(seed: int, lq: int, lt: int) -> tuple[np.ndarray, GapCosts]:
    rng = np.random.default_rng(seed)
    S = rng.normal(-0.5, 1.5, (lq, lt)).astype(np.float32)
    return S, GapCosts.uniform(lq, lt, 3.0, 0.5)


def test_viterbi_and_forward_scores_by_kind_and_mode() -> None:
    items = []
    for k, (mode, kind) in enumerate([("local", "viterbi"), ("global", "forward"),
                                      ("local", "forward"), ("global", "viterbi"),
                                      ("local", "viterbi")]):
        S, g = _pair(k, 7 + k, 9 - k)
        items.append(PairScores(S, g, mode, kind))
    got = score_values(items)
    for ps, value in zip(items, got, strict=True):
        want = (log_partition(ps.S, ps.gaps, mode=ps.mode) if ps.kind == "forward"
                else align_score(ps.S, ps.gaps, mode=ps.mode))
        assert value == pytest.approx(float(want), rel=1e-6, abs=1e-6)
    # the forward score sums over alignments, so it is at least the best path's score
    assert got[2] >= float(align_score(items[2].S, items[2].gaps, mode="local")) - 1e-9


def test_unknown_kind_is_refused() -> None:
    S, g = _pair(0, 4, 4)
    with pytest.raises(ValueError, match="score kind"):
        score_values([PairScores(S, g, "local", "sum")])
