"""homalign.train: a supervised, monitored, recoverable training runtime on PyTorch.

A general runtime (it imports nothing of the aligner): models register a factory with
:func:`register_model` and are trained through one of three front ends, all sharing the same
checkpoint store, state capture and recovery logic.

Front ends
----------
* :class:`Supervisor` (``supervisor.py``) — ``with sv.managed_session() as session:`` restores the
  newest sound checkpoint or initialises (``local_init_fn``, seed, ``init_fn``), checks readiness
  (``ready_fn``, missing parameters, shape mismatches, non-finite values) and runs services in
  threads on one :class:`~homalign.train.services.Coordinator`: the checkpoint service
  (``save_model_secs``; snapshots are taken by the training thread at a step boundary and written
  by the service), the summary service (``save_summaries_secs``, ``summary_fn``), the step counter
  (``global_step/sec``), user loops (``sv.loop``) and data pipelines (``sv.add_pipeline``). Any
  exception stops everything, a final checkpoint is written when the state is sound, and the
  exception reaches the caller.
* :class:`MonitoredSession` / :func:`MonitoredTrainingSession` (``monitored_session.py``,
  ``hooks.py``) — steps run through ``mon.run(step_fn, batch)`` under hooks (``begin``,
  ``after_create_session``, ``before_run`` requesting extra values, ``after_run``, ``end``):
  stop at step, NaN loss, logging, checkpoint saver, summary saver, step counter, progress bar.
* :class:`Experiment` (``experiment.py``, ``export.py``) — ``train``, ``evaluate``,
  ``continuous_eval`` (each new checkpoint once, throttled) and ``train_and_evaluate``, with
  :class:`BestExporter` writing the best model as standalone safetensors + ``config.json``.

Checkpoints (``checkpoint.py``, ``codec.py``, ``state.py``, ``atomic.py``)
-------------------------------------------------------------------------
A checkpoint ``model.ckpt-<step>`` is three files: ``.safetensors`` (every tensor: model,
optimizer state, RNG states), ``.json`` (everything else — step, optimizer param groups, LR
scheduler, data position, Python/numpy RNG — encoded by a codec that only produces plain types;
nothing is ever unpickled) and ``.index.json`` (a manifest with each file's size and sha256 and
one content hash over all of them). Each file is written atomically (temp file, fsync,
``os.replace``), the directory is fsynced, then the text metadata file ``checkpoint`` is rewritten
atomically — that is the commit. ``checkpoint`` lists the selected and all kept checkpoints and
may be edited by hand to select another one. A restore verifies sizes and hashes and falls back
past any corrupt or missing checkpoint, reporting each one.

A resumed run continues bitwise identically: model, optimizer, scheduler, torch/numpy/Python RNG
states, and the data position of :class:`ResumableLoader` (counted per finished step, so a batch
fetched but never trained on is not skipped) are all restored.

Distributed (``distributed.py``, ``launch.py``)
----------------------------------------------
Under ``torchrun`` every worker joins a process group (gloo on CPU, nccl on GPU) and wraps the
model in DistributedDataParallel; rank 0 alone writes checkpoints and event files, rank 0 picks
the checkpoint and every rank restores that same one; ``sv.should_stop()`` is agreed across ranks
once per step; the sampler shards by rank and resumes. ``homalign train --config F --logdir D
--nproc N`` runs any registered config (``config.py``, TOML) this way.

Summaries (``summary.py``)
-------------------------
TensorBoard event files via ``torch.utils.tensorboard``; every process opens a new event file,
and after a restore at step ``s`` it starts with ``SessionLog.START`` at ``s`` so TensorBoard shows
the run continuing at the restored step.

See ``docs/training.md`` for a guide.
"""

from __future__ import annotations

from homalign.train.checkpoint import CheckpointInfo, CheckpointStore, CorruptCheckpointError
from homalign.train.config import (
    TrainConfig,
    TrainSettings,
    build_task,
    load_config,
    register_model,
    registered_models,
)
from homalign.train.data import ResumableLoader, ResumableSampler
from homalign.train.experiment import Experiment, ModelSpec
from homalign.train.export import BestExporter, load_export
from homalign.train.hooks import (
    CheckpointSaverHook,
    LoggingHook,
    NanLossDuringTrainingError,
    NanLossHook,
    ProgressBarHook,
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
    StepCounterHook,
    StopAtStepHook,
    SummarySaverHook,
)
from homalign.train.monitored_session import MonitoredSession, MonitoredTrainingSession
from homalign.train.services import BackgroundIterator, Coordinator, LoopingService, Service
from homalign.train.session_manager import NotReadyError
from homalign.train.state import GlobalStep, TrainState
from homalign.train.supervisor import Supervisor, TrainingSession
from homalign.train.task import TrainTask
from homalign.train.warm_start import WarmStartReport, warm_start, warm_start_fn

__all__ = [
    "BackgroundIterator",
    "BestExporter",
    "CheckpointInfo",
    "CheckpointSaverHook",
    "CheckpointStore",
    "Coordinator",
    "CorruptCheckpointError",
    "Experiment",
    "GlobalStep",
    "LoggingHook",
    "LoopingService",
    "ModelSpec",
    "MonitoredSession",
    "MonitoredTrainingSession",
    "NanLossDuringTrainingError",
    "NanLossHook",
    "NotReadyError",
    "ProgressBarHook",
    "ResumableLoader",
    "ResumableSampler",
    "Service",
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunHook",
    "SessionRunValues",
    "StepCounterHook",
    "StopAtStepHook",
    "SummarySaverHook",
    "Supervisor",
    "TrainConfig",
    "TrainSettings",
    "TrainState",
    "TrainTask",
    "TrainingSession",
    "WarmStartReport",
    "build_task",
    "load_config",
    "load_export",
    "register_model",
    "registered_models",
    "warm_start",
    "warm_start_fn",
]
