"""Save and load the learned aligner: safetensors weights + a JSON config (atomic writes through
:func:`homalign.io.atomic.atomic_write_bytes`).

The bundled models live in ``homalign/weights/<name>.safetensors`` + ``<name>.json`` (``learned``:
the aligner; ``learned_search``: the ranking weights of ``search``; ``learned_template``: template
mode) and are read with :mod:`importlib.resources`, so they work from an installed wheel, offline.

``$HOMALIGN_WEIGHTS`` names a directory whose ``<name>.json`` + ``<name>.safetensors`` replace the
bundled set of that name (each name falls back to the package's own when the directory lacks it),
e.g. the output of ``scripts/train_weights.sh`` before it is copied into the package.
"""

from __future__ import annotations

import json
import os
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from homalign.io.atomic import atomic_write_bytes
from homalign.model.config import AlignerConfig

if TYPE_CHECKING:  # the torch model is imported where it is built: inference needs no torch
    from homalign.model.aligner import AlignerModel, EnsembleAligner

BUNDLED = "learned"
WEIGHTS_ENV = "HOMALIGN_WEIGHTS"


def save_model(model: AlignerModel | EnsembleAligner, stem: str | Path,
               extra: dict | None = None) -> None:
    """Write ``<stem>.safetensors`` and ``<stem>.json`` (config + ``extra`` metadata)."""
    from safetensors.torch import save as st_save

    stem = Path(stem)
    tensors = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    atomic_write_bytes(stem.with_suffix(".safetensors"), st_save(tensors))
    meta = {"config": model.cfg.to_dict(), **(extra or {})}
    atomic_write_bytes(stem.with_suffix(".json"), (json.dumps(meta, indent=2) + "\n").encode())


def _build(weights: bytes, meta: dict) -> AlignerModel | EnsembleAligner:
    from safetensors.torch import load as st_load

    from homalign.model.aligner import EnsembleAligner

    state = st_load(weights)
    if meta.get("ensemble"):  # homalign.model.ensemble: members' tensors under "members.k."

        members = []
        for k, member in enumerate(meta["ensemble"]["members"]):
            prefix = f"members.{k}."
            part = {n[len(prefix):]: v for n, v in state.items() if n.startswith(prefix)}
            if not part:
                raise ValueError(f"weights hold no tensors for ensemble member {k}")
            members.append(_build_one(part, member["config"]))
        n = len(members)
        stray = [name for name in state
                 if not any(name.startswith(f"members.{k}.") for k in range(n))]
        if stray:
            raise ValueError(f"weights do not fit the {n}-member ensemble: {sorted(stray)}")
        return EnsembleAligner(members).eval()
    return _build_one(state, meta["config"])


def _build_one(state: dict, config: dict) -> AlignerModel:
    from homalign.model.aligner import AlignerModel

    model = AlignerModel(AlignerConfig.from_dict(config))
    own = model.state_dict()
    for k, v in state.items():  # scalars saved as 0-dim by early versions
        if k in own and v.shape != own[k].shape and v.numel() == own[k].numel():
            state[k] = v.reshape(own[k].shape)
    missing, unexpected = model.load_state_dict(state, strict=False)
    bad = [k for k in missing if not k.startswith("homology.")] + list(unexpected)
    if bad:  # weights older than the homology adapter lack only its (zero-initialised) keys
        raise ValueError(f"weights do not fit the model: {sorted(bad)}")
    model.eval()
    return model


def load_model(stem: str | Path) -> tuple[AlignerModel | EnsembleAligner, dict]:
    """Read a model written by :func:`save_model`; returns (model in eval mode, metadata).

    Raises:
        InputError: a missing, unreadable or damaged ``.json`` or ``.safetensors`` file, or
            weights that do not fit the configured model (naming the file).
    """
    from safetensors import SafetensorError

    from homalign.errors import InputError

    stem = Path(stem)
    config, weights = stem.with_suffix(".json"), stem.with_suffix(".safetensors")
    try:
        meta = json.loads(config.read_bytes())
    except FileNotFoundError:
        raise InputError("no such file (a model is <stem>.json + <stem>.safetensors)",
                         path=config) from None
    except (OSError, ValueError) as exc:
        raise InputError(f"not a model config: {exc}", path=config) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("config", meta.get("ensemble")),
                                                    dict):
        raise InputError("not a model config (no 'config' object)", path=config)
    try:
        data = weights.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=weights) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=weights) from None
    try:
        return _build(data, meta), meta
    except SafetensorError as exc:
        raise InputError(f"damaged safetensors file: {exc}", path=weights) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"weights do not fit the config {config.name}: {exc}",
                         path=weights) from None


def bundled_file(name: str, suffix: str) -> Any:
    """The file ``<name><suffix>`` (``.json`` / ``.safetensors``) of the bundled weights named
    ``name``: from ``$HOMALIGN_WEIGHTS`` when that directory holds the set, else the package's
    (a :mod:`importlib.resources` traversable; both have ``read_bytes``/``is_file``)."""
    override = os.environ.get(WEIGHTS_ENV)
    if override:
        d = Path(override)
        if (d / f"{name}.json").is_file() and (d / f"{name}.safetensors").is_file():
            return d / f"{name}{suffix}"
    return resources.files("homalign").joinpath("weights").joinpath(f"{name}{suffix}")


def load_bundled(name: str = BUNDLED) -> tuple[AlignerModel | EnsembleAligner, dict]:
    """A model shipped inside the package (cached; eval mode): ``learned`` (the sequence-only
    aligner, the default), ``learned_search`` (the weights ``search`` ranks with: an aligner, its
    homology adapter and null law) or ``learned_template`` (template mode: also reads the
    target's structure). ``$HOMALIGN_WEIGHTS`` may replace a set (:func:`bundled_file`)."""
    return _load_bundled(name, os.environ.get(WEIGHTS_ENV) or None)


@cache
def _load_bundled(name: str, override: str | None) -> tuple[AlignerModel | EnsembleAligner, dict]:
    config = bundled_file(name, ".json")
    if not config.is_file():
        raise FileNotFoundError(f"no bundled weights named {name!r} in homalign/weights"
                                + (f" or ${WEIGHTS_ENV} ({override})" if override else ""))
    meta = json.loads(config.read_text())
    weights = bundled_file(name, ".safetensors").read_bytes()
    return _build(weights, meta), meta


def load_bundled_arrays(name: str = BUNDLED) -> tuple[dict[str, np.ndarray], dict, bytes]:
    """A bundled set as (arrays by state-dict name, metadata, the safetensors bytes), read with
    ``safetensors.numpy`` (cached): what the torch-free inference forms
    (:class:`homalign.model.inference.InferenceAligner`, :class:`homalign.model.ranking.
    RankingModel`) are built from."""
    return _load_arrays(name, os.environ.get(WEIGHTS_ENV) or None)


@cache
def _load_arrays(name: str, override: str | None) -> tuple[dict[str, np.ndarray], dict, bytes]:
    from safetensors.numpy import load as np_load

    config = bundled_file(name, ".json")
    if not config.is_file():
        raise FileNotFoundError(f"no bundled weights named {name!r} in homalign/weights"
                                + (f" or ${WEIGHTS_ENV} ({override})" if override else ""))
    weights = bundled_file(name, ".safetensors").read_bytes()
    return np_load(weights), json.loads(config.read_text()), weights


__all__ = ["WEIGHTS_ENV", "bundled_file", "load_bundled", "load_bundled_arrays", "load_model",
           "save_model"]
