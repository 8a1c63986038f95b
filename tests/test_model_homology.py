"""Homology head: a logistic fit on Karlin-Altschul features is calibrated on synthetic data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from homalign.model.homology import fit_homology_head, homology_probability


def test_fit_recovers_a_known_logistic_model_and_is_calibrated() -> None:
    rng = np.random.default_rng(0)
    n = 4000
    lq = rng.integers(50, 400, n)
    lt = rng.integers(50, 400, n)
    score = rng.normal(30, 15, n)
    true = {"a": 0.3, "b": 1.0, "c": 2.0}
    p = np.array([homology_probability(true, s, a, b) for s, a, b in zip(score, lq, lt, strict=True)])
    y = (rng.random(n) < p).astype(int)
    head = fit_homology_head(score, lq, lt, y)
    assert head["a"] == pytest.approx(0.3, rel=0.2)
    assert head["b"] == pytest.approx(1.0, rel=0.3)
    fitted = np.array([homology_probability(head, s, a, b)
                       for s, a, b in zip(score, lq, lt, strict=True)])
    for lo in (0.0, 0.25, 0.5, 0.75):
        sel = (fitted >= lo) & (fitted < lo + 0.25)
        assert abs(y[sel].mean() - fitted[sel].mean()) < 0.06


def test_probability_grows_with_score_and_falls_with_length() -> None:
    head = {"a": 0.5, "b": 1.0, "c": 0.0}
    assert homology_probability(head, 40, 100, 100) > homology_probability(head, 20, 100, 100)
    assert homology_probability(head, 40, 100, 100) > homology_probability(head, 40, 400, 400)
    assert homology_probability(head, -5000, 100, 100) == 0.0
    assert 0 < homology_probability(head, 2 * math.log(1e4), 100, 100) < 1


def test_fit_rejects_single_class_labels() -> None:
    with pytest.raises(ValueError):
        fit_homology_head(np.ones(5), np.ones(5) * 10, np.ones(5) * 10, np.ones(5))
