"""A safe codec for training state: tensors go to a flat safetensors dict, the rest to JSON.

``encode(tree)`` splits a nested Python value (dicts, lists, tuples, numbers, strings, bytes,
``None``, numpy arrays and torch tensors, as found in ``state_dict()`` of models, optimizers and
LR schedulers and in RNG states) into

* a JSON-compatible tree where every tensor is replaced by ``{"__tensor__": key}``, and
* a flat ``{key: tensor}`` dict ready for :func:`safetensors.torch.save`.

``decode(tree, tensors)`` rebuilds the original value exactly (tuples stay tuples, integer dict keys
stay integers). Only the plain types above can come out of it: nothing is ever unpickled, so a
checkpoint cannot execute code. Any other object raises :class:`TypeError` at save time, which is
the moment the author can still fix it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

_TENSOR = "__tensor__"
_TUPLE = "__tuple__"
_DICT = "__dict__"
_BYTES = "__bytes__"
_NDARRAY = "__ndarray__"
_FLOAT = "__float__"
_MARKERS = (_TENSOR, _TUPLE, _DICT, _BYTES, _NDARRAY, _FLOAT)


def encode(tree: Any, prefix: str = "") -> tuple[Any, dict[str, torch.Tensor]]:
    """Split ``tree`` into a JSON-able tree and a flat dict of detached, contiguous CPU tensors."""
    tensors: dict[str, torch.Tensor] = {}
    encoded = _encode(tree, prefix, tensors)
    return encoded, tensors


def decode(tree: Any, tensors: Mapping[str, torch.Tensor]) -> Any:
    """Inverse of :func:`encode`; raises :class:`ValueError` on an unknown marker or key."""
    if isinstance(tree, list):
        return [decode(v, tensors) for v in tree]
    if not isinstance(tree, dict):
        return tree
    if len(tree) == 1:
        (marker, value), = tree.items()
        if marker == _TENSOR:
            if value not in tensors:
                raise ValueError(f"checkpoint state references a missing tensor {value!r}")
            return tensors[value]
        if marker == _TUPLE:
            return tuple(decode(v, tensors) for v in value)
        if marker == _DICT:
            return {_decode_key(k): decode(v, tensors) for k, v in value}
        if marker == _BYTES:
            return base64.b64decode(value)
        if marker == _NDARRAY:
            raw = base64.b64decode(value["data"])
            dtype = np.dtype(value["dtype"])
            if dtype.hasobject:
                raise ValueError("object arrays are not allowed in a checkpoint")
            return np.frombuffer(raw, dtype=dtype).reshape(value["shape"]).copy()
        if marker == _FLOAT:
            return float(value)
    return {k: decode(v, tensors) for k, v in tree.items()}


def _key_join(prefix: str, key: object) -> str:
    return f"{prefix}/{key}" if prefix else str(key)


def _encode(value: Any, path: str, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        key = path or "tensor"
        if key in tensors:
            raise ValueError(f"two tensors map to the same key {key!r}")
        tensors[key] = value.detach().to("cpu", copy=True).contiguous()
        return {_TENSOR: key}
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        # JSON has no inf/nan; keep them exact through repr.
        return value if np.isfinite(value) else {_FLOAT: repr(value)}
    if isinstance(value, np.generic):
        return _encode(value.item(), path, tensors)
    if isinstance(value, bytes | bytearray):
        return {_BYTES: base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError(f"cannot checkpoint an object array at {path!r}")
        data = base64.b64encode(np.ascontiguousarray(value).tobytes()).decode("ascii")
        return {_NDARRAY: {"dtype": value.dtype.str, "shape": list(value.shape), "data": data}}
    if isinstance(value, tuple):
        return {_TUPLE: [_encode(v, _key_join(path, i), tensors) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, _key_join(path, i), tensors) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        plain = all(isinstance(k, str) for k in value) and not (
            len(value) == 1 and next(iter(value)) in _MARKERS
        )
        if plain:
            return {k: _encode(v, _key_join(path, k), tensors) for k, v in value.items()}
        return {
            _DICT: [
                [_encode_key(k, path), _encode(v, _key_join(path, k), tensors)]
                for k, v in value.items()
            ]
        }
    raise TypeError(
        f"cannot checkpoint a {type(value).__name__} at {path or '<root>'!r}: "
        "only tensors, arrays, numbers, strings, bytes, None, lists, tuples and dicts are stored"
    )


def _encode_key(key: object, path: str) -> Any:
    if isinstance(key, bool) or not isinstance(key, int | str):
        raise TypeError(f"cannot checkpoint a dict key of type {type(key).__name__} at {path!r}")
    return key


def _decode_key(key: Any) -> Any:
    if not isinstance(key, int | str):
        raise ValueError(f"bad dict key in checkpoint state: {key!r}")
    return key
