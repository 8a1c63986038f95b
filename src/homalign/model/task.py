"""The learned aligner as a ``homalign.train`` task (``model = "learned-aligner"`` in a config).

``make_aligner_task(**model_args)`` returns a :class:`homalign.train.task.TrainTask`: the model,
a dataset of fixed-width tensor items (each pair cropped to ``window`` residues and padded, so
the runtime's default collation stacks them) and the loss (:func:`batch_loss`: the CRF path
likelihood, optionally softmax-margin, + auxiliary structure cross-entropies + the
posterior-marginal and expected-F1 terms + distillation from a teacher), plus ``evaluate`` (whole
held-out train pairs, MEA-decoded exact posteriors, F1/balanced/nll:
:mod:`homalign.model.evaluation`) and ``export`` (:func:`homalign.model.weights.save_model`, so
``homalign train``'s ``<logdir>/export/best.*`` can replace the bundled ``weights/learned.*``).

``objective = "homology-adapter"`` trains only the homology adapter (``model.homology``) of a
frozen aligner (warm-started from an export) with the SCOPe in-batch ranking loss
(:mod:`homalign.model.contrastive`), evaluated on held-out train folds.

Importing this module registers the factory (``register()``); the configs of the shipped recipe
are ``configs/*.toml`` (docs/training.md, scripts/train_weights.sh).
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
from homalign.model.crf import crf_log_partition_batch, crf_posterior_batch
from homalign.model.data import (
    Batch,
    TrainPair,
    cell_buckets,
    crop,
    epoch_groups,
    load_homstrad,
    load_tmalign,
    split_by_group,
)
from homalign.model.encoder import PAD
from homalign.model.encoder_kernel import template_tokens
from homalign.model.evaluation import HELD_OUT, make_evaluate, resolve_eval_pairs
from homalign.model.loss import (
    alignment_nll,
    cost_augmented,
    expected_f1_loss,
    marginal_loss,
    masked_cross_entropy,
)
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


class BucketedPairs(Dataset):
    """Items: whole batches of pairs, each at most ``max_cells`` DP cells (``B * L^2`` with L the
    longest sequence of the batch), the pairs sorted by length first so a batch pads little.

    Pairs are bucketed by their longest possible crop, ties (equal sizes: every pair longer than
    the window, pairs of equal length) broken at random anew every epoch, so pairs of one size
    meet different partners each epoch, as the training loop that made the first shipped weights
    batched them; the sizes alone fix the number of buckets and their bounds, so ``len`` never
    changes. The runtime's loader shuffles the buckets' order every epoch. A pair longer than
    ``window`` is cropped anew every epoch too. Ties are broken by ``seed`` and the epoch, crops
    by the pair's name and the epoch (which the loader sets through :meth:`set_epoch`), so a
    resumed run sees the same buckets and crops. ``make_aligner_task`` leaves ``seed`` at 0: a
    stage's ``seed`` changes its initial weights, dropout and the order of the buckets, not
    their members or crops. An item is :class:`PairDataset`'s tuple with a leading
    batch axis, as wide as its longest sequences; join items with :func:`collate_buckets`
    (``batch_size = 1`` in the config: one bucket a step).
    """

    def __init__(self, pairs: list[TrainPair], window: int = 256, max_cells: int = 400_000,
                 seed: int = 0) -> None:
        self.window = window
        self.pairs = pairs
        self.max_cells = max_cells
        self.seed = seed
        self.size = [min(max(len(p.q), len(p.t)), window) for p in self.pairs]  # any crop fits
        self.set_epoch(0)

    def _buckets(self, epoch: int) -> list[list[int]]:
        rng = np.random.default_rng(self.seed if epoch == 0 else (self.seed, epoch))
        ties = rng.random(len(self.pairs))
        size = self.size
        order = sorted(range(len(self.pairs)), key=lambda k: (size[k], ties[k]))
        return cell_buckets(order, size, self.max_cells)

    def __len__(self) -> int:
        return len(self.groups)

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose buckets and crops :meth:`__getitem__` returns (called by the
        runtime's loader)."""
        self.epoch = int(epoch)
        self.groups = self._buckets(self.epoch)

    def cropped(self, k: int) -> TrainPair:
        """Pair ``k`` as this epoch crops it."""
        p = self.pairs[k]
        name = zlib.crc32(p.name.encode())  # epoch 0: the crop PairDataset makes
        return crop(p, self.window, np.random.default_rng(name if self.epoch == 0
                                                          else (name, self.epoch)))

    def __getitem__(self, g: int) -> tuple[torch.Tensor, ...]:
        return bucket_tensors([self.cropped(k) for k in self.groups[g]])


