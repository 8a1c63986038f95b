"""The encoder kernel (inference without torch) against the torch encoder it replaces."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from homalign.model import AlignerConfig, AlignerModel
from homalign.model.encoder import PAD, ResidueEncoder
from homalign.model.encoder_kernel import EncoderKernel, gelu


def _trained_like(enc: ResidueEncoder, seed: int) -> ResidueEncoder:
    """Non-trivial LayerNorm weights and biases, as after training; eval mode."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for norm in [b.norm for b in enc.blocks] + [enc.norm]:
            norm.weight.normal_(1.0, 0.3)
            norm.bias.normal_(0.0, 0.5)
        if enc.template is not None:
            enc.template.weight.normal_(0.0, 0.5)
    return enc.eval()


def _row(rng: np.random.Generator, lengths: list[int], gap: int) -> np.ndarray:
    parts = []
    for n in lengths:
        parts += [rng.integers(0, 20, n), np.full(gap, PAD)]
    return np.concatenate(parts[:-1]).astype(np.int64)


@pytest.mark.parametrize(("dim", "kernel", "dilations"), [(32, 5, (1, 2, 4)), (8, 3, (1,)),
                                                          (16, 7, (2, 3))])
def test_kernel_equals_the_torch_encoder(dim: int, kernel: int, dilations: tuple) -> None:
    enc = _trained_like(ResidueEncoder(dim, kernel, dilations, 0.2), dim)
    k = EncoderKernel.from_encoder(enc)
    assert k is not None
    rng = np.random.default_rng(dim)
    row = _row(rng, [1, 37, 250, 5], enc.reach)
    with torch.no_grad():
        ref = enc(torch.as_tensor(row)[None])[0].numpy()
    got = k(row)
    assert got.dtype == np.float32 and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)
    assert float(np.abs(got[row == PAD]).max()) == 0.0  # pads stay zero, as in torch


def test_kernel_reads_template_tokens() -> None:
    enc = _trained_like(ResidueEncoder(16, 5, (1, 2), 0.0, template=True), 3)
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 20, 60)
    tokens = rng.integers(0, 12, 60)
    with torch.no_grad():
        ref = enc(torch.as_tensor(codes)[None], torch.as_tensor(tokens)[None])[0].numpy()
    got = EncoderKernel.from_encoder(enc)(codes, tokens)
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)
    plain = EncoderKernel.from_encoder(_trained_like(ResidueEncoder(16, 5, (1,), 0.0), 3))
    with pytest.raises(ValueError, match="template"):
        plain(codes, tokens)


def test_gelu_is_exact_gelu_to_float32_rounding() -> None:
    x = np.linspace(-12.0, 12.0, 24_001).astype(np.float32)
    exact = np.array([0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.astype(float)])
    err = np.abs(gelu(x).astype(np.float64) - exact) / np.maximum(1.0, np.abs(exact))
    assert float(err.max()) < 2e-6


def test_even_width_is_refused() -> None:
    with pytest.raises(ValueError, match="odd"):
        AlignerConfig(dim=8, kernel=4)
    with pytest.raises(ValueError, match="odd"):
        EncoderKernel.from_encoder(ResidueEncoder(8, 4, (1,), 0.0))


def test_model_embeds_with_the_kernel_and_follows_weight_changes() -> None:
    """In eval mode ``embed``/``embed_many`` use the kernel (packed rows equal each sequence
    alone to float32 rounding); after an in-place weight change (an optimiser step) the kernel is
    rebuilt; training mode uses torch."""
    model = AlignerModel(AlignerConfig(dim=16, dilations=(1, 2), dropout=0.0)).eval()
    _trained_like(model.encoder, 5)
    rng = np.random.default_rng(2)
    seqs = [rng.integers(0, 20, n).astype(np.int8) for n in (3, 40, 120)]
    alone = [model.embed(s) for s in seqs]
    for a, b, s in zip(model.embed_many(seqs), alone, seqs, strict=True):
        assert a.shape == (1, len(s), 16)
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6, rtol=0)
    with torch.no_grad():
        model.encoder.blocks[0].conv.weight.mul_(1.5)
        ref = model.encoder(torch.as_tensor(seqs[1].astype(np.int64))[None])
    np.testing.assert_allclose(model.embed(seqs[1]).numpy(), ref.numpy(), atol=1e-5, rtol=0)
    assert model.encoder_kernel() is not None
    model.train()
    assert model.encoder_kernel() is None
    with torch.no_grad():
        assert torch.equal(model.embed(seqs[1]), model.encoder(
            torch.as_tensor(seqs[1].astype(np.int64))[None]))


def test_embed_many_on_threads_gives_the_one_thread_bits() -> None:
    """Packed rows embedded on several threads equal one thread's bit for bit, for an explicit
    count and for :func:`homalign.threads.set_threads`' (the default)."""
    from homalign.threads import get_threads, set_threads

    k = EncoderKernel.from_encoder(_trained_like(ResidueEncoder(16, 5, (1, 2, 4), 0.0), 7))
    rng = np.random.default_rng(4)
    seqs = [rng.integers(0, 20, n) for n in rng.integers(1, 900, 120)]  # ~54k residues: 4 rows
    serial = k.embed_many(seqs, threads=1)
    assert sum(map(len, seqs)) > 3 * 16_384
    before = get_threads()
    try:
        for threads in (2, 3):
            for a, b in zip(k.embed_many(seqs, threads=threads), serial, strict=True):
                assert a.tobytes() == b.tobytes()
        assert set_threads(3) == 3 and get_threads() == 3
        assert all(a.tobytes() == b.tobytes() for a, b in zip(k.embed_many(seqs), serial,
                                                               strict=True))
    finally:
        set_threads(before)
    assert [len(e) for e in serial] == [len(s) for s in seqs]
