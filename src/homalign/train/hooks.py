"""The hook protocol of :class:`~homalign.train.monitored_session.MonitoredSession` and the
built-in hooks.

A hook sees every call of ``MonitoredSession.run(step_fn, ...)``:

* ``begin()`` — once, before the state is restored or initialised;
* ``after_create_session(session, coord)`` — once, when the state is ready;
* ``before_run(run_context) -> SessionRunArgs | None`` — before each step; it may request extra
  values: ``SessionRunArgs({"loss": "loss", "norm": fn})`` asks for the ``"loss"`` entry of the
  step function's output mapping and for ``fn()`` evaluated right after the step;
* ``after_run(run_context, run_values)`` — after each step, with ``run_values.results`` holding the
  requested values; ``run_context.request_stop()`` ends the loop after this step;
* ``end(session)`` — once, when the session closes without an exception.

Hooks run in the training thread, in list order.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from homalign.train.summary import SummaryValue, to_float

if TYPE_CHECKING:
    from homalign.train.monitored_session import MonitoredSession
    from homalign.train.services import Coordinator

log = logging.getLogger(__name__)

Fetch = str | Callable[[], Any]


@dataclass
class SessionRunArgs:
    """Values a hook wants to see after the step: output keys or zero-argument callables."""

    fetches: Mapping[str, Fetch] = field(default_factory=dict)


@dataclass
class SessionRunValues:
    """What ``after_run`` sees: this hook's requested ``results``, all ``outputs``, the new step."""

    results: dict[str, Any]
    outputs: Mapping[str, Any]
    step: int


class SessionRunContext:
    """Passed to ``before_run``/``after_run``; lets a hook stop the loop."""

    def __init__(self, session: MonitoredSession) -> None:
        self.session = session
        self.stop_requested = False

    def request_stop(self) -> None:
        """End the loop after the current step."""
        self.stop_requested = True


class SessionRunHook:
    """Base class: every method is a no-op."""

    def begin(self) -> None:
        """Before the session is created."""

    def after_create_session(self, session: MonitoredSession, coord: Coordinator) -> None:
        """After restore/initialisation."""

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        """Before each step; return extra values to fetch."""
        return None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """After each step."""

    def end(self, session: MonitoredSession) -> None:
        """At a clean close."""


class SecondOrStepTimer:
    """Triggers every ``every_secs`` seconds or every ``every_steps`` steps (exactly one set)."""

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None) -> None:
        if (every_secs is None) == (every_steps is None):
            raise ValueError("set exactly one of every_secs and every_steps")
        self.every_secs = every_secs
        self.every_steps = every_steps
        self.last_step: int | None = None
        self.last_time: float | None = None

    def should_trigger_for_step(self, step: int) -> bool:
        """Whether ``step`` is due."""
        if self.last_step is None:
            return True
        if step == self.last_step:
            return False
        if self.every_steps is not None:
            return step >= self.last_step + self.every_steps
        assert self.every_secs is not None and self.last_time is not None
        return time.monotonic() >= self.last_time + self.every_secs

    def update_last_triggered_step(self, step: int) -> tuple[float | None, int | None]:
        """Record a trigger; returns (seconds, steps) since the previous one."""
        now = time.monotonic()
        elapsed = None
        if self.last_step is not None and self.last_time is not None:
            elapsed = (now - self.last_time, step - self.last_step)
        self.last_step, self.last_time = step, now
        return elapsed if elapsed is not None else (None, None)

    def reset(self, step: int) -> None:
        """Start counting from ``step`` without triggering."""
        self.last_step, self.last_time = step, time.monotonic()


