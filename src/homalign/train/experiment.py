"""Experiment: train, evaluate, evaluate continuously, and export the best model.

``model_fn()`` returns a :class:`ModelSpec` (a fresh model with its loss, optimizer, optional
scheduler and a JSON config); ``train_input_fn()`` / ``eval_input_fn()`` return iterables of
batches (a :class:`~homalign.train.data.ResumableLoader` makes the data position part of the
checkpoint). Metrics are ``fn(model, batch) -> number``, averaged over the evaluated batches;
the loss is always reported.

* :meth:`Experiment.train` — a MonitoredTrainingSession up to ``train_steps`` (resumes);
* :meth:`Experiment.evaluate` — one checkpoint (default: the selected one) on ``eval_steps``
  batches; results go to ``<model_dir>/eval`` event files and to the export strategies;
* :meth:`Experiment.continuous_eval` — after ``eval_delay_secs``, evaluates every new checkpoint,
  no more often than ``continuous_eval_throttle_secs``, never the same checkpoint (by content hash)
  twice — also across evaluator restarts (``eval/evaluated.json``);
* :meth:`Experiment.train_and_evaluate` — trains, evaluating each new checkpoint at least
  ``min_eval_frequency`` steps after the previous evaluation, then evaluates the final one.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from homalign.io.atomic import atomic_write_bytes
from homalign.train import distributed
from homalign.train.checkpoint import CheckpointStore, CorruptCheckpointError, LoadedCheckpoint
from homalign.train.export import BestExporter, ExportResult
from homalign.train.hooks import CheckpointSaverHook, SessionRunHook, StopAtStepHook
from homalign.train.monitored_session import MonitoredTrainingSession
from homalign.train.session_manager import seed_everything
from homalign.train.state import Stateful, TrainState, capture_rng, restore_rng
from homalign.train.summary import EventWriter, to_float

log = logging.getLogger(__name__)

MetricFn = Callable[[nn.Module, Any], Any]


@dataclass
class ModelSpec:
    """What ``model_fn`` returns."""

    model: nn.Module
    loss_fn: Callable[[nn.Module, Any], torch.Tensor]
    optimizer: torch.optim.Optimizer | None = None
    scheduler: Stateful | None = None
    config: Mapping[str, Any] = field(default_factory=dict)


class Experiment:
    """Train and evaluate one model in ``model_dir``."""

    def __init__(
        self,
        model_fn: Callable[[], ModelSpec],
        train_input_fn: Callable[[], Iterable[Any]],
        eval_input_fn: Callable[[], Iterable[Any]],
        *,
        model_dir: str | os.PathLike[str],
        eval_metrics: Mapping[str, MetricFn] | None = None,
        train_steps: int | None = None,
        eval_steps: int | None = 100,
        eval_delay_secs: float = 120,
        continuous_eval_throttle_secs: float = 60,
        min_eval_frequency: int = 1,
        export_strategies: Sequence[BestExporter] = (),
        save_checkpoint_steps: int | None = None,
        save_checkpoint_secs: float | None = 600,
        save_summaries_steps: int | None = 100,
        train_hooks: Sequence[SessionRunHook] = (),
        keep_max: int = 5,
        seed: int | None = None,
        eval_name: str = "eval",
    ) -> None:
        self.model_fn = model_fn
        self.train_input_fn = train_input_fn
        self.eval_input_fn = eval_input_fn
        self.model_dir = Path(model_dir)
        self.eval_metrics = dict(eval_metrics or {})
        self.train_steps = train_steps
        self.eval_steps = eval_steps
        self.eval_delay_secs = eval_delay_secs
        self.continuous_eval_throttle_secs = continuous_eval_throttle_secs
        self.min_eval_frequency = min_eval_frequency
        self.export_strategies = list(export_strategies)
        self.save_checkpoint_steps = save_checkpoint_steps
        self.save_checkpoint_secs = save_checkpoint_secs
        self.save_summaries_steps = save_summaries_steps
        self.train_hooks = list(train_hooks)
        self.keep_max = keep_max
        self.seed = seed
        self.eval_dir = self.model_dir / eval_name
        self.store = CheckpointStore(self.model_dir, keep_max=keep_max)
        self.evaluations: list[dict[str, float]] = []
        self.exports: list[ExportResult] = []
        self._stop = threading.Event()
        self._eval_writer: EventWriter | None = None

    # --- training ---------------------------------------------------------------------------
    def train(self, extra_hooks: Sequence[SessionRunHook] = ()) -> int:
        """Train (resuming from ``model_dir``) until ``train_steps``, or one pass over the input
        when ``train_steps`` is None; returns the final global step."""
        if self.seed is not None:
            seed_everything(self.seed)  # before the model is built (a restore overrides it)
        spec = self.model_fn()
        data = self.train_input_fn()
        hooks = list(self.train_hooks) + list(extra_hooks)
        if self.train_steps is not None:
            hooks.append(StopAtStepHook(last_step=self.train_steps))
        model, opt, sched = spec.model, spec.optimizer, spec.scheduler
        if opt is None:
            raise ValueError("model_fn must return an optimizer to train")

        def train_step(batch: Any) -> dict[str, torch.Tensor]:
            model.train()
            loss = spec.loss_fn(model, batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()  # type: ignore[attr-defined]
            return {"loss": loss.detach()}

        with MonitoredTrainingSession(
            self.model_dir, model=model, optimizer=opt, scheduler=sched,
            data=data if isinstance(data, Stateful) else None, hooks=hooks,
            save_checkpoint_steps=self.save_checkpoint_steps,
            save_checkpoint_secs=self.save_checkpoint_secs,
            save_summaries_steps=self.save_summaries_steps, keep_max=self.keep_max,
        ) as mon:
            while not mon.should_stop() and not self._stop.is_set():
                ran = False
                for batch in data:
                    if mon.should_stop() or self._stop.is_set():
                        break
                    mon.run(train_step, batch)
                    ran = True
                if self.train_steps is None or not ran:
                    break
            return mon.global_step

    # --- evaluation -------------------------------------------------------------------------
    def _eval_model(self, ckpt: LoadedCheckpoint) -> dict[str, float]:
        saved_rng = capture_rng()  # building a model must not disturb training's RNG stream
        try:
            spec = self.model_fn()
        finally:
            restore_rng(saved_rng)
        state = TrainState(spec.model)
        problems = state.check_model_tensors(ckpt.tensors)
        if problems:
            raise CorruptCheckpointError(f"{ckpt.info.name} does not fit the model: {problems}")
        spec.model.load_state_dict(
            {k[len("model/"):]: v for k, v in ckpt.tensors.items() if k.startswith("model/")}
        )
        model = spec.model.eval()
        sums: dict[str, float] = {"loss": 0.0, **{k: 0.0 for k in self.eval_metrics}}
        n = 0
        with torch.no_grad():
            for batch in self.eval_input_fn():
                if self.eval_steps is not None and n >= self.eval_steps:
                    break
                sums["loss"] += to_float(spec.loss_fn(model, batch))
                for name, fn in self.eval_metrics.items():
                    sums[name] += to_float(fn(model, batch))
                n += 1
        if n == 0:
            raise ValueError("eval_input_fn yielded no batch")
        results = {k: v / n for k, v in sums.items()}
        results["global_step"] = float(ckpt.info.step)
        self._write_eval(ckpt, results, spec.config)
        return results

    def _write_eval(self, ckpt: LoadedCheckpoint, results: dict[str, float],
                    config: Mapping[str, Any]) -> None:
        if not distributed.is_chief():
            return
        if self._eval_writer is None:
            self._eval_writer = EventWriter(self.eval_dir)
        self._eval_writer.write(ckpt.info.step, {k: v for k, v in results.items() if k != "global_step"})
        for strategy in self.export_strategies:
            exported = strategy.maybe_export(self.model_dir, results, ckpt, config)
            if exported is not None:
                self.exports.append(exported)
                log.info("exported %s=%g at step %d to %s", exported.metric, exported.value,
                         exported.global_step, exported.directory)
        self._remember(ckpt.content_hash)
        self.evaluations.append(results)
        log.info("evaluated %s: %s", ckpt.info.name, results)

    def evaluate(self, checkpoint: str | os.PathLike[str] | None = None) -> dict[str, float]:
        """Evaluate ``checkpoint`` (default: the selected one, falling back past corrupt ones)."""
        ckpt = self.store.load_latest() if checkpoint is None else self.store.load(checkpoint)
        if ckpt is None:
            raise FileNotFoundError(f"no checkpoint to evaluate in {self.model_dir}")
        try:
            return self._eval_model(ckpt)
        finally:
            self.close()

    # --- continuous evaluation --------------------------------------------------------------
    def _evaluated_path(self) -> Path:
        return self.eval_dir / "evaluated.json"

    def evaluated_hashes(self) -> list[str]:
        """Content hashes of every checkpoint evaluated so far (persisted in ``eval/``)."""
        try:
            return list(json.loads(self._evaluated_path().read_text()))
        except (FileNotFoundError, ValueError):
            return []

    def _remember(self, content_hash: str) -> None:
        hashes = self.evaluated_hashes()
        if content_hash not in hashes:
            hashes.append(content_hash)
            self.eval_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self._evaluated_path(), json.dumps(hashes).encode())

    def _peek_hash(self) -> str | None:
        info = self.store.selected()
        if info is None:
            return None
        try:
            return json.loads(info.files()[2].read_text()).get("content_sha256")
        except (FileNotFoundError, ValueError):
            return None

    def stop(self) -> None:
        """Make :meth:`continuous_eval` and :meth:`train` return soon."""
        self._stop.set()

    def continuous_eval(self, max_evals: int | None = None,
                        timeout_secs: float | None = None) -> list[dict[str, float]]:
        """Evaluate each new checkpoint until the one at ``train_steps`` is evaluated,
        ``max_evals`` evaluations were made, ``timeout_secs`` passed, or :meth:`stop`."""
        start = time.monotonic()
        deadline = None if timeout_secs is None else start + timeout_secs
        done: list[dict[str, float]] = []
        if self._stop.wait(self.eval_delay_secs):
            return done
        try:
            while not self._stop.is_set():
                began = time.monotonic()
                seen = set(self.evaluated_hashes())
                peek = self._peek_hash()
                selected = self.store.selected()
                if (peek is not None and peek in seen and selected is not None
                        and self.train_steps is not None and selected.step >= self.train_steps):
                    break  # the final checkpoint was evaluated (by us or a previous evaluator)
                if peek is not None and peek not in seen:
                    ckpt = self.store.load_latest()
                    if ckpt is not None and ckpt.content_hash not in seen:
                        done.append(self._eval_model(ckpt))
                        finished = (self.train_steps is not None
                                    and ckpt.info.step >= self.train_steps)
                        if finished or (max_evals is not None and len(done) >= max_evals):
                            break
                if deadline is not None and time.monotonic() >= deadline:
                    break
                wait = self.continuous_eval_throttle_secs - (time.monotonic() - began)
                if deadline is not None:
                    wait = min(wait, deadline - time.monotonic())
                self._stop.wait(max(0.0, wait))
        finally:
            self.close()
        return done

    # --- both -------------------------------------------------------------------------------
    def train_and_evaluate(self) -> tuple[dict[str, float], list[ExportResult]]:
        """Train, evaluating new checkpoints on the way (``min_eval_frequency``), then the final
        checkpoint; returns the final results and the exports made."""
        last_eval = [-(10**18)]

        def on_save(step: int) -> None:
            if step - last_eval[0] >= self.min_eval_frequency and distributed.is_chief():
                last_eval[0] = step
                ckpt = self.store.load(self.store.info_for_step(step))
                if ckpt.content_hash not in set(self.evaluated_hashes()):
                    self._eval_model(ckpt)

        saver = CheckpointSaverHook(
            save_steps=self.save_checkpoint_steps,
            save_secs=None if self.save_checkpoint_steps else (self.save_checkpoint_secs or 600),
            listeners=[on_save],
        )
        # our saver replaces the default one of MonitoredTrainingSession
        steps, secs = self.save_checkpoint_steps, self.save_checkpoint_secs
        self.save_checkpoint_steps, self.save_checkpoint_secs = None, None
        try:
            self.train(extra_hooks=[saver] if distributed.is_chief() else [])
        finally:
            self.save_checkpoint_steps, self.save_checkpoint_secs = steps, secs
        try:
            final = self.evaluations[-1] if self.evaluations else self._eval_model(
                self._require_latest())
            latest = self._require_latest()
            if final.get("global_step") != float(latest.info.step):
                final = self._eval_model(latest)
        finally:
            self.close()
        return final, list(self.exports)

    def _require_latest(self) -> LoadedCheckpoint:
        ckpt = self.store.load_latest()
        if ckpt is None:
            raise FileNotFoundError(f"no checkpoint in {self.model_dir}")
        return ckpt

    def close(self) -> None:
        """Close the evaluation event file."""
        if self._eval_writer is not None:
            self._eval_writer.close()
            self._eval_writer = None
