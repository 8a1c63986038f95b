"""The database search that code below :mod:`homalign.search` may call, as an interface.

Two features below the search engine search a sequence database while aligning one pair:

* a profile source ``msa="iterative:N"`` (:mod:`homalign.profile.sources`, the profile methods,
  hhalign): the sequence's MSA from N rounds of iterative search, cached on disk;
* the ``learned-homologs`` method: homologues of both sequences, for the consistency transform.

The search engine scores with the methods, so those layers may not import it (the layers
contract in pyproject.toml). They call :func:`current` instead, and the package root
(``homalign/__init__.py``, imported before any submodule) installs the search package's
implementations: :func:`homalign.search.msa_build.cached_msa`,
:func:`homalign.search.msa_build.cached_msa_path` and
:func:`homalign.search.homologs.find_homologs`. A leaf: it imports nothing of homalign.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DatabaseSearch:
    """What the layers below search may ask of it (signatures as in :mod:`homalign.search`)."""

    #: ``(sequence, db, iterations, *, inclusion_evalue)`` → the MSA (built and cached if missing)
    cached_msa: Callable[..., Any]
    #: the same arguments → the path of that cached A3M file (built first if missing)
    cached_msa_path: Callable[..., Any]
    #: ``(sequence, db, max_homologs, evalue)`` → homologue regions, best first
    find_homologs: Callable[..., list]


_PROVIDER: list[Callable[[], DatabaseSearch]] = []


def install(provider: Callable[[], DatabaseSearch]) -> None:
    """Set the function that returns the implementation (called on each use, so that it may
    import lazily and tests may patch the implementing modules)."""
    _PROVIDER[:] = [provider]


def current() -> DatabaseSearch:
    """The installed database search (RuntimeError if none is)."""
    if not _PROVIDER:
        raise RuntimeError("no database search installed: homalign/__init__.py installs "
                           "homalign.search's (import homalign)")
    return _PROVIDER[0]()


__all__ = ["DatabaseSearch", "current", "install"]
