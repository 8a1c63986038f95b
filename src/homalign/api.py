"""The public entry points: thin layers over the method registry."""

from __future__ import annotations

from typing import Any

from homalign.alignment import Alignment
from homalign.methods import get_method
from homalign.sequence import Sequence, as_sequence

DEFAULT_METHOD = "learned"


def align(
    query: Sequence | str,
    target: Sequence | str,
    method: str = DEFAULT_METHOD,
    **options: Any,
) -> Alignment:
    """Align two proteins with a registered method (default: the bundled learned aligner).

    >>> import homalign
    >>> aln = homalign.align("HEAGAWGHEE", "PAWHEAE", method="sw", matrix="BLOSUM62",
    ...                      gap_open=11, gap_extend=1)

    Gap costs follow BLAST's convention: a gap of length k costs ``gap_open + k * gap_extend``.
    """
    m = get_method(method)
    reason = m.available()
    if reason is not None:
        raise RuntimeError(f"method {method!r} is not available here: {reason}")
    return m.align(as_sequence(query, "query"), as_sequence(target, "target"), **options)
