"""Alternative training losses of the learned aligner: softmax-margin (the cost-augmented CRF
likelihood, ``loss.cost_augmented``) and the posterior-marginal loss (``loss.marginal_loss`` on
``crf.CRFPosterior``, whose backward pass is a finite-difference Hessian-vector product), and the
expected-count F1 (``loss.expected_f1_loss``), a differentiable F1 of the same posteriors."""

from __future__ import annotations

import numpy as np
import torch

from homalign.dp import GapCosts
from homalign.model import AlignerConfig, AlignerModel
from homalign.model.crf import _FIELDS, CRFPosterior, crf_log_partition_batch, crf_posterior_batch
from homalign.model.data import TrainPair, batches
from homalign.model.decode import posterior_matrix
from homalign.model.loss import alignment_nll, cost_augmented, expected_f1_loss, marginal_loss
from homalign.model.task import batch_loss


def _pair(rng: np.random.Generator, n: int = 24) -> TrainPair:
    a = rng.integers(0, 20, n).astype(np.uint8)
    b = a.copy()
    mut = rng.random(n) < 0.4
    b[mut] = rng.integers(0, 20, int(mut.sum()))
    b = np.delete(b, [10])
    pairs = np.array([(i, i if i < 10 else i - 1) for i in range(n) if i != 10], dtype=np.int32)
    lab = np.full(n, -1, dtype=np.int64)
    return TrainPair("p", "g", "toy", a, b, pairs, lab, lab[:-1], lab, lab[:-1])


def test_cost_augmented_adds_the_hamming_cost_of_each_cell_inside_the_pair() -> None:
    S = torch.zeros(2, 4, 5)
    pairs = [np.array([[0, 0], [2, 3]]), np.array([[1, 1]])]
    lq, lt = torch.tensor([3, 4]), torch.tensor([5, 2])
    out = cost_augmented(S, pairs, lq, lt, 0.5, 2.0)
    assert float(out[0, 0, 0]) == -2.0 and float(out[0, 2, 3]) == -2.0
    assert float(out[0, 1, 0]) == 0.5 and float(out[0, 3, 0]) == 0.0   # row 3 is padding
    assert float(out[1, 1, 1]) == -2.0 and float(out[1, 0, 1]) == 0.5
    assert float(out[1, 0, 2]) == 0.0                                    # column 2 is padding
    assert cost_augmented(S, pairs, lq, lt, 0.0, 0.0) is S


def test_softmax_margin_bounds_the_likelihood_loss_and_its_gradient_is_augmented_posteriors() -> None:
    rng = np.random.default_rng(3)
    p = _pair(rng)
    torch.manual_seed(0)
    model = AlignerModel(AlignerConfig(dim=8, dilations=(1,), dropout=0.0)).eval()
    batch = next(batches([p], 256, 10**6, rng, shuffle=False))
    S, gaps, _, _ = model(batch.q, batch.t)
    plain = alignment_nll(S, gaps, batch.lq, batch.lt, batch.pairs, "semiglobal")
    fp, fn = 0.7, 0.3
    S_aug = cost_augmented(S, batch.pairs, batch.lq, batch.lt, fp, fn)
    margin = alignment_nll(S_aug, gaps, batch.lq, batch.lt, batch.pairs, "semiglobal")
    # every other path loses its cost against the reference (which costs nothing): the loss grows,
    # by at most the largest cost a path can have
    n_ref = len(p.pairs)
    plain, margin = float(plain.detach()), float(margin.detach())
    assert plain < margin - 1e-3
    assert margin <= plain + fp * min(len(p.q), len(p.t)) + fn * n_ref
    # d loss / d S = posteriors of the cost-augmented scores - reference
    Sl = S.detach().requires_grad_(True)
    loss = alignment_nll(cost_augmented(Sl, batch.pairs, batch.lq, batch.lt, fp, fn), gaps,
                         batch.lq, batch.lt, batch.pairs, "semiglobal").sum()
    (grad,) = torch.autograd.grad(loss, Sl, retain_graph=False)
    Sa = S_aug.detach().requires_grad_(True)
    (P,) = torch.autograd.grad(crf_log_partition_batch(Sa, gaps, batch.lq, batch.lt,
                                                       "semiglobal").sum(), Sa)
    R = torch.zeros_like(P)
    R[0, p.pairs[:, 0], p.pairs[:, 1]] = 1.0
    torch.testing.assert_close(grad, P - R, atol=1e-5, rtol=1e-4)


