"""Export strategies: write the best model by a chosen metric as standalone safetensors + config.

An export directory (``<model_dir>/export/<name>/``) holds::

    model.safetensors   the model's tensors only (parameter names as in ``state_dict()``)
    config.json         the model config (from ``ModelSpec.config``), the metric, its value, the
                        global step, the source checkpoint's content hash and the sha256 of
                        model.safetensors

Both are written atomically, weights first; :func:`load_export` checks the weights against the
sha256 in ``config.json``, so a pair torn by a crash between the two writes is detected.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import safetensors.torch
import torch

from homalign.io.atomic import atomic_write_bytes
from homalign.train.checkpoint import CorruptCheckpointError, LoadedCheckpoint, sha256_bytes
from homalign.train.state import MODEL_PREFIX

EXPORT_FORMAT = "homalign-export/1"
WEIGHTS_NAME = "model.safetensors"
CONFIG_NAME = "config.json"


def improves(value: float, best: float | None, mode: str) -> bool:
    """Whether a metric ``value`` improves on ``best`` (``mode`` "max" or "min"); NaN and
    infinities never do, anything finite improves on no value."""
    if not math.isfinite(value):
        return False
    if best is None:
        return True
    return value < best if mode == "min" else value > best


@dataclass
class ExportResult:
    """Where an export went and what it holds."""

    directory: Path
    metric: str
    value: float
    global_step: int


class BestExporter:
    """Export the model whenever ``metric`` beats the best value so far (``mode`` "min"/"max").

    The best value is read back from ``config.json``, so it survives restarts of the evaluator.
    """

    def __init__(self, metric: str = "loss", mode: str = "min", name: str = "best") -> None:
        if mode not in ("min", "max"):
            raise ValueError("mode must be 'min' or 'max'")
        self.metric = metric
        self.mode = mode
        self.name = name

    def directory(self, model_dir: str | os.PathLike[str]) -> Path:
        """``<model_dir>/export/<name>``."""
        return Path(model_dir) / "export" / self.name

    def best_value(self, model_dir: str | os.PathLike[str]) -> float | None:
        """The metric value of the current export, if any."""
        path = self.directory(model_dir) / CONFIG_NAME
        try:
            return float(json.loads(path.read_text())["metric_value"])
        except (FileNotFoundError, KeyError, ValueError):
            return None

    def is_better(self, value: float, best: float | None) -> bool:
        """Whether ``value`` improves on ``best``."""
        return improves(value, best, self.mode)

    def maybe_export(
        self,
        model_dir: str | os.PathLike[str],
        results: Mapping[str, float],
        checkpoint: LoadedCheckpoint,
        config: Mapping[str, Any],
    ) -> ExportResult | None:
        """Export ``checkpoint``'s model if ``results[metric]`` is the best so far."""
        if self.metric not in results:
            raise KeyError(f"export metric {self.metric!r} not among {sorted(results)}")
        value = float(results[self.metric])
        if not self.is_better(value, self.best_value(model_dir)):
            return None
        tensors = {
            k[len(MODEL_PREFIX):]: v for k, v in checkpoint.tensors.items()
            if k.startswith(MODEL_PREFIX)
        }
        step = int(checkpoint.info.step)
        weights = safetensors.torch.save(
            tensors, metadata={"format": EXPORT_FORMAT, "global_step": str(step)}
        )
        meta = {
            "format": EXPORT_FORMAT,
            "config": dict(config),
            "metric": self.metric,
            "mode": self.mode,
            "metric_value": value,
            "metrics": {k: float(v) for k, v in results.items()},
            "global_step": step,
            "checkpoint_sha256": checkpoint.content_hash,
            "weights_sha256": sha256_bytes(weights),
        }
        directory = self.directory(model_dir)
        directory.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(directory / WEIGHTS_NAME, weights)
        atomic_write_bytes(directory / CONFIG_NAME, json.dumps(meta, indent=1, sort_keys=True).encode())
        return ExportResult(directory, self.metric, value, step)


def load_export(directory: str | os.PathLike[str]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The exported tensors and ``config.json``; raises :class:`CorruptCheckpointError` if the
    weights do not match the recorded sha256."""
    directory = Path(directory)
    config, weights = directory / CONFIG_NAME, directory / WEIGHTS_NAME
    try:
        meta = json.loads(config.read_bytes())
        data = weights.read_bytes()
    except FileNotFoundError as exc:
        raise CorruptCheckpointError(f"{exc.filename}: missing (not an export directory?)"
                                     ) from None
    except (OSError, ValueError) as exc:
        raise CorruptCheckpointError(f"{config}: unreadable export config: {exc}") from None
    if not isinstance(meta, dict) or sha256_bytes(data) != meta.get("weights_sha256"):
        raise CorruptCheckpointError(f"{weights}: sha256 does not match config.json")
    try:
        return safetensors.torch.load(data), meta
    except safetensors.SafetensorError as exc:
        raise CorruptCheckpointError(f"{weights}: damaged safetensors file: {exc}") from None
