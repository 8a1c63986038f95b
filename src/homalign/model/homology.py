"""Homology head: a calibrated probability that two proteins are homologous, from an alignment score.

Karlin-Altschul statistics say that for unrelated sequences the local score S of an m x n
comparison has ``P(score >= S) ~ K m n exp(-lambda S)``, so the natural length-normalised
statistic is ``lambda S - log(m n)``. The head is a logistic regression on exactly those two
features, ``p = sigmoid(a * S - b * log(m n) + c)``, fitted (by Newton's method) on labelled pairs:
SCOPe same-superfamily pairs (homologous) against pairs from different folds (unrelated).
"""

from __future__ import annotations

import math

import numpy as np


def _features(score: np.ndarray, lq: np.ndarray, lt: np.ndarray) -> np.ndarray:
    score = np.asarray(score, dtype=np.float64)
    log_mn = np.log(np.asarray(lq, dtype=np.float64) * np.asarray(lt, dtype=np.float64))
    return np.stack([score, -log_mn, np.ones_like(score)], axis=1)


def fit_homology_head(score: np.ndarray, lq: np.ndarray, lt: np.ndarray, label: np.ndarray,
                      l2: float = 1e-3, iterations: int = 50) -> dict:
    """Logistic regression by Newton-Raphson; returns ``{"a", "b", "c"}`` (JSON-ready)."""
    X = _features(score, lq, lt)
    y = np.asarray(label, dtype=np.float64)
    if not ((y == 0) | (y == 1)).all() or y.min() == y.max():
        raise ValueError("labels must be 0/1 with both classes present")
    mu, sd = X[:, :2].mean(axis=0), X[:, :2].std(axis=0) + 1e-9
    Z = X.copy()
    Z[:, :2] = (X[:, :2] - mu) / sd
    w = np.zeros(3)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(Z @ w)))
        grad = Z.T @ (p - y) + l2 * w
        H = (Z * (p * (1 - p))[:, None]).T @ Z + l2 * np.eye(3)
        step = np.linalg.solve(H, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    a, b = w[0] / sd[0], w[1] / sd[1]
    c = w[2] - w[0] * mu[0] / sd[0] - w[1] * mu[1] / sd[1]
    return {"a": float(a), "b": float(b), "c": float(c)}


def homology_probability(head: dict, score: float, lq: int, lt: int) -> float:
    """``sigmoid(a * score - b * log(lq * lt) + c)`` for one comparison."""
    z = head["a"] * score - head["b"] * math.log(lq * lt) + head["c"]
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


__all__ = ["fit_homology_head", "homology_probability"]
