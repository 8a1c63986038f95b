"""What a checkpoint holds: model, optimizer, LR scheduler, data position, RNG states, global step.

:class:`TrainState` turns the live objects into a :class:`Snapshot` (detached CPU copies, taken at
a step boundary) and restores a verified checkpoint into them. Restoring reports, instead of
raising, what does not fit (missing or unexpected parameters, shape mismatches): these become the
"not ready" list of the session.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn

from homalign.train import codec

MODEL_PREFIX = "model/"


@runtime_checkable
class Stateful(Protocol):
    """Anything with ``state_dict()`` and ``load_state_dict(state)`` (schedulers, data loaders)."""

    def state_dict(self) -> Mapping[str, Any]: ...

    def load_state_dict(self, state: Mapping[str, Any]) -> Any: ...


class GlobalStep:
    """A thread-safe training step counter."""

    def __init__(self, value: int = 0) -> None:
        self._value = int(value)
        self._lock = threading.Lock()

    @property
    def value(self) -> int:
        """The current step."""
        return self._value

    def set(self, value: int) -> None:
        """Set the step (after a restore)."""
        with self._lock:
            self._value = int(value)

    def increment(self, by: int = 1) -> int:
        """Add ``by`` and return the new step."""
        with self._lock:
            self._value += by
            return self._value

    def __int__(self) -> int:
        return self._value

    def __repr__(self) -> str:
        return f"GlobalStep({self._value})"


def unwrap(model: nn.Module) -> nn.Module:
    """The module inside a DistributedDataParallel / DataParallel wrapper (or the model itself)."""
    return model.module if hasattr(model, "module") and isinstance(model.module, nn.Module) else model


@dataclass
class Snapshot:
    """A consistent copy of the training state at one step, ready for the checkpoint store."""

    step: int
    tensors: dict[str, torch.Tensor]
    state: dict[str, Any]


@dataclass
class TrainState:
    """The objects a checkpoint saves and restores.

    ``extra`` holds further named :class:`Stateful` objects (e.g. an EMA of the weights).
    """

    model: nn.Module
    optimizer: torch.optim.Optimizer | None = None
    scheduler: Stateful | None = None
    data: Stateful | None = None
    global_step: GlobalStep = field(default_factory=GlobalStep)
    extra: dict[str, Stateful] = field(default_factory=dict)
    save_rng: bool = True

    # --- capture ----------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """Copy the state (call between steps, in the training thread)."""
        tensors: dict[str, torch.Tensor] = {}
        for name, value in unwrap(self.model).state_dict().items():
            tensors[MODEL_PREFIX + name] = value.detach().to("cpu", copy=True).contiguous()
        state: dict[str, Any] = {"global_step": self.global_step.value}
        parts: dict[str, Any] = {}
        if self.optimizer is not None:
            parts["optimizer"] = self.optimizer.state_dict()
        if self.scheduler is not None:
            parts["scheduler"] = self.scheduler.state_dict()
        if self.data is not None:
            parts["data"] = self.data.state_dict()
        for key, obj in self.extra.items():
            parts[f"extra.{key}"] = obj.state_dict()
        if self.save_rng:
            parts["rng"] = capture_rng()
        for key, value in parts.items():
            tree, part_tensors = codec.encode(value, prefix=key)
            state[key] = tree
            tensors.update(part_tensors)
        return Snapshot(self.global_step.value, tensors, state)

    def commit_step(self) -> None:
        """Tell stateful parts that a training step finished (e.g. the data position)."""
        for obj in (self.data, *self.extra.values()):
            commit = getattr(obj, "commit", None)
            if callable(commit):
                commit()

    # --- restore ----------------------------------------------------------------------------
    def check_model_tensors(self, tensors: Mapping[str, torch.Tensor]) -> list[str]:
        """Names what in ``tensors`` does not fit the model (missing, unexpected, wrong shape)."""
        own = unwrap(self.model).state_dict()
        saved = {k[len(MODEL_PREFIX):]: v for k, v in tensors.items() if k.startswith(MODEL_PREFIX)}
        problems = [f"missing parameter {k!r} in checkpoint" for k in own if k not in saved]
        problems += [f"unexpected parameter {k!r} in checkpoint" for k in saved if k not in own]
        problems += [
            f"shape mismatch for {k!r}: checkpoint {tuple(saved[k].shape)}, model {tuple(v.shape)}"
            for k, v in own.items()
            if k in saved and saved[k].shape != v.shape
        ]
        return problems

    def restore(self, tensors: Mapping[str, torch.Tensor], state: Mapping[str, Any]) -> list[str]:
        """Load a verified checkpoint's content; returns problems (and then changes nothing)."""
        problems = self.check_model_tensors(tensors)
        for key, obj in self._parts().items():
            if obj is not None and key not in state:
                problems.append(f"checkpoint has no {key} state")
        if self.optimizer is not None and "optimizer" in state:
            saved = codec.decode(state["optimizer"], tensors).get("param_groups") or [{}]
            own = self.optimizer.state_dict()["param_groups"]
            if set(saved[0]) - {"initial_lr"} != set(own[0]) - {"initial_lr"}:
                problems.append(f"the checkpoint's optimizer state is not this run's "
                                f"{type(self.optimizer).__name__}'s (another optimizer: "
                                "start a new logdir, or warm-start from this one)")
        if problems:
            return problems
        model_sd = {
            k[len(MODEL_PREFIX):]: v for k, v in tensors.items() if k.startswith(MODEL_PREFIX)
        }
        unwrap(self.model).load_state_dict(model_sd, strict=True)
        for key, obj in self._parts().items():
            if obj is not None:
                obj.load_state_dict(codec.decode(state[key], tensors))
        if self.save_rng and "rng" in state:
            restore_rng(codec.decode(state["rng"], tensors))
        self.global_step.set(int(state["global_step"]))
        return []

    def _parts(self) -> dict[str, Stateful | None]:
        parts: dict[str, Stateful | None] = {
            "optimizer": self.optimizer,  # type: ignore[dict-item]
            "scheduler": self.scheduler,
            "data": self.data,
        }
        parts.update({f"extra.{k}": v for k, v in self.extra.items()})
        return parts


def capture_rng() -> dict[str, Any]:
    """The states of torch's CPU (and CUDA) generators, numpy's global and Python's ``random``."""
    rng: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": np.random.get_state(),
        "python": random.getstate(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        rng["cuda"] = list(torch.cuda.get_rng_state_all())
    return rng


def restore_rng(rng: Mapping[str, Any]) -> None:
    """Inverse of :func:`capture_rng`; CUDA states are restored when the device count matches."""
    torch.set_rng_state(rng["torch"].to(torch.uint8))
    np.random.set_state(tuple(rng["numpy"]))
    random.setstate(rng["python"])
    cuda = rng.get("cuda")
    if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all([t.to(torch.uint8) for t in cuda])


def non_finite_parameters(model: nn.Module) -> list[str]:
    """Names of floating-point parameters and buffers holding NaN or inf."""
    bad = []
    for name, t in unwrap(model).state_dict().items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            bad.append(f"non-finite values in {name!r}")
    return bad
