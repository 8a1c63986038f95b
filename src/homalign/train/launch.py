"""Run a registered model config through the Supervisor, in one process or under torchrun.

``python -m homalign.train.launch --config configs/toy.toml --logdir runs/toy [--steps N]``
trains in this process; under ``torchrun --standalone --nproc-per-node N -m homalign.train.launch
...`` every worker joins the process group (gloo on CPU, nccl on GPU), wraps the model in
DistributedDataParallel and reads its own shard of the data; rank 0 writes checkpoints and
summaries, every rank restores the same checkpoint, so ``torchrun --max-restarts`` resumes a run
whose worker was killed.

With an ``[eval]`` table in the config (and a task that provides ``evaluate``), rank 0 also
evaluates new checkpoints every ``throttle_secs`` in a service thread and the final checkpoint at
the end, and exports the best model (:mod:`homalign.train.evaluation`). A ``[warm_start]`` table
initialises a new run from another run's export (:mod:`homalign.train.warm_start`; a resumed run
restores its own checkpoint instead); an ``[average]`` table exports the mean of the weights at
the listed steps (:func:`export_average`).

Each rank can write a JSON report (``--report PREFIX`` -> ``PREFIX.rank<r>.json``) with the final
step, the restored step, samples seen and a sha256 of its parameters.
"""

from __future__ import annotations

import argparse
import copy
import gc
import hashlib
import json
import logging
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from homalign.errors import InputError
from homalign.io.atomic import atomic_write_bytes
from homalign.train import distributed
from homalign.train.checkpoint import CheckpointStore
from homalign.train.config import (
    TrainConfig,
    WarmStartSettings,
    build_task,
    load_config,
    make_optimizer,
    make_scheduler,
    parameter_groups,
)
from homalign.train.data import ResumableLoader
from homalign.train.evaluation import EXPORT_DIR, ContinuousEvaluator, default_export
from homalign.train.services import LoopingService
from homalign.train.session_manager import seed_everything, unreadable_checkpoints
from homalign.train.state import unwrap
from homalign.train.summary import to_float
from homalign.train.supervisor import Supervisor
from homalign.train.task import TrainTask
from homalign.train.warm_start import WarmStartReport, warm_start

log = logging.getLogger(__name__)


@dataclass
class RunReport:
    """What one rank did."""

    rank: int
    world_size: int
    restart: int
    restored_step: int | None
    final_step: int
    steps_run: int
    samples_seen: int
    seconds: float
    train_seconds: float
    final_loss: float | None
    param_sha256: str
    evaluations: int = 0
    best: float | None = None
    stopped_by_signal: int | None = None  # the signal that stopped the run early, if one did


def parameter_digest(model: torch.nn.Module) -> str:
    """sha256 over the model's tensors (names, dtypes, shapes and bytes), to compare ranks/runs."""
    h = hashlib.sha256()
    for name, t in sorted(unwrap(model).state_dict().items()):
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


AVERAGE_DIR = "average"


def run_provenance(config: TrainConfig) -> dict[str, Any]:
    """What an export records about the run that made it: config file, overrides, seed, steps
    and the warm-start source."""
    return {"config_file": config.path, "set": list(config.overrides), "seed": config.seed,
            "steps": config.train.steps,
            "warm_start": None if config.warm_start is None else config.warm_start.source}


def warm_start_init(settings: WarmStartSettings) -> Callable[[Any], WarmStartReport]:
    """The Supervisor's ``init_fn`` for a ``[warm_start]`` table (runs only when there is no
    checkpoint to restore): copies the selected tensors, and raises InputError when a selected
    one is missing or misshapen in the source and not in ``allow_missing``."""
    import fnmatch

    def init_fn(session: Any) -> WarmStartReport:
        report = warm_start(session.model, settings.source, include=settings.include,
                            exclude=settings.exclude)
        bad = {name: why for name, why in report.skipped.items() if why != "not selected"
               and not any(fnmatch.fnmatchcase(name, p) for p in settings.allow_missing)}
        if bad:
            raise InputError(f"[warm_start] {settings.source} does not fit the model: "
                             + "; ".join(f"{k}: {v}" for k, v in sorted(bad.items())[:8])
                             + (f" (and {len(bad) - 8} more)" if len(bad) > 8 else ""))
        return report

    return init_fn


