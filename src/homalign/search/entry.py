"""The public search call: ``homalign.search(query, db, ...)`` and ``homalign.api.search``.

:func:`run_search` checks every keyword (the search's own and the method's), then runs one pass of
the engine (:func:`homalign.search.engine.search`) or, with ``iterations > 1`` or an MSA database
(``target_msa=``), :func:`homalign.search.iterative.iterative_search`. It lives in the search
package so that the package itself can be called without importing :mod:`homalign.api`. Like
the CLI, it turns numpy's huge-page advice off for the process
(:func:`homalign.threads.no_huge_pages`; a sixth of a learned search's time went to zeroing
huge pages of short-lived arrays); results do not depend on it.
"""

from __future__ import annotations

import difflib
import inspect
from pathlib import Path
from typing import Any

from homalign.methods import OptionError, get_method
from homalign.methods.base import describe_options
from homalign.sequence import Sequence, as_sequence
from homalign.threads import no_huge_pages


def _keywords(fn: Any, skip: int) -> list[str]:
    """The named parameters of ``fn`` after its first ``skip`` (no ``**kwargs``)."""
    params = list(inspect.signature(fn).parameters.values())[skip:]
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def check_search_options(method: str, options: dict[str, Any], iterative: bool = False) -> None:
    """Raise :class:`OptionError` for a keyword that neither the search (``evalue``,
    ``max_hits``, ``prefilter``... and, iterative, its rounds' options) nor ``method`` declares,
    naming both lists."""
    from homalign.search.engine import search as engine_search

    search_kw = _keywords(engine_search, 3)
    if iterative:
        from homalign.search.iterative import PSSM_METHODS, iterative_search

        search_kw += [k for k in _keywords(iterative_search, 4) if k not in search_kw]
        if method in PSSM_METHODS:  # sw or pssm with rounds: one PSI-BLAST-class search
            method = "pssm"
    m = get_method(method)
    method_kw = list(m.option_names or ())
    unknown = [k for k in options if k not in search_kw and k not in method_kw]
    if unknown and m.options is not None:
        hints = []
        for k in unknown:
            close = difflib.get_close_matches(k, search_kw + method_kw, n=1)
            hints.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise OptionError(f"search has no option {', '.join(hints)}; the search's options: "
                          f"{', '.join(search_kw)}; method {method!r}'s options: "
                          f"{describe_options(m.options) or 'none'}")
    m.check_options({k: v for k, v in options.items() if k not in search_kw})


#: options that give the query's own model or MSA
QUERY_MODEL_OPTIONS = ("query_hmm", "query_hhm", "query_msa")


def query_models(options: dict[str, Any]) -> list[str]:
    """The options of ``options`` that give the query's model or MSA (a file, or for
    ``query_msa`` a directory of per-sequence MSAs)."""
    return [k for k in QUERY_MODEL_OPTIONS if options.get(k) is not None]


def default_prefilter(options: dict[str, Any]) -> bool:
    """Whether a search with ``options`` prefilters when the caller did not say: not with a
    query model or MSA (:func:`query_models`), which the query sequence's k-mers do not
    represent (a family's HMM finds members that share none of them): every target is scored,
    as hmmsearch scores them."""
    return not query_models(options)


def check_query_inputs(options: dict[str, Any], n_queries: int = 1) -> None:
    """ValueError for per-protein inputs a database search cannot use: one target's HHM
    (``target_hhm``), or one query's model or MSA file given for several queries."""
    if options.get("target_hhm") is not None:
        raise ValueError("target_hhm (--target-hhm) is one target's HH-suite HMM; a database "
                         "search needs every target's: msa=DIRECTORY (--msa) of <id>.hhm or "
                         "<id>.a3m files, or an MSA database (--target-msa, homalign makemsa)")
    files = [k for k in query_models(options)
             if not (k == "query_msa" and Path(str(options[k])).is_dir())]
    if files and n_queries > 1:
        hint = (", or give it a directory of <query id>.a3m files" if files[0] == "query_msa"
                else "")
        raise ValueError(f"{files[0]} (--{files[0].replace('_', '-')}) is one query's model, "
                         f"but there are {n_queries} queries: search each query with its own "
                         f"model{hint}")


def check_query_model(query: Sequence, options: dict[str, Any]) -> None:
    """InputError for a query that a given HMMER model (``query_hmm``) does not hold: HMMER
    places none of its residues on the model, so the search would rank the model's family for
    an unrelated query and align none of its residues."""
    path = options.get("query_hmm")
    if path is None:
        return
    from homalign.errors import InputError
    from homalign.methods.profile import query_on_model

    if not query_on_model(query, str(path)):
        raise InputError(f"HMMER places none of the query {query.id!r} on this model: a query "
                         "model aligns targets to its own query, a member of its family; give "
                         "that query (or the query's own model)", path=str(path))


def _check_limits(iterations: Any, options: dict[str, Any]) -> None:
    """TypeError / ValueError for an ``iterations``, ``evalue`` or ``max_hits`` that is not a
    number of the right kind and range (a string, NaN, a negative or fractional count)."""
    import numbers

    def count(name: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")

    count("iterations", iterations)
    if options.get("max_hits") is not None:
        count("max_hits", options["max_hits"])
    if "evalue" in options:
        e = options["evalue"]
        if isinstance(e, bool) or not isinstance(e, numbers.Real):
            raise TypeError(f"evalue must be a number, got {type(e).__name__} {e!r}")
        if not e > 0:  # NaN too
            raise ValueError(f"evalue must be positive, got {e}")


def run_search(
    query: Sequence | str,
    db: Any,
    method: str = "sw",
    *,
    iterations: int = 1,
    **options: Any,
) -> list:
    """:func:`homalign.api.search` (see there)."""
    _check_limits(iterations, options)
    iterative = iterations > 1 or options.get("target_msa") is not None
    if options.get("neighbour_support") is not None and options.get("target_msa") is None:
        raise ValueError("neighbour_support needs target_msa (an MSA database: homalign makemsa)")
    profile_round = options.pop("profile_round", None)
    if profile_round is not None and (iterative or not isinstance(profile_round, bool)):
        raise ValueError("profile_round is True, False or None, and not for an iterative search "
                         "(its PSSM rounds are its own)")
    check_search_options(method, options, iterative)
    check_query_inputs(options)
    if (not iterative and "prefilter" not in options
            and options.get("prefilter_options") is None and not default_prefilter(options)):
        options["prefilter"] = False  # a query model: every target scored (unless asked)
    q = as_sequence(query, "query")
    check_query_model(q, options)
    no_huge_pages()
    if iterative:
        from homalign.search.iterative import iterative_search

        return iterative_search(q, db, iterations, method, **options)
    from homalign.search.profile_round import search_one

    return search_one(q, db, method, profile_round=profile_round, **options)


__all__ = ["check_query_inputs", "check_search_options", "default_prefilter", "query_models",
           "run_search"]
