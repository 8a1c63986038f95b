"""Ungapped local scores of one query against every database sequence: the learned search's
first pass, which picks the targets its Smith–Waterman pass scores.

The ungapped score of a pair is its best diagonal segment, ``max over (i, j) of H(i, j)`` with
``H(i, j) = max(H(i-1, j-1) + M[q_i, t_j], 0)``, MMseqs2's ungapped prefilter score over every
diagonal. It needs a third of Smith–Waterman's operations per cell (no gap states), so the
compiled int8 kernel (:func:`homalign.dp.lanes_int.int8_ungapped_scores`, on the database's
int8 layout) scores every target in about half the time of the int8 Smith–Waterman pass; the
targets it saturates, and every target on a CPU without the int8 kernel, are scored by the
numba reference here (vectorised along the query, several times slower than the kernel). The
scores are the same either way (tests).

>>> import numpy as np
>>> from homalign.alphabet import encode
>>> q, t = encode("WWWW"), encode("AWWWA")
>>> float(ungapped_scores(q, t, np.array([0, 5]), np.array([0]))[0])  # BLOSUM62: W-W 11
33.0
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from homalign.dp import lanes_int
from homalign.matrices import substitution_matrix
from homalign.search.sw_scores import database_int8_layout, is_every_target, query_profile


@njit(cache=True, nogil=True)
def _ungapped_one(prof: np.ndarray, t: np.ndarray) -> np.float32:
    """The best ungapped local score of the query (``prof``: (alphabet, Lq) scores) and ``t``.
    A column reads only the previous one, and the best is kept per query row, so the loop over
    the query vectorises (no float reduction in it)."""
    Lq = prof.shape[1]
    H = np.zeros((2, Lq + 1), dtype=np.float32)  # columns j-1 and j; H[:, 0] stays 0
    best_row = np.zeros(Lq, dtype=np.float32)
    zero = np.float32(0.0)
    for j in range(len(t)):
        row = prof[t[j]]
        src = H[j % 2]
        dst = H[1 - j % 2]
        for i in range(Lq):
            h = src[i] + row[i]
            h = h if h > zero else zero
            dst[i + 1] = h
            best_row[i] = best_row[i] if best_row[i] > h else h
    best = zero
    for i in range(Lq):
        best = max(best, best_row[i])
    return best


@njit(cache=True, parallel=True)
def _ungapped_many(prof: np.ndarray, codes: np.ndarray, offsets: np.ndarray,
                   targets: np.ndarray) -> np.ndarray:
    out = np.empty(len(targets), dtype=np.float32)
    for n in prange(len(targets)):
        t = targets[n]
        out[n] = _ungapped_one(prof, codes[offsets[t]:offsets[t + 1]])
    return out


def ungapped_scores(query_codes: np.ndarray, codes: np.ndarray, offsets: np.ndarray,
                    targets: np.ndarray, *, matrix: str = "BLOSUM62", db=None,  # noqa: ANN001
                    ) -> np.ndarray:
    """float32 best ungapped local scores of the query against ``targets`` (indices into
    ``offsets`` of the packed ``codes``). The int8 kernel runs where it can (an integer matrix;
    ``db``: the :class:`homalign.search.SequenceDB` of ``codes``, whose int8 layout is reused
    when ``targets`` are all of it); the saturated targets, or all of them elsewhere, go to the
    numba reference."""
    q = np.ascontiguousarray(query_codes, dtype=np.int64)
    tg = np.ascontiguousarray(targets, dtype=np.int64)
    M = substitution_matrix(matrix)
    prof = query_profile(q, matrix)
    limit = lanes_int.int8_ungapped_limit(M)
    if not lanes_int.INT8_LANES or limit is None or len(tg) == 0 or len(q) == 0:
        return _ungapped_many(prof, codes, offsets, tg)
    offs = np.asarray(offsets)
    starts, lengths = offs[tg], offs[tg + 1] - offs[tg]
    every = db is not None and is_every_target(db, tg)
    layout = database_int8_layout(db) if every else None  # the Smith–Waterman pass's too
    scores, sat = lanes_int.int8_ungapped_scores(M, limit, q, codes, starts, lengths, layout)
    if sat.any():
        scores[sat] = _ungapped_many(prof, codes, offsets, tg[sat])
    return scores


__all__ = ["ungapped_scores"]