def bucket_tensors(ps: list[TrainPair]) -> tuple[torch.Tensor, ...]:
    """One batch of pairs as :class:`PairDataset`'s tuple with a leading batch axis, as wide as
    its longest sequences."""
    n, m = max(len(p.q) for p in ps), max(len(p.t) for p in ps)

    def pad(arrays: list[np.ndarray], width: int, value: int) -> torch.Tensor:
        out = np.full((len(arrays), width), value, dtype=np.int64)
        for k, a in enumerate(arrays):
            out[k, : len(a)] = a
        return torch.as_tensor(out)

    partners = []
    for p in ps:
        partner = np.full(len(p.q), -1, dtype=np.int64)
        partner[p.pairs[:, 0]] = p.pairs[:, 1]
        partners.append(partner)
    return (pad([p.q for p in ps], n, PAD), pad([p.t for p in ps], m, PAD),
            torch.tensor([len(p.q) for p in ps]), torch.tensor([len(p.t) for p in ps]),
            pad(partners, n, -1), pad([p.q_ss for p in ps], n, -1),
            pad([p.t_ss for p in ps], m, -1), pad([p.q_acc for p in ps], n, -1),
            pad([p.t_acc for p in ps], m, -1))


class EpochBatches(Dataset):
    """Items: the batches of one epoch in training order, made by
    :func:`homalign.model.data.epoch_groups` with a generator seeded by ``(seed, epoch)``: every
    pair cropped to ``window`` anew, the crops sorted by length (random ties) and cut into batches
    of at most ``max_cells`` DP cells, the batches shuffled. This is the order that trained the
    shipped ``learned`` aligner. The dataset orders itself, so the task sets ``shuffle = False``
    and the number of batches may change from one epoch to the next (the runtime's loader asks
    after :meth:`set_epoch`). Items are :func:`bucket_tensors` tuples; join them with
    :func:`collate_buckets` (``batch_size = 1``: one batch a step).
    """

    def __init__(self, pairs: list[TrainPair], window: int = 256, max_cells: int = 400_000,
                 seed: int = 0) -> None:
        self.pairs = pairs
        self.window = window
        self.max_cells = max_cells
        self.seed = seed
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        """Make the batches of ``epoch`` (called by the runtime's loader)."""
        self.epoch = int(epoch)
        self.cropped, self.groups = epoch_groups(self.pairs, self.window, self.max_cells,
                                                 np.random.default_rng([self.seed, self.epoch]))

    def __len__(self) -> int:
        return len(self.groups)

    def __getitem__(self, g: int) -> tuple[torch.Tensor, ...]:
        return bucket_tensors([self.cropped[k] for k in self.groups[g]])


_PAD_VALUES = (PAD, PAD, None, None, -1, -1, -1, -1, -1)


def collate_buckets(items: list[tuple[torch.Tensor, ...]]) -> list[torch.Tensor]:
    """One batch of :class:`BucketedPairs` items: the buckets padded to a common width and
    stacked along the batch axis (one item: as it is)."""
    if len(items) == 1:
        return list(items[0])
    out = []
    for j, value in enumerate(_PAD_VALUES):
        parts = [item[j] for item in items]
        if value is not None:
            width = max(x.shape[1] for x in parts)
            parts = [torch.nn.functional.pad(x, (0, width - x.shape[1]), value=value)
                     for x in parts]
        out.append(torch.cat(parts))
    return out


