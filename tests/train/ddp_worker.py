"""A torchrun worker for the distributed tests: trains a config, optionally kills itself once.

    torchrun ... tests/train/ddp_worker.py CONFIG LOGDIR REPORT_PREFIX [KILL_RANK KILL_AT_STEP]

On the first attempt (TORCHELASTIC_RESTART_COUNT == 0) rank KILL_RANK sends itself SIGKILL right
after step KILL_AT_STEP; torchrun --max-restarts then restarts all workers, which must resume.
"""

from __future__ import annotations

import os
import signal
import sys

import torch

from homalign.train import distributed
from homalign.train.config import load_config
from homalign.train.launch import train_from_config


def main(argv: list[str]) -> int:
    torch.set_num_threads(1)
    config, logdir, report = argv[:3]
    kill_rank, kill_at = (int(argv[3]), int(argv[4])) if len(argv) > 3 else (-1, -1)

    def on_step(step: int, loss: float) -> None:
        if distributed.restart_count() == 0 and distributed.rank() == kill_rank and step == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    train_from_config(load_config(config), logdir, on_step=on_step, report=report, echo=None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
