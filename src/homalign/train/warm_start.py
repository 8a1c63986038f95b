"""Warm start: copy only the named parameters from a pre-trained checkpoint, report the rest.

The source is a logdir (its selected checkpoint, verified), a checkpoint prefix
(``.../model.ckpt-1200``) or a standalone ``.safetensors`` weights file (an export). Parameters
are selected by name or ``fnmatch`` pattern (``include``/``exclude``); ``rename`` maps model names
to source names. Nothing is loaded that does not fit: a selected parameter that is absent from the
source or has another shape is skipped and reported, as is every parameter not selected.

Use it as the Supervisor's ``init_fn`` (it runs only when there is no checkpoint to recover)::

    sv = Supervisor(logdir, model=m, optimizer=o,
                    init_fn=warm_start_fn("pretrained/", include=["encoder.*"]))
    ...
    sv.prepared.init_result  # the WarmStartReport
"""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import safetensors.torch
import torch
from torch import nn

from homalign.errors import InputError
from homalign.train.checkpoint import CheckpointStore, CorruptCheckpointError
from homalign.train.state import MODEL_PREFIX, unwrap

log = logging.getLogger(__name__)


@dataclass
class WarmStartReport:
    """Which parameters were restored, which were skipped and why."""

    source: str
    restored: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"warm start from {self.source}: restored {len(self.restored)} tensors"]
        lines += [f"  skipped {name}: {why}" for name, why in self.skipped.items()]
        return "\n".join(lines)


def load_weights(source: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """Model tensors (by parameter name) from a logdir, a checkpoint prefix or a safetensors file."""
    path = Path(source)
    if path.suffix == ".safetensors" and path.is_file():
        try:
            return safetensors.torch.load_file(str(path))
        except (safetensors.SafetensorError, OSError) as exc:
            raise InputError(f"cannot warm start from this safetensors file: {exc}",
                             path=path) from None
    if path.is_dir():
        store = CheckpointStore(path)
        ckpt = store.load_latest()
        if ckpt is None:
            raise InputError("no sound checkpoint here to warm start from", path=path)
    elif not path.parent.is_dir():
        raise InputError("no such checkpoint, directory or .safetensors file", path=path)
    else:
        ckpt = CheckpointStore(path.parent).load(path.name)  # (a relative path would join twice)
    return {
        k[len(MODEL_PREFIX):]: v for k, v in ckpt.tensors.items() if k.startswith(MODEL_PREFIX)
    }


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(name == p or fnmatch.fnmatchcase(name, p) for p in patterns)


def warm_start(
    model: nn.Module,
    source: str | os.PathLike[str] | Mapping[str, torch.Tensor],
    *,
    include: Sequence[str] = ("*",),
    exclude: Sequence[str] = (),
    rename: Mapping[str, str] | Callable[[str], str] | None = None,
) -> WarmStartReport:
    """Copy the selected parameters/buffers of ``model`` from ``source`` in place."""
    if isinstance(source, Mapping):
        weights, label = dict(source), "<tensors>"
    else:
        weights, label = load_weights(source), os.fspath(source)
    report = WarmStartReport(label)
    target = unwrap(model)
    own = target.state_dict()
    updates: dict[str, torch.Tensor] = {}
    for name, tensor in own.items():
        if not _matches(name, include) or _matches(name, exclude):
            report.skipped[name] = "not selected"
            continue
        src_name = name
        if callable(rename):
            src_name = rename(name)
        elif rename is not None:
            src_name = rename.get(name, name)
        if src_name not in weights:
            report.skipped[name] = f"not in checkpoint (looked for {src_name!r})"
            continue
        value = weights[src_name]
        if value.shape != tensor.shape:
            report.skipped[name] = (
                f"shape {tuple(value.shape)} in checkpoint, {tuple(tensor.shape)} in model"
            )
            continue
        if not bool(torch.isfinite(value).all()) and value.is_floating_point():
            report.skipped[name] = "non-finite values in checkpoint"
            continue
        updates[name] = value
    with torch.no_grad():
        for name, value in updates.items():
            own[name].copy_(value.to(dtype=own[name].dtype, device=own[name].device))
    report.restored = list(updates)
    log.info("%s", report)
    return report


def warm_start_fn(source: str | os.PathLike[str], **kwargs: Any) -> Callable[[Any], WarmStartReport]:
    """An ``init_fn`` for Supervisor/MonitoredSession that warm-starts ``session.model``."""

    def init_fn(session: Any) -> WarmStartReport:
        return warm_start(session.model, source, **kwargs)

    return init_fn


__all__ = ["WarmStartReport", "load_weights", "warm_start", "warm_start_fn",
           "CorruptCheckpointError"]
