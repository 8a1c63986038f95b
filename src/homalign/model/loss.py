"""Training losses: CRF negative log-likelihood of the reference path (optionally cost-augmented:
softmax-margin), auxiliary cross-entropies."""

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


def cost_augmented(S: Tensor, pairs: list[np.ndarray], lq: Tensor, lt: Tensor,
                   false_pair: float, missed_pair: float) -> Tensor:
    """``S`` plus the Hamming cost of each cell: ``+false_pair`` where a path would align a pair
    that is not in the reference, ``-missed_pair`` on the reference pairs.

    With these scores ``log Z - score(reference)`` is the softmax-margin loss (Gimpel & Smith,
    NAACL 2010) of a path whose cost is ``false_pair`` x its wrong pairs + ``missed_pair`` x the
    reference pairs it leaves out, up to the constant ``missed_pair`` x |reference|: the model must
    beat every near-miss path by a margin that grows with its errors, not merely outscore it. Cells
    outside ``lq`` x ``lt`` are left as they are (the DP never reads them). Training only: inference
    aligns the plain ``S``.
    """
    if false_pair == 0.0 and missed_pair == 0.0:
        return S
    cost = torch.zeros_like(S)
    for b, p in enumerate(pairs):
        cost[b, : int(lq[b]), : int(lt[b])] = false_pair
        if len(p):
            idx = torch.as_tensor(np.asarray(p, dtype=np.int64))
            cost[b, idx[:, 0], idx[:, 1]] = -missed_pair
    return S + cost


def marginal_loss(P: list[Tensor], pairs: list[np.ndarray], floor: float = 1e-3) -> Tensor:
    """Per pair, the mean over both sequences' residues of ``-log`` the posterior probability of
    the residue's reference fate: aligned to its reference partner (``P[i, j]``) or against a gap
    (``1 - sum_j P[i, j]``), probabilities floored at ``floor``. Shape (B,).

    The likelihood of the reference *path* trains the whole path distribution; MEA decoding
    reads only these per-residue marginals, and with a misspecified model the two objectives part
    (Domke, IEEE TPAMI 2013: fitting the marginals that inference returns). ``P`` are
    differentiable posteriors (:func:`homalign.model.crf.crf_posterior_batch`).
    """
    out = []
    for Pb, ref in zip(P, pairs, strict=True):
        n, m = Pb.shape
        qi = torch.as_tensor(np.asarray(ref[:, 0], dtype=np.int64))
        tj = torch.as_tensor(np.asarray(ref[:, 1], dtype=np.int64))
        on_ref = Pb[qi, tj]
        q_gap = torch.ones(n, dtype=torch.bool)
        q_gap[qi] = False
        t_gap = torch.ones(m, dtype=torch.bool)
        t_gap[tj] = False
        probs = torch.cat([on_ref, on_ref, 1.0 - Pb.sum(1)[q_gap], 1.0 - Pb.sum(0)[t_gap]])
        out.append(-torch.log(probs.clamp(min=floor)).sum() / (n + m))
    return torch.stack(out)


def expected_f1_loss(P: list[Tensor], pairs: list[np.ndarray]) -> Tensor:
    """Per pair, ``1 -`` the expected-count F1 of the posteriors against the reference pairs:
    ``2 sum_ref P[i, j] / (sum P + |ref|)``, the soft F1 whose numerator is the expected number
    of correctly aligned pairs and whose ``sum P`` is the expected number aligned. Shape (B,);
    0 for a pair without reference pairs.

    The per-pair F1 of the MEA-decoded alignment is what the benchmarks report; this is its
    smooth surrogate (the "differentiable F1" of the learned-aligner issue). ``P`` are
    differentiable posteriors (:func:`homalign.model.crf.crf_posterior_batch`).
    """
    out = []
    for Pb, ref in zip(P, pairs, strict=True):
        if len(ref) == 0:
            out.append(Pb.sum() * 0.0)
            continue
        qi = torch.as_tensor(np.asarray(ref[:, 0], dtype=np.int64))
        tj = torch.as_tensor(np.asarray(ref[:, 1], dtype=np.int64))
        tp = Pb[qi, tj].sum()
        out.append(1.0 - 2.0 * tp / (Pb.sum() + len(ref)))
    return torch.stack(out)


def masked_cross_entropy(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean cross-entropy over positions whose label is >= 0 (0 if there are none)."""
    mask = labels >= 0
    if not bool(mask.any()):
        return logits.sum() * 0.0
    return nn.functional.cross_entropy(logits[mask], labels[mask])


__all__ = ["alignment_nll", "cost_augmented", "expected_f1_loss", "marginal_loss",
           "masked_cross_entropy"]
