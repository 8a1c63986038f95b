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
        q = np.frombuffer(self.query.encode(), dtype=np.uint8)
        t = np.frombuffer(self.target.encode(), dtype=np.uint8)
        return int((q[self.pairs[:, 0]] == t[self.pairs[:, 1]]).sum()) if self.length else 0

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

    def gapped(self, full: bool = False) -> tuple[str, str]:
        """The two gapped strings of the aligned region (``full=True``: whole sequences)."""
        q, t = self.query, self.target
        qa: list[str] = []
        ta: list[str] = []
        if self.length == 0:
            return ("", "") if not full else (q + "-" * len(t), "-" * len(q) + t)
        pi, pj = (0, 0) if full else (int(self.pairs[0, 0]), int(self.pairs[0, 1]))
        for i, j in self.pairs:
            i, j = int(i), int(j)
            qa.append(q[pi:i] + "-" * (j - pj))
            ta.append("-" * (i - pi) + t[pj:j])
            qa.append(q[i])
            ta.append(t[j])
            pi, pj = i + 1, j + 1
        if full:
            qa.append(q[pi:] + "-" * (len(t) - pj))
            ta.append("-" * (len(q) - pi) + t[pj:])
        return "".join(qa), "".join(ta)

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
