"""Posterior (maximum-expected-accuracy) decoding of learned scores.

The posteriors are exact: forward-backward over the same path model the scorer was trained with.
``homalign.dp.posterior`` (the DP engine's compiled forward-backward) is used when it is
installed; otherwise the training CRF's outside pass (:mod:`homalign.model.crf`) gives the same
matrix. Decoding is HHsearch's maximum
accuracy (MAC) alignment: the path maximising the sum of ``P[i, j] - threshold`` over its pairs.
"""

from __future__ import annotations

import importlib.util
from dataclasses import fields

import numpy as np

from homalign.dp import DPResult, GapCosts, align
from homalign.model.crf import crf_log_partition


def _compiled_posteriors() -> bool:
    return importlib.util.find_spec("homalign.dp.posterior") is not None


def posterior_matrix(S: np.ndarray, gaps: GapCosts, mode: str = "global") -> np.ndarray:
    """float32 (Lq, Lt) match posteriors of the CRF with scores S (nats) and these gap costs."""
    if _compiled_posteriors():
        from homalign.dp.posterior import posterior_matrix as compiled

        return compiled(S, gaps, mode=mode, temperature=1.0)
    vectors = {f.name: getattr(gaps, f.name) for f in fields(gaps)}
    _, P, _ = crf_log_partition(S, vectors, mode)
    return P.astype(np.float32)


def mea_align(P: np.ndarray, threshold: float = 0.3) -> DPResult:
    """Maximum-accuracy alignment of a posterior matrix (pairs with P > threshold favoured)."""
    if _compiled_posteriors():
        from homalign.dp.posterior import mac_align

        return mac_align(P, threshold=threshold)
    lq, lt = P.shape
    return align(np.ascontiguousarray(P - np.float32(threshold), dtype=np.float32),
                 GapCosts.zeros(lq, lt), mode="local")


__all__ = ["mea_align", "posterior_matrix"]
