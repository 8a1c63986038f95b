"""Multiple sequence alignments: the :class:`MSA` type, aligned FASTA and A3M (HH-suite).

A3M conventions (HH-suite): uppercase letters and ``-`` are match columns, lowercase letters are
insert states (residues between two match columns) and ``.`` is padding in insert columns (it
carries no residue). The first row defines the match columns and must contain no lowercase
letter. :func:`read_a3m` removes the inserts, so that all rows have one character per match
column, and keeps them in :attr:`MSA.insertions`:

``msa.insertions[r][k]`` is the (lowercase) string of residues that row ``r`` inserts *before*
match column ``k`` (``k = 0 .. n_cols``; slot ``n_cols`` holds the residues after the last match
column). :meth:`MSA.insertion_lengths` gives the lengths as an ``int32 (n_seqs, n_cols + 1)``
array, and :func:`write_a3m` writes them back, so an A3M round-trips exactly.

HH-suite annotation rows (``>ss_pred``, ``>ss_conf``, ``>ss_dssp``, ``>sa_dssp``, written before
the query) are not sequences: :func:`read_a3m` moves them, match columns only, to
``msa.annotations["hhsuite"]`` ({name: row}) and the first *other* row defines the match
columns; :func:`write_a3m` writes them back first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from homalign.errors import InputError
from homalign.io.atomic import atomic_write
from homalign.io.fasta import FastaRecord, format_fasta, parse_fasta
from homalign.io.text import PathLike, check_readable

GAP_CHARS = "-."
HHSUITE_ROWS = frozenset({"ss_pred", "ss_conf", "ss_dssp", "sa_dssp"})
_A3M_INSERT = re.compile(r"[a-z.]")


@dataclass(eq=True)
class MSA:
    """A multiple sequence alignment.

    Attributes:
        ids: one id per row.
        rows: equal-length gapped strings (gaps ``-`` or ``.``; residues are letters).
        descriptions: one description per row ("" when none); may be omitted.
        insertions: from A3M only (else ``None``): per row, ``n_cols + 1`` strings of inserted
            residues, slot ``k`` lying before match column ``k`` (see the module docstring).
        annotations: format-specific extras (Stockholm ``GF``/``GS``/``GR``/``GC``).
    """

    ids: list[str]
    rows: list[str]
    descriptions: list[str] = field(default_factory=list)
    insertions: list[list[str]] | None = None
    annotations: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ids = list(self.ids)
        self.rows = list(self.rows)
        self.descriptions = list(self.descriptions) or [""] * len(self.ids)
        if len(self.rows) != len(self.ids) or len(self.descriptions) != len(self.ids):
            raise ValueError(
                f"MSA needs one row and one description per id: {len(self.ids)} ids, "
                f"{len(self.rows)} rows, {len(self.descriptions)} descriptions"
            )
        if self.rows:
            width = len(self.rows[0])
            for rid, row in zip(self.ids, self.rows, strict=True):
                if len(row) != width:
                    raise InputError(
                        f"row has {len(row)} columns, the first row has {width}", record=rid
                    )
        if self.insertions is not None:
            self.insertions = [list(slots) for slots in self.insertions]
            if len(self.insertions) != len(self.rows) or any(
                len(slots) != self.n_cols + 1 for slots in self.insertions
            ):
                raise ValueError("insertions need n_cols + 1 slots for every row")

    @property
    def n_seqs(self) -> int:
        """Number of rows."""
        return len(self.rows)

    @property
    def n_cols(self) -> int:
        """Number of columns (0 for an empty MSA)."""
        return len(self.rows[0]) if self.rows else 0

    def ungapped(self, index: int) -> str:
        """Residues of row ``index`` (gaps removed; A3M inserts are not included)."""
        return "".join(c for c in self.rows[index] if c.isalpha())

    def pairs(self, a: int, b: int) -> np.ndarray:
        """Residue pairs of rows ``a`` and ``b`` that share a column: int32 ``(k, 2)``.

        Indices count residues of the ungapped sequences (:meth:`ungapped`), 0-based.
        """
        ra, rb = _residue_mask(self.rows[a]), _residue_mask(self.rows[b])
        both = ra & rb
        ia = np.cumsum(ra) - 1
        ib = np.cumsum(rb) - 1
        return np.stack([ia[both], ib[both]], axis=1).astype(np.int32).reshape(-1, 2)

    def insertion_lengths(self) -> np.ndarray:
        """Inserted residues per row and slot: int32 ``(n_seqs, n_cols + 1)`` (zeros if none)."""
        out = np.zeros((self.n_seqs, self.n_cols + 1), dtype=np.int32)
        if self.insertions is not None:
            for r, slots in enumerate(self.insertions):
                out[r] = [len(s) for s in slots]
        return out

    @classmethod
    def from_a3m(
        cls, ids: list[str], a3m_rows: list[str], descriptions: list[str] | None = None
    ) -> MSA:
        """Build an MSA from raw A3M rows (inserts removed, kept in :attr:`insertions`).

        Raises:
            InputError: lowercase letters in the first row, or a row whose number of match
                states differs from the first row's.
        """
        matches: list[str] = []
        inserts: list[list[str]] = []
        for i, (rid, raw) in enumerate(zip(ids, a3m_rows, strict=True)):
            match, slots = split_a3m_row(raw)
            _check_a3m_row(i, rid, raw, match, matches, None, None)
            matches.append(match)
            inserts.append(slots)
        return cls(list(ids), matches, list(descriptions or []), insertions=inserts)

    def to_a3m_rows(self) -> list[str]:
        """The rows in A3M form: match states uppercase (gaps ``-``), inserts lowercase."""
        out = []
        for r, row in enumerate(self.rows):
            match = row.upper().replace(".", "-")
            slots = self.insertions[r] if self.insertions is not None else None
            if slots is None or not any(slots):
                out.append(match)
                continue
            if r == 0:
                raise ValueError("the first A3M row cannot have insertions")
            parts = []
            for k, c in enumerate(match):
                parts.append(slots[k].lower().replace(".", ""))
                parts.append(c)
            parts.append(slots[-1].lower())
            out.append("".join(parts))
        return out


def _residue_mask(row: str) -> np.ndarray:
    codes = np.frombuffer(row.encode("ascii", "replace"), dtype=np.uint8)
    upper = codes & 0xDF  # ASCII letters: fold case
    return (upper >= ord("A")) & (upper <= ord("Z"))


def split_a3m_row(raw: str) -> tuple[str, list[str]]:
    """Split an A3M row into its match states and ``len(match) + 1`` insertion slots."""
    match_chars: list[str] = []
    slots: list[str] = []
    current: list[str] = []
    for c in raw:
        if c.islower():
            current.append(c)
        elif c == ".":
            continue
        else:
            slots.append("".join(current))
            current = []
            match_chars.append(c)
    slots.append("".join(current))
    return "".join(match_chars), slots


def _check_a3m_row(
    index: int,
    rid: str,
    raw: str,
    match: str,
    previous: list[str],
    path: PathLike | None,
    line: int | None,
) -> None:
    if index == 0:
        bad = _A3M_INSERT.search(raw)
        if bad is not None:
            raise InputError(
                "the first A3M row defines the match columns and cannot contain insert states "
                f"(lowercase letters or '.'), found {bad.group()!r}",
                path=path, line=line, record=rid, column=bad.start() + 1,
            )
    elif len(match) != len(previous[0]):
        raise InputError(
            f"row has {len(match)} match columns (uppercase letters and '-'), "
            f"the first row has {len(previous[0])}",
            path=path, line=line, record=rid,
        )


def read_aligned_fasta(path: PathLike, *, unique: bool = True) -> MSA:
    """Read an aligned FASTA file (all rows the same length; case and gap characters kept).

    Raises:
        InputError: every FASTA error (see :func:`homalign.io.fasta.read_fasta`), and a row
            whose length differs from the first row's (naming its record and header line).
    """
    check_readable(path)
    ids: list[str] = []
    rows: list[str] = []
    descriptions: list[str] = []
    for record, line in parse_fasta(path, unique=unique):
        if rows and len(record.sequence) != len(rows[0]):
            raise InputError(
                f"aligned row has {len(record.sequence)} columns, the first row "
                f"({ids[0]!r}) has {len(rows[0])}",
                path=path, line=line, record=record.id,
            )
        ids.append(record.id)
        rows.append(record.sequence)
        descriptions.append(record.description)
    return MSA(ids, rows, descriptions)


def write_aligned_fasta(path: PathLike, msa: MSA, width: int = 60) -> None:
    """Write ``msa`` as aligned FASTA (rows as they are, wrapped at ``width``; 0: one line).

    A3M insertions, if any, are not written (aligned FASTA has no place for them).
    """
    with atomic_write(path) as handle:
        for rid, row, desc in zip(msa.ids, msa.rows, msa.descriptions, strict=True):
            handle.write(format_fasta(FastaRecord(rid, desc, row), width))


def read_a3m(path: PathLike, *, unique: bool = False) -> MSA:
    """Read an A3M file (HH-suite); ``#`` lines at the top are skipped.

    Returns:
        An :class:`MSA` whose rows are the match states (equal length, defined by the first
        row) and whose :attr:`MSA.insertions` keep the removed insert states.

    HH-suite annotation rows before the query (``ss_pred``, ``ss_conf``, ...) go to
    ``annotations["hhsuite"]`` (see the module docstring).

    Args:
        unique: reject repeated ids (off by default: HHblits may report one database
            sequence several times).

    Raises:
        InputError: every FASTA error, lowercase letters in the first row, a row with a different
            number of match states (each naming file, line and record).
    """
    check_readable(path)
    ids: list[str] = []
    matches: list[str] = []
    inserts: list[list[str]] = []
    descriptions: list[str] = []
    hhsuite: dict[str, str] = {}
    hh_lines: dict[str, int] = {}
    for record, line in parse_fasta(path, unique=unique, skip_hash_header=True,
                                    free_text_ids=HHSUITE_ROWS):
        match, slots = split_a3m_row(record.sequence)
        if record.id in HHSUITE_ROWS and not ids:
            hhsuite[record.id] = match
            hh_lines[record.id] = line
            continue
        _check_a3m_row(len(ids), record.id, record.sequence, match, matches, path, line)
        ids.append(record.id)
        matches.append(match)
        inserts.append(slots)
        descriptions.append(record.description)
    if not ids:
        raise InputError("A3M file has annotation rows but no sequences", path=path)
    for name, row in hhsuite.items():
        if len(row) != len(matches[0]):
            raise InputError(f"HH-suite row has {len(row)} columns, the query has "
                             f"{len(matches[0])}", path=path, line=hh_lines[name], record=name)
    annotations = {"hhsuite": hhsuite} if hhsuite else {}
    return MSA(ids, matches, descriptions, insertions=inserts, annotations=annotations)


def write_a3m(path: PathLike, msa: MSA) -> None:
    """Write ``msa`` as A3M, one line per row (see :meth:`MSA.to_a3m_rows`).

    Match states are written uppercase with ``-`` gaps (so lowercase residues of an aligned
    FASTA MSA become uppercase); :attr:`MSA.insertions` are written back as lowercase letters.
    """
    rows = msa.to_a3m_rows()
    with atomic_write(path) as handle:
        for name, row in msa.annotations.get("hhsuite", {}).items():
            handle.write(f">{name}\n{row}\n")
        for rid, row, desc in zip(msa.ids, rows, msa.descriptions, strict=True):
            handle.write(format_fasta(FastaRecord(rid, desc, row), 0))
