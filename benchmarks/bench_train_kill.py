"""Kill test and determinism: SIGKILL a training subprocess at random moments, N times in a row.

For each kill the harness checks, before restarting:

* the checkpoint the ``checkpoint`` file selects loads and matches its content hash (it is the
  newest complete checkpoint), and so does every other kept one — nothing half-written is listed;
* the restarted process restores exactly that checkpoint ("restored from ..." line);
* lost work = last step the killed process reported - restored step (<= one interval expected).

After the last kill the run is resumed to a final step F, and an uninterrupted run from scratch to F
is made with the same config: their parameters must be bitwise equal (sha256 of all tensors).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_train_kill.py --kills 30 --sync
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_train_kill.py --kills 30

``--sync`` writes step checkpoints in the training thread (``async_save = false``); without it the
checkpoint thread writes them while training continues (the default).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from homalign.train.checkpoint import CheckpointStore, CorruptCheckpointError

CONFIG = """
model = "toy-regression"
seed = 7
[model_args]
in_features = 32
hidden = {hidden}
layers = 3
dropout = 0.1
n_samples = 2048
[train]
steps = 100000
batch_size = 32
optimizer = "adam"
lr = 0.001
scheduler = "step"
scheduler_step_size = 100
scheduler_gamma = 0.9
save_model_secs = 600.0
save_model_steps = {every}
save_summaries_secs = 0.5
keep_max = 3
async_save = {async_save}
log_every_steps = 1
"""

STEP_RE = re.compile(r"^step (\d+) loss")
START_RE = re.compile(r"^(?:restored from model\.ckpt-(\d+)|initialised); global step (\d+)")
REPORT_RE = re.compile(r"^done: global step (\d+)")


class Worker:
    """A training subprocess whose stdout is parsed by a reader thread."""

    def __init__(self, config: Path, logdir: Path, steps: int | None = None,
                 report: Path | None = None) -> None:
        cmd = [sys.executable, "-m", "homalign.train.launch", "--config", str(config),
               "--logdir", str(logdir)]
        if steps is not None:
            cmd += ["--steps", str(steps)]
        if report is not None:
            cmd += ["--report", str(report)]
        env = dict(os.environ, HOMALIGN_TORCH_THREADS="1", OMP_NUM_THREADS="1",
                   OMP_WAIT_POLICY="PASSIVE", PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env)
        self.started = threading.Event()
        self.restored: int | None = None
        self.start_step: int | None = None
        self.last_step: int | None = None
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.lines.append(line)
            m = STEP_RE.match(line)
            if m:
                self.last_step = int(m.group(1))
                continue
            m = START_RE.match(line)
            if m:
                self.restored = None if m.group(1) is None else int(m.group(1))
                self.start_step = int(m.group(2))
                self.started.set()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.reader.join(timeout=10)

    def wait(self, timeout: float) -> int:
        rc = self.proc.wait(timeout=timeout)
        self.reader.join(timeout=10)
        return rc


def inspect(logdir: Path) -> dict[str, Any]:
    """The newest complete checkpoint per the metadata, and whether every kept one verifies."""
    store = CheckpointStore(logdir)
    selected = store.selected()
    out: dict[str, Any] = {"selected": None, "kept_ok": True, "tmp_files": 0, "problems": []}
    out["tmp_files"] = len(list(logdir.glob(".*.tmp")))
    if selected is None:
        return out
    try:
        out["selected"] = store.load(selected).info.step
    except CorruptCheckpointError as exc:
        out["problems"].append(str(exc))
    for info in store.kept():
        try:
            store.load(info)
        except CorruptCheckpointError as exc:
            out["kept_ok"] = False
            out["problems"].append(str(exc))
    return out


def digest_of(report_prefix: Path) -> dict[str, Any]:
    return json.loads(Path(f"{report_prefix}.rank0.json").read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=30)
    p.add_argument("--every", type=int, default=25, help="checkpoint every N steps")
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--min-delay", type=float, default=0.2)
    p.add_argument("--max-delay", type=float, default=4.0)
    p.add_argument("--extra-steps", type=int, default=100, help="steps after the last kill")
    p.add_argument("--sync", action="store_true", help="async_save = false")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default=None)
    p.add_argument("--workdir", default=None, help="keep the runs here (default: temp dir)")
    args = p.parse_args()
    rng = random.Random(args.seed)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench_kill_"))
    work.mkdir(parents=True, exist_ok=True)
    config = work / "kill.toml"
    config.write_text(CONFIG.format(hidden=args.hidden, every=args.every,
                                    async_save="false" if args.sync else "true"))
    logdir = work / "killed"
    records: list[dict[str, Any]] = []
    failures: list[str] = []
    expected: int | None = None
    t_start = time.monotonic()
    for k in range(args.kills):
        w = Worker(config, logdir)
        if not w.started.wait(timeout=300):
            w.kill()
            failures.append(f"kill {k}: worker did not start: {w.lines[-5:]}")
            break
        if w.restored != expected:
            failures.append(f"kill {k}: restored {w.restored}, newest complete was {expected}")
        delay = rng.uniform(args.min_delay, args.max_delay)
        time.sleep(delay)
        if w.proc.poll() is not None:
            failures.append(f"kill {k}: worker exited early: {w.lines[-5:]}")
            break
        w.kill()
        state = inspect(logdir)
        if state["problems"] or not state["kept_ok"]:
            failures.append(f"kill {k}: bad checkpoint listed: {state['problems']}")
        last = w.last_step if w.last_step is not None else w.start_step
        sel = state["selected"]
        lost = None if last is None else max(0, last - (sel or 0))  # no checkpoint: from 0
        records.append({"kill": k, "delay_s": round(delay, 3), "restored": w.restored,
                        "start_step": w.start_step, "last_reported_step": last,
                        "newest_complete": sel, "lost_steps": lost,
                        "tmp_files_left": state["tmp_files"]})
        print(json.dumps(records[-1]), flush=True)
        expected = sel
    # resume to the end, then an uninterrupted reference run to the same step
    final_step = (expected or 0) + args.extra_steps
    w = Worker(config, logdir, steps=final_step, report=work / "resumed")
    rc = w.wait(timeout=1800)
    if rc != 0 or w.restored != expected:
        failures.append(f"final resume: rc={rc}, restored {w.restored}, expected {expected}")
    ref = Worker(config, work / "reference", steps=final_step, report=work / "reference")
    rc_ref = ref.wait(timeout=3600)
    if rc_ref != 0:
        failures.append(f"reference run failed: {ref.lines[-5:]}")
    resumed, reference = digest_of(work / "resumed"), digest_of(work / "reference")
    bitwise = resumed["param_sha256"] == reference["param_sha256"]
    if not bitwise:
        failures.append("resumed parameters differ from the uninterrupted run")
    lost = [r["lost_steps"] for r in records if r["lost_steps"] is not None]
    n_events = len(list(logdir.glob("events.out.tfevents.*")))
    summary = {
        "mode": "sync" if args.sync else "async",
        "kills": len(records),
        "checkpoint_every_steps": args.every,
        "restored_newest_complete_every_time": not any("restored" in f for f in failures),
        "half_written_checkpoint_listed": any("bad checkpoint" in f for f in failures),
        "kills_that_left_temp_files": sum(1 for r in records if r["tmp_files_left"]),
        "lost_steps_max": max(lost) if lost else None,
        "lost_steps_mean": sum(lost) / len(lost) if lost else None,
        "lost_within_one_interval": sum(1 for x in lost if x <= args.every),
        "final_step": final_step,
        "bitwise_equal_to_uninterrupted": bitwise,
        "event_files": n_events,
        "failures": failures,
        "wall_s": round(time.monotonic() - t_start, 1),
        "workdir": str(work),
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "kills": records}, indent=1))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
