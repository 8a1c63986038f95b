"""Training losses: CRF negative log-likelihood of the reference path, auxiliary cross-entropies."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from homalign.dp.soft import SoftGaps, path_score, soft_align
from homalign.model.crf import crf_log_partition_batch


def alignment_nll(S: Tensor, gaps: SoftGaps, lq: Tensor, lt: Tensor, pairs: list[np.ndarray],
                  mode: str = "global", dp: str = "crf") -> Tensor:
    """Per pair ``log Z - score(reference path)`` (>= 0), shape (B,), in nats.

    Its gradient with respect to S is the posterior match matrix minus the reference pairs.
    ``dp="crf"`` computes log Z with the compiled forward-backward (:mod:`homalign.model.crf`),
    ``dp="soft"`` with the anti-diagonal torch DP (:func:`homalign.dp.soft.soft_align`); they
    give the same values and gradients.
    """
    if dp == "crf":
        logz = crf_log_partition_batch(S, gaps, lq, lt, mode)
    elif dp == "soft":
        logz = soft_align(S, gaps, mode=mode, temperature=1.0, lq=lq, lt=lt)
    else:
        raise ValueError(f"unknown dp {dp!r}; expected 'crf' or 'soft'")
    ref = torch.stack([
        path_score(S, gaps, b, p, int(lq[b]), int(lt[b]), mode) for b, p in enumerate(pairs)
    ])
    return logz - ref


def masked_cross_entropy(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean cross-entropy over positions whose label is >= 0 (0 if there are none)."""
    mask = labels >= 0
    if not bool(mask.any()):
        return logits.sum() * 0.0
    return nn.functional.cross_entropy(logits[mask], labels[mask])


__all__ = ["alignment_nll", "masked_cross_entropy"]
