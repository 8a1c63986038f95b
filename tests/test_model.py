"""The learned aligner: prior at initialisation, train/inference agreement, training, save/load."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from homalign.alphabet import encode
from homalign.dp import GapCosts, align_score
from homalign.dp.soft import SoftGaps, soft_align
from homalign.evaluate.metrics import score_pair
from homalign.matrices import score_matrix
from homalign.model import AlignerConfig, AlignerModel, load_model, save_model
from homalign.model.data import TrainPair, batches, crop, mutate
from homalign.model.decode import mea_align, posterior_matrix
from homalign.model.task import batch_loss

NATS = math.log(2.0) / 2.0
Q = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQFEVVHSLAKWKRQTLGQHDFSAGEGLYTHMKALRPDEDRLSPLHSVYVDQWDWERVMGDGERQFSTLKSTVEAIWAGIKATEAAVSEEFGLAPFLPDQIHFVHSQELLSRYPDLDAKGRERAIAKDLGAVFLVGIGGKLSDGHRHDVRAPDYDDWSTPSELGHAGLNGDILVWNPVLEDAFELSSMGIRVDADTLKHQLALTGDEDRLELEWHQALLRGEMPQTIGGGIGQSRLTMLLLQLPHIGQVQAGVWPAACRERVCALEGGQ"  # noqa: E501
T = "MKTAYLAKQRQVSFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDLSGAEKAVQVKVKALPDAQFEVVHSLAKWKRQTLGQHDFSAGEGLYTHMKALRPDEDRLSPLHSVYVDQWDWERVMGDGERQFSTLKSTVEAIWAGIKATEAAVSEEFGLAPFLPDQIHFVHSQELLSRYPDLDAKGRERAIAKDLGAVFLVGIGGKLSDGHRHDVRAPDYDDWSTPSELGHAGLNGDILVWNPVLEDAFELSSMGIRVDADTLKHQLALTGDEDRLELEWHQALLRGEMPQTIGGGIGQSRLTMLLLQL"  # noqa: E501


def _perturbed_model(seed: int = 0) -> AlignerModel:
    torch.manual_seed(seed)
    model = AlignerModel(AlignerConfig(dim=16, dilations=(1, 2)))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model.eval()


def test_untrained_model_is_blosum62_with_11_1_gaps_in_nats() -> None:
    model = AlignerModel().eval()
    q, t = encode(Q[:40]), encode(T[:50])
    S, gaps = model.score_pair(q, t)
    np.testing.assert_allclose(S, score_matrix(q, t, "BLOSUM62") * NATS, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gaps.q_ins_open, 11 * NATS, rtol=1e-5)
    np.testing.assert_allclose(gaps.t_del_ext, 1 * NATS, rtol=1e-5)
    assert not gaps.t_ins_open.any() and not gaps.q_del_ext.any()


@pytest.mark.parametrize("mode", ["global", "local", "semiglobal"])
def test_training_dp_and_exact_dp_agree_on_learned_scores(mode: str) -> None:
    """The soft DP used in training, at T = 0, is the exact engine's score on the same model."""
    model = _perturbed_model()
    q, t = encode(Q[:37]), encode(T[5:60])
    S, gaps = model.score_pair(q, t)
    hard = soft_align(torch.as_tensor(S, dtype=torch.float64)[None], SoftGaps.from_numpy(gaps),
                      mode, 0.0)
    assert float(hard[0]) == pytest.approx(align_score(S, gaps, mode=mode), abs=1e-3)


def _toy_pairs(n: int, rng: np.random.Generator) -> list[TrainPair]:
    """Homologous toy pairs: a random sequence and a mutated copy with one deletion."""
    out = []
    for k in range(n):
        a = rng.integers(0, 20, 30).astype(np.uint8)
        b = a.copy()
        mut = rng.random(30) < 0.3
        b[mut] = rng.integers(0, 20, mut.sum())
        cut = int(rng.integers(8, 22))
        b = np.delete(b, [cut, cut + 1])
        pairs = np.array([(i, i if i < cut else i - 2) for i in range(30) if i not in (cut, cut + 1)],
                         dtype=np.int32)
        lab = np.full(30, -1, dtype=np.int64)
        out.append(TrainPair(f"toy{k}", "toy", "toy", a, b, pairs, lab, lab[:28], lab, lab[:28]))
    return out


