"""Reference pairwise alignments taken from structure-based family alignments (HOMSTRAD, TM-align).

A family directory ``<dir>/<FAMILY>/<FAMILY>.ali`` holds a PIR multiple alignment. Every unordered
pair of members ``(a, b)``, ``a`` before ``b`` in file order, gives one :class:`ReferencePair`: the
residue pairs ``(i, j)`` that share a column, counted on the ungapped sequences.

Residue letters, explicitly: rows are upper-cased (lowercase letters are ordinary residues here,
not insert states), ``-`` is a gap (``/`` chain breaks arrive as gaps from
:func:`homalign.io.read_pir`), and letters go through :func:`homalign.alphabet.encode`: the 20
amino acids, B, Z and X are kept, U→C, O→K, J→X. Any other character is an
:class:`~homalign.errors.InputError` naming the file and record (raised by ``read_pir`` or by
``Sequence``). Checked on the shared data: HOMSTRAD train/dev and the TM-align dev pairs contain
only the 20 amino acids and X (16 residues), no lowercase, so nothing is dropped or substituted.

Identity convention (HOMSTRAD's): identical aligned pairs / aligned pairs, i.e. over the columns
where both members have a residue.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np

from homalign.errors import InputError
from homalign.sequence import Sequence

GAP_CHARS = b"-."


@dataclass(frozen=True)
class ReferencePair:
    """One pair of family members and their reference alignment.

    ``pairs`` is int32 ``(k, 2)``: (query residue, target residue), 0-based on the ungapped
    sequences, strictly increasing. ``identity`` = identical aligned pairs / aligned pairs.
    """

    family: str
    query: Sequence
    target: Sequence
    pairs: np.ndarray
    identity: float

    @property
    def n_ref(self) -> int:
        return len(self.pairs)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.family, self.query.id, self.target.id)


def _residue_mask(aligned: str) -> np.ndarray:
    arr = np.frombuffer(aligned.encode("ascii", errors="replace"), dtype=np.uint8)
    return ~np.isin(arr, np.frombuffer(GAP_CHARS, dtype=np.uint8))


def _ungapped(aligned: str) -> str:
    return aligned.replace("-", "").replace(".", "")


def pairs_from_columns(row_a: str, row_b: str) -> np.ndarray:
    """Residue pairs sharing a column of two equal-length gapped rows (vectorised)."""
    if len(row_a) != len(row_b):
        raise ValueError("aligned rows differ in length")
    ma, mb = _residue_mask(row_a), _residue_mask(row_b)
    ia, ib = np.cumsum(ma) - 1, np.cumsum(mb) - 1
    both = ma & mb
    return np.stack([ia[both], ib[both]], axis=1).astype(np.int32).reshape(-1, 2)


def read_family(ali_path: str | Path) -> list[tuple[Sequence, str]]:
    """The members of a PIR family alignment as (validated sequence, aligned row), in file order."""
    from homalign.io import read_pir

    path = Path(ali_path)
    entries = read_pir(path)
    members: list[tuple[Sequence, str]] = []
    seen: set[str] = set()
    width: int | None = None
    for entry in entries:
        row = entry.aligned.upper()
        if entry.id in seen:
            raise InputError("duplicate member id in family alignment", path=path,
                             record=entry.id)
        seen.add(entry.id)
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise InputError(f"aligned row has {len(row)} columns, the first row has {width}",
                             path=path, record=entry.id)
        seq = Sequence(entry.id, _ungapped(row), entry.description, source=str(path))
        if len(seq) == 0:
            raise InputError("family member has no residues", path=path, record=entry.id)
        members.append((seq, row))
    return members


def family_pairs(ali_path: str | Path, family: str | None = None) -> list[ReferencePair]:
    """Every unordered member pair of one family alignment, query = the earlier member."""
    path = Path(ali_path)
    family = family or path.stem
    members = read_family(path)
    out: list[ReferencePair] = []
    for (qa, ra), (tb, rb) in combinations(members, 2):
        pairs = pairs_from_columns(ra, rb)
        if len(pairs):
            q = np.frombuffer(qa.residues.encode(), dtype=np.uint8)[pairs[:, 0]]
            t = np.frombuffer(tb.residues.encode(), dtype=np.uint8)[pairs[:, 1]]
            identity = float((q == t).mean())
        else:
            identity = 0.0
        out.append(ReferencePair(family, qa, tb, pairs, identity))
    return out


def family_files(data_dir: str | Path) -> list[Path]:
    """The ``<FAMILY>/<FAMILY>.ali`` files under ``data_dir``, sorted by family name.

    A family directory without its ``.ali`` falls back to the single ``*.ali`` it holds.
    """
    root = Path(data_dir)
    if not root.is_dir():
        raise InputError("not a directory of family alignments", path=root)
    files: list[Path] = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        ali = d / f"{d.name}.ali"
        if not ali.is_file():
            candidates = sorted(d.glob("*.ali"))
            if len(candidates) != 1:
                continue
            ali = candidates[0]
        files.append(ali)
    if not files:
        raise InputError("no <FAMILY>/<FAMILY>.ali family alignments found", path=root)
    return files


def load_reference_pairs(data_dir: str | Path) -> list[ReferencePair]:
    """All reference pairs of every family under ``data_dir`` (deterministic order)."""
    out: list[ReferencePair] = []
    for ali in family_files(data_dir):
        out.extend(family_pairs(ali, ali.parent.name))
    return out


__all__ = [
    "ReferencePair", "family_files", "family_pairs", "load_reference_pairs", "pairs_from_columns",
    "read_family",
]
