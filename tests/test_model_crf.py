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
