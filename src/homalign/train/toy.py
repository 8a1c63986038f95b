"""A tiny, deterministic regression task for tests, benchmarks and the CLI demo.

Registered as ``toy-regression`` in :mod:`homalign.train.config`. ``hidden`` scales it: with
``in_features=64, hidden=1536, layers=3`` it has about 5M parameters (the benchmark size).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import TensorDataset

from homalign.train.task import TrainTask


class ToyRegression(nn.Module):
    """An MLP ``in_features -> hidden (x layers) -> 1`` with optional dropout."""

    def __init__(self, in_features: int = 8, hidden: int = 16, layers: int = 1,
                 dropout: float = 0.0) -> None:
        super().__init__()
        blocks: list[nn.Module] = []
        width = in_features
        for _ in range(layers):
            blocks += [nn.Linear(width, hidden), nn.Tanh()]
            if dropout > 0:
                blocks.append(nn.Dropout(dropout))
            width = hidden
        blocks.append(nn.Linear(width, 1))
        self.net = nn.Sequential(*blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return self.net(x).squeeze(-1)


def toy_dataset(n_samples: int = 256, in_features: int = 8, seed: int = 0,
                noise: float = 0.05, weights: torch.Tensor | None = None) -> TensorDataset:
    """``y = sin(x . w) + noise`` with ``x ~ N(0, 1)``; the same for the same arguments.

    ``w`` is drawn with the samples unless ``weights`` gives it (:func:`toy_weights`: more
    samples of another dataset's function, e.g. an evaluation set)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n_samples, in_features, generator=g)
    w = torch.randn(in_features, generator=g) / in_features**0.5
    if weights is not None:
        w = weights
    y = torch.sin(x @ w) + noise * torch.randn(n_samples, generator=g)
    return TensorDataset(x, y)


def toy_weights(n_samples: int = 256, in_features: int = 8, seed: int = 0) -> torch.Tensor:
    """The ``w`` of ``toy_dataset(n_samples, in_features, seed)``."""
    g = torch.Generator().manual_seed(seed)
    torch.randn(n_samples, in_features, generator=g)
    return torch.randn(in_features, generator=g) / in_features**0.5


def mse_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean squared error of ``model`` on one ``(x, y)`` batch."""
    x, y = batch
    return torch.mean((model(x) - y) ** 2)


def mae_metric(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean absolute error on one batch."""
    x, y = batch
    return torch.mean(torch.abs(model(x) - y))


def toy_task(in_features: int = 8, hidden: int = 16, layers: int = 1, dropout: float = 0.0,
             n_samples: int = 256, n_eval: int = 64, data_seed: int = 0) -> TrainTask:
    """The ``toy-regression`` factory of the model registry."""
    model = ToyRegression(in_features, hidden, layers, dropout)
    return TrainTask(
        model=model,
        train_dataset=toy_dataset(n_samples, in_features, seed=data_seed),
        # other samples of the same function
        eval_dataset=toy_dataset(n_eval, in_features, seed=data_seed + 1,
                                 weights=toy_weights(n_samples, in_features, data_seed)),
        loss_fn=mse_loss,
        metrics={"mae": mae_metric},
        config={
            "model": "toy-regression",
            "model_args": {"in_features": in_features, "hidden": hidden, "layers": layers,
                           "dropout": dropout},
        },
    )