def config_changes(source: str, task_config: Mapping[str, Any]) -> list[str]:
    """How the task's model config differs from the one recorded beside a warm-start export
    (``<stem>.json``: the task's config entries, at its top level as :func:`default_export`
    writes them or as a task's own export does; empty when it is absent): ``"key: old -> new"``
    lines, nested keys dotted (``model_args.hidden``)."""
    meta_path = Path(source).with_suffix(".json")
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(meta, dict):
        return []
    old = _flatten({k: meta.get(k) for k in task_config})
    new = _flatten(json.loads(json.dumps(task_config, default=str)))  # as JSON keeps it
    return [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in sorted(set(old) | set(new))
            if old.get(k) != new.get(k)]


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one level, with dotted keys."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def follow_cosine(scheduler: Any, optimizer: torch.optim.Optimizer, steps: int) -> None:
    """After a restore, make a ``cosine`` schedule (``CosineAnnealingLR``) the curve of this
    run's ``steps``: the checkpoint holds the ``T_max`` of the run that wrote it, which a run
    resumed with more steps would follow past its end (the rate climbing back to its peak). The
    rate is set on the new curve at the current step; the schedule goes on from there."""
    if not isinstance(scheduler, torch.optim.lr_scheduler.CosineAnnealingLR):
        return
    t_max = max(1, steps)
    if scheduler.T_max == t_max:
        return
    scheduler.T_max = t_max
    k, low = scheduler.last_epoch, scheduler.eta_min
    for group, base in zip(optimizer.param_groups, scheduler.base_lrs, strict=True):
        group["lr"] = low + (base - low) * 0.5 * (1 + math.cos(math.pi * k / t_max))
    scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]


_SETTING_NAMES = {"initial_lr": "lr", "step_size": "scheduler_step_size",
                  "gamma": "scheduler_gamma"}


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (RuntimeError, TypeError, ValueError):  # tensors of several values
        return repr(a) == repr(b)


def settings_kept(optimizer: torch.optim.Optimizer, scheduler: Any) -> Callable[[Any], list[str]]:
    """A ``ready_fn`` that refuses to resume a checkpoint trained with other optimizer or
    schedule settings (``lr``, ``weight_decay``, ``momentum``, ...): a restore replaces them
    with the checkpoint's, which would silently ignore the config's. Call it before the
    restore: it remembers this run's values."""
    groups = [{k: v for k, v in g.items() if k != "params"} for g in optimizer.param_groups]
    sched = {k: v for k, v in (scheduler.state_dict().items() if scheduler is not None else ())
             if k in ("step_size", "gamma")}

    def ready_fn(session: Any) -> list[str]:
        pairs = [(k, v, group.get(k))
                 for want, group in zip(groups, optimizer.param_groups, strict=False)
                 for k, v in want.items() if not (k == "lr" and scheduler is not None)]
        if scheduler is not None:
            now = scheduler.state_dict()
            pairs += [(k, v, now.get(k)) for k, v in sched.items()]
        return sorted({f"[train] {_SETTING_NAMES.get(k, k)} = {mine!r}, but the checkpoint was "
                       f"trained with {saved!r} (a resumed run keeps its settings: use the "
                       "checkpoint's, or warm-start a new logdir from it)"
                       for k, mine, saved in pairs if not _same(mine, saved)})

    return ready_fn


def check_resume_world_size(logdir: str | os.PathLike[str], world_size: int) -> None:
    """Before workers are launched: an InputError when ``logdir``'s checkpoint was written by
    another number of processes (the data position is per process), or none can be read."""
    store = CheckpointStore(logdir)
    if not Path(logdir).is_dir() or not store.restore_order():
        return
    ckpt = store.load_latest()
    if ckpt is None:
        raise unreadable_checkpoints(store)
    data = ckpt.state.get("data")
    saved = data.get("world_size") if isinstance(data, dict) else None
    if isinstance(saved, int) and saved != world_size:
        raise InputError(f"checkpoint {ckpt.info.name} was written by a run of {saved} "
                         f"process(es), not {world_size}: resume it with --nproc {saved}",
                         path=logdir)


def _snapshot_path(logdir: str | os.PathLike[str], step: int) -> Path:
    return Path(logdir) / AVERAGE_DIR / f"model-{step:08d}.safetensors"


def save_snapshot(model: torch.nn.Module, logdir: str | os.PathLike[str], step: int) -> None:
    """The model's tensors after ``step`` (for :func:`export_average`), written atomically."""
    import safetensors.torch

    tensors = {k: v.detach().cpu().contiguous() for k, v in unwrap(model).state_dict().items()}
    path = _snapshot_path(logdir, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, safetensors.torch.save(tensors))


def average_snapshots(logdir: str | os.PathLike[str], steps: list[int]
                      ) -> dict[str, torch.Tensor]:
    """The element-wise mean (computed in float64) of the snapshots at ``steps``; tensors that
    are not floating point are taken from the first snapshot."""
    import safetensors.torch

    missing = [k for k in steps if not _snapshot_path(logdir, k).is_file()]
    if missing:
        raise FileNotFoundError(f"{logdir}: no weight snapshot of step(s) {missing}")
    snaps = [safetensors.torch.load_file(str(_snapshot_path(logdir, k))) for k in steps]
    out: dict[str, torch.Tensor] = {}
    for name, first in snaps[0].items():
        if first.is_floating_point():
            mean = sum(s[name].double() for s in snaps) / len(snaps)
            out[name] = mean.to(first.dtype)
        else:
            out[name] = first
    return out


