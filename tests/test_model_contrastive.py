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
    assert float(loss.detach()) < 0.7 * first


def test_fast_score_log_partition_matches_the_crf_in_value_and_s_gradient() -> None:
    from homalign.dp.soft import SoftGaps
    from homalign.model.crf import crf_log_partition_batch, score_log_partition_batch

    g = torch.Generator().manual_seed(0)
    S = torch.randn(2, 9, 7, generator=g, dtype=torch.float64) - 0.3
    lq, lt = torch.tensor([9, 6]), torch.tensor([7, 5])
    gaps = SoftGaps.from_vectors(2, 9, 7, dtype=S.dtype,
                                 q_ins_open=torch.full((2, 9), 2.0, dtype=S.dtype),
                                 q_ins_ext=torch.full((2, 9), 0.4, dtype=S.dtype),
                                 t_del_open=torch.full((2, 7), 1.5, dtype=S.dtype),
                                 t_del_ext=torch.full((2, 7), 0.3, dtype=S.dtype))
    a = S.clone().requires_grad_(True)
    b = S.clone().requires_grad_(True)
    za = crf_log_partition_batch(a, gaps, lq, lt, "local")
    zb = score_log_partition_batch(b, gaps, lq, lt, "local")
    assert torch.allclose(za, zb, atol=1e-4)
    (za * torch.tensor([1.0, 2.0], dtype=S.dtype)).sum().backward()
    (zb * torch.tensor([1.0, 2.0], dtype=S.dtype)).sum().backward()
    assert torch.allclose(a.grad, b.grad, atol=1e-5)
    assert float(b.grad[1, 6:].abs().sum()) == 0.0  # padding gets no gradient


def test_adapter_only_training_leaves_the_aligner_untouched() -> None:
    torch.manual_seed(0)
    model = AlignerModel(AlignerConfig(dropout=0.0)).eval()
    head = model.homology
    data = _toy_pairs()
    batch = sample_batch(data, 4, np.random.default_rng(4))
    loss = homology_loss(homology_logits(model, head, *batch[:4], adapter_only=True), batch[4])
    loss.backward()
    assert model.scorer.W.grad is None and model.encoder.embed.weight.grad is None
    assert head.W.grad is not None and float(head.shift.grad.abs()) > 0


def test_hard_negatives_come_from_other_folds_of_the_same_split() -> None:
    from homalign.search.database import SequenceDB
    from homalign.sequence import Sequence

    data = _toy_pairs(n_groups=5, length=40)
    seqs = [Sequence(f"s{k}", "".join("ARNDCQEGHILKMFPSTWYV"[c] for c in codes))
            for k, codes in enumerate(data.codes)]
    data.db = SequenceDB.from_sequences(seqs)
    data.groups = data.groups[:4]  # the fifth superfamily belongs to "another split"
    neg = data.hard_negatives(0)
    assert len(neg) > 0
    assert all(data.fold[n] != data.fold[0] for n in neg)
    assert not set(neg.tolist()) & {8, 9}
    q, t, lq, lt, same = sample_batch(data, 3, np.random.default_rng(0), hard=True)
    assert t.shape[0] == 6 and same.shape == (3, 6)
    assert torch.equal(same[:, :3], torch.eye(3, dtype=torch.bool))
    assert not bool(same[:, 3:].diagonal().any())  # each query's hard negative is another fold
    model = AlignerModel(AlignerConfig()).eval()
    z = homology_logits(model, model.homology, q, t, lq, lt)
    assert z.shape == (3, 6) and torch.isfinite(homology_loss(z, same))


def test_homology_scores_reuse_the_pair_scores_exactly() -> None:
    torch.manual_seed(1)
    model = AlignerModel(AlignerConfig()).eval()
    with torch.no_grad():
        torch.nn.init.normal_(model.homology.W, std=0.1)
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 20, 17).astype(np.uint8), rng.integers(0, 20, 23).astype(np.uint8)
    ea, eb = model.embed(a), model.embed(b)
    fresh, g1 = model.homology_embedded(a, ea, b, eb)
    reused, g2 = model.homology_embedded(a, ea, b, eb, model.score_embedded(a, ea, b, eb))
    assert np.allclose(fresh, reused, atol=1e-5)
    assert np.array_equal(g1.q_ins_open, g2.q_ins_open)
