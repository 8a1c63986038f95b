"""torch.distributed helpers: process-group setup from torchrun's environment, rank queries,
DDP wrapping, and the few collectives the runtime needs (agreeing on a checkpoint, on stopping).

Launch with ``torchrun --standalone --nproc-per-node N -m homalign.train.launch ...``; the backend is
gloo on CPU and nccl when CUDA is available. Rank 0 is the *chief*: it alone writes checkpoints and
summaries. None of these helpers pickles anything.
"""

from __future__ import annotations

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn


def is_initialized() -> bool:
    """Whether a default process group exists."""
    return dist.is_available() and dist.is_initialized()


def rank() -> int:
    """This process's rank (0 without a process group)."""
    return dist.get_rank() if is_initialized() else 0


def world_size() -> int:
    """Number of processes (1 without a process group)."""
    return dist.get_world_size() if is_initialized() else 1


def is_chief() -> bool:
    """Whether this process writes checkpoints and summaries (rank 0)."""
    return rank() == 0


def launched_by_torchrun() -> bool:
    """Whether torchrun's environment variables are set."""
    return "WORLD_SIZE" in os.environ and "RANK" in os.environ and "MASTER_ADDR" in os.environ


def restart_count() -> int:
    """How many times torchrun has restarted the workers (``--max-restarts``), 0 otherwise."""
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))


def init_from_env(backend: str | None = None, timeout_secs: float = 300.0) -> bool:
    """Create the process group when run under torchrun; returns whether one exists now."""
    if is_initialized():
        return True
    if not launched_by_torchrun() or int(os.environ["WORLD_SIZE"]) <= 1:
        return False
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend=backend, timeout=timedelta(seconds=timeout_secs))
    return True


def shutdown(barrier: bool = False) -> None:
    """Destroy the process group if one exists; with ``barrier``, once every rank has come
    here (a rank that closes its connections while a peer still finishes its own teardown can
    abort that peer). Not after a failure: the peers may never come."""
    if is_initialized():
        if barrier:
            dist.barrier()
        dist.destroy_process_group()


def device() -> torch.device:
    """The device this rank computes on (its local GPU, else CPU)."""
    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


def wrap_ddp(model: nn.Module) -> nn.Module:
    """Wrap ``model`` in DistributedDataParallel when a process group exists (broadcasts rank 0's
    parameters to every rank)."""
    if not is_initialized() or world_size() == 1:
        return model
    if torch.cuda.is_available():
        dev = device()
        return nn.parallel.DistributedDataParallel(model, device_ids=[dev.index])
    return nn.parallel.DistributedDataParallel(model)


def _collective_device() -> torch.device:
    return device() if dist.get_backend() == "nccl" else torch.device("cpu")


def broadcast_int(value: int, src: int = 0) -> int:
    """Every rank gets ``src``'s ``value``."""
    if not is_initialized():
        return value
    t = torch.tensor([value], dtype=torch.int64, device=_collective_device())
    dist.broadcast(t, src=src)
    return int(t.item())


def any_rank(flag: bool) -> bool:
    """True on every rank if ``flag`` is true on any rank (one all-reduce)."""
    if not is_initialized() or world_size() == 1:
        return flag
    t = torch.tensor([1 if flag else 0], dtype=torch.int32, device=_collective_device())
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


def barrier() -> None:
    """Wait for every rank (no-op without a process group)."""
    if is_initialized() and world_size() > 1:
        dist.barrier()
