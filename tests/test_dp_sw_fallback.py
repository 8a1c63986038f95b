"""search.sw_scores without pyopal runs dp.lanes.score_local_codes: the same scores, bit for
bit, as its numba reference kernel (_sw_many), for integer and fractional gap costs."""

from __future__ import annotations

import numpy as np
import pytest

from homalign.search.sw_scores import _sw_many, query_profile, sw_scores


@pytest.mark.parametrize("matrix", ["BLOSUM62", "BLOSUM45", "PAM250"])
@pytest.mark.parametrize("go,ge", [(11, 1), (10.3, 0.7), (0, 1), (3.3, 0.0), (0.1, 0.05)])
def test_lane_fallback_equals_the_numba_kernel(matrix: str, go: float, ge: float) -> None:
    rng = np.random.default_rng(int(go * 10 + ge * 100))
    lens = rng.integers(0, 120, 41)
    lens[:3] = (1, 0, 2)
    codes = rng.integers(0, 23, int(lens.sum())).astype(np.uint8)
    offsets = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    targets = np.concatenate((np.arange(41), [5, 5, 0, 40])).astype(np.int64)
    for lq in (1, 37, 150):
        q = rng.integers(0, 23, lq).astype(np.uint8)
        ref = _sw_many(query_profile(q, matrix), codes, offsets, targets,
                       np.float32(go + ge), np.float32(ge))
        got = sw_scores(q, codes, offsets, targets, matrix=matrix, gap_open=go, gap_extend=ge)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, ref)
    assert len(sw_scores(q, codes, offsets, np.zeros(0, np.int64), matrix=matrix)) == 0
