"""Empirical E-value calibration: E-values that count chance hits among real proteins.

A null law fitted on a few thousand unrelated pairs cannot reach the tail a database search
lives in (a per-pair P of 1e-7 for E = 1e-3 against 10,000 sequences), and a fused ranking (the
weighted geometric mean of several searches' E-values, :func:`homalign.search.fuse_hits`) is not
an E-value at all. Both are *ranking values* ``v`` on an E-value scale. :class:`TailCalibration`
maps them to E-values through a power law on the per-target rate, never below the ranking
value itself (the power law only ever makes E-values more conservative)::

    E = N · min(1, max(v / N, A · (v / N)^b))

``N`` is the number of database sequences, so ``E`` grows linearly with the database (the
expected number of chance hits scoring at least as well, HMMER's ``E = Z · P``). ``A`` and ``b``
are fitted on database searches of held-out train-fold SCOPe queries, counting the hits in
another fold (chance hits among real proteins) per query at each threshold
(``benchmarks/evalue_calibration.py``; the values, their split and command are in
``tail_calibration.json`` beside this module). The map is monotone, so it changes no ranking.

A learned search scores only its candidates (the database's best ``C`` by a Smith-Waterman
pass), so fewer chance hits reach its list than the database holds, and a search's weak E-values
would be conservative (3-6x at E = 1 on SCOPe domain databases). A fitted *truncation* ``k``
deflates them back, between ``E = 0.1`` and ``E = 10`` only, so the strong end is untouched::

    E' = E · exp(-k · s · t),  t = clip(ln(E / 0.1) / ln(100), 0, 1),
    s = clip(ln(N / C) / ln(N_fit / C), 0, 1)

``s`` scales it with the database: no candidate limit truncates a database of ``C`` sequences
or fewer, and a larger one than the fit's is deflated as the fit's (more truncated, so still
conservative). ``k < ln(100)`` keeps the map monotone.

The bit score of a calibrated hit is BLAST's, ``bits = log2(m n / E)`` for a query of ``m``
residues against ``n`` database residues (:func:`bits_from_evalue`), so the two always agree.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

EVALUE_FLOOR = 1e-300
#: the E-value range a truncation deflates: nothing at or below ``TRUNCATION_FROM``, all of ``k``
#: from ``TRUNCATION_TO`` on
TRUNCATION_FROM, TRUNCATION_TO = 0.1, 10.0
_SPAN = math.log(TRUNCATION_TO / TRUNCATION_FROM)


@dataclass(frozen=True)
class TailCalibration:
    """``E = N · min(1, max(v / N, A (v / N)^b))`` for ranking values ``v`` against ``N``
    sequences, then the weak end's truncation (:meth:`truncate`; none where ``truncation`` is 0).

    >>> cal = TailCalibration(A=0.01, b=0.5)
    >>> [round(float(x), 6) for x in cal.evalues(np.array([1e-6, 1.0, 1e3, 1e9]), 10_000)]
    [0.001, 1.0, 1000.0, 10000.0]
    >>> after = TailCalibration(A=2.0, b=0.8)
    >>> v = np.array([1e-6, 1e-2])
    >>> bool(np.allclose(cal.compose(after).evalues(v, 10_000),
    ...                  after.evalues(cal.evalues(v, 10_000), 10_000)))
    True
    """

    A: float
    b: float
    source: str = ""
    #: the truncation ``k`` and the database size and candidate count it was fitted at (0: none)
    truncation: float = 0.0
    truncation_db: int = 0
    candidates: int = 0

    def __post_init__(self) -> None:
        if not (self.A > 0 and math.isfinite(self.A) and self.b > 0 and math.isfinite(self.b)):
            raise ValueError(f"a tail calibration needs A > 0 and b > 0, got {self.A}, {self.b}")
        if self.truncation and not (0 < self.truncation < _SPAN
                                    and self.truncation_db > self.candidates > 0):
            raise ValueError(f"a truncation needs 0 < k < {_SPAN:.4g} and a fit database larger "
                             f"than its candidates, got k = {self.truncation}, "
                             f"{self.truncation_db} sequences, {self.candidates} candidates")

    def evalues(self, values: Any, db_count: int) -> np.ndarray:
        """Calibrated E-values of ranking values ``values`` against ``db_count`` sequences."""
        n = float(max(db_count, 1))
        v = np.maximum(np.asarray(values, dtype=np.float64), EVALUE_FLOOR)
        log_v = np.log(v) - math.log(n)
        log_rate = np.maximum(log_v, math.log(self.A) + self.b * log_v)
        return self.truncate(n * np.exp(np.minimum(log_rate, 0.0)), db_count)

    def _k(self, db_count: int) -> float:
        """The truncation at ``db_count`` sequences: ``k · s``."""
        if not self.truncation or db_count <= self.candidates:
            return 0.0
        share = math.log(db_count / self.candidates) / math.log(self.truncation_db
                                                                / self.candidates)
        return self.truncation * min(share, 1.0)

    def truncate(self, evalues: Any, db_count: int) -> np.ndarray:
        """E-values (after the power law) deflated by the truncation at ``db_count``."""
        e = np.asarray(evalues, dtype=np.float64)
        k = self._k(db_count)
        if k == 0.0:
            return e
        t = np.clip(np.log(e / TRUNCATION_FROM) / _SPAN, 0.0, 1.0)
        return e * np.exp(-k * t)

    def undo_truncation(self, evalues: Any, db_count: int) -> np.ndarray:
        """The E-values before the truncation deflated them (its exact inverse).

        >>> cal = TailCalibration(1.0, 1.0, truncation=2.0, truncation_db=10_000, candidates=80)
        >>> e = np.array([1e-3, 0.05, 1.0, 8.0, 50.0])
        >>> bool(np.allclose(cal.undo_truncation(cal.truncate(e, 10_000), 10_000), e))
        True
        """
        e = np.asarray(evalues, dtype=np.float64)
        k = self._k(db_count)
        if k == 0.0:
            return e.copy()
        lo = math.log(TRUNCATION_FROM)
        # on the slope ln E' = ln E (1 - k / span) + k lo / span
        mid = np.exp((np.log(np.maximum(e, EVALUE_FLOOR)) - k * lo / _SPAN) / (1.0 - k / _SPAN))
        return np.where(e <= TRUNCATION_FROM, e,
                        np.where(e >= TRUNCATION_TO * math.exp(-k), e * math.exp(k), mid))

    def compose(self, after: TailCalibration) -> TailCalibration:
        """The power law that applies ``self``'s and then ``after``'s (exact where both lie
        above the identity, the tail they are fitted for); without a truncation."""
        return TailCalibration(after.A * self.A ** after.b, self.b * after.b, after.source)

    def with_truncation(self, k: float, db_count: int, candidates: int) -> TailCalibration:
        """This power law with truncation ``k`` fitted at ``db_count`` sequences."""
        return replace(self, truncation=k, truncation_db=db_count, candidates=candidates)


def fit_truncation(evalues: Any, n_queries: int, target: float = 1.0) -> float:
    """The truncation ``k`` that lets ``n_queries`` queries' chance hits (their ``evalues``
    before any truncation, at the fit's database) hold ``target`` hits per query at E ≤ 1: 0
    where they already do.

    >>> e = np.r_[np.full(100, 4.0), np.full(300, 9.0)]  # 100 queries: 1 a query at E <= 4
    >>> k = fit_truncation(e, 100)
    >>> cal = TailCalibration(1.0, 1.0, truncation=k, truncation_db=10_000, candidates=80)
    >>> round(float(cal.truncate(np.array([4.0]), 10_000)[0]), 6)
    1.0
    """
    e = np.sort(np.asarray(evalues, dtype=np.float64))
    need = int(math.ceil(target * n_queries))
    if need < 1 or len(e) < need:
        raise ValueError(f"a truncation fit needs {need} chance hits, got {len(e)}")
    x = float(e[need - 1])  # E-value at which the lists hold ``target`` a query
    if x <= 1.0:
        return 0.0
    t = min(math.log(x / TRUNCATION_FROM) / _SPAN, 1.0)
    return min(math.log(x) / t, 0.999 * _SPAN)


def fit_tail(thresholds: Any, hits: Any, n_queries: int, db_count: int, *,
             min_hits: int = 5, source: str = "") -> TailCalibration:
    """Fit a :class:`TailCalibration` to chance-hit counts.

    ``hits[k]``: the number of chance hits (over all ``n_queries`` queries) with ranking value
    ``≤ thresholds[k]``. Under the calibration their expected number per query is
    ``N A (x / N)^b``, so ``ln(hits / n_queries) = ln(A N^(1-b)) + b ln x``: a weighted least
    squares line (weights ``hits``, a Poisson count's ``ln`` having variance ``1 / hits``) over
    the thresholds with at least ``min_hits`` hits.

    >>> x = np.array([1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0])
    >>> true = TailCalibration(A=3.0, b=0.8)
    >>> hits = true.evalues(x, 10_000) * 1000  # 1,000 queries' expected counts
    >>> cal = fit_tail(x, hits, 1000, 10_000)
    >>> round(cal.A, 6), round(cal.b, 6)
    (3.0, 0.8)
    """
    x = np.asarray(thresholds, dtype=np.float64)
    h = np.asarray(hits, dtype=np.float64)
    keep = h >= min_hits
    if keep.sum() < 2:
        raise ValueError(f"a tail fit needs two thresholds with >= {min_hits} chance hits, "
                         f"got counts {h.tolist()}")
    lx, ly, w = np.log(x[keep]), np.log(h[keep] / n_queries), h[keep]
    X = np.stack([np.ones_like(lx), lx], axis=1) * np.sqrt(w)[:, None]
    (c, b), *_ = np.linalg.lstsq(X, ly * np.sqrt(w), rcond=None)
    return TailCalibration(float(math.exp(c - (1.0 - b) * math.log(db_count))), float(b),
                           source)


def bits_from_evalue(evalues: Any, query_length: int, db_residues: int) -> np.ndarray:
    """BLAST's bit score of an E-value: ``log2(m n / E)`` (``E = m n 2^-bits``).

    >>> float(bits_from_evalue(1.0, 1024, 1024)), float(bits_from_evalue(0.25, 1024, 1024))
    (20.0, 22.0)
    """
    e = np.maximum(np.asarray(evalues, dtype=np.float64), EVALUE_FLOOR)
    # in logs: m n / E overflows for E near the floor
    return math.log2(float(max(query_length, 1))) + math.log2(float(max(db_residues, 1))) - np.log2(e)


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    path = resources.files("homalign.search").joinpath("tail_calibration.json")
    return json.loads(path.read_text()) if path.is_file() else {}


def reported_evalues(values: Any, ranking: str, method: str, query_length: int, db: Any,
                     n_seq: int | None = None, chance: bool = True) -> np.ndarray | None:
    """The E-values a search reports for its ranking values, or None where nothing applies
    (the values are then reported as they are).

    For a method whose ranking key comes with the score's null law over all lengths
    (``Method.chance_params``: ``learned``), the values first become counts of the database's
    chance hits ranked at least as high (:func:`homalign.stats.chance_evalues`, over the
    database's length histogram; a shard's scaled to ``n_seq`` sequences): a per-query monotone
    map, so the ranking stays (``chance=False``: not, for values of another law than the
    method's own). Then the ranking's shipped tail calibration, if any."""
    from homalign.methods import get_method
    from homalign.stats import chance_evalues, length_histogram

    n = len(db) if n_seq is None else int(n_seq)
    v = np.asarray(values, dtype=np.float64)
    m = get_method(method)
    law = m.chance_params() if chance and m.chance_params is not None else None
    key = m.null_params() if law is not None and m.null_params is not None else None
    changed = False
    if law is not None and key is not None and len(v):
        if ("length_histogram",) not in db.cache:
            db.cache[("length_histogram",)] = length_histogram(db.lengths)
        lengths, counts = db.cache[("length_histogram",)]
        v = chance_evalues(v, key, law, query_length, n, (lengths, counts * (n / len(db))))
        changed = True
    tail = calibration_for(ranking)
    if tail is not None:
        v = tail.evalues(v, n)
        changed = True
    return v if changed else None


def _ranking_name(ranking: str) -> str:
    """``ranking`` with its method replaced by ``learned`` where the method ranks with the
    same ranking model (``learned-homologs+profile`` -> ``learned+profile``)."""
    from homalign.methods import METHODS

    cut = min((k for k in (ranking.find("+"), ranking.find("@")) if k >= 0), default=len(ranking))
    base = ranking[:cut]
    own, learned = METHODS.get(base), METHODS.get("learned")
    if (base != "learned" and own is not None and learned is not None
            and own.ranking is not None and own.ranking is learned.ranking):
        return "learned" + ranking[cut:]
    return ranking


def calibration_for(ranking: str) -> TailCalibration | None:
    """The shipped calibration of a ranking (``learned``, ``learned@3``, ...), or None: its
    E-values are then the null law's as they are. A method that ranks with ``learned``'s
    ranking model (``learned-homologs``: only its alignments differ) shares its calibrations."""
    entry = _table().get(_ranking_name(ranking))
    if entry is None:
        return None
    return TailCalibration(float(entry["A"]), float(entry["b"]), str(entry.get("source", "")),
                           float(entry.get("truncation", 0.0)),
                           int(entry.get("truncation_db", 0)), int(entry.get("candidates", 0)))
