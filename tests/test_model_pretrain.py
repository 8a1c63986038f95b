"""Masked-residue pre-training of the ResidueEncoder (homalign.model.pretrain)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from homalign.alphabet import ALPHABET, N_AA, X_CODE
from homalign.model import pretrain
from homalign.model.aligner import AlignerModel
from homalign.model.config import AlignerConfig
from homalign.model.encoder import PAD
from homalign.model.pretrain import IGNORE, MASK_CODE, mask_codes

CONFIG = '{"dim": 16, "kernel": 3, "dilations": [1, 2], "dropout": 0.1}'


def _write_fasta(path: Path, n: int = 40, seed: int = 0) -> Path:
    """Periodic sequences (random phase and length): a masked residue is predictable from
    its neighbours, so the loss must fall quickly."""
    rng = np.random.default_rng(seed)
    motif = "ACDEFGHIK"
    lines = []
    for i in range(n):
        length = int(rng.integers(30, 60))
        phase = int(rng.integers(0, len(motif)))
        seq = "".join(motif[(phase + k) % len(motif)] for k in range(length))
        lines += [f">s{i}", seq.lower()]
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(out: Path, fasta: Path, steps: int, *extra: str) -> int:
    return pretrain.main(["--out", str(out), "--fasta", str(fasta), "--config", CONFIG,
                          "--steps", str(steps), "--max-tokens", "256", "--lr", "1e-2",
                          "--eval-every", "10", "--log-every", "5", "--val-fraction", "0.1",
                          *extra])


def _log(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]


def test_masking_statistics() -> None:
    gen = torch.Generator().manual_seed(0)
    codes = torch.randint(0, N_AA, (200, 300), generator=gen)
    codes[:, 250:] = PAD  # padding
    codes[:, :10] = X_CODE  # ambiguous residues: never targets
    codes[:, 10:20] = ALPHABET.index("B")
    inputs, labels = mask_codes(codes, torch.Generator().manual_seed(1), rate=0.15)
    chosen = labels != IGNORE
    eligible = codes < N_AA
    assert not chosen[~eligible].any()
    assert (labels[chosen] == codes[chosen]).all()
    # positions not chosen are untouched and not counted
    assert (inputs[~chosen] == codes[~chosen]).all()
    frac = chosen.sum().item() / eligible.sum().item()
    assert abs(frac - 0.15) < 0.005
    n = chosen.sum().item()
    masked = (inputs[chosen] == MASK_CODE).sum().item() / n
    kept = (inputs[chosen] == codes[chosen]).sum().item() / n
    other = ((inputs[chosen] != codes[chosen]) & (inputs[chosen] != MASK_CODE)).sum().item() / n
    assert abs(masked - 0.8) < 0.01
    assert abs(kept - (0.1 + 0.1 / N_AA)) < 0.01  # a random residue may equal the original
    assert abs(other - 0.1 * (N_AA - 1) / N_AA) < 0.01
    assert (inputs[chosen & (inputs != MASK_CODE)] < N_AA).all()


def test_bucketed_batches_cover_every_sequence_once() -> None:
    rng = np.random.default_rng(0)
    seqs = [np.full(int(n), i % N_AA, dtype=np.int64) for i, n in
            enumerate(rng.integers(5, 400, 100))]
    batches = pretrain.bucketed_batches(seqs, 256, 1024, np.random.default_rng(1))
    assert all(b.numel() <= 1024 or b.shape[0] == 1 for b in batches)
    assert sum(b.shape[0] for b in batches) == len(seqs)
    assert max(b.shape[1] for b in batches) <= 256
    lengths = sorted(int((b != PAD).sum(1)[i]) for b in batches for i in range(b.shape[0]))
    assert lengths == sorted(min(len(s), 256) for s in seqs)


def test_loss_falls_and_encoder_loads_into_aligner(tmp_path: Path) -> None:
    fasta = _write_fasta(tmp_path / "toy.fa")
    out = tmp_path / "run"
    assert _run(out, fasta, 40) == 0
    evals = [r for r in _log(out) if r["event"] == "eval"]
    assert evals[0]["step"] == 0 and evals[-1]["step"] == 40
    assert evals[-1]["val_loss"] < evals[0]["val_loss"] - 1.0
    assert evals[-1]["val_acc"] > 0.5

    meta = json.loads((out / "encoder.json").read_text())
    best = min(evals, key=lambda r: r["val_loss"])
    assert meta["validation"]["step"] == best["step"]
    cfg = AlignerConfig.from_dict({k: meta["config"][k] for k in ("dim", "kernel", "dilations")})
    model = AlignerModel(cfg).eval()
    state = load_file(str(out / "encoder.safetensors"))
    assert "embed.weight" in state and "blocks.0.conv.weight" in state
    model.encoder.load_state_dict(state)  # strict: same key names, no prefix
    enc, _ = pretrain.load_encoder(out / "encoder")
    codes = torch.randint(0, N_AA, (3, 50))
    codes[1, 40:] = PAD
    with torch.no_grad():
        assert torch.equal(model.encoder(codes), enc(codes))


def test_save_encoder_round_trip(tmp_path: Path) -> None:
    torch.manual_seed(0)
    m = pretrain.MaskedResidueModel(16, 3, (1, 2), 0.0).eval()
    config = {"dim": 16, "kernel": 3, "dilations": [1, 2], "dropout": 0.0}
    pretrain.save_encoder(m.encoder, config, tmp_path, {"validation": {}})
    model = AlignerModel(AlignerConfig.from_dict(config)).eval()
    before = model.encoder(torch.arange(20)[None]).detach()
    model.encoder.load_state_dict(load_file(str(tmp_path / "encoder.safetensors")))
    codes = torch.randint(0, N_AA, (2, 30))
    with torch.no_grad():
        after = model.encoder(torch.arange(20)[None])
        assert torch.equal(model.encoder(codes), m.encoder(codes))
    assert not torch.allclose(before, after)


def test_resume_continues_from_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    fasta = _write_fasta(tmp_path / "toy.fa")
    whole = tmp_path / "whole"
    assert _run(whole, fasta, 25) == 0

    crashed = tmp_path / "crashed"
    real_lr = pretrain.learning_rate

    def crash_at_15(step: int, *a: float) -> float:
        if step == 15:
            raise RuntimeError("simulated crash")
        return real_lr(step, *a)

    monkeypatch.setattr(pretrain, "learning_rate", crash_at_15)
    with pytest.raises(RuntimeError, match="simulated crash"):
        _run(crashed, fasta, 25)
    ck = torch.load(crashed / "checkpoint.pt", weights_only=True)
    assert ck["step"] == 10  # the last checkpoint before the crash
    monkeypatch.setattr(pretrain, "learning_rate", real_lr)
    assert _run(crashed, fasta, 25) == 0

    log = _log(crashed)
    assert {"event": "resume", "step": 10} in log
    steps = [r["step"] for r in log if r["event"] == "train"]
    assert steps == sorted(set(steps))  # records after the checkpoint were dropped, not doubled
    a = torch.load(whole / "checkpoint.pt", weights_only=True)
    b = torch.load(crashed / "checkpoint.pt", weights_only=True)
    assert a["step"] == b["step"] == 25
    for k, v in a["model"].items():  # same batches, masks and dropout: the same model
        assert torch.equal(v, b["model"][k]), k

    # a different command must not silently resume this run
    with pytest.raises(SystemExit):
        _run(crashed, fasta, 30)


def test_second_run_on_same_folder_is_refused(tmp_path: Path) -> None:
    fasta = _write_fasta(tmp_path / "toy.fa")
    out = tmp_path / "run"
    out.mkdir()
    held = pretrain._lock_run(out)
    try:
        with pytest.raises(SystemExit, match="in use"):
            _run(out, fasta, 5)
        assert not (out / "log.jsonl").exists()
    finally:
        held.close()
    assert _run(out, fasta, 5) == 0
