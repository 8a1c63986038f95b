"""The compiled CRF (training loss) agrees with the torch soft DP: log Z and every gradient."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest
import torch

from homalign.dp.soft import SoftGaps, soft_align
from homalign.model.crf import crf_log_partition_batch


@pytest.mark.parametrize("mode", ["global", "local", "glocal", "semiglobal"])
def test_compiled_crf_matches_soft_dp_value_and_gradients(mode: str) -> None:
    rng = np.random.default_rng(7)
    B, LQ, LT = 2, 7, 9
    S = torch.as_tensor(rng.normal(0, 1.5, (B, LQ, LT)), dtype=torch.float64)
    sizes = {"q_ins": LQ, "t_ins": LT + 1, "t_del": LT, "q_del": LQ + 1}
    vec = {f.name: torch.as_tensor(rng.uniform(0.1, 2.0, (B, sizes[f.name[:5]])))
           for f in fields(SoftGaps)}
    lq, lt = torch.tensor([7, 5]), torch.tensor([9, 8])

    def run(fn):
        S_ = S.clone().requires_grad_(True)
        v = {k: t.clone().requires_grad_(True) for k, t in vec.items()}
        out = fn(S_, SoftGaps(**v))
        weights = torch.tensor([1.0, -0.7], dtype=torch.float64)
        (out * weights).sum().backward()
        return out.detach(), S_.grad, {k: t.grad for k, t in v.items()}

    ref = run(lambda s, g: soft_align(s, g, mode, 1.0, lq, lt))
    got = run(lambda s, g: crf_log_partition_batch(s, g, lq, lt, mode))
    torch.testing.assert_close(got[0], ref[0], atol=1e-9, rtol=1e-9)
    torch.testing.assert_close(got[1], ref[1], atol=1e-9, rtol=1e-7)
    for k in vec:
        torch.testing.assert_close(got[2][k], ref[2][k], atol=1e-9, rtol=1e-7, msg=k)


@pytest.mark.parametrize("mode", ["global", "local", "glocal", "semiglobal"])
def test_training_crf_equals_dp_engine_posteriors(mode: str) -> None:
    """Training (model.crf) and inference (dp.posterior) use the same CRF: same log Z and P."""
    from homalign.dp import GapCosts
    from homalign.dp.posterior import forward_backward
    from homalign.model.crf import crf_log_partition

    rng = np.random.default_rng(11)
    lq, lt = 13, 17
    S = rng.normal(0, 1.5, (lq, lt)).astype(np.float32)
    sizes = {"q_ins": lq, "t_ins": lt + 1, "t_del": lt, "q_del": lq + 1}
    vec = {f.name: rng.uniform(0.1, 2.0, sizes[f.name[:5]]).astype(np.float32)
           for f in fields(SoftGaps)}
    P, logz = forward_backward(S, GapCosts(**vec), mode)
    my_logz, my_P, _ = crf_log_partition(S, vec, mode)
    assert my_logz == pytest.approx(logz, abs=1e-6)
    np.testing.assert_allclose(my_P, P, atol=1e-6)


@pytest.mark.parametrize("kind", ["log_z", "posterior", "score_log_z"])
def test_a_batched_pairs_gradients_are_its_own_alone_bit_for_bit(kind: str) -> None:
    """Each pair of a padded batch gets the gradient it gets alone (the same bits: the batch is
    unbound into rows, never indexed per pair), and the padding gets zeros."""
    from homalign.model.crf import crf_posterior_batch, score_log_partition_batch

    rng = np.random.default_rng(5)
    B, LQ, LT = 4, 9, 11
    lq, lt = torch.tensor([9, 6, 8, 3]), torch.tensor([11, 7, 4, 10])
    S = torch.as_tensor(rng.normal(0, 1.5, (B, LQ, LT)), dtype=torch.float64)
    sizes = {"q_ins": LQ, "t_ins": LT + 1, "t_del": LT, "q_del": LQ + 1}
    vec = {f.name: torch.as_tensor(rng.uniform(0.1, 2.0, (B, sizes[f.name[:5]])))
           for f in fields(SoftGaps)}
    up = [torch.as_tensor(rng.normal(size=(int(n), int(m)))) for n, m in zip(lq, lt, strict=True)]

    def grads(S_: torch.Tensor, lq_: torch.Tensor, lt_: torch.Tensor, rows: list[int]):
        S_ = S_.clone().requires_grad_(True)
        v = {k: t.clone().requires_grad_(kind != "score_log_z") for k, t in vec.items()}
        if rows != list(range(B)):
            v = {k: t[rows].detach().requires_grad_(kind != "score_log_z") for k, t in v.items()}
        g = SoftGaps(**v)
        if kind == "log_z":
            loss = (crf_log_partition_batch(S_, g, lq_, lt_, "local")
                    * torch.arange(1.0, len(rows) + 1, dtype=torch.float64)).sum()
        elif kind == "posterior":
            loss = sum((P * up[r]).sum() for P, r in
                       zip(crf_posterior_batch(S_, g, lq_, lt_, "local"), rows, strict=True))
        else:
            loss = (score_log_partition_batch(S_, g, lq_, lt_, "local")
                    * torch.arange(1.0, len(rows) + 1, dtype=torch.float64)).sum()
        loss.backward()
        return S_.grad, ({k: t.grad for k, t in v.items()} if kind != "score_log_z" else {})

    batch_S, batch_v = grads(S, lq, lt, list(range(B)))
    for b in range(B):
        n, m = int(lq[b]), int(lt[b])
        alone_S, alone_v = grads(S[b:b + 1], lq[b:b + 1], lt[b:b + 1], [b])
        scale = b + 1 if kind != "posterior" else 1  # the weight the batch loss gives pair b
        assert torch.equal(batch_S[b, :n, :m], alone_S[0, :n, :m] * scale)
        assert not batch_S[b, n:].any() and not batch_S[b, :, m:].any()
        for k in alone_v:
            assert torch.equal(batch_v[k][b], alone_v[k][0] * scale), k
