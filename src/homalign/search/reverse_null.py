"""The reverse null: what a hit scores against its target read backwards.

A query and a target of the same biased composition (proline-rich, coiled coil, low complexity)
or of the same internal repeats score well in either direction; true homology does not survive
the reversal of one sequence. SAM's reverse-sequence null model scores each hit against the
reversed target for that reason (Karplus, Karchin & Hughey, Bioinformatics 2005). homalign uses
it as a guard on strong hits: the reversed score's excess over a margin, in the units of the
score's own null law, is taken off the hit (:func:`homalign.search.engine.search` for the learned
ranking, :mod:`homalign.search.profile_round` for its PSSM round), so a likeness of composition
no longer reads as homology and a hit without one is left as it is.

For a Karlin-Altschul score the unit is ``1 / lam``: ``z = lam S - ln(K m n)`` is a standard
Gumbel variable for unrelated sequences, and ``E = K m n exp(-lam S)`` grows by ``e`` for each
unit taken off::

    excess = max(0, z_reversed - margin),   E' = E exp(excess)

>>> from homalign.stats import karlin_altschul
>>> ka = karlin_altschul("BLOSUM62", 11.0, 1.0)
>>> m, n = 300, np.array([250, 250])
>>> s = (np.log(ka.K * m * n) + np.array([2.0, 7.5])) / ka.lam  # z = 2 and 7.5
>>> [round(float(x), 6) for x in ka_excess(s, ka, m, n, margin=5.0)]
[0.0, 2.5]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from homalign.search.database import SequenceDB


def reversal(lengths: Any) -> np.ndarray:
    """The index that reads each of several sequences packed back to back (``lengths``)
    backwards.

    >>> reversal([3, 2]).tolist()
    [2, 1, 0, 4, 3]
    """
    lens = np.asarray(lengths, dtype=np.int64)
    ends = np.cumsum(lens)
    total = int(ends[-1]) if len(lens) else 0
    return np.repeat(ends + ends - lens - 1, lens) - np.arange(total, dtype=np.int64)


def reversed_codes(db: SequenceDB, targets: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, offsets)``: the residue codes of ``targets`` (database indices), each read
    backwards, packed back to back in that order.

    >>> from homalign.sequence import Sequence
    >>> db = SequenceDB.from_sequences([Sequence("a", "ACD"), Sequence("b", "EF")])
    >>> codes, offsets = reversed_codes(db, [1, 0])
    >>> bool((codes == db.codes[[4, 3, 2, 1, 0]]).all()), offsets.tolist()
    (True, [0, 2, 5])
    """
    t = np.asarray(targets, dtype=np.int64)
    starts = db.offsets[t]
    lens = db.offsets[t + 1] - starts
    ends = np.cumsum(lens)
    forward = np.repeat(starts - (ends - lens), lens) + np.arange(int(lens.sum()))
    return (np.ascontiguousarray(db.codes[forward[reversal(lens)]]),
            np.concatenate(([0], ends)).astype(np.int64))


def reversed_database(db: SequenceDB, targets: Any) -> SequenceDB:
    """A database of ``targets`` read backwards (sequence ``i`` is ``targets[i]`` reversed)."""
    codes, offsets = reversed_codes(db, targets)
    ids = [f"reversed{i}" for i in range(len(offsets) - 1)]
    return SequenceDB(ids, [""] * len(ids), codes, offsets)


def ka_excess(scores: Any, params: Any, query_length: int, target_lengths: Any,
              margin: float) -> np.ndarray:
    """``max(0, lam S - ln(K m n) - margin)`` of Karlin-Altschul scores ``S`` (module docstring)."""
    s = np.asarray(scores, dtype=np.float64)
    n = np.asarray(target_lengths, dtype=np.float64)
    z = params.lam * s - np.log(params.K * float(query_length) * n)
    return np.maximum(z - margin, 0.0)


def reverse_excess(search: Any, query: Any, db: SequenceDB, targets: Any, margin: float,
                   method: str, params: Any, **options: Any) -> np.ndarray:
    """Per target: the query's ``method`` score (Karlin-Altschul ``params``) against the target
    read backwards, as its excess over ``margin`` (:func:`ka_excess`). ``search``:
    :func:`homalign.search.engine.search` (which imports this module), ``options`` as it takes
    them, e.g. a PSSM's ``query_rep``."""
    import math

    t = np.asarray(targets, dtype=np.int64)
    if len(t) == 0:
        return np.zeros(0)
    s = np.zeros(len(t))
    for h in search(query, reversed_database(db, t), method=method, evalue=math.inf,
                    max_hits=None, candidates=np.arange(len(t)), traceback=False,
                    params=params, **options):
        s[h.target_index] = h.score
    return ka_excess(s, params, len(query), db.lengths[t], margin)


def sw_reverse_excess(query: Any, db: SequenceDB, targets: Any, margin: float,
                      matrix: str = "BLOSUM62", gap_open: float = 11.0,
                      gap_extend: float = 1.0) -> np.ndarray:
    """Per target: the Smith-Waterman score of ``query`` (a :class:`homalign.sequence.Sequence`)
    against the target read backwards, as its excess over ``margin`` (:func:`ka_excess`; the
    compiled kernels of :func:`homalign.search.sw_scores.sw_scores`)."""
    from homalign.search.sw_scores import sw_scores
    from homalign.stats import karlin_altschul

    t = np.asarray(targets, dtype=np.int64)
    if len(t) == 0:
        return np.zeros(0)
    codes, offsets = reversed_codes(db, t)
    s = sw_scores(query.codes, codes, offsets, np.arange(len(t)), matrix=matrix,
                  gap_open=gap_open, gap_extend=gap_extend)
    return ka_excess(s, karlin_altschul(matrix, gap_open, gap_extend), len(query),
                     db.lengths[t], margin)


__all__ = ["ka_excess", "reversal", "reverse_excess", "reversed_codes", "reversed_database",
           "sw_reverse_excess"]