def target_tokens(model: AlignerModel, batch: Batch) -> torch.Tensor | None:
    """The target's template tokens (its ``.tem`` labels) for a template-mode model, else None."""
    return template_tokens(batch.t_ss, batch.t_acc) if model.cfg.template else None


def _posteriors(S: torch.Tensor, gaps: Any, lq: torch.Tensor, lt: torch.Tensor, mode: str
                ) -> torch.Tensor:
    """Match posteriors (B, Lq, Lt) of detached scores (no graph kept)."""
    from dataclasses import fields

    Sd = S.detach().requires_grad_(True)
    gd = type(gaps)(**{f.name: getattr(gaps, f.name).detach() for f in fields(gaps)})
    (P,) = torch.autograd.grad(crf_log_partition_batch(Sd, gd, lq, lt, mode).sum(), Sd)
    return P


def batch_loss(model: torch.nn.Module, batch: Batch, aux_weight: float, dp: str = "crf",
               teacher: AlignerModel | None = None, distill_weight: float = 0.0,
               margin: tuple[float, float] = (0.0, 0.0), marginal_weight: float = 0.0,
               f1_weight: float = 0.0) -> tuple[torch.Tensor, dict]:
    """Mean per-residue alignment NLL of the batch plus the auxiliary losses; returns (loss,
    parts).

    ``model`` may be wrapped (DistributedDataParallel): the scores come from ``model(...)`` so
    the gradients are all-reduced, and the auxiliary heads always join the graph (times 0 when
    ``aux_weight`` is 0), so every trainable parameter gets a gradient.

    ``margin = (false_pair, missed_pair)`` > 0 makes the alignment term the softmax-margin loss
    (:func:`homalign.model.loss.cost_augmented`). ``marginal_weight`` > 0 adds that weight x the
    per-residue cross-entropy of the posterior marginals of the config's ``decode_mode`` (what MEA
    decoding reads; :func:`homalign.model.loss.marginal_loss`, two more CRF passes per pair).
    ``f1_weight`` > 0 adds that weight x ``1 -`` the expected-count F1 of the same posteriors.
    With a ``teacher``, ``distill_weight`` x a distillation term whose gradient with respect to S
    is the student's minus the teacher's match posteriors, per residue."""
    net = getattr(model, "module", model)
    S, gaps, e_q, e_t = model(batch.q, batch.t, target_tokens(net, batch))
    S_loss = cost_augmented(S, batch.pairs, batch.lq, batch.lt, *margin)
    nll = alignment_nll(S_loss, gaps, batch.lq, batch.lt, batch.pairs, net.cfg.mode, dp)
    norm = (batch.lq + batch.lt).to(nll.dtype)
    per_res = (nll / norm).mean()
    marg = torch.zeros(())
    soft_f1 = torch.zeros(())
    if marginal_weight > 0 or f1_weight > 0:
        P = crf_posterior_batch(S, gaps, batch.lq, batch.lt, net.cfg.decode_mode)
        if marginal_weight > 0:
            marg = marginal_loss(P, batch.pairs).mean()
        if f1_weight > 0:
            soft_f1 = expected_f1_loss(P, batch.pairs).mean()
    distill = torch.zeros(())
    if teacher is not None and distill_weight > 0:
        with torch.no_grad():
            S_t, g_t, _, _ = teacher(batch.q, batch.t, target_tokens(teacher, batch))
        diff = (_posteriors(S, gaps, batch.lq, batch.lt, net.cfg.mode)
                - _posteriors(S_t, g_t, batch.lq, batch.lt, net.cfg.mode))
        distill = ((diff * S).sum(dim=(1, 2)) / norm).mean()
    aux = (masked_cross_entropy(net.ss_logits(e_q), batch.q_ss)
           + masked_cross_entropy(net.ss_logits(e_t), batch.t_ss)
           + masked_cross_entropy(net.acc_logits(e_q), batch.q_acc)
           + masked_cross_entropy(net.acc_logits(e_t), batch.t_acc)) / 4
    return (per_res + aux_weight * aux + distill_weight * distill + marginal_weight * marg
            + f1_weight * soft_f1,
            {"nll": float(per_res.detach()), "aux": float(aux.detach()),
             "marginal": float(marg.detach()), "soft_f1_loss": float(soft_f1.detach())})


