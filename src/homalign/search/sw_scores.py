"""Compiled score-only Smith–Waterman of one query against many packed database sequences.

For integer matrices and gap costs, :func:`homalign.dp.lanes.score_local_query_packed` runs it
on an AVX2 or AVX-512 host (int8 lanes, 32 or 64 targets a vector, straight from the database's
packed codes; int16 and float32 for the few past int8's limit; the same scores), else pyopal
(Opal's SSE4.1 database search) when the database object is given; the numba kernel here is the
reference.

The search engine's fast path for substitution-matrix local alignment (method ``sw``): no
(Lq, Lt) score matrix or GapCosts object is built per target; a query profile (23, Lq) is looked
up while the DP runs over the packed database codes, in parallel over targets. Gap costs follow
BLAST's convention (a gap of length k costs ``open + k * extend``), the same recurrences as
:func:`homalign.dp.align_score` in local mode with uniform gaps, so the scores are identical
(tests check this).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from homalign.alphabet import N_CODES
from homalign.dp import lanes_int
from homalign.dp.lanes import CODE_TABLE, score_local_query_packed
from homalign.matrices import substitution_matrix


@njit(cache=True)
def _sw_one(prof: np.ndarray, t: np.ndarray, go: np.float32, ge: np.float32) -> np.float32:
    Lq = prof.shape[1]
    H = np.zeros(Lq + 1, dtype=np.float32)
    E = np.full(Lq + 1, np.float32(-1e30), dtype=np.float32)
    best = np.float32(0.0)
    zero = np.float32(0.0)
    neg = np.float32(-1e30)
    for j in range(len(t)):
        row = prof[t[j]]
        diag = zero  # H[i-1, j-1]
        F = neg
        hleft = zero  # H[i-1, j] (current column, previous i)
        for i in range(1, Lq + 1):
            # E: target residue j against a gap (moving along j), F: query residue against a gap
            e = max(H[i] - go, E[i] - ge)
            E[i] = e
            F = max(hleft - go, F - ge)
            h = diag + row[i - 1]
            if e > h:
                h = e
            if F > h:
                h = F
            if h < zero:
                h = zero
            diag = H[i]
            H[i] = h
            hleft = h
            if h > best:
                best = h
    return best


@njit(cache=True, parallel=True)
def _sw_many(prof: np.ndarray, codes: np.ndarray, offsets: np.ndarray, targets: np.ndarray,
             go: np.float32, ge: np.float32) -> np.ndarray:
    out = np.empty(len(targets), dtype=np.float32)
    for n in prange(len(targets)):
        t = targets[n]
        out[n] = _sw_one(prof, codes[offsets[t]:offsets[t + 1]], go, ge)
    return out


def query_profile(query_codes: np.ndarray, matrix: str = "BLOSUM62") -> np.ndarray:
    """float32 (23, Lq): row ``a`` holds the score of residue ``a`` against each query position."""
    M = substitution_matrix(matrix)
    return np.ascontiguousarray(M[:, query_codes], dtype=np.float32)


def _opal_usable(matrix: str, gap_open: float, gap_extend: float) -> bool:
    try:
        import pyopal  # noqa: F401
    except ImportError:
        return False
    M = substitution_matrix(matrix)
    return bool(np.all(M == np.round(M)) and float(gap_open).is_integer()
                and float(gap_extend).is_integer() and gap_open >= 0 and gap_extend > 0)


def _opal_database(db):  # noqa: ANN001, ANN202
    """The database's sequences as a pyopal Database (built once per database object)."""
    import pyopal

    from homalign.alphabet import ALPHABET

    key = "pyopal-database"
    if key not in db.cache:
        db.cache[key] = pyopal.Database([db.residues(i) for i in range(len(db))],
                                        alphabet=pyopal.Alphabet(ALPHABET))
    return db.cache[key]


_POOLS: dict[tuple[int, int], object] = {}


def _opal_pool(threads: int):  # noqa: ANN202
    """A thread pool for pyopal's chunks, kept for the process (pyopal otherwise starts and
    joins a new pool every call: milliseconds a query). None for one thread (pyopal then runs
    in the calling thread). Keyed by process id too: a forked child gets its own."""
    if threads <= 1:
        return None
    import multiprocessing.pool
    import os

    key = (os.getpid(), threads)
    if key not in _POOLS:
        if not _POOLS:
            import atexit

            atexit.register(_close_pools)
        _POOLS[key] = multiprocessing.pool.ThreadPool(threads)
    return _POOLS[key]


