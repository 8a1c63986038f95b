"""The Profile type: what an MSA says about each column of its first (query) sequence.

A :class:`Profile` has one column per *match column* — a residue of the query (the MSA's first
row) — and holds, per column, the weighted observed amino-acid frequencies, the emission
probabilities after pseudocounts, the effective number of sequences, and the gap statistics
(weighted counts of the seven profile-HMM transitions MM, MI, MD, IM, II, DM, DD) that the HMM and
the position-specific gap costs are made from.

Design decisions:

* Match columns: for A3M they are the uppercase/``-`` columns (``homalign.io`` removes inserts and
  keeps their lengths); for aligned FASTA and Stockholm, ``match="first"`` (default) makes every
  column where the first row has a residue a match column and every other column an insert, so a
  profile is always indexed like its query, as in PSI-BLAST and HHblits.
* Weights: Henikoff position-based over the match columns (:mod:`homalign.profile.sequence_weights`).
* Effective counts: ``Neff`` of the MSA is HH-suite's mean exp-entropy of the weighted columns;
  column ``i`` gets ``n_i = 1 + (Neff - 1) * cov_i`` with ``cov_i`` the weight fraction of
  sequences having a residue there, so a column only the query covers counts as one sequence.
* Terminal gaps (before a sequence's first or after its last match residue) are "not aligned",
  not deletions: local hits of an iterative search would otherwise look like huge deletions.
* Ambiguity codes count as distributions: B = N/D, Z = Q/E, X = background.
* The log-odds PSSM is in the units of the substitution matrix (``ln(p/f) / lambda`` with the
  matrix's ungapped lambda), so the matrix's gap costs stay meaningful for profile methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from homalign.alphabet import ALPHABET, BACKGROUND, N_AA, N_CODES, X_CODE
from homalign.errors import InputError
from homalign.matrices import substitution_matrix
from homalign.profile.pseudocounts import add_pseudocounts, matrix_lambda
from homalign.profile.sequence_weights import GAP_CODE, column_neff, henikoff_weights, msa_neff
from homalign.sequence import Sequence

TRANSITIONS = ("MM", "MI", "MD", "IM", "II", "DM", "DD")
GAP_PRIOR_WEIGHT = 5.0  # pseudo-sequences behind the gap-rate estimate of a column
GAP_PRIOR_RATE = 0.05  # prior rate of deletions (and of inserts) per column

_LOOKUP = np.full(256, 255, dtype=np.uint8)
for _code, _letter in enumerate(ALPHABET):
    _LOOKUP[ord(_letter)] = _code
    _LOOKUP[ord(_letter.lower())] = _code
for _rare, _std in {"U": "C", "O": "K", "J": "X"}.items():
    _LOOKUP[ord(_rare)] = _LOOKUP[ord(_rare.lower())] = _LOOKUP[ord(_std)]
for _gap in "-.~":
    _LOOKUP[ord(_gap)] = GAP_CODE

# code (0..23) -> distribution over the 20 amino acids (gap row zero)
EXPAND = np.zeros((N_CODES + 1, N_AA), dtype=np.float64)
EXPAND[np.arange(N_AA), np.arange(N_AA)] = 1.0
EXPAND[ALPHABET.index("B"), [ALPHABET.index("N"), ALPHABET.index("D")]] = 0.5
EXPAND[ALPHABET.index("Z"), [ALPHABET.index("Q"), ALPHABET.index("E")]] = 0.5
EXPAND[ALPHABET.index("X")] = BACKGROUND
EXPAND.setflags(write=False)


def encode_rows(rows: list[str], ids: list[str] | None = None, path: str | None = None) -> np.ndarray:
    """uint8 (n, width) code matrix of gapped rows (gap characters ``-``, ``.``, ``~`` → GAP_CODE)."""
    if not rows:
        raise InputError("empty MSA: no sequences", path=path)
    width = len(rows[0])
    for r, row in enumerate(rows):
        if len(row) != width:
            raise InputError(f"MSA row has {len(row)} columns, the first row has {width}",
                             path=path, record=ids[r] if ids else str(r + 1))
    if width == 0:
        raise InputError("empty MSA: no columns", path=path)
    raw = np.frombuffer("".join(rows).encode("ascii", errors="replace"), dtype=np.uint8)
    codes = _LOOKUP[raw].reshape(len(rows), width)
    bad = np.argwhere(codes == 255)
    if bad.size:
        r, c = (int(x) for x in bad[0])
        raise InputError(f"invalid MSA character {rows[r][c]!r}", path=path,
                         record=ids[r] if ids else str(r + 1), column=c + 1)
    return codes


@dataclass(frozen=True, eq=False)
class Profile:
    """A sequence profile over the match columns of an MSA (see the module docstring).

    Attributes:
        query: the first row's residues at the match columns (the sequence the profile indexes).
        freqs: float64 (L, 20) weighted observed frequencies (rows sum to 1, or 0 if no residue).
        probs: float64 (L, 20) emission probabilities after pseudocounts (rows sum to 1).
        n_eff: float64 (L,) effective count per column (>= 1).
        neff: the MSA's Neff (mean column exp-entropy).
        trans_counts: float64 (L, 7) weighted counts of MM, MI, MD, IM, II, DM, DD leaving each
            column (in Neff units: the weights are scaled to sum to ``neff``).
        occupancy: float64 (L, 2) weight of sequences in the match (residue) and delete (internal
            gap) state at each column, same units.
        n_seqs: number of sequences in the MSA.
    """

    query: Sequence
    freqs: np.ndarray
    probs: np.ndarray
    n_eff: np.ndarray
    neff: float
    trans_counts: np.ndarray
    occupancy: np.ndarray
    n_seqs: int = 1
    pseudocounts: str = "matrix"
    matrix: str = "BLOSUM62"
    background: np.ndarray = field(default_factory=lambda: BACKGROUND.copy())

    def __len__(self) -> int:
        return len(self.query)

    # --- construction -------------------------------------------------------------------
    @classmethod
    def from_sequence(cls, seq: Sequence | str, **options: Any) -> Profile:
        """A profile of one sequence (its frequencies are one-hot; pseudocounts do the rest)."""
        if isinstance(seq, str):
            seq = Sequence("query", seq)
        return cls._build(seq.codes[None, :].astype(np.uint8), None, seq, **options)

    @classmethod
    def from_msa(cls, msa: Any, *, match: str = "first", path: str | None = None,
                 **options: Any) -> Profile:
        """A profile from an ``homalign.io.MSA`` (A3M inserts are read from ``msa.insertions``)."""
        ids = list(msa.ids)
        ins = msa.insertion_lengths() if getattr(msa, "insertions", None) is not None else None
        return cls.from_rows(list(msa.rows), ids, insert_lengths=ins, match=match, path=path,
                             **options)

    @classmethod
    def from_rows(
        cls,
        rows: list[str],
        ids: list[str] | None = None,
        *,
        insert_lengths: np.ndarray | None = None,
        match: str = "first",
        path: str | None = None,
        **options: Any,
    ) -> Profile:
        """A profile from equal-length gapped rows; the first row is the query."""
        codes = encode_rows(rows, ids, path)
        if match == "first":
            is_match = codes[0] != GAP_CODE
        elif match == "all":
            is_match = np.ones(codes.shape[1], dtype=bool)
        else:
            raise ValueError(f"unknown match rule {match!r}; choose 'first' or 'all'")
        if not is_match.any():
            raise InputError("the first MSA row has no residue", path=path,
                             record=ids[0] if ids else "1")
        # residues in non-match columns become inserts before the next match column
        slot = np.cumsum(is_match)  # number of match columns up to and including each column
        L = int(is_match.sum())
        ins = np.zeros((len(rows), L + 1), dtype=np.int64)
        if insert_lengths is not None:
            ins += np.asarray(insert_lengths, dtype=np.int64)[:, : L + 1]
        extra = ~is_match
        if extra.any():
            res = (codes[:, extra] != GAP_CODE).astype(np.int64)
            np.add.at(ins, (slice(None), slot[extra]), res)
        mcodes = np.ascontiguousarray(codes[:, is_match])
        if match == "first" and (mcodes[0] == GAP_CODE).any():
            raise InputError("internal error: query row has a gap in a match column", path=path)
        qres = "".join(ALPHABET[c] if c < N_CODES else "X" for c in mcodes[0])
        if (mcodes[0] == GAP_CODE).any():  # match="all": the query is the residues it has
            qres = "".join(ALPHABET[c] for c in mcodes[0] if c != GAP_CODE)
        query = Sequence(ids[0] if ids else "query", qres)
        return cls._build(mcodes, ins, query, **options)

    @classmethod
    def _build(
        cls,
        codes: np.ndarray,
        ins: np.ndarray | None,
        query: Sequence,
        *,
        pseudocounts: str = "matrix",
        matrix: str = "BLOSUM62",
        admix: str = "psiblast",
        weights: np.ndarray | None = None,
    ) -> Profile:
        n, L = codes.shape
        w = henikoff_weights(codes) if weights is None else np.asarray(weights, float) / np.sum(weights)
        # weighted expanded counts per column: (L, 20)
        flat = (np.arange(L)[None, :] * (N_CODES + 1) + codes).ravel()
        onehot_w = np.bincount(flat, weights=np.broadcast_to(w[:, None], codes.shape).ravel(),
                               minlength=L * (N_CODES + 1)).reshape(L, N_CODES + 1)
        counts = onehot_w @ EXPAND
        cov = counts.sum(axis=1)
        freqs = np.divide(counts, cov[:, None], out=np.zeros_like(counts), where=cov[:, None] > 0)
        # Neff from the unambiguous residues only (an X column is not "diverse")
        canon = onehot_w[:, :N_AA]
        csum = canon.sum(axis=1, keepdims=True)
        neff = msa_neff(np.divide(canon, csum, out=np.zeros_like(canon), where=csum > 0))
        n_eff = 1.0 + (neff - 1.0) * np.clip(cov, 0.0, 1.0)
        probs = add_pseudocounts(freqs, n_eff, pseudocounts, matrix=matrix, admix=admix)
        trans, occ = _transition_counts(codes, ins, w)
        return cls(query, freqs, probs, n_eff, neff, trans * neff, occ * neff, n, pseudocounts,
                   matrix)

    # --- derived ------------------------------------------------------------------------
    @cached_property
    def diversity(self) -> np.ndarray:
        """float64 (L,) exp-entropy of the observed frequencies (HH-suite's per-column Neff)."""
        return column_neff(self.freqs)

    @cached_property
    def lam(self) -> float:
        """Lambda of the profile's matrix: log-odds scores are ``ln(p / f) / lam``."""
        return matrix_lambda(self.matrix)

    def pssm(self, kind: str = "logodds") -> np.ndarray:
        """float32 (L, 23) position-specific scores against each ALPHABET code.

        ``kind="logodds"``: ``ln(probs / background) / lambda`` (matrix units); B and Z score their
        pair's mixture and X the expected score under the background.
        ``kind="average"``: Gribskov's average score ``sum_b f(b) S(b, c)`` from the observed
        frequencies; a one-sequence profile gives exactly the substitution matrix rows.

        A column whose query residue is X scores as the matrix's X row (BLOSUM62: -1 against
        most residues), as BLAST scores an X of the query: an unknown residue carries no
        information, and a column of expected score 0 would let local alignments run through
        runs of X at no cost.
        """
        S = substitution_matrix(self.matrix).astype(np.float64)
        if kind == "average":
            out = self.freqs @ S[:N_AA]
        elif kind == "logodds":
            p = np.maximum(self.probs, 1e-12)
            bg = self.background
            out = np.empty((len(self), N_CODES), dtype=np.float64)
            out[:, :N_AA] = np.log(p / bg) / self.lam
            for code, pair in ((20, (2, 3)), (21, (5, 6))):  # B = N/D, Z = Q/E
                out[:, code] = np.log(p[:, pair].sum(1) / bg[list(pair)].sum()) / self.lam
            out[:, 22] = out[:, :N_AA] @ bg
        else:
            raise ValueError(f"unknown PSSM kind {kind!r}; choose 'logodds' or 'average'")
        unknown = self.query.codes == X_CODE
        if unknown.any():
            out[unknown] = S[X_CODE]
        return np.ascontiguousarray(out, dtype=np.float32)

    @cached_property
    def gap_stats(self) -> dict[str, np.ndarray]:
        """Per-column gap statistics: ``p_del`` (column deleted), ``p_ins`` (insert after the
        column), ``ins_len`` (mean insert length) and ``n_span`` (weight of spanning sequences)."""
        t = self.trans_counts
        span = self.occupancy.sum(axis=1)
        p_del = np.divide(self.occupancy[:, 1], span, out=np.zeros_like(span), where=span > 0)
        p_ins = np.divide(t[:, 3], span, out=np.zeros_like(span), where=span > 0)
        ins_len = np.divide(t[:, 3] + t[:, 4], t[:, 3], out=np.ones_like(span), where=t[:, 3] > 0)
        return {"p_del": p_del, "p_ins": np.clip(p_ins, 0, 1), "ins_len": ins_len, "n_span": span}

    def gap_vectors(
        self, open: float = 11.0, extend: float = 1.0, *, beta: float = GAP_PRIOR_WEIGHT,
        p0: float = GAP_PRIOR_RATE,
    ) -> dict[str, np.ndarray]:
        """Position-specific affine gap costs in PSSM units from the MSA's gap statistics.

        The rate of deletions at column i (and of inserts after it) is estimated as
        ``r = (count + beta p0) / (n_span + beta)`` and the open cost becomes
        ``open - ln(r / r1) / lambda`` with ``r1`` the estimate for one gap-free sequence, so a
        one-sequence profile gets exactly ``open`` everywhere, columns where the family has gaps
        get cheaper gaps and conserved gap-free columns dearer ones (clamped to [1, 3 open]).
        Returns ``del_open``/``del_ext`` (L,) for skipping columns and ``ins_open``/``ins_ext``
        (L + 1,) for residues inserted in slot i (after column i - 1).
        """
        occ, t = self.occupancy, self.trans_counts
        span = occ.sum(axis=1)
        r1 = beta * p0 / (1.0 + beta)

        def cost(count: np.ndarray, n: np.ndarray) -> np.ndarray:
            r = (count + beta * p0) / (n + beta)
            return np.clip(open - np.log(r / r1) / self.lam, 1.0, 3.0 * open)

        ins_c = cost(t[:, 3], span)
        slot = np.concatenate([[0], np.arange(len(self))])
        L = len(self)
        return {
            "del_open": cost(occ[:, 1], span), "del_ext": np.full(L, float(extend)),
            "ins_open": ins_c[slot], "ins_ext": np.full(L + 1, float(extend)),
        }


def _transition_counts(
    codes: np.ndarray, ins: np.ndarray | None, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Weighted (L, 7) counts of MM, MI, MD, IM, II, DM, DD leaving each match column, and the
    (L, 2) weighted occupancy of the M and D states.

    A sequence takes part between its first and last residue; an insert is the residues between
    column i and i + 1 (slot i + 1 of ``ins``)."""
    n, L = codes.shape
    res = codes != GAP_CODE
    has = res.any(axis=1)
    first = np.where(has, res.argmax(axis=1), L)
    last = np.where(has, L - 1 - res[:, ::-1].argmax(axis=1), -1)
    col = np.arange(L)[None, :]
    inside = (col >= first[:, None]) & (col <= last[:, None])
    M = res & inside
    D = ~res & inside
    nxt_inside = (col + 1 <= last[:, None])  # column i has a successor inside the span
    a = np.zeros((n, L), dtype=np.int64) if ins is None else ins[:, 1 : L + 1].astype(np.int64)
    a = np.where(nxt_inside, a, 0)
    has_ins = a > 0
    nM = np.zeros_like(M)
    nM[:, :-1] = M[:, 1:]
    nD = np.zeros_like(D)
    nD[:, :-1] = D[:, 1:]
    W = w[:, None]
    out = np.zeros((L, 7), dtype=np.float64)
    out[:, 0] = (W * (M & ~has_ins & nM)).sum(0)
    out[:, 1] = (W * (M & has_ins)).sum(0)
    out[:, 2] = (W * (M & ~has_ins & nD)).sum(0)
    out[:, 3] = (W * has_ins).sum(0)
    out[:, 4] = (W * np.maximum(a - 1, 0)).sum(0)
    out[:, 5] = (W * (D & ((~has_ins & nM) | has_ins))).sum(0)
    out[:, 6] = (W * (D & ~has_ins & nD)).sum(0)
    occ = np.stack([(W * M).sum(0), (W * D).sum(0)], axis=1)
    return out, occ
