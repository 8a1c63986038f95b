"""Initialise or recover a training state, then check that it is ready.

:func:`prepare_state` is shared by :class:`~homalign.train.supervisor.Supervisor` and
:class:`~homalign.train.monitored_session.MonitoredSession`:

1. ``ready_fn`` runs once before anything (its answer is logged: it says what a restore must fix);
2. ``local_init_fn(session)`` runs (process-local setup that is never checkpointed);
3. if the store holds a checkpoint, the newest sound one is restored (every rank restores the
   checkpoint rank 0 picked); otherwise the optional seed is applied and ``init_fn(session)`` runs
   (e.g. a warm start);
4. what is not ready is collected: problems of the restore (missing parameters, shape
   mismatches), non-finite parameters, and ``ready_fn(session)``. The session starts only when this
   list is empty; with ``ready_wait_secs > 0`` step 3-4 are retried until then, else
   :class:`NotReadyError` names everything that is not ready.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from homalign.errors import HomalignError, InputError
from homalign.train import distributed
from homalign.train.checkpoint import CheckpointInfo, CheckpointStore, CorruptCheckpointError
from homalign.train.state import TrainState, non_finite_parameters

log = logging.getLogger(__name__)

ReadyFn = Callable[[Any], list[str]]
InitFn = Callable[[Any], Any]


class NotReadyError(HomalignError):
    """The model is not ready to train; ``.not_ready`` lists why."""

    def __init__(self, not_ready: list[str]) -> None:
        self.not_ready = list(not_ready)
        super().__init__("model not ready: " + "; ".join(self.not_ready))


@dataclass
class PrepareResult:
    """What :func:`prepare_state` did."""

    restored_from: CheckpointInfo | None = None
    content_hash: str | None = None
    skipped: list[str] = field(default_factory=list)
    init_result: Any = None


def seed_everything(seed: int) -> None:
    """Seed torch, numpy and Python's ``random``."""
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)
    random.seed(seed)


def _restore(state: TrainState, store: CheckpointStore) -> tuple[PrepareResult, list[str]]:
    """Restore the checkpoint rank 0 picks; every rank loads the same one."""
    result = PrepareResult()
    order = store.restore_order()
    if distributed.is_chief():
        chosen, loaded = -1, None
        for i, info in enumerate(order):
            try:
                loaded = store.load(info)
                chosen = i
                break
            except CorruptCheckpointError as exc:
                msg = f"skipping checkpoint {info.name}: {exc}"
                log.warning("%s", msg)
                store.problems.append(msg)
                result.skipped.append(msg)
        chosen = distributed.broadcast_int(chosen)
    else:
        chosen = distributed.broadcast_int(-1)
        loaded = store.load(order[chosen]) if chosen >= 0 else None
    if loaded is None and order:
        # never start afresh over a run's checkpoints (the new ones would replace them)
        raise unreadable_checkpoints(store)
    if loaded is None:
        return result, []
    problems = state.restore(loaded.tensors, loaded.state)
    if not problems:
        result.restored_from = loaded.info
        result.content_hash = loaded.content_hash
        log.info("restored %s (global step %d)", loaded.info.prefix, loaded.info.step)
    return result, problems


def unreadable_checkpoints(store: CheckpointStore) -> InputError:
    """The error for a store whose checkpoints are all corrupt or missing."""
    return InputError("no checkpoint could be read (all are corrupt or missing; see the "
                      "warnings): move them away to start afresh, or repair them",
                      path=store.directory)


def prepare_state(
    state: TrainState,
    store: CheckpointStore | None,
    session: Any,
    *,
    init_fn: InitFn | None = None,
    local_init_fn: InitFn | None = None,
    ready_fn: ReadyFn | None = None,
    seed: int | None = None,
    ready_wait_secs: float = 0.0,
    recovery_wait_secs: float = 1.0,
) -> PrepareResult:
    """Initialise or restore ``state``; raises :class:`NotReadyError` if it does not become ready."""
    if ready_fn is not None:
        before = ready_fn(session)
        if before:
            log.info("before restore, not ready: %s", before)
    if local_init_fn is not None:
        local_init_fn(session)
    deadline = time.monotonic() + ready_wait_secs
    while True:
        result, not_ready = PrepareResult(), []
        if store is not None:
            result, not_ready = _restore(state, store)
        if result.restored_from is None and not not_ready:
            if seed is not None:
                seed_everything(seed)
            if init_fn is not None:
                result.init_result = init_fn(session)
        not_ready += non_finite_parameters(state.model)
        if ready_fn is not None:
            not_ready += list(ready_fn(session))
        if not not_ready:
            return result
        if time.monotonic() >= deadline:
            raise NotReadyError(not_ready)
        log.info("not ready (%s); retrying in %.1fs", not_ready, recovery_wait_secs)
        time.sleep(recovery_wait_secs)
