"""Masked-residue (BERT-style) pre-training of the learned aligner's :class:`ResidueEncoder`.

The encoder is exactly :class:`homalign.model.encoder.ResidueEncoder`, so its state dict loads
into ``AlignerModel.encoder`` (``train_loop --init-encoder <out>/encoder``). A linear head
predicts the original residue among the 20 standard amino acids at masked positions.

Masking: 15% of the standard-residue positions are chosen (B, Z, X and padding never are); of
those 80% are replaced by the mask token, 10% by a random standard residue, 10% kept. The
encoder's embedding has no spare code, so the mask token is ``X`` (code 22, "unknown residue"):
no architecture change, and at alignment time an ``X`` means "residue not known", which is what
a masked position is.

Run::

    python -m homalign.model.pretrain --out runs/NAME --fasta F [--fasta F2] \
        --config '{"dim": 48, "dilations": [1, 2, 4, 8], "dropout": 0.1}' --steps N \
        [--exclude ids.txt]

writes ``<out>/log.jsonl``, ``<out>/checkpoint.pt`` (rerunning the same command resumes) and,
for the best validation loss, ``<out>/encoder.safetensors`` (the ResidueEncoder state dict, its
own key names) + ``<out>/encoder.json`` (``config``: the encoder hyper-parameters;
``validation``: the record of that evaluation).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from homalign.alphabet import N_AA, X_CODE
from homalign.io.atomic import atomic_write_bytes
from homalign.model.config import AlignerConfig
from homalign.model.encoder import PAD, ResidueEncoder
from homalign.model.weights import atomic_torch_save

MASK_CODE = X_CODE
"""Input code of a masked position (``X``: the alphabet has no spare code)."""
IGNORE = -100
"""Label of a position that is not predicted (``cross_entropy``'s ``ignore_index``)."""
ENCODER_KEYS = ("dim", "kernel", "dilations", "dropout")


# ----------------------------------------------------------------------------------- masking
def mask_codes(codes: Tensor, gen: torch.Generator, rate: float = 0.15
               ) -> tuple[Tensor, Tensor]:
    """BERT masking of padded codes (B, L) -> (inputs, labels).

    Each standard-residue position (code < 20) is chosen with probability ``rate``; a chosen
    position becomes ``MASK_CODE`` (80%), a uniformly random standard residue (10%) or stays
    (10%). ``labels`` holds the original code at chosen positions and ``IGNORE`` elsewhere.
    """
    u = torch.rand(codes.shape, generator=gen)
    chosen = (codes < N_AA) & (u < rate)
    v = torch.rand(codes.shape, generator=gen)
    rand_aa = torch.randint(0, N_AA, codes.shape, generator=gen)
    inputs = torch.where(chosen & (v < 0.8), torch.full_like(codes, MASK_CODE), codes)
    inputs = torch.where(chosen & (v >= 0.8) & (v < 0.9), rand_aa, inputs)
    labels = torch.where(chosen, codes, torch.full_like(codes, IGNORE))
    return inputs, labels


# -------------------------------------------------------------------------------------- data
def crop(codes: np.ndarray, window: int, rng: np.random.Generator) -> np.ndarray:
    """A random window of at most ``window`` residues."""
    if len(codes) <= window:
        return codes
    start = int(rng.integers(0, len(codes) - window + 1))
    return codes[start:start + window]


def pad_batch(arrays: list[np.ndarray]) -> Tensor:
    """Stack code arrays into a (B, Lmax) int64 tensor padded with ``PAD``."""
    out = np.full((len(arrays), max(len(a) for a in arrays)), PAD, dtype=np.int64)
    for i, a in enumerate(arrays):
        out[i, :len(a)] = a
    return torch.from_numpy(out)


def bucketed_batches(seqs: list[np.ndarray], window: int, max_tokens: int,
                     rng: np.random.Generator) -> list[Tensor]:
    """One epoch: crop every sequence, bucket by length, cut into padded batches of at most
    ``max_tokens`` cells (B * Lmax), in random order."""
    crops = [crop(s, window, rng) for s in seqs]
    lengths = np.array([len(c) for c in crops])
    order = np.lexsort((rng.random(len(crops)), lengths))  # by length, ties at random
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:  # ascending lengths: the newest member is the longest
        if cur and (len(cur) + 1) * lengths[i] > max_tokens:
            batches.append(cur)
            cur = []
        cur.append(int(i))
    if cur:
        batches.append(cur)
    perm = rng.permutation(len(batches))
    return [pad_batch([crops[j] for j in batches[k]]) for k in perm]


def read_ids(path: str | Path) -> set[str]:
    """Ids listed one per line (blank lines and ``#`` comments ignored)."""
    ids = set()
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            ids.add(line.split()[0])
    return ids


def load_corpus(fastas: list[str], exclude: set[str], min_length: int = 10
                ) -> tuple[list[np.ndarray], int]:
    """Codes of every sequence in ``fastas`` whose id is not in ``exclude`` and that has at least
    ``min_length`` residues; also returns the number of excluded records."""
    from homalign.sequence import read_sequences

    out: list[np.ndarray] = []
    n_excluded = 0
    for f in fastas:
        for s in read_sequences(f):
            if s.id in exclude:
                n_excluded += 1
            elif len(s) >= min_length:
                out.append(np.ascontiguousarray(s.codes, dtype=np.int64))
    return out, n_excluded


# ------------------------------------------------------------------------------------- model
class MaskedResidueModel(nn.Module):
    """``ResidueEncoder`` + a linear head over the 20 standard amino acids."""

    def __init__(self, dim: int, kernel: int, dilations: tuple[int, ...], dropout: float
                 ) -> None:
        super().__init__()
        self.encoder = ResidueEncoder(dim, kernel, dilations, dropout)
        self.head = nn.Linear(dim, N_AA)

    def forward(self, codes: Tensor) -> Tensor:
        """Logits (B, L, 20)."""
        return self.head(self.encoder(codes))


def masked_loss(model: MaskedResidueModel, inputs: Tensor, labels: Tensor
                ) -> tuple[Tensor, int, int]:
    """(summed cross-entropy over masked positions, their count, correct predictions)."""
    sel = labels != IGNORE
    logits = model(inputs)[sel]
    target = labels[sel]
    loss = nn.functional.cross_entropy(logits, target, reduction="sum")
    correct = int((logits.argmax(-1) == target).sum())
    return loss, int(sel.sum()), correct


@dataclass
class ValSet:
    """Fixed validation batches (crops and masks drawn once, so evaluations are comparable)."""

    batches: list[tuple[Tensor, Tensor]]

    @classmethod
    def build(cls, seqs: list[np.ndarray], window: int, max_tokens: int, seed: int,
              rate: float = 0.15) -> ValSet:
        rng = np.random.default_rng([seed, 7919])
        gen = torch.Generator().manual_seed(seed + 7919)
        return cls([mask_codes(b, gen, rate) for b in
                    bucketed_batches(seqs, window, max_tokens, rng)])

    def baseline(self, train_freq: np.ndarray) -> dict:
        """Scores of predicting from residue frequencies alone (no context)."""
        labels = torch.cat([lab[lab != IGNORE] for _, lab in self.batches]).numpy()
        p = train_freq[labels]
        return {"unigram_loss": float(-np.log(p).mean()),
                "unigram_sampled_acc": float(p.mean()),
                "majority_acc": float((labels == int(np.argmax(train_freq))).mean())}

    @torch.no_grad()
    def evaluate(self, model: MaskedResidueModel) -> dict:
        model.eval()
        tot, n, ok = 0.0, 0, 0
        for inputs, labels in self.batches:
            loss, cnt, correct = masked_loss(model, inputs, labels)
            tot, n, ok = tot + float(loss), n + cnt, ok + correct
        model.train()
        return {"val_loss": tot / max(n, 1), "val_acc": ok / max(n, 1), "val_masked": n}


def residue_frequencies(seqs: list[np.ndarray]) -> np.ndarray:
    """Frequencies of the 20 standard residues (add-one smoothed)."""
    counts = np.ones(N_AA)
    for s in seqs:
        counts += np.bincount(s[s < N_AA], minlength=N_AA)
    return counts / counts.sum()


def learning_rate(step: int, total: int, peak: float, warmup: int) -> float:
    """Linear warm-up to ``peak`` then cosine decay to zero at ``total``."""
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(total - warmup, 1)
    return peak * 0.5 * (1.0 + math.cos(math.pi * min(t, 1.0)))


# --------------------------------------------------------------------------------------- I/O
def save_encoder(encoder: ResidueEncoder, config: dict, out: Path, extra: dict) -> None:
    """Write ``<out>/encoder.safetensors`` (state dict, no prefix) and ``<out>/encoder.json``."""
    from safetensors.torch import save as st_save

    tensors = {k: v.detach().contiguous().cpu() for k, v in encoder.state_dict().items()}
    atomic_write_bytes(out / "encoder.safetensors", st_save(tensors))
    meta = {"config": config, **extra}
    atomic_write_bytes(out / "encoder.json", (json.dumps(meta, indent=2) + "\n").encode())


def load_encoder(stem: str | Path) -> tuple[ResidueEncoder, dict]:
    """Read ``<stem>.safetensors`` + ``<stem>.json`` back into a ResidueEncoder (eval mode)."""
    from safetensors.torch import load_file

    stem = Path(stem)
    meta = json.loads(stem.with_suffix(".json").read_text())
    c = meta["config"]
    enc = ResidueEncoder(c["dim"], c["kernel"], tuple(c["dilations"]), c["dropout"])
    enc.load_state_dict(load_file(str(stem.with_suffix(".safetensors"))))
    return enc.eval(), meta


# -------------------------------------------------------------------------------------- main
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m homalign.model.pretrain", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="run folder (resumed if it has a checkpoint)")
    p.add_argument("--fasta", action="append", required=True, help="unlabelled sequences")
    p.add_argument("--exclude", action="append", default=[],
                   help="file of sequence ids (one a line) to leave out, e.g. dev queries")
    p.add_argument("--config", default="{}",
                   help="JSON encoder settings (dim, kernel, dilations, dropout; AlignerConfig "
                        "defaults otherwise)")
    p.add_argument("--steps", type=int, required=True, help="optimizer steps (cosine length)")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--warmup", type=float, default=0.03, help="warm-up fraction of --steps")
    p.add_argument("--window", type=int, default=256, help="longest random crop")
    p.add_argument("--max-tokens", type=int, default=8192, help="padded cells per batch")
    p.add_argument("--mask-rate", type=float, default=0.15)
    p.add_argument("--val-fraction", type=float, default=0.05)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def _lock_run(out: Path):
    """Exclusive lock on ``<out>/.lock``: a second run on the same folder would interleave the
    log and overwrite the checkpoint, so it exits instead."""
    import fcntl

    fh = open(out / ".lock", "w")  # noqa: SIM115 - kept open for the run's lifetime
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise SystemExit(f"{out} is in use by another pre-training run") from None
    return fh


def _encoder_config(text: str) -> dict:
    user = json.loads(text)
    bad = set(user) - set(ENCODER_KEYS)
    if bad:
        raise SystemExit(f"--config: not encoder settings: {sorted(bad)} "
                         f"(allowed: {', '.join(ENCODER_KEYS)})")
    cfg = AlignerConfig.from_dict(user)  # validates types, fills defaults
    return {"dim": cfg.dim, "kernel": cfg.kernel, "dilations": list(cfg.dilations),
            "dropout": cfg.dropout}


def _epoch_batches(train: list[np.ndarray], args: argparse.Namespace, epoch: int
                   ) -> list[Tensor]:
    return bucketed_batches(train, args.window, args.max_tokens,
                            np.random.default_rng([args.seed, epoch]))


def _stream(train: list[np.ndarray], args: argparse.Namespace, epoch: int, index: int
            ) -> Iterator[tuple[int, int, Tensor]]:
    """Batches from (epoch, index) on, forever: yields (epoch, index, batch)."""
    while True:
        batches = _epoch_batches(train, args, epoch)
        for i in range(index, len(batches)):
            yield epoch, i, batches[i]
        epoch, index = epoch + 1, 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lock = _lock_run(out)  # held until the process exits
    config = _encoder_config(args.config)
    settings = {k: getattr(args, k) for k in ("fasta", "exclude", "steps", "lr", "weight_decay",
                                              "warmup", "window", "max_tokens", "mask_rate",
                                              "val_fraction", "seed")}

    exclude: set[str] = set()
    for f in args.exclude:
        exclude |= read_ids(f)
    seqs, n_excluded = load_corpus(args.fasta, exclude)
    if len(seqs) < 2:
        raise SystemExit("need at least two sequences")
    perm = np.random.default_rng(args.seed).permutation(len(seqs))
    n_val = max(1, int(round(args.val_fraction * len(seqs))))
    val = [seqs[i] for i in perm[:n_val]]
    train = [seqs[i] for i in perm[n_val:]]
    valset = ValSet.build(val, args.window, args.max_tokens, args.seed, args.mask_rate)
    freq = residue_frequencies(train)
    baseline = valset.baseline(freq)

    torch.manual_seed(args.seed)
    model = MaskedResidueModel(config["dim"], config["kernel"], tuple(config["dilations"]),
                               config["dropout"])
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    warmup = max(1, int(args.warmup * args.steps))
    step, epoch, index, best = 0, 0, 0, None
    log_path, ckpt_path = out / "log.jsonl", out / "checkpoint.pt"
    if ckpt_path.exists():
        ck = torch.load(ckpt_path, weights_only=True)
        if ck["config"] != config or ck["settings"] != settings:
            raise SystemExit(f"{ckpt_path} was written by another command "
                             f"({ck['config']}, {ck['settings']}); use a new --out")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        torch.set_rng_state(ck["torch_rng"])
        step, epoch, index = ck["step"], ck["epoch"], ck["index"]
        best = json.loads(ck["best"]) if ck["best"] else None
        if log_path.exists():  # drop records written after the checkpoint
            with open(log_path, "r+b") as fh:
                fh.truncate(ck["log_bytes"])

    def emit(rec: dict) -> None:
        line = json.dumps(rec)
        print(line, flush=True)
        with open(log_path, "a") as fh:
            fh.write(line + "\n")

    if step == 0:
        emit({"event": "start", "config": config, "train_seqs": len(train),
              "val_seqs": len(val), "excluded": n_excluded,
              "train_residues": int(sum(len(s) for s in train)), "baseline": baseline,
              "mask_token": "X", **settings})
    else:
        emit({"event": "resume", "step": step})

    def evaluate_and_checkpoint() -> None:
        nonlocal best
        rec = {"event": "eval", "step": step, "epoch": epoch, **valset.evaluate(model)}
        if best is None or rec["val_loss"] < best["val_loss"]:
            best = rec
            save_encoder(model.encoder, config, out,
                         {"validation": rec, "baseline": baseline, "mask_token": "X",
                          "pretrain": settings})
        rec["best_val_loss"] = best["val_loss"]
        emit(rec)
        atomic_torch_save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                            "torch_rng": torch.get_rng_state(), "step": step, "epoch": epoch,
                            "index": index, "best": json.dumps(best), "config": config,
                            "settings": settings, "log_bytes": log_path.stat().st_size},
                           ckpt_path)

    if step == 0:
        evaluate_and_checkpoint()
    model.train()
    t0, run_loss, run_n, run_ok = time.time(), 0.0, 0, 0
    stream = _stream(train, args, epoch, index)
    while step < args.steps:
        epoch, index, batch = next(stream)
        gen = torch.Generator().manual_seed(args.seed * 1_000_003 + step)
        inputs, labels = mask_codes(batch, gen, args.mask_rate)
        lr = learning_rate(step, args.steps, args.lr, warmup)
        for g in opt.param_groups:
            g["lr"] = lr
        loss, cnt, correct = masked_loss(model, inputs, labels)
        opt.zero_grad(set_to_none=True)
        (loss / max(cnt, 1)).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step, index = step + 1, index + 1
        run_loss, run_n, run_ok = run_loss + loss.item(), run_n + cnt, run_ok + correct
        if step % args.log_every == 0:
            emit({"event": "train", "step": step, "epoch": epoch, "lr": lr,
                  "loss": run_loss / max(run_n, 1), "acc": run_ok / max(run_n, 1),
                  "s_per_step": (time.time() - t0) / args.log_every})
            t0, run_loss, run_n, run_ok = time.time(), 0.0, 0, 0
        if step % args.eval_every == 0 or step == args.steps:
            evaluate_and_checkpoint()
            t0 = time.time()  # step times exclude evaluation
    emit({"event": "done", "step": step, "best": best})
    lock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
