"""FASTA: streaming reader and wrapped writer.

Residue letters are *not* checked against the amino-acid alphabet here (that is
:mod:`homalign.alphabet`'s job); this module only rejects what cannot be sequence data at all:
digits, punctuation other than the gap characters ``-``/``.`` and the ``*`` terminator.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from homalign.errors import InputError
from homalign.io.atomic import atomic_write
from homalign.io.text import PathLike, check_readable, numbered_lines

# What may appear on a sequence line (whitespace is removed, '*' ends the record).
_BAD_CHAR = re.compile(r"[^A-Za-z*.\-\s]")
_WRITABLE = re.compile(r"[A-Za-z.\-]+")


@dataclass(frozen=True, slots=True)
class FastaRecord:
    """One FASTA record.

    Attributes:
        id: the first word of the header (after ``>``).
        description: the rest of the header, stripped ("" if none).
        sequence: the sequence with whitespace and the terminating ``*`` removed, lines joined,
            case preserved (gap characters ``-``/``.`` are kept as they are).
    """

    id: str
    description: str
    sequence: str


def parse_fasta(
    path: PathLike,
    *,
    unique: bool = True,
    skip_hash_header: bool = False,
    free_text_ids: frozenset[str] = frozenset(),
) -> Iterator[tuple[FastaRecord, int]]:
    """Yield ``(record, header_line_number)`` for each record of a FASTA file.

    The engine behind :func:`read_fasta` and the MSA readers (which need line numbers for
    their own checks). ``skip_hash_header`` skips ``#`` lines before the first record
    (HH-suite A3M headers). Lines starting with ``;`` (old FASTA comments) are skipped.
    Records whose id is in ``free_text_ids`` (HH-suite's ``ss_conf`` rows hold digits) accept
    any non-space character.
    """
    seen: dict[str, int] = {}
    header_line = 0
    rec_id: str | None = None
    description = ""
    chunks: list[str] = []
    terminated = False
    n_records = 0
    last_line = 0
    at_top = True

    def finish() -> FastaRecord:
        sequence = "".join(chunks)
        if not sequence:
            raise InputError("record has an empty sequence", path=path, line=header_line,
                             record=rec_id)
        assert rec_id is not None
        return FastaRecord(rec_id, description, sequence)

    for number, line in numbered_lines(path):
        last_line = number
        if at_top and skip_hash_header and line.startswith("#"):
            continue
        if line.startswith(";"):
            continue
        if line.startswith(">"):
            at_top = False
            if rec_id is not None:
                yield finish(), header_line
                n_records += 1
            words = line[1:].strip().split(maxsplit=1)
            if not words:
                raise InputError("header has no sequence id", path=path, line=number)
            rec_id = words[0]
            description = words[1].strip() if len(words) > 1 else ""
            if unique:
                if rec_id in seen:
                    raise InputError(f"duplicate id (first seen on line {seen[rec_id]})",
                                     path=path, line=number, record=rec_id)
                seen[rec_id] = number
            header_line = number
            chunks = []
            terminated = False
            continue
        if not line.strip():
            continue
        at_top = False
        if rec_id is None:
            raise InputError("sequence data before the first '>' header", path=path, line=number)
        bad = None if rec_id in free_text_ids else _BAD_CHAR.search(line)
        if bad is not None:
            raise InputError(f"invalid character {bad.group()!r} in sequence", path=path,
                             line=number, record=rec_id, column=bad.start() + 1)
        if terminated:
            raise InputError("sequence data after the '*' terminator", path=path, line=number,
                             record=rec_id, column=len(line) - len(line.lstrip()) + 1)
        star = line.find("*")
        if star >= 0:
            if line[star + 1:].strip():
                raise InputError("'*' inside the sequence (only allowed at its end)", path=path,
                                 line=number, record=rec_id, column=star + 1)
            line = line[:star]
            terminated = True
        chunks.append("".join(line.split()))
    if rec_id is None:
        raise InputError("no FASTA records (empty file?)", path=path,
                         line=last_line if last_line else None)
    yield finish(), header_line


def read_fasta(path: PathLike, *, unique: bool = True) -> Iterator[FastaRecord]:
    """Stream the records of a FASTA file.

    Args:
        path: the file; a missing file raises :class:`InputError` at once (not on first use).
        unique: reject a repeated id (the error names both lines).

    Raises:
        InputError: no records, a record with an empty sequence, an invalid character (with line
            and column), sequence data before the first header, a header without id, a
            duplicate id. Raised while iterating, naming file, line and record.
    """
    check_readable(path)
    return (record for record, _ in parse_fasta(path, unique=unique))


def _check_writable(record: FastaRecord) -> None:
    if not record.id or any(c.isspace() for c in record.id):
        raise ValueError(f"FASTA id must be one non-empty word, got {record.id!r}")
    if "\n" in record.description or "\r" in record.description:
        raise ValueError(f"record {record.id!r}: description contains a line break")
    if not _WRITABLE.fullmatch(record.sequence):
        raise ValueError(
            f"record {record.id!r}: sequence must be non-empty letters and gaps ('-', '.')"
        )


def format_fasta(record: FastaRecord, width: int = 60) -> str:
    """Return the FASTA text of one record, sequence wrapped at ``width`` (0: one line)."""
    _check_writable(record)
    header = f">{record.id} {record.description}" if record.description else f">{record.id}"
    seq = record.sequence
    if width and width > 0:
        lines = [seq[i:i + width] for i in range(0, len(seq), width)]
    else:
        lines = [seq]
    return header + "\n" + "\n".join(lines) + "\n"


def write_fasta(path: PathLike, records: Iterable[FastaRecord], width: int = 60) -> int:
    """Write records atomically (see :func:`homalign.io.atomic.atomic_write`).

    Any object with ``id``, ``description`` and ``sequence`` attributes is accepted.

    Returns:
        The number of records written.

    Raises:
        ValueError: an id that is empty or contains whitespace, a description with a line
            break, an empty sequence or one with characters other than letters and ``-``/``.``
            (nothing is written then).
    """
    n = 0
    with atomic_write(path) as handle:
        for record in records:
            handle.write(format_fasta(record, width))
            n += 1
    return n