def export_average(config: TrainConfig, task: TrainTask, model: torch.nn.Module,
                   logdir: str | os.PathLike[str]) -> Path:
    """Export the mean of the ``[average]`` steps' weights as ``<logdir>/export/<name>`` (the
    task's ``export``), with the task's evaluation of it in the record; returns the stem."""
    assert config.average is not None
    steps = sorted(config.average.steps)
    private = copy.deepcopy(unwrap(model)).cpu()
    private.load_state_dict(average_snapshots(logdir, steps), strict=True)
    private.eval()
    metrics: dict[str, float | None] = {}
    if task.evaluate is not None:
        with torch.no_grad():
            metrics = {k: (float(v) if float(v) == float(v) else None)
                       for k, v in task.evaluate(private).items()}
    extra = {"step": steps[-1], "averaged_steps": steps, "eval": metrics,
             "run": run_provenance(config)}
    stem = Path(logdir) / EXPORT_DIR / config.average.name
    stem.parent.mkdir(parents=True, exist_ok=True)
    if task.export is not None:
        task.export(private, stem, extra)
    else:
        default_export(private, stem, {**task.config, **extra})
    return stem


def make_evaluator(config: TrainConfig, task: TrainTask, model: torch.nn.Module,
                   logdir: str | os.PathLike[str] | None) -> ContinuousEvaluator | None:
    """The chief's evaluator when the config has an ``[eval]`` table (None otherwise, and on
    other ranks); raises InputError when the task cannot be evaluated."""
    if config.eval is None:
        return None
    if task.evaluate is None:
        raise InputError(f"[eval] given, but model {config.model!r} provides no evaluate "
                         "function (no evaluation data?)", path=config.path)
    if logdir is None or not distributed.is_chief():
        return None
    private = copy.deepcopy(unwrap(model)).cpu()
    return ContinuousEvaluator(logdir, private, task.evaluate, config.eval, export=task.export,
                               config=task.config, provenance=run_provenance(config))


