"""Run a registered model config through the Supervisor, in one process or under torchrun.

``python -m homalign.train.launch --config configs/toy.toml --logdir runs/toy [--steps N]``
trains in this process; under ``torchrun --standalone --nproc-per-node N -m homalign.train.launch
...`` every worker joins the process group (gloo on CPU, nccl on GPU), wraps the model in
DistributedDataParallel and reads its own shard of the data; rank 0 writes checkpoints and
summaries, every rank restores the same checkpoint, so ``torchrun --max-restarts`` resumes a run
whose worker was killed.

With an ``[eval]`` table in the config (and a task that provides ``evaluate``), rank 0 also
evaluates new checkpoints every ``throttle_secs`` in a service thread and the final checkpoint at
the end, and exports the best model (:mod:`homalign.train.evaluation`).

Each rank can write a JSON report (``--report PREFIX`` -> ``PREFIX.rank<r>.json``) with the final
step, the restored step, samples seen and a sha256 of its parameters.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from homalign.errors import InputError
from homalign.io.atomic import atomic_write_bytes
from homalign.train import distributed
from homalign.train.config import (
    TrainConfig,
    build_task,
    load_config,
    make_optimizer,
    make_scheduler,
)
from homalign.train.data import ResumableLoader
from homalign.train.evaluation import ContinuousEvaluator
from homalign.train.services import LoopingService
from homalign.train.session_manager import seed_everything
from homalign.train.state import unwrap
from homalign.train.summary import to_float
from homalign.train.supervisor import Supervisor
from homalign.train.task import TrainTask

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


def parameter_digest(model: torch.nn.Module) -> str:
    """sha256 over the model's tensors (names, dtypes, shapes and bytes), to compare ranks/runs."""
    h = hashlib.sha256()
    for name, t in sorted(unwrap(model).state_dict().items()):
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


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
                               config=task.config)


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
    config = config.with_steps(steps)
    s = config.train
    started = time.monotonic()
    owns_group = not distributed.is_initialized() and distributed.init_from_env()
    evaluator: ContinuousEvaluator | None = None
    try:
        seed_everything(config.seed)
        task = build_task(config)
        device = distributed.device()
        model = task.model.to(device)
        opt = make_optimizer(model.parameters(), s)
        sched = make_scheduler(opt, s)
        loader = ResumableLoader(task.train_dataset, s.batch_size, seed=config.seed,
                                 num_workers=s.num_workers, prefetch=s.prefetch)
        net = distributed.wrap_ddp(model)
        chief = distributed.is_chief()
        sv = Supervisor(
            logdir, model=model, optimizer=opt, scheduler=sched, data=loader,
            save_model_secs=s.save_model_secs, save_model_steps=s.save_model_steps,
            save_summaries_secs=s.save_summaries_secs, keep_max=s.keep_max,
            async_save=s.async_save, stop_signals=(signal.SIGTERM, signal.SIGINT),
        )
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
            first = session.global_step
            loop_started = time.monotonic()
            say(f"{'restored from ' + restored.name if restored else 'initialised'}; "
                f"global step {first}; world size {distributed.world_size()}")
            for batch in loader:
                if sv.should_stop() or session.global_step >= s.steps:
                    break
                if device.type != "cpu":
                    batch = [t.to(device, non_blocking=True) for t in batch]
                with session.step():
                    loss = task.loss_fn(net, batch)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    if sched is not None:
                        sched.step()
                loss_value = to_float(loss)
                session.record(loss=loss_value)
                step = session.global_step
                if s.log_every_steps and step % s.log_every_steps == 0:
                    say(f"step {step} loss {loss_value:.6f}")
                if on_step is not None:
                    on_step(step, loss_value)
            final = session.global_step
            train_seconds = time.monotonic() - loop_started
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
            best=best,
        )
        if sv.stopped_by_signal is not None:
            say(f"stopped by {signal.Signals(sv.stopped_by_signal).name} at global step {final}")
        say(f"done: global step {final} ({result.steps_run} steps in {result.seconds:.1f}s)")
        if report is not None:
            path = Path(f"{report}.rank{result.rank}.json")
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, json.dumps(asdict(result), indent=1).encode())
        return result
    finally:
        if evaluator is not None:
            evaluator.close()
        if owns_group:
            distributed.shutdown()


def build_parser() -> argparse.ArgumentParser:
    """Arguments of ``python -m homalign.train.launch``."""
    p = argparse.ArgumentParser(prog="python -m homalign.train.launch",
                                description="Train a registered model config (one worker).")
    p.add_argument("--config", required=True, help="TOML config naming a registered model")
    p.add_argument("--logdir", required=True, help="checkpoints and event files go here")
    p.add_argument("--steps", type=int, default=None, help="override [train] steps")
    p.add_argument("--report", default=None, help="write PREFIX.rank<r>.json per rank")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of a worker."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if "HOMALIGN_TORCH_THREADS" in os.environ:
        torch.set_num_threads(int(os.environ["HOMALIGN_TORCH_THREADS"]))
    config = load_config(args.config)
    train_from_config(config, args.logdir, steps=args.steps, report=args.report,
                      echo=lambda m: print(m, flush=True))
    return 0


def _entry(argv: Any = None) -> None:
    sys.exit(main(argv))


if __name__ == "__main__":
    _entry()
