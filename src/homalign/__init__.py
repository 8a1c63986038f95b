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
from homalign.database_search import install as _install_database_search  # noqa: E402
from homalign.errors import HomalignError, InputError  # noqa: E402
from homalign.sequence import Sequence, read_sequences  # noqa: E402
from homalign.version import __version__  # noqa: E402

__all__ = ["Alignment", "HomalignError", "InputError", "Sequence", "__version__", "align",
           "read_sequences", "search"]


def _database_search():
    """homalign.search's implementation of :mod:`homalign.database_search` (imported on use)."""
    from homalign.database_search import DatabaseSearch
    from homalign.search.homologs import find_homologs
    from homalign.search.msa_build import cached_msa, cached_msa_path

    return DatabaseSearch(cached_msa=cached_msa, cached_msa_path=cached_msa_path,
                          find_homologs=find_homologs)


# the package root wires the search engine into the layers below it that search a database
# (profile sources' msa="iterative:N", learned-homologs); see homalign/database_search.py
_install_database_search(_database_search)


def __getattr__(name: str):
    """``homalign.search`` without importing the search engine at ``import homalign``."""
    if name == "search":
        import importlib

        return importlib.import_module("homalign.search")
    raise AttributeError(f"module 'homalign' has no attribute {name!r}")