def train_from_config(
    config: TrainConfig,
    logdir: str | os.PathLike[str] | None,
    *,
    steps: int | None = None,
    on_step: Callable[[int, float], None] | None = None,
    report: str | os.PathLike[str] | None = None,
    echo: Callable[[str], None] | None = print,
) -> RunReport:
    """Train ``config`` until ``train.steps`` (or ``steps``) with checkpoints in ``logdir``.

    ``on_step(global_step, loss)`` runs after every step (tests use it to inject faults).
    """
    if steps is not None and steps < 0:
        raise InputError(f"steps = {steps} must be >= 0")
    if logdir is not None and (str(logdir) == "" or Path(logdir).is_file()):
        raise InputError("the logdir must be a directory (it is empty or a file)",
                         path=str(logdir) or None)
    config = config.with_steps(steps)
    s = config.train
    started = time.monotonic()
    owns_group = not distributed.is_initialized() and distributed.init_from_env()
    evaluator: ContinuousEvaluator | None = None
    net: Any = None
    finished = False
    try:
        seed_everything(config.seed)
        task = build_task(config)
        device = distributed.device()
        model = task.model.to(device)
        opt = make_optimizer(parameter_groups(model, s), s)
        sched = make_scheduler(opt, s)
        loader = ResumableLoader(task.train_dataset, s.batch_size, seed=config.seed,
                                 shuffle=task.shuffle,
                                 num_workers=s.num_workers, prefetch=s.prefetch,
                                 collate_fn=task.collate_fn)
        if loader.batches_per_epoch() == 0:  # the loop would wait for a batch forever
            raise InputError(f"the training data ({len(task.train_dataset)} items) make no "  # type: ignore[arg-type]
                             f"batch of [train] batch_size = {s.batch_size} on this rank",
                             path=config.path)
        net = distributed.wrap_ddp(model)
        chief = distributed.is_chief()
        sv = Supervisor(
            logdir, model=model, optimizer=opt, scheduler=sched, data=loader,
            save_model_secs=s.save_model_secs, save_model_steps=s.save_model_steps,
            save_summaries_secs=s.save_summaries_secs, keep_max=s.keep_max,
            async_save=s.async_save, stop_signals=(signal.SIGTERM, signal.SIGINT),
            init_fn=None if config.warm_start is None else warm_start_init(config.warm_start),
            ready_fn=settings_kept(opt, sched),
        )
        average_steps = set() if config.average is None else set(config.average.steps)
        if s.prefetch:
            sv.add_pipeline(loader)
        evaluator = make_evaluator(config, task, model, logdir)
        if evaluator is not None:
            assert config.eval is not None
            sv.add_service(LoopingService("eval", sv.coord, config.eval.throttle_secs,
                                          evaluator.poll))
        say = echo if (echo is not None and chief) else (lambda _msg: None)
        loss_value: float | None = None
        with sv.managed_session() as session:
            restored = sv.restored_from
            if restored is not None:
                follow_cosine(sched, opt, s.steps)
            first = session.global_step
            loop_started = time.monotonic()
            say(f"{'restored from ' + restored.name if restored else 'initialised'}; "
                f"global step {first}; world size {distributed.world_size()}")
            if sv.prepared is not None and isinstance(sv.prepared.init_result, WarmStartReport):
                say(f"warm start from {sv.prepared.init_result.source}: restored "
                    f"{len(sv.prepared.init_result.restored)} tensors")
                assert config.warm_start is not None
                for change in config_changes(config.warm_start.source, task.config):
                    say(f"  model config differs from the source's: {change}")
            for batch in loader:
                if sv.should_stop() or session.global_step >= s.steps:
                    break
                if device.type != "cpu":
                    batch = [t.to(device, non_blocking=True) for t in batch]
                with session.step():
                    loss = task.loss_fn(net, batch)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    if s.clip_grad_norm > 0:
                        torch.nn.utils.clip_grad_norm_(model.parameters(), s.clip_grad_norm)
                    opt.step()
                    if sched is not None:
                        sched.step()
                loss_value = to_float(loss)
                session.record(loss=loss_value)
                step = session.global_step
                if s.log_every_steps and step % s.log_every_steps == 0:
                    say(f"step {step} loss {loss_value:.6f}")
                if chief and logdir is not None and step in average_steps:
                    save_snapshot(model, logdir, step)
                if on_step is not None:
                    on_step(step, loss_value)
            final = session.global_step
            train_seconds = time.monotonic() - loop_started
        if (config.average is not None and chief and logdir is not None
                and final >= s.steps and sv.stopped_by_signal is None):
            stem = export_average(config, task, model, logdir)
            say(f"exported the mean of steps {sorted(config.average.steps)} as {stem}")
        best: float | None = None
        if evaluator is not None:
            if config.eval is not None and config.eval.final and evaluator.poll() is not None:
                say(f"evaluated the final checkpoint: {evaluator.records()[-1]['metrics']}")
            best = evaluator.best_value()
        result = RunReport(
            rank=distributed.rank(), world_size=distributed.world_size(),
            restart=distributed.restart_count(),
            restored_step=None if restored is None else restored.step, final_step=final,
            steps_run=final - first, samples_seen=loader.samples_seen,
            seconds=time.monotonic() - started, train_seconds=train_seconds,
            final_loss=loss_value,
            param_sha256=parameter_digest(model),
            evaluations=0 if evaluator is None else len(evaluator.records()),
            best=best, stopped_by_signal=sv.stopped_by_signal,
        )
        if sv.stopped_by_signal is not None:
            say(f"stopped by {signal.Signals(sv.stopped_by_signal).name} at global step {final}")
        say(f"done: global step {final} ({result.steps_run} steps in {result.seconds:.1f}s)")
        if report is not None:
            path = Path(f"{report}.rank{result.rank}.json")
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, json.dumps(asdict(result), indent=1).encode())
        finished = True
        return result
    finally:
        if evaluator is not None:
            evaluator.close()
        if owns_group:
            # DDP holds the process group and its work; free it (its hooks form cycles) while
            # the interpreter is whole, not at exit, where gloo's threads can abort the process
            net = None
            gc.collect()
            distributed.shutdown(barrier=finished)


def build_parser() -> argparse.ArgumentParser:
    """Arguments of ``python -m homalign.train.launch``."""
    p = argparse.ArgumentParser(prog="python -m homalign.train.launch",
                                description="Train a registered model config (one worker).")
    p.add_argument("--config", required=True, help="TOML config naming a registered model")
    p.add_argument("--logdir", required=True, help="checkpoints and event files go here")
    p.add_argument("--steps", type=int, default=None, help="override [train] steps")
    p.add_argument("--report", default=None, help="write PREFIX.rank<r>.json per rank")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value (dotted key, TOML value); repeatable")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of a worker."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if "HOMALIGN_TORCH_THREADS" in os.environ:
        torch.set_num_threads(int(os.environ["HOMALIGN_TORCH_THREADS"]))
    config = load_config(args.config, args.overrides)
    train_from_config(config, args.logdir, steps=args.steps, report=args.report,
                      echo=lambda m: print(m, flush=True))
    return 0


def _entry(argv: Any = None) -> None:
    sys.exit(main(argv))


if __name__ == "__main__":
    _entry()
