"""Alignment-quality metrics on hand-made alignments."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from homalign.evaluate.metrics import count_correct, score_pair, summarise


def _diag(n: int, offset: int = 0) -> np.ndarray:
    return np.array([(i, i + offset) for i in range(n)], dtype=np.int32)


def test_identity_alignment_scores_one():
    ref = _diag(12)
    m = score_pair(ref, ref, 12, 12)
    assert m.N_correct == 12
    assert m.S_dev == m.S_mod == m.F1 == m.recall == m.precision == m.balanced == 1.0


def test_one_residue_shift_is_wrong_at_k0_and_right_at_k1():
    ref = _diag(9)  # query 0..8 aligned to target 0..8
    pred = _diag(9, offset=1)  # every pair shifted by one target residue
    exact = score_pair(pred, ref, 9, 10)
    assert exact.N_correct == 0
    assert exact.S_dev == exact.S_mod == exact.F1 == 0.0
    tolerant = score_pair(pred, ref, 9, 10, shift=1)
    assert tolerant.N_correct == 9
    assert tolerant.S_dev == tolerant.S_mod == tolerant.recall == tolerant.F1 == 1.0


def test_empty_prediction():
    m = score_pair(np.zeros((0, 2), np.int32), _diag(5), 5, 7)
    assert (m.N_correct, m.L_ali, m.N_ref) == (0, 0, 5)
    assert m.S_dev == m.S_mod == m.recall == m.F1 == m.balanced == 0.0


def test_hand_computed_mixed_case():
    ref = np.array([(0, 0), (1, 1), (2, 3), (3, 4), (5, 5)])
    pred = np.array([(0, 0), (1, 2), (2, 3), (4, 4), (5, 6)])
    m = score_pair(pred, ref, 6, 7)
    # correct: (0,0), (2,3); (1,2) and (5,6) are off by one; query 4 is unaligned in the reference
    assert m.N_correct == 2
    assert m.S_dev == pytest.approx(2 / 6)
    assert m.S_mod == pytest.approx(2 / 5)
    assert m.recall == pytest.approx(2 / 5)
    assert m.F1 == pytest.approx(0.4)
    assert m.balanced == pytest.approx((2 / 6 + 2 / 5) / 2)
    m1 = score_pair(pred, ref, 6, 7, shift=1)
    assert m1.N_correct == 4
    assert m1.S_mod == pytest.approx(0.8)
    assert m1.F1 == pytest.approx(0.8)


def test_bad_input_rejected():
    with pytest.raises(ValueError):
        score_pair(_diag(3), _diag(3), 3, 3, shift=-1)
    with pytest.raises(ValueError):
        score_pair(_diag(4), _diag(3), 3, 5)  # query index 3 outside Lq=3
    with pytest.raises(ValueError):
        score_pair(_diag(3), _diag(3), 0, 3)
    # an aligner's pairs align each residue once, in order: ten copies of one pair cannot
    # make a recall of 3.3
    with pytest.raises(ValueError, match="strictly increasing"):
        score_pair(np.array([[0, 0]] * 10), _diag(3), 5, 5)
    with pytest.raises(ValueError, match="strictly increasing"):
        score_pair(_diag(3), np.array([[0, 1], [1, 0]]), 5, 5)


@st.composite
def _alignment(draw, lq: int, lt: int):
    """A random strictly increasing set of pairs."""
    k = draw(st.integers(0, min(lq, lt)))
    qi = sorted(draw(st.lists(st.integers(0, lq - 1), min_size=k, max_size=k, unique=True)))
    ti = sorted(draw(st.lists(st.integers(0, lt - 1), min_size=k, max_size=k, unique=True)))
    return np.array(list(zip(qi, ti, strict=True)), dtype=np.int32).reshape(-1, 2)


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 25), st.integers(1, 25), st.integers(0, 3))
def test_count_correct_matches_a_set_definition(data, lq, lt, shift):
    ref = data.draw(_alignment(lq, lt))
    pred = data.draw(_alignment(lq, lt))
    partner = {int(i): int(j) for i, j in ref}
    expected = sum(1 for i, j in pred if int(i) in partner and abs(partner[int(i)] - j) <= shift)
    assert count_correct(pred, ref, lq, shift) == expected
    m = score_pair(pred, ref, lq, lt, shift=shift)
    for value in (m.S_dev, m.S_mod, m.balanced, m.recall, m.F1):
        assert 0.0 <= value <= 1.0


def test_summarise_means_and_twilight_subset():
    ref = _diag(10)
    rows = [
        score_pair(ref, ref, 10, 10, ref_identity=0.25),             # perfect, twilight
        score_pair(_diag(10, 0)[:5], ref, 10, 10, ref_identity=0.6),  # half recall
        score_pair(np.zeros((0, 2)), ref, 10, 10),                     # identity unknown
    ]
    s = summarise(rows)
    assert s["pairs"] == 3
    assert s["S_mod"] == pytest.approx((1 + 1 + 0) / 3)
    assert s["S_dev"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert s["F1"] == pytest.approx((1 + 2 * 0.5 / 1.5 + 0) / 3)
    assert s["twilight_pairs"] == 1
    assert s["twilight_F1"] == 1.0
    empty = summarise([])
    assert empty["pairs"] == 0 and math.isnan(empty["F1"]) and empty["twilight_pairs"] == 0
