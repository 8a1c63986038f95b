"""MonitoredSession: run training steps under hooks, with recovery from the checkpoint store.

::

    hooks = [StopAtStepHook(last_step=1000), NanLossHook(), LoggingHook(["loss"], every_n_steps=100)]
    with MonitoredTrainingSession(logdir, model=model, optimizer=opt, data=loader,
                                  hooks=hooks, save_checkpoint_steps=200) as mon:
        for batch in loader:
            if mon.should_stop():
                break
            mon.run(train_step, batch)      # train_step(batch) -> {"loss": loss, ...} or a tensor

``MonitoredSession`` restores the newest sound checkpoint from ``checkpoint_dir`` (or
initialises), then calls the hooks around every step. Unlike the
:class:`~homalign.train.supervisor.Supervisor` it starts no threads: checkpoints and summaries are
written by hooks, in the training thread.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from homalign.train import distributed
from homalign.train.checkpoint import CheckpointInfo, CheckpointStore
from homalign.train.hooks import (
    CheckpointSaverHook,
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
    StepCounterHook,
    SummarySaverHook,
)
from homalign.train.services import Coordinator
from homalign.train.session_manager import InitFn, PrepareResult, ReadyFn, prepare_state
from homalign.train.state import GlobalStep, Stateful, TrainState, non_finite_parameters
from homalign.train.summary import EventWriter, SummaryValue

log = logging.getLogger(__name__)


class MonitoredSession:
    """A context manager that prepares the state and runs steps under hooks.

    ``checkpoint_dir=None``: no restore, and hooks that save do nothing. Only the chief writes.
    """

    def __init__(
        self,
        *,
        model: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        scheduler: Stateful | None = None,
        data: Stateful | None = None,
        extra_state: Mapping[str, Stateful] | None = None,
        hooks: Sequence[SessionRunHook] = (),
        checkpoint_dir: str | os.PathLike[str] | None = None,
        checkpoint_basename: str = "model.ckpt",
        keep_max: int = 5,
        init_fn: InitFn | None = None,
        local_init_fn: InitFn | None = None,
        ready_fn: ReadyFn | None = None,
        seed: int | None = None,
        is_chief: bool | None = None,
        global_step: GlobalStep | int | None = None,
    ) -> None:
        if not isinstance(global_step, GlobalStep):
            global_step = GlobalStep(int(global_step or 0))
        self.state = TrainState(model, optimizer, scheduler, data, global_step,
                                dict(extra_state or {}))
        self.hooks = list(hooks)
        self.checkpoint_dir = None if checkpoint_dir is None else os.fspath(checkpoint_dir)
        self.is_chief = distributed.is_chief() if is_chief is None else is_chief
        self.store = (
            None if self.checkpoint_dir is None
            else CheckpointStore(self.checkpoint_dir, checkpoint_basename, keep_max)
        )
        self.coord = Coordinator()
        self.prepared: PrepareResult | None = None
        self._prepare_kwargs = dict(init_fn=init_fn, local_init_fn=local_init_fn,
                                    ready_fn=ready_fn, seed=seed)
        self._writer: EventWriter | None = None
        self._stop = False
        self._entered = False

    # --- the live objects -------------------------------------------------------------------
    @property
    def model(self) -> nn.Module:
        """The model being trained."""
        return self.state.model

    @property
    def optimizer(self) -> torch.optim.Optimizer | None:
        """Its optimizer."""
        return self.state.optimizer

    @property
    def global_step(self) -> int:
        """The current global step."""
        return self.state.global_step.value

    @property
    def restored_from(self) -> CheckpointInfo | None:
        """The checkpoint restored at creation, if any."""
        return None if self.prepared is None else self.prepared.restored_from

    # --- lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> MonitoredSession:
        if self._entered:
            raise RuntimeError("a MonitoredSession is used once")
        self._entered = True
        for hook in self.hooks:
            hook.begin()
        self.prepared = prepare_state(self.state, self.store, self, **self._prepare_kwargs)
        for hook in self.hooks:
            hook.after_create_session(self, self.coord)
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        try:
            if exc is None:
                for hook in self.hooks:
                    hook.end(self)
        finally:
            self.coord.request_stop(exc)
            if self._writer is not None:
                self._writer.close()

    def should_stop(self) -> bool:
        """Whether a hook or :meth:`request_stop` asked to stop (agreed across ranks)."""
        stop = self._stop or self.coord.should_stop()
        if distributed.world_size() > 1:
            stop = distributed.any_rank(stop)
        return stop

    def request_stop(self) -> None:
        """Stop after the current step."""
        self._stop = True

    # --- steps ------------------------------------------------------------------------------
    def run(self, step_fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Mapping[str, Any]:
        """One step: hooks' ``before_run``, ``step_fn(*args, **kwargs)``, global step + 1,
        hooks' ``after_run``. A tensor result is treated as ``{"loss": result}``."""
        context = SessionRunContext(self)
        requests: list[SessionRunArgs | None] = [h.before_run(context) for h in self.hooks]
        outputs = step_fn(*args, **kwargs)
        if outputs is None:
            outputs = {}
        elif not isinstance(outputs, Mapping):
            outputs = {"loss": outputs}
        step = self.state.global_step.increment()
        self.state.commit_step()
        for hook, request in zip(self.hooks, requests, strict=True):
            results: dict[str, Any] = {}
            if request is not None:
                for name, fetch in request.fetches.items():
                    if callable(fetch):
                        results[name] = fetch()
                    elif fetch in outputs:
                        results[name] = outputs[fetch]
                    else:
                        raise KeyError(
                            f"{type(hook).__name__} requested {fetch!r}, which the step function "
                            f"did not return (it returned {sorted(outputs)})"
                        )
            hook.after_run(context, SessionRunValues(results, outputs, step))
        if context.stop_requested:
            self._stop = True
        return outputs

    # --- writing (chief only) ---------------------------------------------------------------
    def save_checkpoint(self) -> CheckpointInfo | None:
        """Save the current state now (chief with a ``checkpoint_dir`` only); a state with
        non-finite parameters is not saved (a warning says why, and ``None`` is returned)."""
        if self.store is None or not self.is_chief:
            return None
        bad = non_finite_parameters(self.state.model)
        if bad:
            log.warning("no checkpoint at step %d: %s", self.state.global_step.value,
                        "; ".join(bad))
            return None
        snap = self.state.snapshot()
        return self.store.save(snap.step, snap.tensors, snap.state)

    def summary_computed(self, step: int, summaries: Mapping[str, SummaryValue]) -> None:
        """Append to the run's event file (chief with a ``checkpoint_dir`` only)."""
        if self.checkpoint_dir is None or not self.is_chief:
            return
        if self._writer is None:
            restored = self.restored_from
            self._writer = EventWriter(
                self.checkpoint_dir, purge_step=None if restored is None else restored.step,
                purge_stale=True,
            )
        self._writer.write(step, summaries)


