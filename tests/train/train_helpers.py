"""Helpers of the training-runtime tests: a tiny model with every kind of state, the canonical loop."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402
from torch.utils.data import Dataset  # noqa: E402

from homalign.train.data import ResumableLoader  # noqa: E402
from homalign.train.supervisor import Supervisor  # noqa: E402
from homalign.train.toy import ToyRegression, mse_loss, toy_dataset  # noqa: E402

torch.set_num_threads(1)


class IndexedDataset(Dataset):
    """Wraps a dataset and logs which indices were read (to check the data position)."""

    def __init__(self, base: Dataset) -> None:
        self.base = base
        self.seen: list[int] = []

    def __len__(self) -> int:
        return len(self.base)  # type: ignore[arg-type]

    def __getitem__(self, i: int) -> Any:
        self.seen.append(int(i))
        return self.base[i]


@dataclass
class Toy:
    """A tiny model with everything a checkpoint holds: Adam, an LR schedule, data, dropout."""

    model: ToyRegression
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    loader: ResumableLoader
    dataset: IndexedDataset

    def supervisor(self, logdir: Path | None, **kwargs: Any) -> Supervisor:
        kwargs.setdefault("save_model_secs", 0)
        kwargs.setdefault("save_summaries_secs", 0)
        return Supervisor(
            logdir,
            model=self.model,
            optimizer=self.optimizer,
            scheduler=self.scheduler,
            data=self.loader,
            **kwargs,
        )

    def train_step(self, batch: Any) -> torch.Tensor:
        loss = mse_loss(self.model, batch)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        return loss.detach()

    def params(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}


def make_toy(seed: int = 0, dropout: float = 0.1, n_samples: int = 96) -> Toy:
    torch.manual_seed(seed)
    model = ToyRegression(in_features=4, hidden=8, dropout=dropout)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=7, gamma=0.9)
    ds = IndexedDataset(toy_dataset(n_samples, 4, seed=3))
    loader = ResumableLoader(ds, batch_size=8, seed=11)
    return Toy(model, opt, sched, loader, ds)


def run_until(sv: Supervisor, toy: Toy, last_step: int,
              on_step: Callable[[int], None] | None = None) -> int:
    """The canonical loop: train until ``last_step`` or stop; returns the final global step."""
    with sv.managed_session() as session:
        for batch in toy.loader:
            if sv.should_stop() or session.global_step >= last_step:
                break
            with session.step() as step:
                if on_step is not None:
                    on_step(step)
                loss = toy.train_step(batch)
            session.record(loss=loss)
        return session.global_step


def signal_at_step(argv: list[str], signum: int, *, step: int = 20, timeout: float = 150,
                   **popen: Any) -> tuple[Any, str]:
    """Run ``argv`` (a training command that prints ``step N ...`` lines), send it ``signum``
    once it prints step ``step``, and wait for it: (the finished process, its whole output)."""
    import subprocess

    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            **popen)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith(f"step {step} "):
            proc.send_signal(signum)
            break
    try:
        rest, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:  # ended by the test when it does not stop itself
            proc.kill()
            proc.communicate()
    return proc, "".join(lines) + rest

