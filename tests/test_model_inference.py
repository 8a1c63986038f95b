"""The aligner's closed-form inference scores (homalign.model.inference) against the torch
scorer that training runs, for one aligner, a fused ensemble and a query profile."""

from __future__ import annotations

import numpy as np
import torch

from homalign.model import AlignerConfig, AlignerModel
from homalign.model.aligner import EnsembleAligner, _mean_scores
from homalign.model.encoder import PAD

GAP_FIELDS = ("q_ins_open", "q_ins_ext", "t_ins_open", "t_ins_ext",
              "t_del_open", "t_del_ext", "q_del_open", "q_del_ext")


def _model(seed: int, dim: int = 8) -> AlignerModel:
    torch.manual_seed(seed)
    m = AlignerModel(AlignerConfig(dim=dim, dilations=(1, 2)))
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()


def _codes(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 20, n).astype(np.int8)


def _torch_pair(model, q: np.ndarray, t: np.ndarray, profile=None):
    """(S, SoftGaps) of the torch scorers (the training path) for one pair."""
    cq = torch.as_tensor(q.astype(np.int64))[None]
    ct = torch.as_tensor(t.astype(np.int64))[None]
    prof = None if profile is None else torch.as_tensor(profile, dtype=torch.float32)[None]
    members = model.members if isinstance(model, EnsembleAligner) else [model]
    with torch.no_grad():
        outs = [m.scorer(cq, m.encoder(cq), ct, m.encoder(ct), prof) for m in members]
    return _mean_scores(outs)


def _check(model, q, targets, profile=None) -> None:
    e_q = model.embed(q)
    embs = model.embed_many(targets)
    got = model.score_many(q, e_q, targets, embs, profile)
    assert len(got) == len(targets)
    for t, (S, gaps) in zip(targets, got, strict=True):
        S_ref, g_ref = _torch_pair(model, q, t, profile)
        assert S.dtype == np.float32 and S.shape == (len(q), len(t))
        np.testing.assert_allclose(S, S_ref[0].numpy(), rtol=1e-5, atol=1e-5)
        ref = g_ref.to_numpy(0, len(q), len(t))
        for name in GAP_FIELDS:
            np.testing.assert_allclose(getattr(gaps, name), ref[name], rtol=1e-5, atol=1e-6)
        # one pair alone is the same computation
        S1, _ = model.score_embedded(q, e_q, t, model.embed(t), profile)
        np.testing.assert_allclose(S1, S, rtol=1e-6, atol=1e-6)


def test_closed_form_equals_the_torch_scorer_for_one_aligner() -> None:
    _check(_model(0), _codes(23, 1), [_codes(31, 2), _codes(1, 3), _codes(57, 4)])


def test_closed_form_equals_the_members_mean_for_an_ensemble() -> None:
    ens = EnsembleAligner([_model(1, 8), _model(2, 6), _model(3, 8)])
    assert ens.closed_form() is not None
    _check(ens, _codes(19, 5), [_codes(40, 6), _codes(2, 7)])


def test_closed_form_with_a_query_profile() -> None:
    model = _model(4)
    q = _codes(12, 8)
    rng = np.random.default_rng(9)
    prof = rng.random((12, PAD + 1)).astype(np.float32)
    prof /= prof.sum(axis=1, keepdims=True)
    _check(model, q, [_codes(15, 10)], prof)


def test_closed_form_follows_weight_changes() -> None:
    """Training changes the weights between evaluations: the form is read from them each time."""
    model = _model(5)
    q, t = _codes(10, 11), _codes(12, 12)
    before, _ = model.score_pair(q, t)
    with torch.no_grad():
        model.scorer.W.add_(0.5)
    after, _ = model.score_pair(q, t)
    assert not np.allclose(before, after)
    _check(model, q, [t])


def test_a_pair_refiner_falls_back_to_the_torch_scorer() -> None:
    torch.manual_seed(6)
    model = AlignerModel(AlignerConfig(dim=8, dilations=(1,), pair_channels=4, pair_rank=2)).eval()
    assert model.closed_form() is None
    _check(model, _codes(9, 13), [_codes(11, 14)])


def test_an_ensemble_of_refiner_members_falls_back_to_their_torch_scorers() -> None:
    members = []
    for seed in (7, 8):
        torch.manual_seed(seed)
        members.append(AlignerModel(AlignerConfig(dim=8, dilations=(1,), pair_channels=4,
                                                  pair_rank=2)).eval())
    ens = EnsembleAligner(members)
    assert ens.closed_form() is None
    _check(ens, _codes(9, 15), [_codes(11, 16), _codes(4, 17)])
