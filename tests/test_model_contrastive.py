"""The homology ranking loss: masking, gradients through the local forward score, learning."""

from __future__ import annotations

import numpy as np
import torch

from homalign.dp.posterior import log_partition
from homalign.model.aligner import AlignerModel
from homalign.model.config import AlignerConfig
from homalign.model.contrastive import (
    HomologyScore,
    ScopPairs,
    homology_logits,
    homology_loss,
    sample_batch,
)


def _toy_pairs(n_groups: int = 6, length: int = 24, seed: int = 0) -> ScopPairs:
    """Superfamilies of two related sequences (20% point mutations), one fold each."""
    rng = np.random.default_rng(seed)
    codes, fold, groups = [], [], []
    for g in range(n_groups):
        a = rng.integers(0, 20, length).astype(np.uint8)
        b = a.copy()
        hit = rng.random(length) < 0.2
        b[hit] = rng.integers(0, 20, int(hit.sum()))
        groups.append(np.array([len(codes), len(codes) + 1]))
        codes += [a, b]
        fold += [g, g]
    return ScopPairs(codes, np.array(fold), groups)


def test_sample_batch_draws_pairs_from_distinct_folds() -> None:
    data = _toy_pairs()
    q, t, lq, lt, same = sample_batch(data, 4, np.random.default_rng(1), window=10)
    assert q.shape == (4, 10) and t.shape == (4, 10)
    assert (lq == 10).all() and (lt == 10).all()
    assert torch.equal(same, torch.eye(4, dtype=torch.bool))


def test_homology_loss_masks_same_fold_negatives() -> None:
    z = torch.tensor([[0.0, 5.0], [0.0, 0.0]])
    unmasked = homology_loss(z, torch.eye(2, dtype=torch.bool))
    masked = homology_loss(z, torch.ones(2, 2, dtype=torch.bool))
    assert float(masked) == 0.0  # each row and column has only its positive left
    assert float(unmasked) > 1.0


def test_logits_are_the_length_corrected_local_forward_score() -> None:
    torch.manual_seed(0)
    model = AlignerModel(AlignerConfig()).eval()
    head = HomologyScore(shift=0.3, slope=0.7, scale=2.0)
    data = _toy_pairs()
    q, t, lq, lt, _ = sample_batch(data, 3, np.random.default_rng(2), window=20)
    with torch.no_grad():
        z = homology_logits(model, head, q, t, lq, lt)
        S, gaps = model.score_pair(q[0, :20].numpy().astype(np.uint8),
                                   t[2, :20].numpy().astype(np.uint8))
    F = log_partition(S - np.float32(0.3), gaps, mode="local")
    expected = 2.0 * (F - 0.7 * np.log(20.0 * 20.0))
    assert abs(float(z[0, 2]) - expected) < 1e-3 * max(1.0, abs(expected))


def test_ranking_loss_falls_when_trained_and_reaches_the_scorer() -> None:
    torch.manual_seed(0)
    model = AlignerModel(AlignerConfig(dropout=0.0))
    head = HomologyScore(shift=0.5)
    data = _toy_pairs()
    rng = np.random.default_rng(3)
    batch = sample_batch(data, 6, rng)
    opt = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=0.02)
    first = None
    for _ in range(15):
        loss = homology_loss(homology_logits(model, head, *batch[:4]), batch[4])
        opt.zero_grad()
        loss.backward()
        if first is None:
            first = float(loss.detach())
            assert model.scorer.W.grad is not None and float(model.scorer.W.grad.abs().sum()) > 0
            assert head.shift.grad is not None and float(head.shift.grad.abs()) > 0
        opt.step()
    assert float(loss) < 0.7 * first
