"""MMseqs2-style prefilter: similar k-mer matches, then ungapped diagonal scores.

For each query position the k-mer there (k = 3 by default) is expanded into its *neighbourhood*:
every k-mer whose BLOSUM62 score against it is at least ``threshold`` (the exact k-mer is always
included). A database k-mer that is a neighbour of the query's k-mer at ``i`` puts a hit on the
diagonal ``j - i`` of its target. Two ways find the hits, with the same scores: BLAST's scan
streams every database k-mer through the query's neighbourhood table (the default), and the
index walk reads each neighbour's postings (sequence, position) from the database's k-mer index
(``index=True``: a cost per hit, not per database residue). A diagonal is
scored when it collects two non-overlapping hits within ``window`` residues (BLAST's two-hit rule;
one hit suffices when the query or target is shorter than two k-mers): the hit is extended without
gaps in both directions until the running score drops ``xdrop`` below its best (BLAST's ungapped
X-drop extension), and later hits inside the extended segment are skipped. A target's prefilter
score is its best ungapped segment score; targets scoring at least ``min_score`` are kept, best first, at most
``max_seqs`` of them (MMseqs2's ``--min-ungapped-score`` and ``--max-seqs``).

All per-hit work runs in numba; nothing here loops over cells in Python.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from homalign.alphabet import N_AA, N_CODES
from homalign.matrices import substitution_matrix

DEFAULT_K = 3
DEFAULT_THRESHOLD = 11.0
DEFAULT_WINDOW = 40
DEFAULT_MIN_SCORE = 15.0
DEFAULT_MAX_SEQS = 1000
DEFAULT_XDROP = 20.0


@dataclass(frozen=True)
class KmerIndex:
    """CSR postings: k-mer ``w``'s occurrences are ``seq[start[w]:start[w+1]]`` (sequence index)
    and ``pos`` (position in that sequence), sorted by sequence then position.

    A k-mer id is the base-20 number of its residue codes; k-mers with B, Z or X are not indexed.
    """

    k: int
    start: np.ndarray  # int64 (20**k + 1)
    seq: np.ndarray  # int32
    pos: np.ndarray  # int32

    @property
    def n_postings(self) -> int:
        return int(len(self.seq))


def kmer_ids(codes: np.ndarray, k: int) -> np.ndarray:
    """int64 id of the k-mer starting at each position (len - k + 1 values; -1 if it holds B/Z/X)."""
    n = len(codes) - k + 1
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    c = codes.astype(np.int64)
    ids = np.zeros(n, dtype=np.int64)
    bad = np.zeros(n, dtype=bool)
    for s in range(k):
        part = c[s:s + n]
        ids = ids * N_AA + np.minimum(part, N_AA - 1)
        bad |= part >= N_AA
    ids[bad] = -1
    return ids


@njit(cache=True)
def _counting_sort(ids: np.ndarray, offsets: np.ndarray, k: int,
                   n_words: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Postings of the packed database's k-mer ids (:func:`kmer_ids`; -1 is skipped, and so is
    a k-mer that runs past its sequence's end), positions in database order, so each word's
    postings are sorted by sequence, then position."""
    n_seqs = len(offsets) - 1
    counts = np.zeros(n_words + 1, dtype=np.int64)
    for t in range(n_seqs):
        for g in range(offsets[t], offsets[t + 1] - k + 1):
            if ids[g] >= 0:
                counts[ids[g] + 1] += 1
    start = np.cumsum(counts)
    fill = start[:-1].copy()
    seq = np.empty(start[-1], dtype=np.int32)
    pos = np.empty(start[-1], dtype=np.int32)
    for t in range(n_seqs):
        for g in range(offsets[t], offsets[t + 1] - k + 1):
            w = ids[g]
            if w >= 0:
                seq[fill[w]] = t
                pos[fill[w]] = g - offsets[t]
                fill[w] += 1
    return start, seq, pos


def build_kmer_index(codes: np.ndarray, offsets: np.ndarray, k: int = DEFAULT_K) -> KmerIndex:
    """Index every k-mer of the packed database (a counting sort of :func:`kmer_ids`)."""
    start, seq, pos = _counting_sort(kmer_ids(np.asarray(codes), k),
                                     np.ascontiguousarray(offsets, dtype=np.int64), int(k),
                                     N_AA ** k)
    return KmerIndex(k, start, seq, pos)