def test_a_few_training_steps_lower_the_loss() -> None:
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    data = _toy_pairs(8, rng)
    model = AlignerModel(AlignerConfig(dim=8, dilations=(1,), dropout=0.0))
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    batch = next(batches(data, 256, 10**6, rng, shuffle=False))
    first, _ = batch_loss(model, batch, aux_weight=0.0)
    for _ in range(15):
        loss, _ = batch_loss(model, batch, aux_weight=0.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    last, _ = batch_loss(model, batch, aux_weight=0.0)
    assert float(last.detach()) < 0.8 * float(first.detach())


def test_save_load_round_trip_gives_identical_alignments(tmp_path) -> None:
    model = _perturbed_model(3)
    save_model(model, tmp_path / "m", {"note": "test"})
    loaded, meta = load_model(tmp_path / "m")
    assert meta["note"] == "test" and meta["config"]["dim"] == 16
    q, t = encode(Q[:60]), encode(T[:70])
    S1, g1 = model.score_pair(q, t)
    S2, g2 = loaded.score_pair(q, t)
    np.testing.assert_array_equal(S1, S2)
    np.testing.assert_array_equal(g1.q_ins_open, g2.q_ins_open)
    a1 = mea_align(posterior_matrix(S1, g1, "global"), 0.3).pairs
    a2 = mea_align(posterior_matrix(S2, g2, "global"), 0.3).pairs
    np.testing.assert_array_equal(a1, a2)


def test_crop_keeps_a_consistent_reference() -> None:
    rng = np.random.default_rng(1)
    n = 600
    pairs = np.stack([np.arange(0, n, 2), np.arange(0, n // 2)], axis=1).astype(np.int32)
    lab = np.zeros(n, dtype=np.int64)
    p = TrainPair("x", "g", "toy", np.zeros(n, np.uint8), np.ones(n // 2, np.uint8), pairs,
                  lab, lab[: n // 2], lab, lab[: n // 2])
    for _ in range(20):
        c = crop(p, 128, rng)
        assert len(c.q) <= 128 and len(c.t) <= 128
        assert c.pairs[0].tolist() == [0, 0]
        assert c.pairs[-1].tolist() == [len(c.q) - 1, len(c.t) - 1]
        assert (np.diff(c.pairs, axis=0) > 0).all()


def test_mutation_follows_blosum62_and_keeps_the_reference() -> None:
    from homalign.profile.pseudocounts import conditional_matrix

    rng = np.random.default_rng(3)
    codes = np.repeat(np.arange(20, dtype=np.uint8), 2000)
    codes[::50] = encode("X")[0]
    assert mutate(codes, 0.0, rng) is codes
    out = mutate(codes, 1.0, rng)
    assert out.dtype == codes.dtype and len(out) == len(codes)
    unknown = codes >= 20
    assert (out[unknown] == codes[unknown]).all()  # only standard residues are redrawn
    P = conditional_matrix("BLOSUM62")
    for a in (0, 7, 18):  # A, G, W: redrawn from P(. | a), so they may stay themselves
        sel = (codes == a) & ~unknown
        freq = np.bincount(out[sel], minlength=20)[:20] / sel.sum()
        assert np.abs(freq - P[a]).max() < 0.04
    half = mutate(codes, 0.5, rng)
    changed = (half != codes)[~unknown].mean()
    want = 0.5 * (1.0 - float(np.mean([P[a, a] for a in range(20)])))
    assert abs(changed - want) < 0.02
    n = 40
    pair = TrainPair("x", "g", "toy", codes[:n].copy(), codes[n:2 * n].copy(),
                     np.stack([np.arange(n), np.arange(n)], 1).astype(np.int32),
                     *(np.zeros(n, np.int64),) * 4)
    b = next(batches([pair], 64, 10_000, np.random.default_rng(0), mutation_rate=0.9))
    assert b.pairs[0].tolist() == pair.pairs.tolist()
    assert (b.q[0].numpy() != pair.q).any()


def test_posterior_decoding_recovers_an_identical_pair() -> None:
    model = AlignerModel().eval()
    q = encode(Q[:80])
    S, gaps = model.score_pair(q, q)
    P = posterior_matrix(S, gaps, "global")
    assert P.shape == (80, 80)
    assert (P.sum(axis=1) <= 1 + 1e-4).all()
    res = mea_align(P, 0.3)
    assert score_pair(res.pairs, np.stack([np.arange(80)] * 2, axis=1), 80, 80).F1 == 1.0


def test_gap_costs_map_onto_the_dp_contract() -> None:
    model = _perturbed_model(1)
    _, gaps = model.score_pair(encode(Q[:10]), encode(T[:12]))
    assert isinstance(gaps, GapCosts)
    assert gaps.lq == 10 and gaps.lt == 12
    assert (gaps.q_ins_open > 0).all() and (gaps.t_del_ext > 0).all()


def test_learned_method_end_to_end_with_bundled_weights() -> None:
    import homalign
    from homalign.methods import get_method, method_names

    assert "learned" in method_names("learned")
    assert get_method("learned").available() is None
    q = Q[:120]
    t = T[:46] + T[47:118]  # T already lacks Q's residue 46; drop one more
    aln = homalign.align(q, t, method="learned")
    assert aln.method == "learned" and aln.length > 100
    qa, ta = aln.gapped()
    same = sum(a == b for a, b in zip(qa, ta, strict=True))
    assert same / aln.length > 0.9
    assert 0.9 < aln.extra["homology_probability"] <= 1.0
    vit = homalign.align(q, t, method="learned", decode="viterbi")
    assert vit.length > 100
    with pytest.raises(ValueError):
        homalign.align(q, t, method="learned", decode="nonsense")


def test_bundled_weights_save_load_round_trip(tmp_path) -> None:
    from homalign.model import load_bundled

    model, meta = load_bundled()
    save_model(model, tmp_path / "copy", {k: v for k, v in meta.items() if k != "config"})
    again, meta2 = load_model(tmp_path / "copy")
    assert meta2["ensemble"] == meta["ensemble"]
    q, t = encode(Q[:90]), encode(T[3:100])
    S1, g1 = model.score_pair(q, t)
    S2, g2 = again.score_pair(q, t)
    np.testing.assert_array_equal(S1, S2)
    p1 = mea_align(posterior_matrix(S1, g1, "global"), 0.3).pairs
    p2 = mea_align(posterior_matrix(S2, g2, "global"), 0.3).pairs
    np.testing.assert_array_equal(p1, p2)


def test_runtime_task_items_collate_and_give_the_training_loss() -> None:
    from torch.utils.data import default_collate

    from homalign.model.task import PairDataset, aligner_loss, register
    from homalign.train.config import get_model_factory

    register()
    assert get_model_factory("learned-aligner").__name__ == "make_aligner_task"
    rng = np.random.default_rng(2)
    data = PairDataset(_toy_pairs(3, rng), window=64)
    batch = default_collate([data[k] for k in range(3)])
    assert batch[0].shape == (3, 64) and batch[2].tolist() == [30, 30, 30]
    torch.manual_seed(0)
    model = AlignerModel(AlignerConfig(dim=8, dilations=(1,), dropout=0.0))
    loss = aligner_loss(model, list(batch), aux_weight=0.0)
    # the same loss as the simple training loop computes on the same pairs
    ref, _ = batch_loss(model, next(batches(data.pairs, 64, 10**6, rng, shuffle=False)), 0.0)
    assert float(loss.detach()) == pytest.approx(float(ref.detach()), rel=1e-5)
    loss.backward()
    assert model.scorer.W.grad is not None and model.scorer.W.grad.abs().sum() > 0
    # with the marginal term: the same total as the simple loop's
    with_marg = aligner_loss(model, list(batch), aux_weight=0.0, marginal_weight=0.5,
                             decode_mode="semiglobal")
    ref_m, parts = batch_loss(model, next(batches(data.pairs, 64, 10**6, rng, shuffle=False)),
                              0.0, marginal_weight=0.5)
    assert parts["marginal"] > 0 and float(with_marg.detach()) > float(loss.detach())
    assert float(with_marg.detach()) == pytest.approx(float(ref_m.detach()), rel=1e-5)


def test_padded_batch_embeddings_equal_each_sequence_alone() -> None:
    """Training pads batches; inference embeds one sequence: both must see the same features."""
    from homalign.model.encoder import PAD, ResidueEncoder

    torch.manual_seed(0)
    enc = ResidueEncoder(16, 5, (1, 2, 4), 0.0).eval()
    for block in enc.blocks:  # non-trivial LayerNorm biases, as after training
        torch.nn.init.normal_(block.norm.bias, std=0.5)
    rng = np.random.default_rng(0)
    short, long_ = rng.integers(0, 20, 11), rng.integers(0, 20, 30)
    batch = torch.full((2, 30), PAD, dtype=torch.int64)
    batch[0, :11] = torch.as_tensor(short)
    batch[1] = torch.as_tensor(long_)
    with torch.no_grad():
        both = enc(batch)
        alone = enc(torch.as_tensor(short)[None])
    assert torch.allclose(both[0, :11], alone[0], atol=1e-6)
    assert float(both[0, 11:].abs().max()) == 0.0


def test_pair_refiner_starts_as_identity_and_pads_like_one_pair() -> None:
    """The 2-D refinement of S is zero at initialisation; trained, a padded batch gives each pair
    the same corrected S as that pair alone, and the training loss reaches its weights."""
    from homalign.model.encoder import PAD

    base = _perturbed_model(1)
    cfg = AlignerConfig(dim=16, dilations=(1, 2), pair_channels=4, pair_kernel=3, pair_layers=2)
    refined = AlignerModel(cfg).eval()
    missing, unexpected = refined.load_state_dict(base.state_dict(), strict=False)
    assert not unexpected and all(k.startswith("scorer.refine.") for k in missing)
    q, t = encode(Q[:40]), encode(T[:55])
    # equal to float32 rounding: a model without a refiner scores in closed form (numpy), one
    # with it through torch, whose kernels round differently on some CPUs (AVX-512 hosts)
    np.testing.assert_allclose(refined.score_pair(q, t)[0], base.score_pair(q, t)[0], rtol=0,
                               atol=1e-6)

    torch.manual_seed(2)
    with torch.no_grad():
        for p in refined.scorer.refine.parameters():
            p.add_(0.3 * torch.randn_like(p))
    S_alone = refined.score_pair(q, t)[0]
    assert float(np.abs(S_alone - base.score_pair(q, t)[0]).max()) > 1e-3
    qb = torch.full((2, 60), PAD, dtype=torch.int64)
    tb = torch.full((2, 70), PAD, dtype=torch.int64)
    qb[0, :40], tb[0, :55] = torch.as_tensor(q.astype(np.int64)), torch.as_tensor(t.astype(np.int64))
    qb[1], tb[1] = torch.as_tensor(encode(Q[:60]).astype(np.int64)), torch.as_tensor(
        encode(T[:70]).astype(np.int64))
    with torch.no_grad():
        S_batch = refined(qb, tb)[0]
    np.testing.assert_allclose(S_batch[0, :40, :55].numpy(), S_alone, atol=1e-5)

    refined.train()
    batch = next(batches(_toy_pairs(2, np.random.default_rng(0)), 256, 10**6,
                         np.random.default_rng(0), shuffle=False))
    loss, _ = batch_loss(refined, batch, aux_weight=0.0)
    loss.backward()
    assert float(refined.scorer.refine.out.weight.grad.abs().sum()) > 0


def test_distillation_pulls_the_students_posteriors_towards_the_teachers() -> None:
    """The distillation term's gradient with respect to S is P_student - P_teacher: zero when the
    teacher is the student, and the teacher's posteriors are what the student moves towards."""
    rng = np.random.default_rng(3)
    data = _toy_pairs(3, rng)
    batch = next(batches(data, 256, 10**6, rng, shuffle=False))
    student = _perturbed_model(4)
    base, _ = batch_loss(student, batch, aux_weight=0.0)
    same, _ = batch_loss(student, batch, aux_weight=0.0, teacher=student, distill_weight=5.0)
    assert float(same.detach()) == pytest.approx(float(base.detach()), abs=1e-6)

    teacher = _perturbed_model(5)
    S, gaps, _, _ = teacher(batch.q, batch.t)
    S = S.detach().requires_grad_(True)
    from homalign.model.crf import crf_log_partition_batch

    (P_t,) = torch.autograd.grad(crf_log_partition_batch(S, gaps, batch.lq, batch.lt,
                                                         teacher.cfg.mode).sum(), S)
    opt = torch.optim.Adam(student.parameters(), lr=0.02)

    def gap_to_teacher() -> float:
        with torch.no_grad():
            S_s, g_s, _, _ = student(batch.q, batch.t)
        S_s = S_s.requires_grad_(True)
        (P_s,) = torch.autograd.grad(crf_log_partition_batch(S_s, g_s, batch.lq, batch.lt,
                                                             student.cfg.mode).sum(), S_s)
        return float((P_s - P_t).abs().sum())

    before = gap_to_teacher()
    for _ in range(20):
        loss, _ = batch_loss(student, batch, aux_weight=0.0, teacher=teacher, distill_weight=1.0)
        # the distillation term alone: subtract the reference likelihood's part
        ref, _ = batch_loss(student, batch, aux_weight=0.0)
        opt.zero_grad()
        (loss - ref).backward()
        opt.step()
    assert gap_to_teacher() < 0.7 * before