def tensor_batch(batch: list[torch.Tensor]) -> Batch:
    """A :class:`homalign.model.data.Batch` of collated :class:`PairDataset` items (trimmed to
    the longest sequences in the batch)."""
    q, t, lq, lt, partner, q_ss, t_ss, q_acc, t_acc = batch
    n, m = int(lq.max()), int(lt.max())
    pairs = []
    for b in range(len(q)):
        i = torch.nonzero(partner[b, :n] >= 0).flatten()
        pairs.append(np.stack([i.numpy(), partner[b, i].numpy()], axis=1).astype(np.int32))
    return Batch(q=q[:, :n], t=t[:, :m], lq=lq, lt=lt, pairs=pairs, q_ss=q_ss[:, :n],
                 t_ss=t_ss[:, :m], q_acc=q_acc[:, :n], t_acc=t_acc[:, :m],
                 names=[str(k) for k in range(len(q))])


def aligner_loss(model: torch.nn.Module, batch: list[torch.Tensor], aux_weight: float = 0.2,
                 mode: str | None = None, marginal_weight: float = 0.0,
                 decode_mode: str | None = None, **options: Any) -> torch.Tensor:
    """:func:`batch_loss` of collated :class:`PairDataset` items (the runtime's loss).

    ``mode``/``decode_mode`` are the model config's (kept as arguments for old callers; they
    must agree with it); ``options`` are :func:`batch_loss`'s (``margin``, ``f1_weight``,
    ``teacher``, ``distill_weight``, ``dp``)."""
    cfg = getattr(model, "module", model).cfg
    for name, value in (("mode", mode), ("decode_mode", decode_mode)):
        if value is not None and value != getattr(cfg, name):
            raise ValueError(f"aligner_loss {name}={value!r}, but the model's is "
                             f"{getattr(cfg, name)!r}")
    loss, _ = batch_loss(model, tensor_batch(batch), aux_weight,
                         marginal_weight=marginal_weight, **options)
    return loss


def export_aligner(model: torch.nn.Module, stem: Path, extra: Mapping[str, Any]) -> None:
    """Write ``<stem>.safetensors`` + ``<stem>.json`` in the bundled weights' format."""
    from homalign.model.weights import save_model

    save_model(getattr(model, "module", model), stem, {"model": "learned-aligner", **extra})


