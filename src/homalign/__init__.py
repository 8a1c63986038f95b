"""homalign: find and align related proteins, and measure how well it was done.

Public API: :func:`homalign.align`, :func:`homalign.search` (a database search; also the
package :mod:`homalign.search`, imported on first use), the :class:`Alignment` and
:class:`Sequence` types, and the method registry in :mod:`homalign.methods`.
"""

from homalign.alignment import Alignment
from homalign.api import align
from homalign.errors import HomalignError, InputError
from homalign.sequence import Sequence, read_sequences

__version__ = "0.1.0"
__all__ = ["Alignment", "HomalignError", "InputError", "Sequence", "align", "read_sequences",
           "search"]


def __getattr__(name: str):
    """``homalign.search`` without importing the search engine at ``import homalign``."""
    if name == "search":
        import importlib

        return importlib.import_module("homalign.search")
    raise AttributeError(f"module 'homalign' has no attribute {name!r}")
