"""The learned aligner as a ``homalign.train`` task (``model = "learned-aligner"`` in a config).

``make_aligner_task(**model_args)`` returns a :class:`homalign.train.task.TrainTask`: the model,
a dataset of fixed-width tensor items (each pair cropped to ``window`` residues and padded, so
the runtime's default collation stacks them) and the loss of :mod:`homalign.model.loss`, plus
``evaluate`` (whole pairs of ``eval_data``, MEA-decoded exact posteriors, F1/balanced/nll:
:mod:`homalign.model.evaluation`) and ``export`` (:func:`homalign.model.weights.save_model`, so
``homalign train``'s ``<logdir>/export/best.*`` can replace the bundled ``weights/learned.*``).
Importing this module registers the factory (``register()``); see ``configs/aligner.toml``.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from homalign.model.aligner import AlignerModel
from homalign.model.config import AlignerConfig
from homalign.model.crf import crf_posterior_batch
from homalign.model.data import TrainPair, crop, load_homstrad, load_tmalign, split_by_group
from homalign.model.encoder import PAD
from homalign.model.evaluation import HELD_OUT, make_evaluate, resolve_eval_pairs
from homalign.model.loss import alignment_nll, marginal_loss, masked_cross_entropy
from homalign.paths import shared_data_root

DATA = shared_data_root()


class PairDataset(Dataset):
    """Items: (q, t, lq, lt, partner, q_ss, t_ss, q_acc, t_acc) int64 tensors of width ``window``.

    ``partner[i]`` is the reference partner of query residue i (-1: unaligned). Each pair is
    cropped once, deterministically (seeded by its name), so items are reproducible on resume.
    """

    def __init__(self, pairs: list[TrainPair], window: int = 256) -> None:
        self.pairs = pairs
        self.window = window

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, k: int) -> tuple[torch.Tensor, ...]:
        p = crop(self.pairs[k], self.window, np.random.default_rng(zlib.crc32(
            self.pairs[k].name.encode())))
        W = self.window

        def pad(a: np.ndarray, value: int) -> torch.Tensor:
            out = np.full(W, value, dtype=np.int64)
            out[: len(a)] = a
            return torch.as_tensor(out)

        partner = np.full(len(p.q), -1, dtype=np.int64)
        partner[p.pairs[:, 0]] = p.pairs[:, 1]
        return (pad(p.q, PAD), pad(p.t, PAD), torch.tensor(len(p.q)), torch.tensor(len(p.t)),
                pad(partner, -1), pad(p.q_ss, -1), pad(p.t_ss, -1), pad(p.q_acc, -1),
                pad(p.t_acc, -1))


def aligner_loss(model: torch.nn.Module, batch: list[torch.Tensor], aux_weight: float = 0.2,
                 mode: str = "global", marginal_weight: float = 0.0,
                 decode_mode: str | None = None) -> torch.Tensor:
    """Per-residue CRF NLL of the reference alignments + ``aux_weight`` x structure CE
    (+ ``marginal_weight`` x the posterior-marginal loss of ``decode_mode``'s posteriors,
    :func:`homalign.model.loss.marginal_loss`, the bundled aligner's recipe).

    The scores come from ``model(q, t)``, so under DistributedDataParallel the gradients are
    all-reduced; the auxiliary heads always join the graph (times 0 when ``aux_weight`` is 0), so
    every parameter gets a gradient each step, as DDP requires.
    """
    q, t, lq, lt, partner, q_ss, t_ss, q_acc, t_acc = batch
    n, m = int(lq.max()), int(lt.max())
    q, q_ss, q_acc, partner = q[:, :n], q_ss[:, :n], q_acc[:, :n], partner[:, :n]
    t, t_ss, t_acc = t[:, :m], t_ss[:, :m], t_acc[:, :m]
    net = getattr(model, "module", model)
    S, gaps, e_q, e_t = model(q, t)
    pairs = []
    for b in range(len(q)):
        i = torch.nonzero(partner[b] >= 0).flatten()
        pairs.append(np.stack([i.numpy(), partner[b, i].numpy()], axis=1).astype(np.int32))
    nll = alignment_nll(S, gaps, lq, lt, pairs, mode)
    loss = (nll / (lq + lt).to(nll.dtype)).mean()
    if marginal_weight > 0:
        P = crf_posterior_batch(S, gaps, lq, lt, decode_mode or mode)
        loss = loss + marginal_weight * marginal_loss(P, pairs).mean()
    aux = (masked_cross_entropy(net.ss_logits(e_q), q_ss)
           + masked_cross_entropy(net.ss_logits(e_t), t_ss)
           + masked_cross_entropy(net.acc_logits(e_q), q_acc)
           + masked_cross_entropy(net.acc_logits(e_t), t_acc)) / 4
    return loss + aux_weight * aux


def export_aligner(model: torch.nn.Module, stem: Path, extra: Mapping[str, Any]) -> None:
    """Write ``<stem>.safetensors`` + ``<stem>.json`` in the bundled weights' format."""
    from homalign.model.weights import save_model

    save_model(getattr(model, "module", model), stem, {"model": "learned-aligner", **extra})


def make_aligner_task(homstrad: str = str(DATA / "homstrad" / "train"),
                      tmalign: str | None = str(DATA / "scope" / "tmalign-pairs.train.tsv"),
                      window: int = 256, max_pairs_per_family: int = 40,
                      aux_weight: float = 0.2, val_fraction: float = 0.08,
                      marginal_weight: float = 0.0,
                      eval_data: str = HELD_OUT, eval_pairs: int | None = 200,
                      config: dict | None = None) -> Any:
    """Build the TrainTask: training data = the non-held-out part of ``homstrad`` (+ ``tmalign``);
    evaluation = at most ``eval_pairs`` whole pairs of ``eval_data`` ("held-out", "dev" or a
    directory of families; 0: all pairs; no evaluation when it is "held-out" and nothing is held
    out)."""
    from homalign.errors import InputError
    from homalign.train.task import TrainTask

    if eval_pairs is not None and eval_pairs < 0:
        raise InputError(f"[model_args] eval_pairs = {eval_pairs}: use 0 (all) or more")

    cfg = AlignerConfig.from_dict(dict(config or {}))
    data = load_homstrad(homstrad, max_pairs_per_family)
    if tmalign:
        data += load_tmalign(tmalign)
    train, val = split_by_group(data, val_fraction)
    evaluation = resolve_eval_pairs(eval_data, val, eval_pairs or None)
    model = AlignerModel(cfg)
    # the homology adapter is trained separately (train_loop --homology-only); DDP needs every
    # trainable parameter to take part in the loss
    model.homology.requires_grad_(False)
    return TrainTask(
        model=model, train_dataset=PairDataset(train, window),
        loss_fn=lambda net, batch: aligner_loss(net, batch, aux_weight, cfg.mode,
                                                marginal_weight, cfg.decode_mode),
        eval_dataset=PairDataset(val, window),
        config={"config": cfg.to_dict(), "model": "learned-aligner"},
        evaluate=make_evaluate(evaluation) if evaluation else None,
        export=export_aligner,
    )


def register() -> None:
    """Register ``learned-aligner`` with the training runtime's model registry."""
    from homalign.train.config import register_model

    register_model("learned-aligner", make_aligner_task, replace=True)


register()

__all__ = ["PairDataset", "aligner_loss", "export_aligner", "make_aligner_task", "register"]
