"""homalign: find and align related proteins, and measure how well it was done.

Public API: :func:`homalign.align`, :func:`homalign.search` (a database search; also the
package :mod:`homalign.search`, imported on first use), the :class:`Alignment` and
:class:`Sequence` types, and the method registry in :mod:`homalign.methods`.
"""

import os as _os

# OpenMP workers (torch's) sleep between parallel regions instead of spinning, so that numba's
# kernels get the cores right after a torch call (the learned search alternates the two)
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from homalign.alignment import Alignment  # noqa: E402
from homalign.api import align  # noqa: E402
from homalign.errors import HomalignError, InputError  # noqa: E402
from homalign.sequence import Sequence, read_sequences  # noqa: E402
from homalign.version import __version__  # noqa: E402

__all__ = ["Alignment", "HomalignError", "InputError", "Sequence", "__version__", "align",
           "read_sequences", "search"]


def __getattr__(name: str):
    """``homalign.search`` without importing the search engine at ``import homalign``."""
    if name == "search":
        import importlib

        return importlib.import_module("homalign.search")
    raise AttributeError(f"module 'homalign' has no attribute {name!r}")
