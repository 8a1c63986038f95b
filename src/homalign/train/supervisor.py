"""The Supervisor: a training session that recovers, checkpoints, summarises and stops cleanly.

Typical loop::

    sv = Supervisor(logdir, model=model, optimizer=opt, data=loader, save_model_secs=600)
    with sv.managed_session() as session:
        for batch in loader:
            if sv.should_stop() or session.global_step >= 10_000:
                break
            with session.step():                 # one optimisation step; global step += 1 at exit
                loss = loss_fn(model, batch)
                opt.zero_grad(); loss.backward(); opt.step()
            session.record(loss=loss)            # picked up by the default summary function

Threads started by :meth:`Supervisor.managed_session` (each its own, all on one
:class:`~homalign.train.services.Coordinator`):

* ``checkpoint`` — every ``save_model_secs`` it asks the training thread for a snapshot, taken at
  the next step boundary (so model, optimizer, RNG and data position agree), and writes it;
  snapshots requested by ``save_model_steps`` are written by the same thread;
* ``summaries`` — every ``save_summaries_secs`` runs ``summary_fn(session)`` under the step lock
  and appends the values to the run's event file;
* ``step-counter`` — writes ``global_step/sec`` on the summary schedule, and once more at the
  end of the session for the steps since its last write (so a run shorter than one period still
  records its rate);
* services added with :meth:`Supervisor.loop` / :meth:`Supervisor.add_service` and data pipelines
  added with :meth:`Supervisor.add_pipeline`.

Any exception, in the loop or in a service, stops everything; on the way out the services are
joined, a final checkpoint is written when the state is sound (no step was interrupted half-way and
all parameters are finite), and the exception reaches the caller.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from homalign.io.atomic import remove_stale_temp_files
from homalign.train import distributed
from homalign.train.checkpoint import CheckpointInfo, CheckpointStore
from homalign.train.services import Coordinator, LoopingService, Service
from homalign.train.session_manager import InitFn, PrepareResult, ReadyFn, prepare_state
from homalign.train.state import GlobalStep, Snapshot, Stateful, TrainState, unwrap
from homalign.train.summary import EventWriter, SummaryValue

log = logging.getLogger(__name__)


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()
"""Sentinel: use the default summary function (:func:`default_summaries`)."""

SummaryFn = Callable[["TrainingSession"], Mapping[str, SummaryValue]]


def default_summaries(session: TrainingSession) -> dict[str, SummaryValue]:
    """The values recorded with :meth:`TrainingSession.record`, the learning rate(s) and the
    global parameter norm."""
    out: dict[str, SummaryValue] = dict(session.recorded)
    if session.optimizer is not None:
        for i, group in enumerate(session.optimizer.param_groups):
            lr = group.get("lr")
            if isinstance(lr, int | float | torch.Tensor):
                out[f"lr/group{i}"] = float(lr)
    with torch.no_grad():
        sq = sum(float(p.detach().float().pow(2).sum()) for p in unwrap(session.model).parameters())
    out["model/param_norm"] = math.sqrt(sq)
    return out


class TrainingSession:
    """What :meth:`Supervisor.managed_session` yields: the live objects plus step bookkeeping."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor
        self.state = supervisor.state
        self.lock = threading.RLock()
        self.recorded: dict[str, SummaryValue] = {}
        self.interrupted_step: int | None = None
        self._snapshot_request = threading.Event()

    @property
    def model(self) -> nn.Module:
        """The model being trained."""
        return self.state.model

    @property
    def optimizer(self) -> torch.optim.Optimizer | None:
        """Its optimizer."""
        return self.state.optimizer

    @property
    def scheduler(self) -> Stateful | None:
        """Its LR scheduler, if any."""
        return self.state.scheduler

    @property
    def data(self) -> Stateful | None:
        """The checkpointed data source, if any."""
        return self.state.data

    @property
    def global_step(self) -> int:
        """The current global step."""
        return self.state.global_step.value

    def should_stop(self) -> bool:
        """Same as :meth:`Supervisor.should_stop`."""
        return self.supervisor.should_stop()

    def request_stop(self, exception: BaseException | None = None) -> None:
        """Same as :meth:`Supervisor.request_stop`."""
        self.supervisor.request_stop(exception)

    def record(self, **values: SummaryValue) -> None:
        """Remember the latest values (e.g. ``loss=``) for the default summary function."""
        with self.lock:
            self.recorded.update(values)

    @contextlib.contextmanager
    def step(self, increment: int = 1) -> Iterator[int]:
        """One training step: holds the step lock, adds ``increment`` to the global step at exit,
        and takes any checkpoint snapshot due at this step boundary. An exception inside marks
        the state unsound (no final checkpoint) and propagates."""
        with self.lock:
            try:
                yield self.global_step
            except BaseException:
                self.interrupted_step = self.global_step
                raise
            step = self.state.global_step.increment(increment)
            self.state.commit_step()
        self.supervisor._after_step(self, step)


