"""``fuse_hits``: one ranking from several searches by the weighted geometric mean of E-values."""

from __future__ import annotations

import math

import pytest

from homalign.search import Hit, fuse_hits, rank_hits


def _hits(evalues: dict[str, float]) -> list[Hit]:
    return [Hit("q", t, int(t[1:]), score=10.0 - k, bits=1.0, evalue=e)
            for k, (t, e) in enumerate(evalues.items())]


def test_fused_evalue_is_the_weighted_geometric_mean_and_ranks():
    a = _hits({"t1": 1e-10, "t2": 1.0, "t3": 1e-2})
    b = _hits({"t1": 1e-2, "t2": 1e-12, "t3": 1e-3})
    out = fuse_hits([a, b], [0.25, 0.75])
    got = {h.target_id: h.evalue for h in out}
    assert got["t1"] == pytest.approx(math.exp(0.25 * math.log(1e-10) + 0.75 * math.log(1e-2)))
    assert got["t2"] == pytest.approx(1e-9)
    assert [h.target_id for h in out] == ["t2", "t1", "t3"]
    assert [h.score for h in out] == [9.0, 10.0, 8.0]  # the first list's hits


def test_a_target_missing_from_a_list_takes_its_worst_evalue():
    a = _hits({"t1": 1e-6, "t2": 5.0})
    b = _hits({"t1": 1e-6, "t3": 1e-4})
    got = {h.target_id: h.evalue for h in fuse_hits([a, b], [0.5, 0.5])}
    assert got["t2"] == pytest.approx(math.sqrt(5.0 * 1e-4))
    assert got["t3"] == pytest.approx(math.sqrt(5.0 * 1e-4))
    assert got["t1"] == pytest.approx(1e-6)


def test_zero_evalues_do_not_break_the_logarithm():
    out = fuse_hits([_hits({"t1": 0.0}), _hits({"t1": 1e-20})], [0.5, 0.5])
    assert 0.0 < out[0].evalue < 1e-100


@pytest.mark.parametrize("weights", [[0.5], [0.7, 0.7], [-0.5, 1.5]])
def test_bad_weights_are_rejected(weights):
    with pytest.raises(ValueError, match="weight"):
        fuse_hits([_hits({"t1": 1.0}), _hits({"t1": 1.0})], weights)


def test_ties_rank_as_rank_hits_and_a_later_list_supplies_missing_hits():
    a = [Hit("q", "t5", 5, score=3.0, bits=1.0, evalue=1e-3),
         Hit("q", "t4", 4, score=3.0, bits=1.0, evalue=1e-3),
         Hit("q", "t2", 2, score=7.0, bits=1.0, evalue=1e-3)]
    b = [Hit("q", "t5", 5, score=0.0, bits=1.0, evalue=1e-3),
         Hit("q", "t4", 4, score=0.0, bits=1.0, evalue=1e-3),
         Hit("q", "t2", 2, score=0.0, bits=1.0, evalue=1e-3),
         Hit("q", "t9", 9, score=42.0, bits=2.0, evalue=1e-3)]
    out = fuse_hits([a, b], [0.5, 0.5])
    # equal E-values: the higher score first, then database order (t9: a's worst E, b's hit)
    assert [h.target_id for h in out] == ["t9", "t2", "t4", "t5"]
    assert out == rank_hits(out)
    assert (out[0].score, out[0].bits) == (42.0, 2.0)