class StepSeeds(Dataset):
    """Items 0..n-1 (int64 tensors): the seeds of the homology objective's sampled batches."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: int) -> torch.Tensor:
        return torch.tensor(k)


def evaluate_homology(model: torch.nn.Module, val: Any, batch: int, n_batches: int = 12,
                      hard: bool = False) -> dict[str, float]:
    """In-batch ranking on held-out SCOPe train folds: loss, top-1 accuracy and positive-vs-
    negative AUC (``hard``: with one prefilter-mined hard negative per query, keys
    ``hom_hard_*``)."""
    from homalign.model.contrastive import homology_logits, homology_loss, sample_batch

    net = getattr(model, "module", model)
    was_training = net.training
    net.eval()
    rng = np.random.default_rng(7)
    losses, acc, auc = [], [], []
    try:
        with torch.no_grad():
            for _ in range(n_batches):
                q, t, lq, lt, same = sample_batch(val, batch, rng, hard=hard)
                z = homology_logits(net, net.homology, q, t, lq, lt)
                losses.append(float(homology_loss(z, same)))
                B = len(z)
                pos = torch.zeros_like(same)
                pos[:, :B] = torch.eye(B, dtype=torch.bool)
                zm = z.masked_fill(same & ~pos, float("-inf"))
                acc.append(float((zm.argmax(1) == torch.arange(B)).float().mean()))
                diag = torch.diagonal(z[:, :B])
                neg = z[~same]
                auc.append(float((diag[:, None] > neg[None, :]).float().mean()))
    finally:
        net.train(was_training)
    pre = "hom_hard_" if hard else "hom_"
    return {f"{pre}loss": float(np.mean(losses)), f"{pre}acc": float(np.mean(acc)),
            f"{pre}auc": float(np.mean(auc))}


def export_homology(model: torch.nn.Module, stem: Path, extra: Mapping[str, Any]) -> None:
    """:func:`export_aligner` plus the adapter's score settings (``homology_score``)."""
    net = getattr(model, "module", model)
    export_aligner(net, stem, {**extra, "homology_score": net.homology.to_dict()})


def _homology_task(model: AlignerModel, cfg: AlignerConfig, scop: str, exclude: str | None,
                   homology_batch: int, hard_negatives: bool, shift_init: float, steps: int,
                   seed: int, n_eval_batches: int, val_fraction: float) -> Any:
    """The ``objective = "homology-adapter"`` task (see :func:`make_aligner_task`)."""
    from homalign.errors import InputError
    from homalign.model.contrastive import (
        homology_logits,
        homology_loss,
        load_scop_pairs,
        sample_batch,
    )
    from homalign.train.task import TrainTask

    excluded = set(Path(exclude).read_text().split()) if exclude else set()
    scop_train, scop_val = load_scop_pairs(scop, excluded, val_fraction)
    for side, pairs in (("training", scop_train), ("held-out", scop_val)):
        folds = len({int(pairs.fold[g[0]]) for g in pairs.groups})
        if pairs.groups and folds < homology_batch:
            raise InputError(f"[model_args] homology_batch = {homology_batch}, but the {side} "
                             f"SCOPe superfamily pairs span only {folds} folds (a batch takes "
                             "one pair per fold)", path=scop)
    for name, p in model.named_parameters():
        p.requires_grad_(name.startswith("homology."))
    if float(model.homology.W.detach().abs().sum()) == 0.0:  # untrained: start at the offset
        with torch.no_grad():
            model.homology.shift.fill_(shift_init)

    def loss_fn(net: torch.nn.Module, batch: torch.Tensor) -> torch.Tensor:
        inner = getattr(net, "module", net)
        inner.eval()  # a fixed feature extractor: no dropout noise in the embeddings
        total = torch.zeros(())
        for k in batch.tolist():
            rng = np.random.default_rng([seed, 99, int(k)])
            q, t, lq, lt, same = sample_batch(scop_train, homology_batch, rng,
                                              hard=hard_negatives)
            total = total + homology_loss(homology_logits(inner, inner.homology, q, t, lq, lt,
                                                          adapter_only=True), same)
        return total / len(batch)

    def evaluate(net: torch.nn.Module) -> dict[str, float]:
        res = evaluate_homology(net, scop_val, homology_batch, n_eval_batches)
        res.update(evaluate_homology(net, scop_val, homology_batch, n_eval_batches, hard=True))
        return res

    return TrainTask(model=model, train_dataset=StepSeeds(max(1, steps)), loss_fn=loss_fn,
                     config={"config": cfg.to_dict(), "model": "learned-aligner"},
                     evaluate=evaluate if len(scop_val) else None, export=export_homology)


def _is_dev(eval_data: str) -> bool:
    """Whether ``eval_data`` names the dev split: ``"dev"``, the bundled dev families or
    ``$HOMALIGN_DATA/homstrad/dev``."""
    if eval_data == "dev":
        return True
    if eval_data == HELD_OUT:
        return False
    from importlib import resources

    bundled_dev = Path(str(resources.files("homalign") / "data" / "homstrad_dev"))
    target = Path(eval_data).resolve()
    return target in {bundled_dev.resolve(), (DATA / "homstrad" / "dev").resolve()}