@njit(cache=True)
def _words_above(R: np.ndarray, own: np.ndarray, threshold: float, out: np.ndarray) -> int:
    """The k-mers ``b`` with ``sum_s R[s, b_s] >= threshold``, and ``own`` itself (its digits;
    -1: none), written to ``out`` in ascending id order; returns their number. ``R`` (k, N_AA)
    holds each word position's scores: the matrix rows of a query k-mer's residues, or a
    profile's rows. A depth-first walk over ``b``'s digits that leaves a prefix as soon as the
    best completion (the rows' maxima) falls short; the sums are taken position by position, as
    a full enumeration would."""
    k = R.shape[0]
    suffix = np.zeros(k + 1)
    for s in range(k - 1, -1, -1):
        suffix[s] = suffix[s + 1] + R[s].max()
    digit = np.zeros(k, dtype=np.int64)
    partial = np.zeros(k + 1)
    exact = np.ones(k + 1, dtype=np.bool_)  # the prefix equals own's
    n = 0
    s = 0
    digit[0] = -1
    while s >= 0:
        digit[s] += 1
        if digit[s] == N_AA:
            s -= 1
            continue
        partial[s + 1] = partial[s] + R[s, digit[s]]
        exact[s + 1] = exact[s] and digit[s] == own[s]
        if not exact[s + 1] and partial[s + 1] + suffix[s + 1] < threshold:
            continue
        if s == k - 1:
            if partial[k] >= threshold or exact[k]:
                w = 0
                for r in range(k):
                    w = w * N_AA + digit[r]
                out[n] = w
                n += 1
        else:
            s += 1
            digit[s] = -1
    return n


