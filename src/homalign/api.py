"""The public entry points: thin layers over the method registry."""

from __future__ import annotations

from typing import Any

from homalign.alignment import Alignment
from homalign.methods import Method, get_method
from homalign.sequence import Sequence, as_sequence

DEFAULT_METHOD = "learned"


def _pair_statistics(m: Method, aln: Alignment, options: dict[str, Any]) -> None:
    """Set ``aln.evalue`` / ``aln.bits`` (one pair: the target is the search space) where the
    method has a null law without a fit: ``sw`` with a published matrix/gap-cost pair
    (Karlin-Altschul) and methods that ship theirs (``learned``: the law over all lengths of the
    ranking score, the score search ranks the pair by). Others keep None ("not computed");
    peers set their own."""
    if aln.evalue is not None or len(aln.pairs) == 0:
        return
    import numpy as np

    from homalign.stats import bit_score, db_evalues, karlin_altschul

    lq, lt = len(aln.query), len(aln.target)
    params, score = None, None
    if m.name == "sw":
        opts = {**m.defaults, **options}
        params = karlin_altschul(str(opts["matrix"]), float(opts["gap_open"]),
                                 float(opts["gap_extend"]))
        score = aln.score
    elif m.null_params is not None and "homology_score" in aln.extra:
        # the score's law over all lengths where the method has one (a database of one target
        # counts its chance hits so), else its own law
        params = (m.chance_params() if m.chance_params is not None else None) or m.null_params()
        score = float(aln.extra["homology_score"])
    if params is None or score is None:
        return
    aln.evalue = float(db_evalues(np.array([score]), params, lq, np.array([lt]), lt, 1)[0])
    aln.bits = float(bit_score(score, params, lq, lt))


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
    Every keyword is an option the method declares (``homalign.methods.get_method(name)
    .options``: name, type, default, meaning); any other is an :class:`OptionError` naming the
    valid ones. ``Alignment.evalue`` / ``bits`` are set where the method has a null law without
    a fit (``sw`` with published Karlin-Altschul values, ``learned``, the peers), else None.
    """
    m = get_method(method)
    m.check_options(options)
    reason = m.available()
    if reason is not None:
        raise RuntimeError(f"method {method!r} is not available here: {reason}")
    aln = m.align(as_sequence(query, "query"), as_sequence(target, "target"), **options)
    _pair_statistics(m, aln, options)
    return aln


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
    options: every other keyword is an :class:`OptionError`). ``target_msa=MSADB`` (an MSA database of ``db``, ``homalign makemsa``) also scores
    the query's MSA against each target's own MSA (HHblits class with ``method="hhm"``; fused
    into ``learned``'s ranking otherwise); ``neighbour_support=W`` lifts the targets whose MSA
    neighbours it found (default on for a fused ranking, off for ``hhm``). A single-pass
    ``learned`` search adds one light PSSM round of its candidates to its ranking
    (``profile_round``, default None = on; False: the learned ranking alone;
    :mod:`homalign.search.profile_round`). ``homalign.search`` is this function and also the
    package of the search engine, whose :func:`homalign.search.search` is one pass.
    """
    from homalign.search.entry import run_search

    return run_search(query, db, method, iterations=iterations, **options)
