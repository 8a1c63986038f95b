"""Posterior (maximum-expected-accuracy) decoding of learned scores.

The posteriors are exact: the DP engine's compiled forward-backward
(:func:`homalign.dp.posterior.posterior_matrix`) over the same path model the scorer was trained
with (tested against :mod:`homalign.model.crf` and :mod:`homalign.dp.soft`), in its default
probability-space implementation with per-row scaling, which checks its own underflow error bound
and falls back to the log-space reference when the bound is not negligible. Decoding is HHsearch's
maximum accuracy (MAC) alignment: the path maximising the sum of ``P[i, j] - threshold`` over its
pairs (:func:`homalign.dp.posterior.mac_align`).
"""

from __future__ import annotations

import numpy as np

from homalign.dp import DPResult, GapCosts
from homalign.dp.posterior import mac_align
from homalign.dp.posterior import posterior_matrix as _posterior_matrix


def posterior_matrix(S: np.ndarray, gaps: GapCosts, mode: str = "global") -> np.ndarray:
    """float32 (Lq, Lt) match posteriors of the CRF with scores S (nats) and these gap costs."""
    return _posterior_matrix(S, gaps, mode=mode, temperature=1.0)


def mea_align(P: np.ndarray, threshold: float = 0.3) -> DPResult:
    """Maximum-accuracy alignment of a posterior matrix (pairs with P > threshold favoured)."""
    return mac_align(P, threshold=threshold, mode="local")


__all__ = ["mea_align", "posterior_matrix"]