def MonitoredTrainingSession(  # noqa: N802 - named like the class it builds
    checkpoint_dir: str | os.PathLike[str] | None,
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    hooks: Sequence[SessionRunHook] = (),
    chief_only_hooks: Sequence[SessionRunHook] = (),
    save_checkpoint_secs: float | None = 600,
    save_checkpoint_steps: int | None = None,
    save_summaries_steps: int | None = 100,
    save_summaries_secs: float | None = None,
    summary_keys: Sequence[str] = ("loss",),
    log_step_count_steps: int | None = 100,
    is_chief: bool | None = None,
    **kwargs: Any,
) -> MonitoredSession:
    """A :class:`MonitoredSession` with the usual chief hooks: checkpoint saver (steps win over
    seconds), summary saver for ``summary_keys`` and a step counter."""
    chief = distributed.is_chief() if is_chief is None else is_chief
    all_hooks = list(hooks)
    if chief and checkpoint_dir is not None:
        all_hooks += list(chief_only_hooks)
        if save_checkpoint_steps is not None:
            all_hooks.append(CheckpointSaverHook(save_steps=save_checkpoint_steps))
        elif save_checkpoint_secs is not None:
            all_hooks.append(CheckpointSaverHook(save_secs=save_checkpoint_secs))
        if summary_keys and (save_summaries_steps or save_summaries_secs):
            if save_summaries_steps:
                all_hooks.append(SummarySaverHook(summary_keys, save_steps=save_summaries_steps))
            else:
                all_hooks.append(SummarySaverHook(summary_keys, save_secs=save_summaries_secs))
        if log_step_count_steps:
            all_hooks.append(StepCounterHook(every_n_steps=log_step_count_steps))
    return MonitoredSession(
        model=model, optimizer=optimizer, hooks=all_hooks, checkpoint_dir=checkpoint_dir,
        is_chief=chief, **kwargs,
    )