class StopAtStepHook(SessionRunHook):
    """Stop after ``num_steps`` more steps or at global step ``last_step``."""

    def __init__(self, num_steps: int | None = None, last_step: int | None = None) -> None:
        if (num_steps is None) == (last_step is None):
            raise ValueError("set exactly one of num_steps and last_step")
        self.num_steps = num_steps
        self.last_step = last_step

    def after_create_session(self, session: MonitoredSession, coord: Coordinator) -> None:  # noqa: D102
        if self.num_steps is not None:
            self.last_step = session.global_step + self.num_steps
        if self.last_step is not None and session.global_step >= self.last_step:
            session.request_stop()

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:  # noqa: D102
        if self.last_step is not None and run_values.step >= self.last_step:
            run_context.request_stop()


class NanLossDuringTrainingError(RuntimeError):
    """The loss became NaN or infinite."""


class NanLossHook(SessionRunHook):
    """Stop on a NaN/inf loss: raise :class:`NanLossDuringTrainingError` (default) or just stop."""

    def __init__(self, loss_key: str = "loss", fail_on_nan_loss: bool = True) -> None:
        self.loss_key = loss_key
        self.fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:  # noqa: D102
        return SessionRunArgs({"loss": self.loss_key})

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:  # noqa: D102
        loss = to_float(run_values.results["loss"])
        if math.isfinite(loss):
            return
        message = f"model diverged with loss = {loss} at step {run_values.step}"
        if self.fail_on_nan_loss:
            raise NanLossDuringTrainingError(message)
        log.warning("%s; stopping", message)
        run_context.request_stop()


