"""Exact pairwise alignment of one score matrix: :func:`align` and :func:`align_score`."""

from __future__ import annotations

import math

import numpy as np

from homalign.dp.checkpoint import align_checkpointed
from homalign.dp.gaps import GapCosts
from homalign.dp.kernels import (
    gotoh,
    score_constant,
    score_general,
    score_integral,
    traceback,
)
from homalign.dp.modes import mode_code
from homalign.dp.result import DPResult, from_ops

__all__ = [
    "TRACE_LIMIT_BYTES", "align", "align_score", "check_scores", "integral_bound_ok",
    "validate_scores",
]

#: ``align`` keeps a direction byte per cell up to this many cells ((Lq + 1) * (Lt + 1)); beyond
#: it the checkpointed kernel (:mod:`homalign.dp.checkpoint`: O(sqrt(Lq) * Lt) bytes, one extra
#: pass over the cells, identical result) runs. 256 MiB: about 16000 x 16000.
TRACE_LIMIT_BYTES = 256 << 20

_NO_TRACE = np.zeros((1, 1), dtype=np.uint8)
_EXACT = 2.0**23  # partial scores stay integers below 2**24: float32 sums are exact


def validate_scores(S: np.ndarray, gaps: GapCosts) -> tuple[np.ndarray, float, float]:
    """``(S as C-contiguous float32, max, min)``; ValueError on bad shape, NaN or +inf."""
    if not isinstance(gaps, GapCosts):
        raise ValueError(f"gaps must be a GapCosts, got {type(gaps).__name__}")
    arr = np.ascontiguousarray(S, dtype=np.float32)
    if arr.ndim != 2:
        raise ValueError(f"score matrix must be 2-D (Lq, Lt), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"score matrix must be non-empty, got shape {arr.shape}")
    hi = float(arr.max())  # NaN if any entry is NaN
    if math.isnan(hi) or hi == math.inf:
        raise ValueError("score matrix contains NaN or +inf")
    gaps.check_shape(arr.shape[0], arr.shape[1])
    return arr, hi, float(arr.min())


def check_scores(S: np.ndarray, gaps: GapCosts) -> np.ndarray:
    """Return ``S`` as a C-contiguous float32 (Lq, Lt) array that fits ``gaps``.

    Raises ValueError for a wrong shape, an empty matrix, NaN or +inf (-inf is allowed and marks
    a pair that may not be aligned).
    """
    return validate_scores(S, gaps)[0]


def integral_bound_ok(
    lq: int, lt: int, hi: float, lo: float, const: tuple[float, float, float, float]
) -> bool:
    """Whether the integer fast path is exact: integer costs, finite S, and every partial score
    (plus the kernel's column offsets) an integer below 2**24 in magnitude."""
    if not (math.isfinite(lo) and all(float(c).is_integer() for c in const)):
        return False
    go_i, ge_i, go_d, ge_d = const
    bound = (lq + lt + 2) * (max(abs(hi), abs(lo)) + go_i + go_d + ge_i + ge_d) + (lt + 1) * ge_d
    return bound < _EXACT


def align(S: np.ndarray, gaps: GapCosts, mode: str = "local") -> DPResult:
    """Optimal alignment of a score matrix under ``gaps`` in ``mode``, with traceback.

    Uses (Lq + 1) * (Lt + 1) bytes for the direction matrix up to ``TRACE_LIMIT_BYTES``, beyond
    that checkpointed rows (same result). See :mod:`homalign.dp` for the conventions.
    """
    code = mode_code(mode)
    arr = check_scores(S, gaps)
    lq, lt = arr.shape
    if (lq + 1) * (lt + 1) > TRACE_LIMIT_BYTES:
        score, ops, si, sj = align_checkpointed(arr, gaps.kernel_vectors(), code)
        return from_ops(score, ops, si, sj, mode)
    dirs = np.empty((lq + 1, lt + 1), dtype=np.uint8)
    score, ei, ej, es = gotoh(arr, *gaps.kernel_vectors(), code, dirs)
    ops = np.empty(lq + lt, dtype=np.uint8)
    n, si, sj = traceback(dirs, ei, ej, es, ops)
    return from_ops(float(score), ops[:n], si, sj, mode)


def align_score(S: np.ndarray, gaps: GapCosts, mode: str = "local") -> float:
    """Optimal score only (linear memory); equal, bit for bit, to ``align(...).score``.

    Kernel choice: non-negative gap vectors use a two-row kernel; position-independent costs
    with ``go >= ge >= 0`` a specialised one, and if moreover all scores and costs are small
    integers, an exact integer-valued one; anything else the general three-state kernel.
    """
    code = mode_code(mode)
    arr, hi, lo = validate_scores(S, gaps)
    const = gaps.constant_costs()
    if const is None:
        if gaps.nonnegative:
            return float(score_general(arr, *gaps.kernel_vectors(), code))
        return float(gotoh(arr, *gaps.kernel_vectors(), code, _NO_TRACE)[0])
    c32 = tuple(np.float32(c) for c in const)
    if integral_bound_ok(arr.shape[0], arr.shape[1], hi, lo, const):
        score, ok = score_integral(arr, *c32, code)
        if ok:
            return float(score)
    return float(score_constant(arr, *c32, code))
