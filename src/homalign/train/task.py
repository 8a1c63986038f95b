"""What a registered model factory returns: a model, its data and its loss."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset

LossFn = Callable[[nn.Module, Any], torch.Tensor]
MetricFn = Callable[[nn.Module, Any], Any]


@dataclass
class TrainTask:
    """A model with its training (and optional evaluation) data, loss and metrics.

    ``config`` is JSON describing how to rebuild the model (written next to exported weights).
    """

    model: nn.Module
    train_dataset: Dataset[Any]
    loss_fn: LossFn
    eval_dataset: Dataset[Any] | None = None
    metrics: Mapping[str, MetricFn] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