@njit(cache=True)
def _profile_words(S: np.ndarray, k: int, threshold: float,
                   qids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(word, query position) pairs, positions ascending: :func:`_words_above` of the profile's
    rows ``S[i:i + k]`` and the query's own k-mer ``qids[i]`` at each start ``i``."""
    n = S.shape[0] - k + 1
    buf = np.empty(N_AA ** k, dtype=np.int32)
    own = np.empty(k, dtype=np.int64)
    cap = 1024
    words = np.empty(cap, dtype=np.int32)
    poss = np.empty(cap, dtype=np.int32)
    m = 0
    for i in range(n):
        x = qids[i]
        for s in range(k - 1, -1, -1):
            own[s] = x % N_AA if x >= 0 else -1
            x = x // N_AA if x >= 0 else x
        c = _words_above(S[i:i + k], own, threshold, buf)
        while m + c > cap:
            cap *= 2
            words = np.concatenate((words, np.empty(cap - len(words), dtype=np.int32)))
            poss = np.concatenate((poss, np.empty(cap - len(poss), dtype=np.int32)))
        words[m:m + c] = buf[:c]
        poss[m:m + c] = i
        m += c
    return words[:m], poss[:m]


def seed_words(query_codes: np.ndarray, k: int = DEFAULT_K,
               threshold: float = DEFAULT_THRESHOLD, *, matrix: str = "BLOSUM62",
               profile: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The query's seeds, (word, query position) pairs in position order: at each position the
    k-mers scoring at least ``threshold`` against the query's k-mer there (its matrix rows,
    summed position by position), and that k-mer itself. ``profile`` (Lq, >= 20) scores in the
    matrix's units (a PSSM) replace the matrix rows, as PSI-BLAST seeds its later rounds; a
    sequence's k-mers holding B, Z or X seed nothing, while a profile seeds at every position.
    A sequence's seeds equal its matrix rows' (``profile=M[q]``) wherever it has no B, Z or X."""
    q = np.ascontiguousarray(query_codes, dtype=np.uint8)
    if profile is None:
        M = np.asarray(substitution_matrix(matrix), dtype=np.float64)
        S = np.ascontiguousarray(M[q][:, :N_AA])
    else:
        S = np.ascontiguousarray(np.asarray(profile, dtype=np.float64)[:, :N_AA])
        if S.shape[0] != len(q):
            raise ValueError(f"profile has {S.shape[0]} rows for a query of {len(q)} residues")
    if len(q) < k:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
    qids = kmer_ids(q, k)
    words, poss = _profile_words(S, k, float(threshold), qids)
    if profile is None:
        keep = qids[poss] >= 0
        words, poss = words[keep], poss[keep]
    return np.ascontiguousarray(words), np.ascontiguousarray(poss)


def seed_table(query_codes: np.ndarray, k: int = DEFAULT_K,
               threshold: float = DEFAULT_THRESHOLD, *, matrix: str = "BLOSUM62",
               profile: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`seed_words` as a table (CSR: word ``w`` seeds at query positions
    ``pos[start[w]:start[w + 1]]``, ascending), what the scan looks database k-mers up in."""
    words, poss = seed_words(query_codes, k, threshold, matrix=matrix, profile=profile)
    order = np.argsort(words, kind="stable")
    start = np.concatenate(([0], np.cumsum(np.bincount(words, minlength=N_AA ** k))))
    return start.astype(np.int64), poss[order]


@njit(cache=True, inline="always")
def _xdrop_extend(P: np.ndarray, t: np.ndarray, i: int, j: int,
                  xdrop: float) -> tuple[float, int]:
    """Ungapped X-drop extension through (i, j) in both directions (BLAST's ungapped extension).
    ``P`` is the query's score profile, ``P[a, c] = M[q[a], c]`` (one load a step).

    Returns the best segment score and the query position just after the segment's right end.
    The running best is a max and its end a select, not a branch: on a chance hit, whether a
    step improves the score is a coin toss that a branch predictor loses.
    """
    best_r = 0.0
    run = 0.0
    end = i
    for s in range(min(P.shape[0] - i, len(t) - j)):
        run += P[i + s, t[j + s]]
        end = i + s + 1 if run > best_r else end
        best_r = max(best_r, run)
        if best_r - run > xdrop:
            break
    best_l = 0.0
    run = 0.0
    for s in range(1, min(i, j) + 1):
        run += P[i - s, t[j - s]]
        best_l = max(best_l, run)
        if best_l - run > xdrop:
            break
    return best_r + best_l, end


@njit(cache=True, inline="always")
def _diagonal_hit(last: np.ndarray, slot: int, i: int, j: int, P: np.ndarray,
                  tseq: np.ndarray, k: int, window: int, one_hit: bool,
                  xdrop: float) -> float:
    """One k-mer hit at (i, j) on diagonal ``slot``: BLAST's two-hit rule and X-drop
    extension. ``last[slot]``: 0 no hit yet, ``i + 1 > 0`` the last hit's query position,
    ``-(e + 1) < 0`` extended up to e. Returns the extension's score, or -1 when none fires."""
    prev = last[slot]
    if prev < 0:
        if i < -prev - 1:
            return -1.0  # inside a segment already extended
        prev = 0
    fire = False
    if one_hit:
        fire = True
    elif prev > 0:
        dist = i - (prev - 1)
        if dist >= k and dist <= window:
            fire = True
        elif dist > window:
            last[slot] = i + 1
    else:
        last[slot] = i + 1
    if not fire:
        return -1.0
    sc, end = _xdrop_extend(P, tseq, i, j, xdrop)
    last[slot] = -(max(end, i + k) + 1)
    return sc


@njit(cache=True, inline="always")
def _scan_hit(last: np.ndarray, slot: int, i: int, j: int, P: np.ndarray, tseq: np.ndarray,
              k: int, window: int, one_hit: bool, xdrop: float) -> float:
    """:func:`_diagonal_hit` with the bookkeeping of a hit that does not fire (nearly all of
    them) written as selects, not branches: the scan's reorder of the same rules (tested
    against the index walk, which uses :func:`_diagonal_hit`)."""
    prev = last[slot]
    inside = (prev < 0) & (i < -prev - 1)
    p = max(prev, 0)
    dist = i - p + 1
    fire = (~inside) & (one_hit | ((p > 0) & (dist >= k) & (dist <= window)))
    keep = inside | ((p > 0) & (dist < k))
    last[slot] = prev if keep else i + 1
    if not fire:
        return -1.0
    sc, end = _xdrop_extend(P, tseq, i, j, xdrop)
    last[slot] = -(max(end, i + k) + 1)
    return sc


@njit(cache=True)
def _walk_kernel(P: np.ndarray, words: np.ndarray, poss: np.ndarray, idx_start: np.ndarray,
                 idx_seq: np.ndarray, idx_pos: np.ndarray, db_codes: np.ndarray,
                 db_offsets: np.ndarray, k: int, window: int, two_hit: bool,
                 xdrop: float) -> np.ndarray:
    """The index walk: the postings of each (word, query position) pair, positions ascending,
    bucketed by target (a counting sort that keeps their order), then each target's hits in
    turn. Hits on one diagonal arrive in increasing query position, as in the scan, so the
    two-hit and extension rules give the same scores; the cost grows with the hits, not with
    the database."""
    n_seqs = len(db_offsets) - 1
    Lq = P.shape[0]
    start = np.zeros(n_seqs + 1, dtype=np.int64)
    for m in range(len(words)):
        v = words[m]
        for h in range(idx_start[v], idx_start[v + 1]):
            start[idx_seq[h] + 1] += 1
    for t in range(n_seqs):
        start[t + 1] += start[t]
    fill = start[:-1].copy()
    hit_i = np.empty(start[-1], dtype=np.int32)
    hit_j = np.empty(start[-1], dtype=np.int32)
    for m in range(len(words)):
        v = words[m]
        i = poss[m]
        for h in range(idx_start[v], idx_start[v + 1]):
            t = idx_seq[h]
            f = fill[t]
            hit_i[f] = i
            hit_j[f] = idx_pos[h]
            fill[t] = f + 1
    longest = 0
    for t in range(n_seqs):
        longest = max(longest, db_offsets[t + 1] - db_offsets[t])
    # 0: no hit yet; i+1 > 0: last hit at query position i; -(e+1) < 0: extended up to e
    last = np.zeros(longest + Lq, dtype=np.int32)  # diagonal j - i + Lq - 1
    best = np.zeros(n_seqs, dtype=np.float32)
    for t in range(n_seqs):
        a, b = start[t], start[t + 1]
        o = db_offsets[t]
        Lt = db_offsets[t + 1] - o
        one_hit = (not two_hit) or Lt < 2 * k or Lq < 2 * k
        if b - a == 0 or (b - a == 1 and not one_hit):
            continue  # a lone hit never fires under the two-hit rule
        tseq = db_codes[o:o + Lt]
        top = np.float32(0.0)
        for u in range(a, b):
            sc = _diagonal_hit(last, hit_j[u] - hit_i[u] + Lq - 1, hit_i[u], hit_j[u], P, tseq,
                               k, window, one_hit, xdrop)
            if sc > top:
                top = np.float32(sc)
        for u in range(a, b):  # only the touched diagonals go back to 0
            last[hit_j[u] - hit_i[u] + Lq - 1] = 0
        best[t] = top
    return best


@njit(cache=True, parallel=True)
def _scan_kernel(P: np.ndarray, tab_start: np.ndarray, tab_pos: np.ndarray,
                 db_codes: np.ndarray, db_offsets: np.ndarray, k: int,
                 window: int, two_hit: bool, xdrop: float, n_aa: int) -> np.ndarray:
    """BLAST's scan: stream every database sequence once, look each of its k-mers up in the
    query's neighbourhood table. Hits on one diagonal arrive in increasing query position, as in
    :func:`_walk_kernel`, so the two-hit and extension rules give the same scores. Targets
    go in chunks, each with its own scratch rows (diagonal states, the target's k-mer ids).
    ``tab_start`` has one extra empty word, ``n_aa ** k``, that k-mers with B, Z or X map to.
    Most k-mers (~80%) have no query hit: their positions are dropped first in a loop without a
    branch, since branching on them, at random, cost a third of the scan."""
    n_seqs = len(db_offsets) - 1
    Lq = P.shape[0]
    empty = n_aa ** k
    best = np.zeros(n_seqs, dtype=np.float32)
    longest = 0
    for t in range(n_seqs):
        longest = max(longest, db_offsets[t + 1] - db_offsets[t])
    # whether a word has query hits, one byte each (L1-resident: two loads from tab_start per
    # database k-mer cost ~15% of the scan)
    has = np.zeros(len(tab_start) - 1, dtype=np.uint8)
    for w in range(len(has)):
        has[w] = tab_start[w + 1] > tab_start[w]
    chunk = 64
    for c in prange((n_seqs + chunk - 1) // chunk):
        last = np.empty(longest + Lq, dtype=np.int32)  # diagonal j - i + Lq - 1
        ids = np.empty(longest, dtype=np.int32)  # the target's k-mer ids (-1: B, Z or X)
        high = np.empty(longest, dtype=np.int32)  # the largest code in each k-mer
        js = np.empty(longest, dtype=np.int32)  # the target positions whose k-mer has hits
        hs = np.empty(longest, dtype=np.int64)  # and their words' ranges in the table
        he = np.empty(longest, dtype=np.int64)
        for t in range(c * chunk, min(n_seqs, (c + 1) * chunk)):
            a = db_offsets[t]
            Lt = db_offsets[t + 1] - a
            if Lt < k:
                continue
            tseq = db_codes[a:a + Lt]
            nk = Lt - k + 1
            if k == 3:  # the default: one pass that vectorises
                for j in range(nk):
                    c0 = np.int32(tseq[j])
                    c1 = np.int32(tseq[j + 1])
                    c2 = np.int32(tseq[j + 2])
                    w = (c0 * n_aa + c1) * n_aa + c2
                    ids[j] = w if max(c0, max(c1, c2)) < n_aa else empty
            else:
                ids[:nk] = 0
                high[:nk] = 0
                for s in range(k):  # a digit of every k-mer at a time: loops that vectorise
                    for j in range(nk):
                        code = np.int32(tseq[j + s])
                        high[j] = max(high[j], code)
                        ids[j] = ids[j] * n_aa + min(code, n_aa - 1)
                for j in range(nk):
                    if high[j] >= n_aa:
                        ids[j] = empty
            last[:Lt + Lq] = 0
            one_hit = (not two_hit) or Lt < 2 * k or Lq < 2 * k
            top = np.float32(0.0)
            n = 0
            for j in range(nk):
                js[n] = j
                n += has[ids[j]]
            for u in range(n):  # the hits' table ranges first: no dependent loads below
                w = ids[js[u]]
                hs[u] = tab_start[w]
                he[u] = tab_start[w + 1]
            for u in range(n):
                j = js[u]
                for h in range(hs[u], he[u]):
                    i = tab_pos[h]
                    sc = _scan_hit(last, j - i + Lq - 1, i, j, P, tseq, k, window,
                                   one_hit, xdrop)
                    if sc > top:
                        top = np.float32(sc)
            best[t] = top
    return best


#: the last few scans of this process: (database, arguments) -> scores. An iterative search
#: prefilters the same query once per round (``build_msa``'s rounds, then the final ranking)
_RECENT: list[tuple[object, tuple, np.ndarray]] = []
_RECENT_LOCK = threading.Lock()
RECENT_SCANS = 2


def prefilter_scores(query_codes: np.ndarray, db, *, matrix: str = "BLOSUM62",
                     threshold: float = DEFAULT_THRESHOLD, window: int = DEFAULT_WINDOW,
                     two_hit: bool = True, xdrop: float = DEFAULT_XDROP,
                     profile: np.ndarray | None = None, k: int | None = None,
                     index: bool = False) -> np.ndarray:
    """float32 best ungapped diagonal score of every database sequence (0: no k-mer hit); a
    new array each call, the scan itself repeated only when the query, database or options
    differ from the last :data:`RECENT_SCANS` calls'. ``profile`` (Lq, 23) position-specific
    scores in the matrix's units (a PSSM) replace the matrix rows of the query's residues, for
    the seeds (:func:`seed_words`) and the extensions, as PSI-BLAST seeds its later rounds.
    ``k``: the word length (default: the database's). ``index``: walk the database's k-mer
    index (:meth:`SequenceDB.kmer_index`, built once per process) instead of scanning the
    database: the same scores, at a cost that grows with the hits rather than the database, so
    it pays where the neighbourhood is small (few hits a query)."""
    k = db.k if k is None else int(k)
    if not 1 <= k <= 5:
        raise ValueError(f"the word length k must be 1 to 5, got {k}")
    q = np.ascontiguousarray(query_codes, dtype=np.uint8)
    if profile is not None:
        profile = np.ascontiguousarray(profile, dtype=np.float32)
        if profile.ndim != 2 or profile.shape[0] != len(q) or profile.shape[1] < N_CODES:
            raise ValueError(f"profile must be ({len(q)}, {N_CODES}) scores, got "
                             f"{profile.shape}")
    key = (q.tobytes(), matrix, float(threshold), int(window), bool(two_hit), float(xdrop),
           None if profile is None else profile.tobytes(), k, bool(index))
    with _RECENT_LOCK:
        for held, k_, scores in _RECENT:
            if held is db and k_ == key:
                return scores.copy()
    run = _walk if index else _scan
    scores = run(q, db, k, matrix, threshold, window, two_hit, xdrop, profile)
    with _RECENT_LOCK:
        _RECENT.insert(0, (db, key, scores))
        del _RECENT[RECENT_SCANS:]
    return scores.copy()


def _scan(q: np.ndarray, db, k: int, matrix: str, threshold: float, window: int,
          two_hit: bool, xdrop: float, profile: np.ndarray | None) -> np.ndarray:
    """One query's scores in one pass over the database."""
    tab_start, tab_pos = seed_table(q, k, threshold, matrix=matrix, profile=profile)
    if profile is None:
        P = np.asarray(substitution_matrix(matrix), dtype=np.float32)[q]
    else:
        P = profile[:, :N_CODES]
    tab_start = np.append(tab_start, tab_start[-1])  # the empty word of k-mers with B/Z/X
    return _scan_kernel(np.ascontiguousarray(P, dtype=np.float32), tab_start,
                        np.ascontiguousarray(tab_pos, dtype=np.int32), db.codes, db.offsets, k,
                        int(window), bool(two_hit), float(xdrop), N_AA)


def _walk(q: np.ndarray, db, k: int, matrix: str, threshold: float, window: int,
          two_hit: bool, xdrop: float, profile: np.ndarray | None) -> np.ndarray:
    """One query's scores through the database's k-mer index: its seeds (:func:`seed_words`)
    in position order."""
    idx: KmerIndex = db.kmer_index(k)
    words, poss = seed_words(q, k, threshold, matrix=matrix, profile=profile)
    if profile is None:
        P = np.asarray(substitution_matrix(matrix), dtype=np.float32)[q]
    else:
        P = profile[:, :N_CODES]
    return _walk_kernel(np.ascontiguousarray(P, dtype=np.float32), words, poss, idx.start,
                        idx.seq, idx.pos, db.codes, db.offsets, k, int(window), bool(two_hit),
                        float(xdrop))


def prefilter(query_codes: np.ndarray, db, *, matrix: str = "BLOSUM62",
              threshold: float = DEFAULT_THRESHOLD, window: int = DEFAULT_WINDOW,
              min_score: float = DEFAULT_MIN_SCORE, max_seqs: int | None = DEFAULT_MAX_SEQS,
              two_hit: bool = True, xdrop: float = DEFAULT_XDROP,
              profile: np.ndarray | None = None, k: int | None = None,
              index: bool = False) -> np.ndarray:
    """Indices (int64, ascending) of the database sequences worth a full DP; ``profile``: seed
    and extend with the query's PSSM, ``k`` and ``index``: the word length and the index walk
    (:func:`prefilter_scores`).

    Targets identical to the query are always kept. A query shorter than one k-mer cannot be
    prefiltered: every target is returned.
    """
    if len(query_codes) < (db.k if k is None else k):
        return np.arange(len(db), dtype=np.int64)
    scores = prefilter_scores(query_codes, db, matrix=matrix, threshold=threshold,
                              window=window, two_hit=two_hit, xdrop=xdrop, profile=profile,
                              k=k, index=index)
    exact = exact_matches(query_codes, db)
    scores[exact] = np.inf
    keep = np.flatnonzero(scores >= min_score)
    if max_seqs is not None and len(keep) > max_seqs:
        keep = keep[best_n(scores[keep], max(max_seqs, len(exact)))]
    return keep.astype(np.int64)


def best_n(values: np.ndarray, n: int) -> np.ndarray:
    """Bool mask of the ``n`` largest ``values``, ties at the cut going to the earliest: the
    first ``n`` of a stable descending sort, in linear time (a partition, not a sort).

    >>> best_n(np.array([3.0, 5.0, 3.0, 1.0, 3.0]), 3).tolist()
    [True, True, True, False, False]
    """
    mask = np.ones(len(values), dtype=bool)
    if n >= len(values):
        return mask
    if n <= 0:
        return ~mask
    cut = np.partition(values, len(values) - n)[len(values) - n]  # the n-th largest
    mask = values > cut
    ties = np.flatnonzero(values == cut)
    mask[ties[:n - int(mask.sum())]] = True
    return mask


def exact_matches(query_codes: np.ndarray, db) -> np.ndarray:
    """Indices of the database sequences identical to the query (always kept by the prefilter)."""
    q = np.asarray(query_codes, dtype=np.uint8)
    same_len = np.flatnonzero(db.lengths == len(q))
    return np.array([t for t in same_len if np.array_equal(db.codes_of(int(t)), q)],
                    dtype=np.int64)
