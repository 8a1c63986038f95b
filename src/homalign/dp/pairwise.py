"""Exact pairwise alignment of one score matrix: :func:`align` and :func:`align_score`."""

from __future__ import annotations

import numpy as np

from homalign.dp.gaps import GapCosts
from homalign.dp.kernels import gotoh, score_constant, traceback
from homalign.dp.modes import mode_code
from homalign.dp.result import DPResult, from_ops

__all__ = ["align", "align_score", "check_scores"]

_NO_TRACE = np.zeros((1, 1), dtype=np.uint8)


def check_scores(S: np.ndarray, gaps: GapCosts) -> np.ndarray:
    """Return ``S`` as a C-contiguous float32 (Lq, Lt) array that fits ``gaps``.

    Raises ValueError for a wrong shape, an empty matrix, NaN or +inf (-inf is allowed and marks
    a pair that may not be aligned).
    """
    if not isinstance(gaps, GapCosts):
        raise ValueError(f"gaps must be a GapCosts, got {type(gaps).__name__}")
    arr = np.ascontiguousarray(S, dtype=np.float32)
    if arr.ndim != 2:
        raise ValueError(f"score matrix must be 2-D (Lq, Lt), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"score matrix must be non-empty, got shape {arr.shape}")
    if np.isnan(arr).any() or np.isposinf(arr).any():
        raise ValueError("score matrix contains NaN or +inf")
    gaps.check_shape(arr.shape[0], arr.shape[1])
    return arr


def align(S: np.ndarray, gaps: GapCosts, mode: str = "local") -> DPResult:
    """Optimal alignment of a score matrix under ``gaps`` in ``mode``, with traceback.

    Uses O(Lq * Lt) bytes for the direction matrix. See :mod:`homalign.dp` for the conventions.
    """
    code = mode_code(mode)
    arr = check_scores(S, gaps)
    lq, lt = arr.shape
    dirs = np.empty((lq + 1, lt + 1), dtype=np.uint8)
    score, ei, ej, es = gotoh(arr, *gaps.kernel_vectors(), code, dirs)
    ops = np.empty(lq + lt, dtype=np.uint8)
    n, si, sj = traceback(dirs, ei, ej, es, ops)
    return from_ops(float(score), ops[:n], si, sj, mode)


def align_score(S: np.ndarray, gaps: GapCosts, mode: str = "local") -> float:
    """Optimal score only (linear memory); equal, bit for bit, to ``align(...).score``."""
    code = mode_code(mode)
    arr = check_scores(S, gaps)
    const = gaps.constant_costs()
    if const is not None:
        go_i, ge_i, go_d, ge_d = (np.float32(c) for c in const)
        return float(score_constant(arr, go_i, ge_i, go_d, ge_d, code))
    return float(gotoh(arr, *gaps.kernel_vectors(), code, _NO_TRACE)[0])
