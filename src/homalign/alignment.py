"""The one result type every method and peer adapter returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def cigar_from_pairs(pairs: np.ndarray) -> str:
    """SAM-style M/I/D run-length string over the aligned span (I: query vs gap, D: target vs gap)."""
    if len(pairs) == 0:
        return ""
    ops: list[str] = []
    prev_i, prev_j = int(pairs[0, 0]), int(pairs[0, 1])
    ops.append("M")
    for i, j in pairs[1:]:
        i, j = int(i), int(j)
        ops.extend("I" * (i - prev_i - 1))
        ops.extend("D" * (j - prev_j - 1))
        ops.append("M")
        prev_i, prev_j = i, j
    out, run, last = [], 0, ops[0]
    for op in ops:
        if op == last:
            run += 1
        else:
            out.append(f"{run}{last}")
            run, last = 1, op
    out.append(f"{run}{last}")
    return "".join(out)


def _row(residues: str, columns: np.ndarray) -> str:
    """A gapped row: ``residues[c]`` for each column ``c >= 0``, ``-`` for -1."""
    seq = np.frombuffer(residues.encode("ascii"), dtype=np.uint8)
    out = np.full(len(columns), ord("-"), dtype=np.uint8)
    used = columns >= 0
    out[used] = seq[columns[used]]
    return out.tobytes().decode("ascii")


@dataclass
class Alignment:
    """A pairwise alignment as aligned residue index pairs on the ungapped sequences.

    ``pairs`` is int32 (k, 2), 0-based (query index, target index), strictly increasing in both.
    """

    query_id: str
    target_id: str
    query: str
    target: str
    pairs: np.ndarray
    score: float
    method: str
    evalue: float | None = None
    bits: float | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.pairs = np.asarray(self.pairs, dtype=np.int32).reshape(-1, 2)
        if len(self.pairs) > 1:
            d = np.diff(self.pairs, axis=0)
            if (d <= 0).any():
                raise ValueError("alignment pairs must be strictly increasing in both sequences")
        if len(self.pairs) and (
            self.pairs[:, 0].min() < 0
            or self.pairs[:, 0].max() >= len(self.query)
            or self.pairs[:, 1].min() < 0
            or self.pairs[:, 1].max() >= len(self.target)
        ):
            raise ValueError("alignment pairs index outside the sequences")

    # --- derived quantities -------------------------------------------------------------
    @property
    def length(self) -> int:
        """Number of aligned residue pairs (L_ali in the S_mod score)."""
        return len(self.pairs)

    @property
    def n_identical(self) -> int:
        """Aligned pairs of the same residue (by code: U and C are one, as the scores have it)."""
        from homalign.alphabet import letter_codes

        if not self.length:
            return 0
        q, t = letter_codes(self.query), letter_codes(self.target)
        return int((q[self.pairs[:, 0]] == t[self.pairs[:, 1]]).sum())

    @property
    def identity(self) -> float:
        """Identical pairs / aligned pairs (0 for an empty alignment)."""
        return self.n_identical / self.length if self.length else 0.0

    @property
    def coverage(self) -> float:
        """Aligned pairs / length of the shorter sequence."""
        return self.length / min(len(self.query), len(self.target))

    @property
    def cigar(self) -> str:
        return cigar_from_pairs(self.pairs)

    @property
    def n_gap_opens(self) -> int:
        d = np.diff(self.pairs, axis=0)
        return int((d[:, 0] > 1).sum() + (d[:, 1] > 1).sum()) if self.length > 1 else 0

    @property
    def query_span(self) -> tuple[int, int]:
        return (int(self.pairs[0, 0]), int(self.pairs[-1, 0]) + 1) if self.length else (0, 0)

    @property
    def target_span(self) -> tuple[int, int]:
        return (int(self.pairs[0, 1]), int(self.pairs[-1, 1]) + 1) if self.length else (0, 0)

    def a3m_row(self, query_length: int | None = None) -> tuple[str, list[str]]:
        """The target as an A3M row over the query's columns: (match row, insert slots).

        The row holds the target's aligned residues (upper case) in their query columns and
        ``-`` in the others; of the ``query_length + 1`` insert strings, slot ``k`` holds the
        target's residues (lower case) between two aligned pairs whose second is in column
        ``k``: after the query's skipped columns, as :meth:`gapped` orders them. Unaligned
        flanks are left out. Array operations; one Python step per insert only."""
        n = len(self.query) if query_length is None else int(query_length)
        inserts = [""] * (n + 1)
        row = np.full(n, ord("-"), dtype=np.uint8)
        if self.length:
            P = self.pairs
            t = np.frombuffer(self.target.upper().encode(), dtype=np.uint8)
            row[P[:, 0]] = t[P[:, 1]]
            for k in np.flatnonzero(np.diff(P[:, 1]) > 1).tolist():
                j0, i1, j1 = int(P[k, 1]), int(P[k + 1, 0]), int(P[k + 1, 1])
                inserts[i1] = self.target[j0 + 1:j1].lower()
        return row.tobytes().decode("ascii"), inserts

    def gapped(self, full: bool = False) -> tuple[str, str]:
        """The two gapped strings of the aligned region (``full=True``: whole sequences).

        Between two aligned pairs the query's skipped residues come first (against gaps), then
        the target's. Built with array operations (a search prints every hit this way)."""
        q, t = self.query, self.target
        if self.length == 0:
            return ("", "") if not full else (q + "-" * len(t), "-" * len(q) + t)
        P = self.pairs.astype(np.int64)
        start = np.zeros(2, dtype=np.int64) if full else P[0]
        prev = np.vstack((start, P[:-1] + 1))                 # each pair's first skipped residue
        ins, dels = P[:, 0] - prev[:, 0], P[:, 1] - prev[:, 1]
        tail_q, tail_t = (len(q) - P[-1, 0] - 1, len(t) - P[-1, 1] - 1) if full else (0, 0)
        block = ins + dels + 1
        first = np.cumsum(block) - block                      # each block's first column
        n = int(block.sum()) + tail_q + tail_t
        qcol = np.full(n, -1, dtype=np.int64)
        tcol = np.full(n, -1, dtype=np.int64)
        # inside block k: ins query residues, dels target residues, then the pair itself
        k = np.repeat(np.arange(len(P)), block)
        off = np.arange(int(block.sum())) - first[k]
        is_ins = off < ins[k]
        is_del = ~is_ins & (off < ins[k] + dels[k])
        is_pair = ~is_ins & ~is_del
        qcol[:len(k)][is_ins] = prev[k[is_ins], 0] + off[is_ins]
        tcol[:len(k)][is_del] = prev[k[is_del], 1] + off[is_del] - ins[k[is_del]]
        qcol[:len(k)][is_pair] = P[k[is_pair], 0]
        tcol[:len(k)][is_pair] = P[k[is_pair], 1]
        m = len(k)
        qcol[m:m + tail_q] = P[-1, 0] + 1 + np.arange(tail_q)
        tcol[m + tail_q:] = P[-1, 1] + 1 + np.arange(tail_t)
        return _row(q, qcol), _row(t, tcol)

    def to_biopython(self):
        """A ``Bio.Align.Alignment`` over the whole sequences, as Biopython's own aligners give
        one: the rows are ``SeqRecord`` objects with the query and target ids, ``.score`` is the
        score; ``.annotations`` holds ``method`` and, where known, ``evalue`` and ``bits``."""
        qa, ta = self.gapped(full=True)
        aln = _bio_from_gapped(qa, ta, (self.query_id, self.target_id))
        aln.score = float(self.score)
        aln.annotations = {"method": self.method}
        for key in ("evalue", "bits"):
            value = getattr(self, key)
            if value is not None:
                aln.annotations[key] = float(value)
        return aln

    def __repr__(self) -> str:
        return (f"Alignment({self.query_id} vs {self.target_id}, method={self.method}, "
                f"score={self.score:.2f}, aligned={self.length}, identity={self.identity:.2f})")


def _bio_from_gapped(qa: str, ta: str, ids: tuple[str, str] = ("query", "target")):
    from Bio.Align import Alignment as BioAlignment
    from Bio.Seq import Seq
    from Bio.SeqRecord import SeqRecord

    coords = [[0], [0]]
    qi = ti = 0
    state = None
    for a, b in zip(qa, ta, strict=True):
        s = (a != "-", b != "-")
        if s != state and state is not None:
            coords[0].append(qi)
            coords[1].append(ti)
        state = s
        qi += a != "-"
        ti += b != "-"
    coords[0].append(qi)
    coords[1].append(ti)
    records = [SeqRecord(Seq(row.replace("-", "")), id=sid, name=sid, description="")
               for row, sid in zip((qa, ta), ids, strict=True)]
    return BioAlignment(records, np.array(coords))
