"""Continuous evaluation inside ``homalign train``: score new checkpoints, export the best model.

A :class:`ContinuousEvaluator` owns a private copy of the model (on CPU). Each call of
:meth:`~ContinuousEvaluator.poll` loads the run's newest sound checkpoint and, unless a checkpoint
with the same content hash was evaluated before (also by an earlier process of the same run),
loads its weights into the copy, calls the task's ``evaluate(model)`` (eval mode, no gradient) and

* writes the metrics as scalars at the checkpoint's step to ``<logdir>/eval/`` event files (a
  TensorBoard run next to the training run);
* appends a record (step, checkpoint, content hash, seconds, metrics, exported) to
  ``<logdir>/eval/evaluations.json`` (rewritten atomically; it is also the evaluated-set);
* when ``settings.metric`` beats the best value so far, exports the model as
  ``<logdir>/export/best.safetensors`` + ``best.json`` (``task.export``, default
  :func:`default_export`); ``best.json`` carries ``eval_metric``/``eval_mode``/``eval_value``, so
  the best-so-far survives restarts and a resumed run never replaces it with a worse model.

Only the chief process of a run evaluates and exports; ``homalign train`` polls every
``throttle_secs`` in a service thread while training and once more after the final checkpoint.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import safetensors.torch
import torch
from torch import nn

from homalign.io.atomic import atomic_write_bytes
from homalign.train.checkpoint import CheckpointStore, CorruptCheckpointError, LoadedCheckpoint
from homalign.train.config import EvalSettings
from homalign.train.export import improves
from homalign.train.state import MODEL_PREFIX
from homalign.train.summary import EventWriter
from homalign.train.task import EvalFn, ExportFn

log = logging.getLogger(__name__)

EVAL_DIR = "eval"
RECORDS_NAME = "evaluations.json"
EXPORT_DIR = "export"
BEST_STEM = "best"


def default_export(model: nn.Module, stem: Path, extra: Mapping[str, Any]) -> None:
    """``<stem>.safetensors`` (the state dict) and ``<stem>.json`` (``extra``), atomically."""
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    atomic_write_bytes(stem.with_suffix(".safetensors"), safetensors.torch.save(tensors))
    atomic_write_bytes(stem.with_suffix(".json"),
                 (json.dumps(dict(extra), indent=2, sort_keys=True) + "\n").encode())


class ContinuousEvaluator:
    """Evaluate a run's new checkpoints with ``evaluate``; export the best by ``settings.metric``.

    ``model`` must be a private copy of the trained model (its weights are overwritten by each
    evaluated checkpoint); ``config`` is the task's JSON config, merged into the default export's
    ``best.json``; ``provenance`` (config file, overrides, seed, warm start) goes into every
    export's record as ``run``.
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str],
        model: nn.Module,
        evaluate: EvalFn,
        settings: EvalSettings,
        *,
        export: ExportFn | None = None,
        config: Mapping[str, Any] | None = None,
        checkpoint_basename: str = "model.ckpt",
        provenance: Mapping[str, Any] | None = None,
    ) -> None:
        self.logdir = Path(logdir)
        self.model = model
        self.evaluate_fn = evaluate
        self.settings = settings
        self.export_fn = export
        self.config = dict(config or {})
        self.provenance = dict(provenance or {})
        self.store = CheckpointStore(self.logdir, checkpoint_basename)
        self.eval_dir = self.logdir / EVAL_DIR
        self.best_stem = self.logdir / EXPORT_DIR / BEST_STEM
        self._writer: EventWriter | None = None
        self._lock = threading.Lock()

    # --- persisted state --------------------------------------------------------------------
    def records(self) -> list[dict[str, Any]]:
        """Every evaluation of this run so far (oldest first), as persisted in ``eval/``."""
        try:
            data = json.loads((self.eval_dir / RECORDS_NAME).read_text())
        except (FileNotFoundError, ValueError):
            return []
        return data if isinstance(data, list) else []

    def best_value(self) -> float | None:
        """The metric value of the current export (None: none yet, or made for another metric)."""
        try:
            meta = json.loads(self.best_stem.with_suffix(".json").read_text())
            if meta.get("eval_metric") != self.settings.metric:
                return None
            return float(meta["eval_value"])
        except (FileNotFoundError, KeyError, TypeError, ValueError):
            return None

    def is_better(self, value: float, best: float | None) -> bool:
        """Whether ``value`` improves on ``best`` (NaN and infinities never do)."""
        return improves(value, best, self.settings.mode)

    # --- evaluation -------------------------------------------------------------------------
    def poll(self) -> dict[str, Any] | None:
        """Evaluate the newest sound checkpoint if it was not evaluated yet; its record or None."""
        with self._lock:
            ckpt = self.store.load_latest()
            if ckpt is None:
                return None
            if ckpt.content_hash in {r.get("checkpoint_sha256") for r in self.records()}:
                return None
            return self._evaluate(ckpt)

    def _evaluate(self, ckpt: LoadedCheckpoint) -> dict[str, Any]:
        weights = {k[len(MODEL_PREFIX):]: v for k, v in ckpt.tensors.items()
                   if k.startswith(MODEL_PREFIX)}
        try:
            self.model.load_state_dict(weights, strict=True)
        except RuntimeError as exc:
            raise CorruptCheckpointError(f"{ckpt.info.name} does not fit the model: {exc}") from exc
        began = time.monotonic()
        self.model.eval()
        with torch.no_grad():
            metrics = {k: float(v) for k, v in self.evaluate_fn(self.model).items()}
        seconds = time.monotonic() - began
        if self.settings.metric not in metrics:
            raise KeyError(f"[eval] metric {self.settings.metric!r} not among {sorted(metrics)}")
        step = int(ckpt.info.step)
        if self._writer is None:
            self._writer = EventWriter(self.eval_dir)
        self._writer.write(step, {k: v for k, v in metrics.items() if math.isfinite(v)})
        value = metrics[self.settings.metric]
        exported = self.is_better(value, self.best_value())
        if exported:
            self._export(step, ckpt.content_hash, metrics)
        record = {"step": step, "checkpoint": ckpt.info.name,
                  "checkpoint_sha256": ckpt.content_hash, "seconds": round(seconds, 3),
                  "metrics": {k: (v if math.isfinite(v) else None) for k, v in metrics.items()},
                  "exported": exported}
        self.eval_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.eval_dir / RECORDS_NAME,
                     json.dumps([*self.records(), record], indent=1).encode())
        log.info("evaluated %s in %.1fs: %s%s", ckpt.info.name, seconds, metrics,
                 " (exported)" if exported else "")
        return record

    def _export(self, step: int, content_hash: str, metrics: Mapping[str, float]) -> None:
        extra = {"step": step, "eval_metric": self.settings.metric,
                 "eval_mode": self.settings.mode, "eval_value": metrics[self.settings.metric],
                 "eval": {k: (v if math.isfinite(v) else None) for k, v in metrics.items()},
                 "checkpoint_sha256": content_hash}
        if self.provenance:
            extra["run"] = self.provenance
        self.best_stem.parent.mkdir(parents=True, exist_ok=True)
        if self.export_fn is not None:
            self.export_fn(self.model, self.best_stem, extra)
        else:
            default_export(self.model, self.best_stem, {**self.config, **extra})

    def close(self) -> None:
        """Close the evaluation event file."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


__all__ = ["ContinuousEvaluator", "default_export"]
