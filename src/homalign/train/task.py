"""What a registered model factory returns: a model, its data and its loss."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset

LossFn = Callable[[nn.Module, Any], torch.Tensor]
MetricFn = Callable[[nn.Module, Any], Any]
EvalFn = Callable[[nn.Module], Mapping[str, float]]
"""Whole-model evaluation: ``fn(model in eval mode, on CPU, no grad) -> {metric: value}``."""
ExportFn = Callable[[nn.Module, Path, Mapping[str, Any]], None]
"""``fn(model, stem, extra)`` writes ``<stem>.safetensors`` and ``<stem>.json`` (with ``extra``)."""


@dataclass
class TrainTask:
    """A model with its training (and optional evaluation) data, loss and metrics.

    ``config`` is JSON describing how to rebuild the model (written next to exported weights).
    ``collate_fn`` (optional) joins the dataset items of one batch (default: torch's
    ``default_collate``), e.g. for items that are already batches of varying width.
    ``shuffle = False`` keeps the dataset's own order: a dataset that orders (and may re-size)
    itself every epoch in ``set_epoch``.
    ``evaluate`` (optional) scores a whole model, e.g. on an evaluation directory; with an
    ``[eval]`` table in the config, ``homalign train`` runs it on new checkpoints and exports the
    best model with ``export`` (default: :func:`homalign.train.evaluation.default_export`).
    """

    model: nn.Module
    train_dataset: Dataset[Any]
    loss_fn: LossFn
    eval_dataset: Dataset[Any] | None = None
    metrics: Mapping[str, MetricFn] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    evaluate: EvalFn | None = None
    export: ExportFn | None = None
    collate_fn: Callable[[list[Any]], Any] | None = None
    shuffle: bool = True
