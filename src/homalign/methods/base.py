"""What a method is: how to represent two proteins, how to score them, and which DP aligns them."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from homalign.alignment import Alignment
from homalign.errors import InputError
from homalign.score.pair_scores import PairScores
from homalign.sequence import Sequence


class OptionError(InputError, TypeError):
    """An option a method does not declare (a misspelling, or one this method ignores), or a
    value of the wrong type; the message names the method's valid options. Both an
    :class:`~homalign.errors.InputError` (the CLI prints it as one line) and a TypeError (what
    Python raises for an unexpected keyword argument)."""


_NUMBER = (int, float, np.integer, np.floating)


@dataclass(frozen=True)
class Option:
    """One option of a method: its keyword ``name``, its ``type`` (float, int, str or bool: what
    a value must be, and how the CLI parses the flag ``--name-with-dashes``), its ``default``
    (None: unset, the method decides) and a one-line ``help``. ``choices`` limits the values;
    ``cli=False`` keeps it off the command line (it needs a Python object, or the CLI sets it
    from another flag); ``api_types`` overrides which Python types a value may have (None: any,
    e.g. a path or a loaded database). ``low`` / ``high`` bound a number (NaN and infinities
    never pass); ``open`` names the bounds a value may not equal ("low", "high" or "both")."""

    name: str
    type: type = str
    default: Any = None
    help: str = ""
    choices: tuple | None = None
    cli: bool = True
    api_types: tuple | None = ()
    low: float | None = None
    high: float | None = None
    open: str = ""

    def range_text(self) -> str:
        """The allowed range, as ``[0, 0.5)``, ``>= 0`` or ``> 0``."""
        lo_open, hi_open = self.open in ("low", "both"), self.open in ("high", "both")
        if self.high is None:
            return f"{'>' if lo_open else '>='} {self.low:g}"
        if self.low is None:
            return f"{'<' if hi_open else '<='} {self.high:g}"
        return f"{'(' if lo_open else '['}{self.low:g}, {self.high:g}{')' if hi_open else ']'}"

    def in_range(self, value: Any) -> bool:
        import math

        v = float(value)
        if not math.isfinite(v):
            return False
        lo_open, hi_open = self.open in ("low", "both"), self.open in ("high", "both")
        if self.low is not None and (v < self.low or (lo_open and v == self.low)):
            return False
        return not (self.high is not None and (v > self.high or (hi_open and v == self.high)))

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def accepted_types(self) -> tuple | None:
        if self.api_types != ():
            return self.api_types
        if self.type is float:
            return _NUMBER
        if self.type is int:
            return (int, np.integer)
        if self.type is bool:
            return (bool, np.bool_)
        if self.type is str:
            return (str,)
        return None

    def check(self, value: Any, method: str) -> None:
        """Raise OptionError when ``value`` is not a valid value of this option (None always is:
        the default)."""
        if value is None:
            return
        types = self.accepted_types()
        bad_type = types is not None and (not isinstance(value, types)
                                          or (self.type in (int, float)
                                              and isinstance(value, (bool, np.bool_))))
        if self.choices is not None and value not in self.choices:
            raise OptionError(f"method {method!r}: option {self.name}={value!r} is not one of "
                              f"{', '.join(map(repr, self.choices))}")
        if bad_type and self.choices is None:
            raise OptionError(f"method {method!r}: option {self.name} must be "
                              f"{self.type.__name__}, got {type(value).__name__} {value!r}")
        if ((self.low is not None or self.high is not None) and isinstance(value, _NUMBER)
                and not self.in_range(value)):
            raise OptionError(f"method {method!r}: option {self.name}={value!r} must be "
                              f"{self.range_text()}")


def describe_options(options: Iterable[Option]) -> str:
    """``name=default`` of each option, comma-separated (for error messages)."""
    return ", ".join(f"{o.name}={o.default!r}" if o.default is not None else o.name
                     for o in options)


def check_options(method: str, declared: tuple[Option, ...] | None,
                  options: Mapping[str, Any], ignore: Iterable[str] = ()) -> None:
    """Raise OptionError unless every key of ``options`` (but ``ignore``) is a declared option
    of ``method`` with a valid value; ``declared`` None: the method declares nothing (a test
    double), anything goes."""
    if declared is None:
        return
    by_name = {o.name: o for o in declared}
    unknown = [k for k in options if k not in by_name and k not in ignore]
    if unknown:
        hints = []
        for k in unknown:
            close = difflib.get_close_matches(k, by_name, n=1)
            hints.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        valid = describe_options(declared) if declared else "none"
        raise OptionError(f"method {method!r} has no option {', '.join(hints)}; its options: "
                          f"{valid}")
    for k, v in options.items():
        if k in by_name:
            by_name[k].check(v, method)


@dataclass(frozen=True)
class Method:
    """A registry entry.

    ``align(query, target, **options)`` is always present. Methods built on the shared DP also give
    ``prepare`` (sequence → reusable representation, built once per protein) and ``score``
    (two representations → PairScores), which ``homalign.search`` uses to score one query against
    many targets without rebuilding the query. Peers (external programs) only give ``align``.
    ``available()`` returns None when the method can run here, else the reason it cannot.
    ``align_prepared(query, target, qrep, trep, **options)`` (optional) is ``align`` given the two
    prepared representations; ``search`` traces its hits back with it when present (the learned
    method: the MEA alignment that ``align`` gives, not the best path of the ranking scores).
    ``fingerprint()`` (optional) identifies the method's scoring beyond its options — e.g. a hash of
    learned weights — so caches keyed on the method (E-value calibration) notice a new model.
    ``null_params()`` (optional) returns the method's own null-score law (a
    :class:`homalign.stats.EVDParams`, e.g. fitted on real unrelated proteins when learned
    weights were made and shipped with them) or None; ``search`` then uses it instead of a
    :func:`homalign.stats.calibrate` fit on i.i.d. sequences. ``chance_params()`` (optional)
    returns the null law of the score itself over all lengths (a ``"gumbel-regression"`` law)
    when ``null_params()`` is a ranking key that only holds at some lengths; E-values then count
    the database's chance hits ranked at least as high (:func:`homalign.stats.chance_evalues`).
    ``ranking()`` (optional) returns
    the method's ranking score in closed form (:class:`homalign.model.ranking.RankingModel`), or
    None; ``search`` then scores all candidates of a query in batched, compiled passes over the
    database's stored target embeddings instead of calling ``score`` per pair (same scores), and
    traces its hits back with ``align_hits`` (optional) in one call.
    ``score_many(qrep, target_codes, **options)`` (optional) returns the float64 scores that
    ``score`` and :func:`homalign.score.pair_scores.score_values` give the prepared query against
    each target of ``target_codes`` (residue code sequences), the same numbers, in one call
    (``pssm``: the query profile against the targets in a 16-lane kernel, no score matrix per
    target); ``search`` uses it for the candidates when present.
    """

    name: str
    kind: str  # "sequence" | "profile" | "hmm" | "learned" | "peer"
    description: str
    align: Callable[..., Alignment]
    prepare: Callable[..., Any] | None = None
    score: Callable[..., PairScores] | None = None
    available: Callable[[], str | None] = field(default=lambda: None)
    defaults: dict = field(default_factory=dict)
    fingerprint: Callable[[], str] | None = None  # changes when the method's scores change
    align_prepared: Callable[..., Alignment] | None = None
    #: ``(query, targets, scores, **options)`` → the alignments ``align`` gives of the query with
    #: each target, in one call (the learned method embeds the targets in batches); ``scores``
    #: are the search scores that ranked them
    align_hits: Callable[..., list[Alignment]] | None = None
    null_params: Callable[[], Any] | None = None  # -> homalign.stats.EVDParams | None
    chance_params: Callable[[], Any] | None = None  # -> homalign.stats.EVDParams | None
    ranking: Callable[[], Any] | None = None  # -> homalign.model.ranking.RankingModel | None
    #: ``(qrep, target_codes, **options)`` → float64 scores of the query against each target
    score_many: Callable[..., np.ndarray] | None = None
    #: the method's options, the one place they are declared (None: undeclared, not checked)
    options: tuple[Option, ...] | None = None
    #: the null law :func:`homalign.search.calibration.calibrate` fits to a local method's scores
    #: of unrelated pairs: ``"gumbel"`` (Karlin-Altschul's form, ``K m n e^{-lambda s}``) or
    #: ``"regression"`` (location and scale functions of both lengths, exponential tail) for
    #: scores that grow in proportion to the lengths (a column score of expected value near 0)
    null_law: str = "gumbel"

    def __post_init__(self) -> None:
        if self.options is not None:
            names = [o.name for o in self.options]
            if len(set(names)) != len(names):
                raise ValueError(f"method {self.name!r} declares an option twice: {names}")
            if not self.defaults:
                object.__setattr__(self, "defaults", {o.name: o.default for o in self.options
                                                      if o.default is not None})

    @property
    def option_names(self) -> tuple[str, ...] | None:
        return None if self.options is None else tuple(o.name for o in self.options)

    def check_options(self, options: Mapping[str, Any], ignore: Iterable[str] = ()) -> None:
        """Raise :class:`OptionError` for a keyword this method does not declare (naming the
        valid ones) or a value of the wrong type."""
        check_options(self.name, self.options, options, ignore)

    def checked(self) -> Method:
        """This method with ``align``/``prepare``/``score``/``align_prepared`` checking their
        keyword options against the declaration first (what :func:`register` stores)."""
        if self.options is None or getattr(self.align, "_checked", False):
            return self
        from dataclasses import replace

        def wrap(fn: Callable[..., Any] | None, ignore: tuple[str, ...] = ()) -> Any:
            if fn is None:
                return None

            @functools.wraps(fn)
            def inner(*args: Any, **kwargs: Any) -> Any:
                self.check_options(kwargs, ignore)
                return fn(*args, **kwargs)

            inner._checked = True  # type: ignore[attr-defined]
            return inner

        return replace(self, align=wrap(self.align), prepare=wrap(self.prepare, ("role",)),
                       score=wrap(self.score), align_prepared=wrap(self.align_prepared),
                       align_hits=wrap(self.align_hits), score_many=wrap(self.score_many))


def dp_method(
    name: str,
    kind: str,
    description: str,
    prepare: Callable[..., Any],
    score: Callable[..., PairScores],
    defaults: dict | None = None,
    options: tuple[Option, ...] | None = None,
) -> Method:
    """Build a Method whose alignment is: prepare both → score → exact DP → Alignment
    (``options`` declared: ``defaults`` are theirs unless given)."""
    if not defaults and options is not None:
        defaults = {o.name: o.default for o in options if o.default is not None}
    defaults = dict(defaults or {})

    def align(query: Sequence, target: Sequence, **options: Any) -> Alignment:
        from homalign.dp import align as dp_align

        opts = {**defaults, **options}
        ps = score(prepare(query, **opts), prepare(target, **opts), **opts)
        res = dp_align(ps.S, ps.gaps, mode=ps.mode)
        return Alignment(
            query_id=query.id, target_id=target.id, query=query.residues, target=target.residues,
            pairs=res.pairs, score=float(res.score), method=name, extra={"mode": ps.mode},
        )

    return Method(name, kind, description, align, prepare, score, defaults=defaults,
                  options=options)
