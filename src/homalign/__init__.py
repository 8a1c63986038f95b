"""homalign: find and align related proteins, and measure how well it was done.

Public API: :func:`homalign.align`, the :class:`Alignment` and :class:`Sequence` types, and the
method registry in :mod:`homalign.methods`.
"""

from homalign.alignment import Alignment
from homalign.api import align
from homalign.errors import HomalignError, InputError
from homalign.sequence import Sequence, read_sequences

__version__ = "0.1.0"
__all__ = ["Alignment", "HomalignError", "InputError", "Sequence", "align", "read_sequences"]
