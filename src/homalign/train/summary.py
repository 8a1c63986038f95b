"""TensorBoard event files: a thread-safe writer and a reader for tests and tools.

Each process that writes a run opens a *new* event file (``events.out.tfevents.<time>.<host>...``).
After a restore at step ``s`` the writer is opened with ``purge_step=s``: it starts with a
``SessionLog.START`` event at ``s``, so TensorBoard drops the previous process's events at steps
``>= s`` and shows the run continuing from the restored step.

A training run that restarts and finds *no* checkpoint starts again from step 0; its writer is
opened with ``purge_stale=True`` (and no ``purge_step``): when the logdir already holds event files
of a killed run, it purges from step 0, so the series does not go back in steps.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

SummaryValue = float | int | torch.Tensor | np.ndarray | str


class EventWriter:
    """Appends scalars, histograms and text to one new event file in ``logdir``."""

    def __init__(self, logdir: str | os.PathLike[str], *, purge_step: int | None = None,
                 purge_stale: bool = False, flush_secs: float = 10.0) -> None:
        """``purge_step``: the restored step (events of earlier processes at steps ``>=`` it are
        dropped). ``purge_stale``: this is a training run that restored nothing; earlier event
        files in ``logdir`` are of a killed run, and are purged from step 0."""
        from torch.utils.tensorboard import SummaryWriter

        Path(logdir).mkdir(parents=True, exist_ok=True)
        if purge_step is None and purge_stale and event_files(logdir):
            purge_step = 0
        self.logdir = Path(logdir)
        self._lock = threading.Lock()
        self._writer = SummaryWriter(
            log_dir=str(logdir), purge_step=purge_step, flush_secs=int(max(1, flush_secs))
        )
        self._closed = False

    def write(self, step: int, summaries: Mapping[str, SummaryValue], *, flush: bool = True) -> None:
        """Write every value at ``step``: numbers and 0-d tensors as scalars, larger tensors and
        arrays as histograms, strings as text."""
        with self._lock:
            if self._closed:
                return
            for tag, value in summaries.items():
                if isinstance(value, str):
                    self._writer.add_text(tag, value, step)
                    continue
                if isinstance(value, torch.Tensor | np.ndarray):
                    arr = value.detach().float().cpu().numpy() if isinstance(value, torch.Tensor) else value
                    if arr.size == 1:
                        self._writer.add_scalar(tag, float(arr.reshape(())), step)
                    else:
                        self._writer.add_histogram(tag, arr.astype(np.float64), step)
                    continue
                self._writer.add_scalar(tag, float(value), step)
            if flush:
                self._writer.flush()

    def flush(self) -> None:
        """Flush buffered events to disk."""
        with self._lock:
            if not self._closed:
                self._writer.flush()

    def close(self) -> None:
        """Flush and close the file (idempotent)."""
        with self._lock:
            if not self._closed:
                self._writer.close()
                self._closed = True


def read_scalars(logdir: str | os.PathLike[str]) -> dict[str, list[tuple[int, float]]]:
    """Scalars of a run as TensorBoard shows them: ``{tag: [(step, value), ...]}``.

    Uses TensorBoard's own ``EventAccumulator`` (which honours ``SessionLog.START`` purges).
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    return {
        tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags().get("scalars", [])
    }


def event_files(logdir: str | os.PathLike[str]) -> list[Path]:
    """The event files directly in ``logdir``, oldest first."""
    return sorted(Path(logdir).glob("events.out.tfevents.*"))


def to_float(value: Any) -> float:
    """A Python float from a number or a one-element tensor."""
    if isinstance(value, torch.Tensor):
        return float(value.detach().reshape(()).item())
    return float(value)