def _toy_training(seed: int, steps: int, **loss_options):
    """A tiny model, one batch of toy pairs, and ``steps`` Adam steps of ``batch_loss`` with
    ``loss_options``; returns (model, batch, the loss before training, the last step's parts)."""
    rng = np.random.default_rng(seed)
    data = [_pair(rng) for _ in range(6)]
    torch.manual_seed(0)
    model = AlignerModel(AlignerConfig(dim=8, dilations=(1,), dropout=0.0, mode="semiglobal"))
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    batch = next(batches(data, 256, 10**6, rng, shuffle=False))
    first, parts = batch_loss(model, batch, 0.0, **loss_options)
    for _ in range(steps):
        loss, parts = batch_loss(model, batch, 0.0, **loss_options)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model, batch, first, parts


def test_margin_training_lowers_the_margin_loss_and_widens_the_reference_margin() -> None:
    model, batch, first, _ = _toy_training(0, 15, margin=(0.5, 0.5))
    last, _ = batch_loss(model, batch, 0.0, margin=(0.5, 0.5))
    plain, _ = batch_loss(model, batch, 0.0)
    assert float(last.detach()) < 0.8 * float(first.detach())
    assert float(plain.detach()) < float(last.detach())


def _random_case(n: int, m: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    S = torch.randn(n, m, dtype=torch.float64, generator=g).requires_grad_(True)
    sizes = {"q_ins": n, "t_ins": m + 1, "t_del": m, "q_del": n + 1}
    vecs = [(torch.rand(sizes[k[:5]], dtype=torch.float64, generator=g)
             + (0.5 if "open" in k else 0.1)).requires_grad_(True) for k in _FIELDS]
    return S, vecs


def test_crf_posterior_is_the_dp_engines_posterior() -> None:
    S, vecs = _random_case(7, 9, 1)
    P = CRFPosterior.apply("semiglobal", S, *vecs).detach().numpy()
    gaps = GapCosts(**{k: v.detach().numpy() for k, v in zip(_FIELDS, vecs, strict=True)})
    ref = posterior_matrix(S.detach().numpy().astype(np.float32), gaps, "semiglobal")
    np.testing.assert_allclose(P, ref, atol=2e-5)


def test_marginal_loss_gradient_matches_finite_differences_in_every_mode() -> None:
    """The Hessian-vector backward of CRFPosterior, through the marginal loss, against
    torch.autograd.gradcheck's own finite differences (S and all eight gap vectors)."""
    S, vecs = _random_case(5, 6, 0)
    ref = np.array([[0, 0], [1, 1], [3, 2], [4, 4]])
    for mode in ("global", "semiglobal", "local", "glocal"):
        def f(S, *v, mode=mode):
            return marginal_loss([CRFPosterior.apply(mode, S, *v)], [ref]).sum()
        assert torch.autograd.gradcheck(f, (S, *vecs), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_marginal_loss_is_the_cross_entropy_of_each_residues_reference_fate() -> None:
    P = torch.tensor([[0.8, 0.1, 0.0], [0.0, 0.5, 0.2]], dtype=torch.float64)
    ref = np.array([[0, 0]])      # q0-t0 aligned; q1, t1, t2 against gaps
    got = float(marginal_loss([P], [ref])[0])
    fates = [0.8, 0.8, 1 - 0.7, 1 - 0.6, 1 - 0.2]
    assert abs(got - (-np.log(fates).sum() / 5)) < 1e-12
    floor = float(marginal_loss([torch.zeros(2, 3, dtype=torch.float64)], [ref], floor=0.01)[0])
    assert abs(floor - (2 * -np.log(0.01)) / 5) < 1e-12


def test_marginal_training_raises_the_reference_fates_posteriors() -> None:
    def marg(model, batch) -> float:
        with torch.no_grad():
            S, gaps, _, _ = model(batch.q, batch.t)
        P = crf_posterior_batch(S, gaps, batch.lq, batch.lt, "semiglobal")
        return float(marginal_loss(P, batch.pairs).mean())

    untrained, batch, _, _ = _toy_training(1, 0)
    model, batch, _, parts = _toy_training(1, 10, marginal_weight=1.0)
    assert parts["marginal"] > 0
    assert marg(model, batch) < 0.7 * marg(untrained, batch)


def test_expected_f1_is_twice_the_reference_mass_over_predicted_plus_reference_count() -> None:
    P = torch.tensor([[0.9, 0.05, 0.0], [0.1, 0.6, 0.2]], dtype=torch.float64,
                     requires_grad=True)
    ref = np.array([[0, 0], [1, 1]])
    got = expected_f1_loss([P, P.detach()[:1]], [ref, np.zeros((0, 2), dtype=np.int64)])
    assert abs(float(got[0].detach()) - (1 - 2 * 1.5 / (1.85 + 2))) < 1e-12
    assert float(got[1].detach()) == 0.0                    # no reference pairs: no loss
    got[0].backward()
    # raising a reference pair's posterior lowers the loss; raising any other pair's raises it
    assert float(P.grad[0, 0]) < 0 and float(P.grad[1, 1]) < 0
    assert float(P.grad[0, 1]) > 0 and float(P.grad[1, 2]) > 0
    perfect = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=torch.float64)
    assert float(expected_f1_loss([perfect], [ref])[0]) == 0.0


def test_f1_training_raises_the_expected_f1_of_the_posteriors() -> None:
    def soft_f1(model, batch) -> float:
        with torch.no_grad():
            S, gaps, _, _ = model(batch.q, batch.t)
        P = crf_posterior_batch(S, gaps, batch.lq, batch.lt, "semiglobal")
        return 1.0 - float(expected_f1_loss(P, batch.pairs).mean())

    untrained, batch, _, _ = _toy_training(1, 0)
    model, batch, _, parts = _toy_training(1, 10, f1_weight=1.0)
    assert parts["soft_f1_loss"] > 0 and parts["marginal"] == 0.0
    assert 1.0 - soft_f1(model, batch) < 0.2 * (1.0 - soft_f1(untrained, batch))


def test_average_models_is_the_parameter_mean_and_refuses_other_configs(tmp_path) -> None:
    import pytest

    from homalign.model import save_model
    from homalign.model.average import average_models, main

    cfg = AlignerConfig(dim=8, dilations=(1,))
    stems = []
    for seed in (0, 1, 2):
        torch.manual_seed(seed)
        m = AlignerModel(cfg)
        with torch.no_grad():
            for p in m.parameters():
                p.add_(torch.randn_like(p))
        save_model(m, tmp_path / f"m{seed}")
        stems.append(tmp_path / f"m{seed}")
    avg = average_models(stems)
    from homalign.model import load_model

    sds = [load_model(s)[0].state_dict() for s in stems]
    for k, v in avg.state_dict().items():
        torch.testing.assert_close(v, (sds[0][k] + sds[1][k] + sds[2][k]) / 3)
    assert main([str(tmp_path / "avg"), *map(str, stems)]) == 0
    again, meta = load_model(tmp_path / "avg")
    assert meta["averaged"] == [str(s) for s in stems]
    torch.testing.assert_close(again.scorer.W, avg.scorer.W)
    save_model(AlignerModel(AlignerConfig(dim=4, dilations=(1,))), tmp_path / "other")
    with pytest.raises(ValueError, match="other: config differs"):
        average_models([stems[0], tmp_path / "other"])
