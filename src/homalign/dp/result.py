"""The result of one exact DP alignment (:class:`DPResult`) and CIGAR helpers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DPResult", "OP_M", "OP_I", "OP_D", "from_ops", "cigar_from_ops", "ops_from_cigar"]

#: Column codes of the compiled traceback (0 is never a column).
OP_M = 1
OP_I = 2
OP_D = 3
_LETTER = np.array(["?", "M", "I", "D"])


@dataclass(frozen=True, eq=False)
class DPResult:
    """An optimal alignment path.

    ``pairs`` is int32 (k, 2) of aligned (query, target) positions, 0-based, strictly increasing
    in both columns. ``cigar`` is SAM-style run-length over M/I/D (I = query residue vs gap,
    D = target residue vs gap) and consumes exactly ``q_end - q_start`` query and
    ``t_end - t_start`` target residues (half-open spans of the path). The empty alignment has
    all spans 0, no pairs and cigar ``""``.
    """

    score: float
    pairs: np.ndarray
    cigar: str
    q_start: int
    q_end: int
    t_start: int
    t_end: int
    mode: str = "local"

    @property
    def length(self) -> int:
        """Number of aligned pairs."""
        return int(self.pairs.shape[0])

    def __repr__(self) -> str:
        return (
            f"DPResult(score={self.score:g}, mode={self.mode!r}, cigar={self.cigar!r}, "
            f"q={self.q_start}..{self.q_end}, t={self.t_start}..{self.t_end})"
        )


def cigar_from_ops(ops: np.ndarray) -> str:
    """Run-length encode a column-code vector (OP_M/OP_I/OP_D) as a CIGAR string."""
    ops = np.asarray(ops, dtype=np.uint8)
    if ops.size == 0:
        return ""
    change = np.flatnonzero(ops[1:] != ops[:-1]) + 1
    starts = np.concatenate(([0], change))
    lengths = np.diff(np.concatenate((starts, [ops.size])))
    letters = _LETTER[ops[starts]]
    return "".join(f"{n}{c}" for n, c in zip(lengths.tolist(), letters.tolist(), strict=True))


def ops_from_cigar(cigar: str) -> np.ndarray:
    """Expand a CIGAR over M/I/D into column codes; raise ValueError on anything else."""
    codes = {"M": OP_M, "I": OP_I, "D": OP_D}
    out: list[np.ndarray] = []
    number = ""
    for ch in cigar:
        if ch.isdigit():
            number += ch
        elif ch in codes and number:
            out.append(np.full(int(number), codes[ch], dtype=np.uint8))
            number = ""
        else:
            raise ValueError(f"bad CIGAR {cigar!r} at {ch!r}")
    if number:
        raise ValueError(f"bad CIGAR {cigar!r}: trailing count")
    return np.concatenate(out) if out else np.zeros(0, dtype=np.uint8)


def from_ops(
    score: float, ops: np.ndarray, q_start: int, t_start: int, mode: str
) -> DPResult:
    """Build a :class:`DPResult` from a path's column codes and its start cell."""
    ops = np.asarray(ops, dtype=np.uint8)
    uses_q = ops != OP_D
    uses_t = ops != OP_I
    qpos = q_start + np.cumsum(uses_q, dtype=np.int64) - 1
    tpos = t_start + np.cumsum(uses_t, dtype=np.int64) - 1
    match = ops == OP_M
    pairs = np.stack((qpos[match], tpos[match]), axis=1).astype(np.int32).reshape(-1, 2)
    return DPResult(
        score=float(score),
        pairs=pairs,
        cigar=cigar_from_ops(ops),
        q_start=int(q_start),
        q_end=int(q_start + uses_q.sum()),
        t_start=int(t_start),
        t_end=int(t_start + uses_t.sum()),
        mode=mode,
    )