def _close_pools() -> None:
    """Stop the kept pools at exit, while the interpreter is whole: a pool left running is
    closed by its ``__del__`` during shutdown, which fails (a traceback on stderr)."""
    for pool in _POOLS.values():
        pool.terminate()
    _POOLS.clear()


def _opal_scores(query_codes: np.ndarray, db, targets: np.ndarray, matrix: str,  # noqa: ANN001
                 gap_open: float, gap_extend: float) -> np.ndarray:
    import numba
    import pyopal
    import scoring_matrices

    from homalign.alphabet import ALPHABET

    if len(targets) == 0:
        return np.zeros(0, dtype=np.float32)
    M = substitution_matrix(matrix).astype(int).tolist()
    sm = scoring_matrices.ScoringMatrix(M, alphabet=ALPHABET, name=matrix)
    query = "".join(ALPHABET[c] for c in np.asarray(query_codes))
    sub = _opal_database(db).extract([int(t) for t in targets])
    # Opal's opening penalty is charged with the first gap residue: BLAST's open + extend
    threads = min(numba.get_num_threads(), len(targets))
    res = pyopal.align(query, sub, sm, gap_open=int(gap_open + gap_extend),
                       gap_extend=int(gap_extend), mode="score", algorithm="sw",
                       threads=threads, pool=_opal_pool(threads), ordered=True)
    return np.fromiter((r.score for r in res), dtype=np.float32, count=len(targets))


def is_every_target(db, targets: np.ndarray) -> bool:  # noqa: ANN001
    """Whether ``targets`` are the indices of every sequence of ``db``, in order."""
    return len(targets) == len(db) and np.array_equal(targets, np.arange(len(db)))


def database_int8_layout(db) -> lanes_int.Int8Layout:  # noqa: ANN001
    """The int8 kernels' layout of every sequence of ``db`` (:func:`lanes_int.int8_layout`),
    made on first use and kept in ``db.cache`` for the database's later queries."""
    key = ("int8_layout", lanes_int.INT8_LANES)
    if key not in db.cache:
        offs = np.asarray(db.offsets)
        db.cache[key] = lanes_int.int8_layout(db.codes, offs[:-1], np.diff(offs))
    return db.cache[key]


def sw_scores(query_codes: np.ndarray, codes: np.ndarray, offsets: np.ndarray,
              targets: np.ndarray, *, matrix: str = "BLOSUM62", gap_open: float = 11.0,
              gap_extend: float = 1.0, db=None) -> np.ndarray:  # noqa: ANN001
    """float32 local alignment scores of the query against ``targets`` (indices into offsets).

    :func:`homalign.dp.lanes.score_local_query_packed` computes them from the packed ``codes``
    (alphabet codes, all below the matrix's size; int8 lanes for an integer-valued matrix and
    gap costs on an AVX2 or AVX-512 VBMI host, then int16 or float32 for the targets past int8's
    limit; else float32, 16 targets a vector), except that without an int8 kernel, with ``db``
    (the :class:`homalign.search.SequenceDB` that ``codes``/``offsets`` belong to) and integer
    costs, pyopal (Opal's inter-sequence kernels) does; for negative gap costs, the numba kernel
    below (the reference). The scores are the same in every case (tests).
    """
    if (db is not None and not lanes_int.INT8_LANES
            and _opal_usable(matrix, gap_open, gap_extend)):
        return _opal_scores(query_codes, db, np.asarray(targets), matrix, gap_open, gap_extend)
    tg = np.ascontiguousarray(targets, dtype=np.int64)
    go, ge = np.float32(gap_open + gap_extend), np.float32(gap_extend)
    M = substitution_matrix(matrix)
    if (go >= ge >= 0 and N_CODES <= M.shape[0] < CODE_TABLE and np.all(np.isfinite(M))
            and len(tg)):
        # homalign.dp.lanes' kernels (int16 or float32): the same scores as _sw_many (tests)
        offs = np.asarray(offsets)
        starts, lengths = offs[tg], offs[tg + 1] - offs[tg]
        layout = None
        if db is not None and is_every_target(db, tg):
            def layout() -> lanes_int.Int8Layout:  # every target: the database keeps it
                return database_int8_layout(db)
        return score_local_query_packed(np.asarray(query_codes), codes, starts, lengths, M,
                                        float(gap_open), float(ge), first_gap=float(go),
                                        layout=layout)
    prof = query_profile(np.asarray(query_codes), matrix)
    return _sw_many(prof, codes, offsets, tg, go, ge)