def _init_from(stem: str, config: dict | None) -> tuple[AlignerConfig, AlignerModel]:
    """The config and model of ``make_aligner_task(init=stem)``: ``stem``'s config with
    ``config`` over it, and all of ``stem``'s weights."""
    from homalign.errors import InputError
    from homalign.model.weights import load_model

    source, meta = load_model(stem)
    if meta.get("ensemble"):
        raise InputError("[model_args] init is an ensemble; start from one of its members",
                         path=stem)
    cfg = AlignerConfig.from_dict({**meta["config"], **dict(config or {})})
    model = AlignerModel(cfg)
    missing, unexpected = model.load_state_dict(source.state_dict(), strict=False)
    new_parts = ("scorer.refine.", "encoder.template.")
    if unexpected or any(not k.startswith(new_parts) for k in missing):
        raise InputError(f"[model_args] init: the weights do not fit the config (missing "
                         f"{missing}, unexpected {unexpected})", path=stem)
    return cfg, model


def make_aligner_task(homstrad: str = str(DATA / "homstrad" / "train"),
                      tmalign: str | None = str(DATA / "scope" / "tmalign-pairs.train.tsv"),
                      window: int = 256, max_pairs_per_family: int = 40,
                      aux_weight: float = 0.2, val_fraction: float = 0.08,
                      marginal_weight: float = 0.0, f1_weight: float = 0.0,
                      margin: float = 0.0, margin_missed: float | None = None,
                      max_identity: float | None = None,
                      teacher: str | None = None, distill_weight: float = 1.0,
                      dp: str = "crf", max_cells: int | None = None,
                      eval_data: str = HELD_OUT, eval_pairs: int | None = 200,
                      config: dict | None = None,
                      objective: str = "alignment",
                      scop: str = str(DATA / "scope" / "astral-2.07-40.trainval.fa"),
                      scop_exclude: str | None = str(DATA / "scope" / "dev-queries.txt"),
                      homology_batch: int = 8, hard_negatives: bool = False,
                      shift_init: float = 0.5, homology_steps: int = 100_000,
                      homology_seed: int = 0, homology_eval_batches: int = 12,
                      batching: str = "buckets", data_seed: int = 0,
                      init: str | None = None) -> Any:
    """Build the TrainTask.

    ``objective = "alignment"``: training data = the non-held-out part of ``homstrad``
    (+ ``tmalign``), only pairs below ``max_identity`` reference identity when given (e.g. to
    fine-tune on remote homologs; evaluation keeps every held-out pair); with ``max_cells`` the
    items are length-sorted batches of at most that many DP cells (:class:`BucketedPairs`; set
    ``[train] batch_size = 1``), else single pairs padded to ``window``; with
    ``batching = "epochs"`` (and ``max_cells``) the batches are :class:`EpochBatches` instead,
    ordered by ``data_seed`` (the task turns the loader's shuffling off); evaluation = at most
    ``eval_pairs`` whole pairs of ``eval_data`` ("held-out", or a directory of families; 0: all
    pairs; no evaluation when it is "held-out" and nothing is held out). ``"dev"`` is refused:
    selecting a model on the reported split is not allowed (evaluate dev once, afterwards, with
    ``benchmarks/learned.py``).

    ``init`` (a saved aligner's stem) starts from that aligner: the model is built from its
    config, ``config``'s entries overriding it, and takes all its weights (a fine-tune inherits
    the source's mode and architecture; the stages that made ``learned`` start so). A
    ``[warm_start]`` table instead copies chosen tensors into the model that ``config`` describes.

    ``objective = "homology-adapter"``: only ``model.homology`` learns (the aligner is frozen and
    should be warm-started); each step samples ``homology_batch`` SCOPe superfamily pairs of
    train folds (``scop`` minus the ids in ``scop_exclude``, minus the ``val_fraction`` of the
    train folds held out) per item; evaluation = the in-batch ranking on the held-out train folds (``hom_loss``,
    ``hom_acc``, ``hom_auc`` and the ``hom_hard_*`` variants).
    """
    from homalign.errors import InputError
    from homalign.train.task import TrainTask

    if eval_pairs is not None and eval_pairs < 0:
        raise InputError(f"[model_args] eval_pairs = {eval_pairs}: use 0 (all) or more")
    if _is_dev(eval_data):
        raise InputError(f'[model_args] eval_data = "{eval_data}": model selection on the '
                         'reported (dev) split is not allowed; use "held-out" (train '
                         'families/folds held out)')
    if objective not in ("alignment", "homology-adapter"):
        raise InputError(f"[model_args] objective = {objective!r}: use alignment or "
                         "homology-adapter")
    margins = (margin, margin if margin_missed is None else margin_missed)
    if min(margins) < 0:
        raise InputError(f"[model_args] margin and margin_missed must be >= 0, got {margins}")

    if batching not in ("buckets", "epochs"):
        raise InputError(f"[model_args] batching = {batching!r}: use buckets or epochs")
    if batching == "epochs" and max_cells is None:
        raise InputError('[model_args] batching = "epochs" needs max_cells')
    cfg = AlignerConfig.from_dict(dict(config or {}))
    model = AlignerModel(cfg)
    if init is not None:  # built after the model above, as the loop did: both draw from the
        cfg, model = _init_from(init, config)  # seeded RNG, which fixes the dropout that follows
    if objective == "homology-adapter":
        return _homology_task(model, cfg, scop, scop_exclude, homology_batch, hard_negatives,
                              shift_init, homology_steps, homology_seed, homology_eval_batches,
                              val_fraction)
    data = load_homstrad(homstrad, max_pairs_per_family)
    if tmalign:
        data += load_tmalign(tmalign)
    train, val = split_by_group(data, val_fraction)
    if max_identity is not None:
        train = [p for p in train if p.identity < max_identity]
    evaluation = resolve_eval_pairs(eval_data, val, eval_pairs or None)
    teacher_model = None
    if teacher:
        from homalign.model.weights import load_model

        teacher_model, teacher_meta = load_model(teacher)
        if teacher_meta.get("ensemble"):
            raise InputError("[model_args] teacher is an ensemble; distil from one model",
                             path=teacher)
        teacher_model.eval()
    # the homology adapter is trained separately (objective = "homology-adapter"); DDP needs
    # every trainable parameter to take part in the loss
    model.homology.requires_grad_(False)
    options = {"margin": margins, "f1_weight": f1_weight, "teacher": teacher_model,
               "distill_weight": distill_weight, "dp": dp}
    if max_cells is not None and max_cells < 1:
        raise InputError(f"[model_args] max_cells = {max_cells}: use a positive cell count")
    if max_cells is None:
        train_dataset: Dataset = PairDataset(train, window)
    elif batching == "epochs":
        train_dataset = EpochBatches(train, window, max_cells, data_seed)
    else:
        train_dataset = BucketedPairs(train, window, max_cells)
    return TrainTask(
        model=model,
        train_dataset=train_dataset,
        shuffle=not isinstance(train_dataset, EpochBatches),
        collate_fn=None if max_cells is None else collate_buckets,
        loss_fn=lambda net, batch: aligner_loss(net, batch, aux_weight,
                                                marginal_weight=marginal_weight, **options),
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

__all__ = ["BucketedPairs", "EpochBatches", "PairDataset", "bucket_tensors", "StepSeeds", "collate_buckets", "aligner_loss", "batch_loss", "evaluate_homology",
           "export_aligner", "export_homology", "make_aligner_task", "register", "target_tokens",
           "tensor_batch"]