class _CheckpointService(Service):
    """Writes snapshots from a queue; asks for one every ``interval_secs``."""

    def __init__(self, sv: Supervisor, session: TrainingSession, interval_secs: float) -> None:
        super().__init__("checkpoint", sv.coord)
        self.sv = sv
        self.session = session
        self.interval_secs = interval_secs

    def run_service(self) -> None:  # noqa: D102
        interval = self.interval_secs if self.interval_secs > 0 else math.inf
        next_at = time.monotonic() + interval
        while True:
            try:
                snap = self.sv._snapshots.get(timeout=0.05)
            except queue.Empty:
                snap = None
            if snap is not None:
                self.sv._write(snap)
                continue
            if self.coord_stopped():
                break
            if time.monotonic() >= next_at:
                self.session._snapshot_request.set()
                next_at = max(next_at + interval, time.monotonic())
        while True:  # drain: snapshots already taken are consistent; write them
            try:
                self.sv._write(self.sv._snapshots.get_nowait())
            except queue.Empty:
                break

    def coord_stopped(self) -> bool:
        return self.coordinator.should_stop()


class Supervisor:
    """Initialise or recover a model, run checkpoint/summary/user services, stop cleanly.

    ``logdir=None`` disables checkpoints and summaries; ``save_summaries_secs=0`` or
    ``summary_fn=None`` disables the summary service only (the loop can still write summaries
    with :meth:`summary_computed`). ``save_model_steps`` adds step-based checkpoints.
    Snapshots are always taken in the training thread at a step boundary; with ``async_save``
    (default) the checkpoint thread writes them while training goes on, otherwise the training
    thread writes them before the next step (then a kill loses at most one interval of work).
    ``stop_signals`` (e.g. ``(signal.SIGTERM,)``, main thread only) become a graceful stop: the
    loop ends after the current step and the final checkpoint is written (preemption-safe).
    Only the chief (rank 0 under torch.distributed, unless ``is_chief`` says otherwise) writes.
    A Supervisor runs one session.
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str] | None,
        *,
        model: nn.Module,
        optimizer: torch.optim.Optimizer | None,
        global_step: GlobalStep | int | None = None,
        scheduler: Stateful | None = None,
        data: Stateful | None = None,
        extra_state: Mapping[str, Stateful] | None = None,
        checkpoint_basename: str = "model.ckpt",
        save_model_secs: float = 600,
        save_model_steps: int | None = None,
        save_summaries_secs: float = 120,
        summary_fn: SummaryFn | None = DEFAULT,
        init_fn: InitFn | None = None,
        local_init_fn: InitFn | None = None,
        ready_fn: ReadyFn | None = None,
        keep_max: int = 5,
        seed: int | None = None,
        is_chief: bool | None = None,
        ready_wait_secs: float = 0.0,
        stop_grace_secs: float = 120.0,
        sync_stop: bool = True,
        async_save: bool = True,
        stop_signals: Sequence[int] = (),
    ) -> None:
        if not isinstance(global_step, GlobalStep):
            global_step = GlobalStep(int(global_step or 0))
        self.logdir = None if logdir is None else os.fspath(logdir)
        self.state = TrainState(
            model=model,
            optimizer=optimizer,
            scheduler=scheduler,
            data=data,
            global_step=global_step,
            extra=dict(extra_state or {}),
        )
        self.is_chief = distributed.is_chief() if is_chief is None else is_chief
        self.store = (
            CheckpointStore(self.logdir, checkpoint_basename, keep_max)
            if self.logdir is not None
            else None
        )
        self.save_model_secs = save_model_secs
        self.save_model_steps = save_model_steps
        self.save_summaries_secs = save_summaries_secs
        self.summary_fn = default_summaries if summary_fn is DEFAULT else summary_fn
        self.init_fn = init_fn
        self.local_init_fn = local_init_fn
        self.ready_fn = ready_fn
        self.seed = seed
        self.ready_wait_secs = ready_wait_secs
        self.stop_grace_secs = stop_grace_secs
        self.sync_stop = sync_stop
        self.async_save = async_save
        self.stop_signals = tuple(stop_signals)
        self.stopped_by_signal: int | None = None
        self.coord = Coordinator()
        self.summary_writer: EventWriter | None = None
        self.prepared: PrepareResult | None = None
        self.last_saved: CheckpointInfo | None = None
        self.saved_steps: list[int] = []
        self._pending_services: list[threading.Thread] = []
        self._step_counter_state: list[float] | None = None  # [time, step] of its last write
        self._pipelines: list[Any] = []
        self._services: list[threading.Thread] = []
        self._snapshots: queue.Queue[Snapshot] = queue.Queue(maxsize=2)
        self._save_lock = threading.Lock()
        self._session: TrainingSession | None = None
        self._owner: threading.Thread | None = None
        self._used = False

    # --- properties -------------------------------------------------------------------------
    @property
    def global_step(self) -> int:
        """The current global step."""
        return self.state.global_step.value

    @property
    def restored_from(self) -> CheckpointInfo | None:
        """The checkpoint the session was restored from (``None`` after a fresh initialisation)."""
        return None if self.prepared is None else self.prepared.restored_from

    @property
    def writes(self) -> bool:
        """Whether this process writes checkpoints and summaries."""
        return self.is_chief and self.logdir is not None

    @property
    def summaries_enabled(self) -> bool:
        """Whether the summary service runs."""
        return self.writes and self.save_summaries_secs > 0 and self.summary_fn is not None

    @property
    def services(self) -> list[threading.Thread]:
        """The service threads of the running session."""
        return list(self._services)

    # --- stopping ---------------------------------------------------------------------------
    def should_stop(self) -> bool:
        """Whether training should stop. In the training thread of a multi-process run, every
        rank calls this once per step and they agree (one tiny all-reduce)."""
        stop = self.coord.should_stop()
        if (
            self.sync_stop
            and distributed.world_size() > 1
            and threading.current_thread() is self._owner
        ):
            agreed = distributed.any_rank(stop)
            if agreed and not stop:
                self.coord.request_stop()
            return agreed
        return stop

    def request_stop(self, exception: BaseException | None = None) -> None:
        """Ask the loop and all services to stop (keeping ``exception`` for the caller)."""
        self.coord.request_stop(exception)

    def stop(self) -> None:
        """Alias of :meth:`request_stop`."""
        self.request_stop()

    # --- services ---------------------------------------------------------------------------
    def loop(
        self,
        interval_secs: float,
        fn: Callable[..., Any],
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> LoopingService:
        """Run ``fn(*args, **kwargs)`` now and then every ``interval_secs`` in its own thread,
        until stop; its exceptions stop training. Started at once inside a session, else when the
        session starts."""
        svc = LoopingService(
            f"loop-{getattr(fn, '__name__', 'fn')}", self.coord, interval_secs, fn, args, kwargs,
            run_first=True,
        )
        self.add_service(svc)
        return svc

    def add_service(self, service: threading.Thread) -> threading.Thread:
        """Register a thread (e.g. a :class:`~homalign.train.services.Service` built on
        ``sv.coord``); it is started with the session and joined at its end."""
        if self._session is not None:
            self._start(service)
        else:
            self._pending_services.append(service)
        return service

    def add_pipeline(self, pipeline: Any) -> Any:
        """Attach a data pipeline (e.g. a :class:`~homalign.train.data.ResumableLoader` with
        ``prefetch``): its background threads report to this session's coordinator, so their
        failure stops training and the session's stop ends them."""
        pipeline.coordinator = self.coord
        self._pipelines.append(pipeline)
        return pipeline

    def _start(self, service: threading.Thread) -> None:
        if service not in self.coord.threads:
            self.coord.register(service)
        self._services.append(service)
        service.start()

    # --- summaries --------------------------------------------------------------------------
    def _writer(self) -> EventWriter | None:
        if not self.writes:
            return None
        if self.summary_writer is None:
            restored = self.restored_from
            self.summary_writer = EventWriter(
                self.logdir,  # type: ignore[arg-type]
                purge_step=None if restored is None else restored.step,
                purge_stale=True,
            )
        return self.summary_writer

    def summary_computed(self, step: int, summaries: Mapping[str, SummaryValue]) -> None:
        """Write the loop's own summaries into the run's event file (chief only)."""
        writer = self._writer()
        if writer is not None:
            writer.write(step, summaries)

    def _run_summary_fn(self, session: TrainingSession) -> None:
        assert self.summary_fn is not None
        with session.lock:
            values = dict(self.summary_fn(session))
            step = session.global_step
        self.summary_computed(step, values)

    def _step_counter(self, session: TrainingSession, last: list[float]) -> None:
        now, step = time.monotonic(), session.global_step
        t0, s0 = last
        if now > t0:
            self.summary_computed(step, {"global_step/sec": (step - s0) / (now - t0)})
        last[:] = [now, step]

    # --- checkpoints ------------------------------------------------------------------------
    def _write(self, snap: Snapshot) -> CheckpointInfo | None:
        assert self.store is not None
        with self._save_lock:
            if self.last_saved is not None and self.last_saved.step == snap.step:
                return self.last_saved
            info = self.store.save(snap.step, snap.tensors, snap.state)
            self.last_saved = info
            self.saved_steps.append(snap.step)
            log.info("saved checkpoint %s", info.prefix)
            return info

    def save_checkpoint(self) -> CheckpointInfo | None:
        """Write a checkpoint now, synchronously (call from the training thread, between steps);
        not when a parameter is non-finite (a warning says so, and ``None`` is returned)."""
        if not self.writes or not self._finite():
            return None
        return self._write(self.state.snapshot())

    def _finite(self) -> bool:
        """Whether the parameters are finite; warns that no checkpoint is written if not (a
        diverged state must never replace, or prune, the sound checkpoints before it)."""
        from homalign.train.state import non_finite_parameters

        bad = non_finite_parameters(self.state.model)
        if bad:
            log.warning("no checkpoint at step %d: %s", self.global_step, "; ".join(bad))
        return not bad

    def _after_step(self, session: TrainingSession, step: int) -> None:
        if not self.writes:
            return
        due = self.save_model_steps is not None and step % self.save_model_steps == 0
        if due or session._snapshot_request.is_set():
            session._snapshot_request.clear()
            if not self._finite():
                return
            snap = self.state.snapshot()
            if not self.async_save:
                self._write(snap)
                return
            while True:
                try:
                    self._snapshots.put(snap, timeout=0.1)
                    break
                except queue.Full:
                    if self.coord.should_stop() and not any(
                        s.name == "checkpoint" and s.is_alive() for s in self._services
                    ):
                        self._write(snap)
                        break

    def state_is_sound(self, session: TrainingSession) -> list[str]:
        """Why a final checkpoint must not be written (empty: it may)."""
        from homalign.train.state import non_finite_parameters

        reasons = non_finite_parameters(self.state.model)
        if session.interrupted_step is not None:
            reasons.append(f"step {session.interrupted_step} was interrupted by an exception")
        return reasons

    # --- the session ------------------------------------------------------------------------
    @contextlib.contextmanager
    def managed_session(self) -> Iterator[TrainingSession]:
        """Prepare (restore or initialise), start the services, yield the session, then stop
        everything, write a final checkpoint if sound, and re-raise any exception."""
        if self._used:
            raise RuntimeError("a Supervisor runs one session; create a new one")
        self._used = True
        self._owner = threading.current_thread()
        session = TrainingSession(self)
        if self.writes:
            remove_stale_temp_files(self.logdir)  # type: ignore[arg-type]
        self.prepared = prepare_state(
            self.state,
            self.store,
            session,
            init_fn=self.init_fn,
            local_init_fn=self.local_init_fn,
            ready_fn=self.ready_fn,
            seed=self.seed,
            ready_wait_secs=self.ready_wait_secs,
        )
        if self.restored_from is not None:
            self.last_saved = self.restored_from
        self._session = session
        body_failed = False
        previous = self._install_signal_handlers()
        try:
            self._start_services(session)
            yield session
        except BaseException as exc:
            body_failed = True
            self.coord.request_stop(exc)
            raise
        finally:
            try:
                self._shutdown(session, body_failed)
            finally:
                for signum, handler in previous.items():
                    signal.signal(signum, handler)

    def _install_signal_handlers(self) -> dict[int, Any]:
        """Turn ``stop_signals`` into a graceful stop (main thread only)."""
        previous: dict[int, Any] = {}
        if not self.stop_signals or threading.current_thread() is not threading.main_thread():
            return previous

        def handler(signum: int, frame: Any) -> None:
            self.stopped_by_signal = signum
            log.warning("received %s: stopping after this step", signal.Signals(signum).name)
            self.coord.request_stop()
            signal.signal(signum, previous[signum])  # a second signal acts as before

        for signum in self.stop_signals:
            previous[signum] = signal.signal(signum, handler)
        return previous

    def _start_services(self, session: TrainingSession) -> None:
        if self.writes:
            self._writer()
            self._start(_CheckpointService(self, session, self.save_model_secs))
        if self.summaries_enabled:
            self._start(
                LoopingService("summaries", self.coord, self.save_summaries_secs,
                               self._run_summary_fn, (session,))
            )
        if self.writes and self.save_summaries_secs > 0:
            self._step_counter_state = [time.monotonic(), session.global_step]
            self._start(
                LoopingService("step-counter", self.coord, self.save_summaries_secs,
                               self._step_counter, (session, self._step_counter_state))
            )
        pending, self._pending_services = self._pending_services, []
        for svc in pending:
            self._start(svc)

    def _shutdown(self, session: TrainingSession, body_failed: bool) -> None:
        self.coord.request_stop()
        stragglers = self.coord.join(self._services, grace_secs=self.stop_grace_secs)
        for pipeline in self._pipelines:
            close = getattr(pipeline, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()
        last = self._step_counter_state
        if last is not None and "step-counter" not in stragglers and session.global_step > last[1]:
            self._step_counter(session, last)  # the rate of the steps since its last write
        final_error: BaseException | None = None
        if self.writes:
            reasons = self.state_is_sound(session)
            if reasons:
                log.warning("no final checkpoint: %s", "; ".join(reasons))
            elif "checkpoint" in stragglers:
                log.warning("no final checkpoint: the checkpoint service is still writing")
            else:
                try:
                    self.save_checkpoint()
                except Exception as exc:  # noqa: BLE001 - reported below
                    log.error("final checkpoint failed: %s", exc)
                    final_error = exc
        if self.summary_writer is not None:
            self.summary_writer.close()
        self._session = None
        if not body_failed:
            self.coord.raise_requested_exception()
            if final_error is not None:
                raise final_error
