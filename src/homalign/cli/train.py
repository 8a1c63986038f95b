"""``homalign train``: run a registered model config through the training runtime.

``homalign train --config FILE --logdir DIR [--nproc N] [-j THREADS] [--steps N] [--max-restarts K]
[--set KEY=VALUE ...]``

With ``--nproc 1`` (default) training runs in this process; with ``N > 1`` it launches
``python -m torch.distributed.run --standalone --nproc-per-node N -m homalign.train.launch``
(DistributedDataParallel, gloo on CPU / nccl on GPU), with torchrun's per-worker log directories
in a temporary directory removed when it ends. Rerunning the same command resumes from the
newest checkpoint in ``DIR``. SIGTERM or Ctrl-C stops every worker after its current step (final
checkpoint written); the exit status is then 128 + the signal's number.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from typing import Any

from homalign.cli import _common


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``train`` sub-command."""
    p = subparsers.add_parser(
        "train",
        help="train a registered model config (resumes from DIR's newest checkpoint)",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument("--config", required=True, metavar="FILE", help="TOML training config")
    p.add_argument("--logdir", required=True, metavar="DIR",
                   help="checkpoints and TensorBoard event files")
    p.add_argument("--nproc", type=int, default=1, metavar="N",
                   help="data-parallel worker processes (torchrun) [1]")
    _common.add_threads(p, "threads of torch (model and batch preparation; the DataLoader's "
                           "worker processes stay [train] num_workers), shared out over the "
                           "--nproc processes")
    p.add_argument("--steps", type=int, default=None, metavar="N",
                   help="train until global step N (overrides [train] steps)")
    p.add_argument("--max-restarts", type=int, default=0, metavar="K",
                   help="with --nproc > 1: let torchrun restart failed workers K times [0]")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value: dotted key, TOML value (e.g. train.steps=10, "
                        "warm_start.source=runs/a/export/best.safetensors); repeatable")
    return p


def torchrun_command(args: argparse.Namespace, log_dir: str) -> list[str]:
    """The torchrun command line for ``--nproc N > 1``; ``log_dir``: torchrun's own log
    directory (without one it makes a ``torchelastic_*`` directory in the system's temporary
    directory and leaves it there)."""
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone",
        f"--nproc-per-node={args.nproc}", f"--max-restarts={args.max_restarts}",
        f"--log-dir={log_dir}",
        "-m", "homalign.train.launch", "--config", str(args.config), "--logdir", str(args.logdir),
    ]
    if args.steps is not None:
        cmd += ["--steps", str(args.steps)]
    for item in getattr(args, "overrides", []):
        cmd += ["--set", item]
    return cmd


def run(args: argparse.Namespace) -> int:
    """Train; returns the exit status."""
    from homalign.train.config import load_config

    config = load_config(args.config, args.overrides)  # validate before launching anything
    if args.nproc < 1:
        raise ValueError("--nproc must be at least 1")
    threads = _common.threads(args)
    if args.nproc == 1:
        from homalign.threads import set_threads
        from homalign.train.launch import train_from_config

        set_threads(threads)
        report = train_from_config(config, args.logdir, steps=args.steps,
                                   echo=lambda m: print(m, flush=True))
        # stopped early by a signal (its final checkpoint written): say so to the caller, as
        # a shell does for a command a signal ended
        return 0 if report.stopped_by_signal is None else 128 + report.stopped_by_signal
    from homalign.train.launch import check_resume_world_size

    check_resume_world_size(args.logdir, args.nproc)  # one line, not every worker's traceback
    # torchrun shares its rendezvous TCP store with the workers by default; after a restart a
    # worker can then read a dead peer's address (pytorch/pytorch#135712). Give each its own.
    env = dict(os.environ)
    env.setdefault("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1")
    per_rank = str(max(1, threads // args.nproc))
    env["HOMALIGN_TORCH_THREADS"] = per_rank  # read by homalign.train.launch
    env["OMP_NUM_THREADS"] = per_rank
    with tempfile.TemporaryDirectory(prefix="homalign-torchrun-") as log_dir:
        # its own session: a Ctrl-C at the terminal reaches torchrun once, from us, not twice
        proc = subprocess.Popen(torchrun_command(args, log_dir), env=env, start_new_session=True)
        try:
            return proc.wait()
        except BaseException as stop:  # Terminated (SIGTERM/SIGHUP), KeyboardInterrupt (SIGINT)
            stop_torchrun(proc, signal.SIGINT if isinstance(stop, KeyboardInterrupt)
                          else signal.SIGTERM)
            raise  # homalign's main turns it into 128 + the signal's number


STOP_GRACE_SECS = 90.0
"""How long a stopped torchrun may take: it forwards the signal to its workers (each ends
after its current step and writes its final checkpoint) and kills those left after 30 s."""


def stop_torchrun(proc: subprocess.Popen[bytes], signum: int, grace_secs: float = STOP_GRACE_SECS
                  ) -> None:
    """Stop a torchrun and its workers gracefully: send it ``signum`` (it forwards the signal
    to the workers, which are in sessions of their own and get nothing from the terminal or a
    kill of ours) and wait; after ``grace_secs``, or on a second signal, kill its process group."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signum)
    try:
        proc.wait(timeout=grace_secs)
    except BaseException:  # the grace ran out, or another signal: stop waiting
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
