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


def search(
    query: Sequence | str,
    db: Any,
    method: str = "sw",
    *,
    iterations: int = 1,
    **options: Any,
) -> list:
    """Search a protein database (``homalign.search.SequenceDB``, FASTA path or ``makedb``
    directory); hits (``homalign.search.Hit``) ranked by E-value, as ``homalign search`` does.

    >>> hits = homalign.search("MKVLAAGIVG...", "astral.fa", method="learned", iterations=3)

    ``iterations`` > 1 runs :func:`homalign.search.iterative.iterative_search` (PSI-BLAST class
    for ``sw``/``pssm``; any other method fused with the PSSM round); ``options`` go to
    :func:`homalign.search.search` or to it (``evalue``, ``max_hits``, ``prefilter``, method
    options). ``target_msa=MSADB`` (an MSA database of ``db``, ``homalign makemsa``) also scores
    the query's MSA against each target's own MSA (HHblits class with ``method="hhm"``; fused
    into ``learned``'s ranking otherwise); ``neighbour_support=W`` lifts the targets whose MSA
    neighbours it found (default on for a fused ranking, off for ``hhm``). ``homalign.search``
    is this function and also the package of the search engine.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1, got {iterations}")
    q = as_sequence(query, "query")
    if iterations > 1 or options.get("target_msa") is not None:
        from homalign.search.iterative import iterative_search

        return iterative_search(q, db, iterations, method, **options)
    from homalign.search.engine import search as engine_search

    return engine_search(q, db, method, **options)
