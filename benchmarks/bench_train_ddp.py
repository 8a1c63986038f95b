"""Data-parallel throughput: 1 process against 2 gloo DDP processes (torchrun) on this machine.

Both runs train the same config for the same number of steps with the same per-rank batch size;
samples/s counts every rank's samples over the training loop's wall time (start-up excluded). It
also checks that the two ranks end with bitwise identical parameters.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_train_ddp.py --steps 300
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CONFIG = """
model = "toy-regression"
seed = 0
[model_args]
in_features = 32
hidden = {hidden}
layers = 2
n_samples = 8192
[train]
steps = {steps}
batch_size = {batch}
optimizer = "adam"
lr = 0.001
save_model_secs = 600.0
save_summaries_secs = 5.0
log_every_steps = 0
"""


def run(cmd: list[str], env: dict[str, str]) -> None:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")


def reports(prefix: Path, n: int) -> list[dict[str, Any]]:
    return [json.loads(Path(f"{prefix}.rank{r}.json").read_text()) for r in range(n)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--batch", type=int, default=64, help="per rank")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_ddp_"))
    config = work / "ddp.toml"
    config.write_text(CONFIG.format(hidden=args.hidden, steps=args.steps, batch=args.batch))
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE",
               HOMALIGN_TORCH_THREADS="1", TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1")
    launch = ["-m", "homalign.train.launch", "--config", str(config)]
    run([sys.executable, *launch, "--logdir", str(work / "one"), "--report", str(work / "one")],
        env)
    run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
         f"--log-dir={work / 'torchrun'}", *launch, "--logdir", str(work / "two"), "--report", str(work / "two")], env)
    one = reports(work / "one", 1)[0]
    two = reports(work / "two", 2)
    sps1 = one["samples_seen"] / one["train_seconds"]
    sps2 = sum(r["samples_seen"] for r in two) / max(r["train_seconds"] for r in two)
    result = {
        "steps": args.steps,
        "batch_per_rank": args.batch,
        "one_process_samples_per_s": round(sps1, 1),
        "two_process_samples_per_s": round(sps2, 1),
        "speedup": round(sps2 / sps1, 3),
        "one_process_train_s": round(one["train_seconds"], 2),
        "two_process_train_s": round(max(r["train_seconds"] for r in two), 2),
        "ranks_identical": two[0]["param_sha256"] == two[1]["param_sha256"],
        "rank_digests": [r["param_sha256"][:16] for r in two],
        "final_steps": [one["final_step"]] + [r["final_step"] for r in two],
        "workdir": str(work),
    }
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    if not result["ranks_identical"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
