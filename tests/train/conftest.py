"""Training-runtime tests run on one thread with tiny models and short intervals."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

torch.set_num_threads(1)