class LoggingHook(SessionRunHook):
    """Log the given output keys every ``every_n_steps`` steps or ``every_n_secs`` seconds
    (and at the end with ``at_end``). ``formatter(values) -> str`` customises the line."""

    def __init__(
        self,
        keys: Sequence[str] | Mapping[str, Fetch],
        every_n_steps: int | None = None,
        every_n_secs: float | None = None,
        at_end: bool = False,
        formatter: Callable[[dict[str, Any]], str] | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        self.fetches: dict[str, Fetch] = (
            dict(keys) if isinstance(keys, Mapping) else {k: k for k in keys}
        )
        self.timer = SecondOrStepTimer(every_n_secs, every_n_steps)
        self.at_end = at_end
        self.formatter = formatter
        self.logger = logger or log
        self.lines: list[str] = []
        self._due = False
        self._last: tuple[int, dict[str, Any]] | None = None

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:  # noqa: D102
        self._due = self.timer.should_trigger_for_step(run_context.session.global_step + 1)
        return SessionRunArgs(self.fetches) if self._due or self.at_end else None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:  # noqa: D102
        self._last = (run_values.step, run_values.results)
        if self._due:
            elapsed, _ = self.timer.update_last_triggered_step(run_values.step)
            self._emit(run_values.step, run_values.results, elapsed)

    def end(self, session: MonitoredSession) -> None:  # noqa: D102
        if self.at_end and self._last is not None and self._last[0] != self.timer.last_step:
            self._emit(*self._last, None)

    def _emit(self, step: int, values: dict[str, Any], elapsed: float | None) -> None:
        if self.formatter is not None:
            line = self.formatter(values)
        else:
            parts = [f"{k} = {_fmt(v)}" for k, v in values.items()]
            line = f"step {step}: " + ", ".join(parts)
            if elapsed is not None:
                line += f" ({elapsed:.3f} sec)"
        self.lines.append(line)
        self.logger.info("%s", line)


def _fmt(value: Any) -> str:
    try:
        return f"{to_float(value):.6g}"
    except (TypeError, ValueError, RuntimeError):
        return str(value)


class CheckpointSaverHook(SessionRunHook):
    """Save a checkpoint every ``save_steps`` steps or ``save_secs`` seconds, and at the end.

    Runs in the training thread, so the snapshot is taken exactly at a step boundary. Chief only
    (``MonitoredTrainingSession`` adds it on rank 0).
    """

    def __init__(self, save_secs: float | None = None, save_steps: int | None = None,
                 listeners: Sequence[Callable[[int], None]] = ()) -> None:
        self.timer = SecondOrStepTimer(save_secs, save_steps)
        self.listeners = list(listeners)
        self.saved_steps: list[int] = []
        self._session: MonitoredSession | None = None

    def after_create_session(self, session: MonitoredSession, coord: Coordinator) -> None:  # noqa: D102
        self._session = session
        self.timer.reset(session.global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:  # noqa: D102
        if self.timer.should_trigger_for_step(run_values.step):
            self.timer.update_last_triggered_step(run_values.step)
            self._save(run_context.session)

    def end(self, session: MonitoredSession) -> None:  # noqa: D102
        if not self.saved_steps or self.saved_steps[-1] != session.global_step:
            self._save(session)

    def _save(self, session: MonitoredSession) -> None:
        info = session.save_checkpoint()
        if info is not None:
            self.saved_steps.append(info.step)
            for listener in self.listeners:
                listener(info.step)


class SummarySaverHook(SessionRunHook):
    """Write the requested values (scalars, histograms) to the event file on a schedule."""

    def __init__(self, fetches: Sequence[str] | Mapping[str, Fetch], save_steps: int | None = None,
                 save_secs: float | None = None) -> None:
        self.fetches: dict[str, Fetch] = (
            dict(fetches) if isinstance(fetches, Mapping) else {k: k for k in fetches}
        )
        self.timer = SecondOrStepTimer(save_secs, save_steps)
        self._due = False

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:  # noqa: D102
        self._due = self.timer.should_trigger_for_step(run_context.session.global_step + 1)
        return SessionRunArgs(self.fetches) if self._due else None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:  # noqa: D102
        if self._due:
            self.timer.update_last_triggered_step(run_values.step)
            values: dict[str, SummaryValue] = run_values.results
            run_context.session.summary_computed(run_values.step, values)


class StepCounterHook(SessionRunHook):
    """Write ``global_step/sec`` every ``every_n_steps`` steps or ``every_n_secs`` seconds."""

    def __init__(self, every_n_steps: int | None = 100, every_n_secs: float | None = None) -> None:
        if every_n_secs is not None:
            every_n_steps = None
        self.timer = SecondOrStepTimer(every_n_secs, every_n_steps)
        self.rates: list[tuple[int, float]] = []

    def after_create_session(self, session: MonitoredSession, coord: Coordinator) -> None:  # noqa: D102
        self.timer.reset(session.global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:  # noqa: D102
        if self.timer.should_trigger_for_step(run_values.step):
            secs, steps = self.timer.update_last_triggered_step(run_values.step)
            if secs and steps:
                rate = steps / secs
                self.rates.append((run_values.step, rate))
                run_context.session.summary_computed(run_values.step, {"global_step/sec": rate})


class ProgressBarHook(SessionRunHook):
    """A tqdm progress bar over global steps up to ``total`` (to stderr)."""

    def __init__(self, total: int | None = None, loss_key: str | None = "loss",
                 disable: bool | None = None, **tqdm_kwargs: Any) -> None:
        self.total = total
        self.loss_key = loss_key
        self.disable = disable
        self.tqdm_kwargs = tqdm_kwargs
        self.bar: Any = None

    def after_create_session(self, session: MonitoredSession, coord: Coordinator) -> None:  # noqa: D102
        from tqdm.auto import tqdm

        self.bar = tqdm(total=self.total, initial=session.global_step, unit="step",
                        disable=self.disable, **self.tqdm_kwargs)

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:  # noqa: D102
        return SessionRunArgs({"loss": self.loss_key}) if self.loss_key else None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:  # noqa: D102
        if self.bar is None:
            return
        self.bar.update(run_values.step - self.bar.n)
        if "loss" in run_values.results:
            self.bar.set_postfix(loss=_fmt(run_values.results["loss"]), refresh=False)

    def end(self, session: MonitoredSession) -> None:  # noqa: D102
        if self.bar is not None:
            self.bar.close()
