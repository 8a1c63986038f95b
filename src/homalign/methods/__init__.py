"""The method registry: every aligner, classical, learned or external, under one name.

``homalign.align()``, the CLI ``--method`` option, ``homalign.search`` and the benchmarks all look
methods up here; a new method is one ``register`` call in its own module, listed in ``_PROVIDERS``.
"""

from __future__ import annotations

import importlib

from homalign.methods.base import Method, Option, OptionError, PairScores, dp_method

METHODS: dict[str, Method] = {}

# Modules that register methods when imported (kept lazy: peers and torch load only on demand).
_PROVIDERS = (
    "homalign.methods.sequence",
    "homalign.methods.profile",
    "homalign.methods.peers",
    "homalign.methods.learned",
)
_loaded = False


def register(method: Method) -> Method:
    """Add ``method`` to the registry; with declared options, its align/prepare/score check
    their keywords against them (:meth:`Method.checked`). Returns the registered entry."""
    if method.name in METHODS:
        raise ValueError(f"method {method.name!r} registered twice")
    method = method.checked()
    METHODS[method.name] = method
    return method


def _load_providers() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in _PROVIDERS:
            importlib.import_module(module)


def get_method(name: str) -> Method:
    _load_providers()
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(
            f"unknown method {name!r}; available: {', '.join(sorted(METHODS))}"
        ) from None


def method_names(kind: str | None = None) -> list[str]:
    _load_providers()
    return [n for n, m in METHODS.items() if kind is None or m.kind == kind]


__all__ = ["METHODS", "Method", "Option", "OptionError", "PairScores", "dp_method", "get_method", "method_names", "register"]
