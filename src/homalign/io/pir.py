"""PIR / HOMSTRAD: ``.ali`` family alignments and ``.tem`` JOY structural templates.

An entry is a header ``>P1;<id>`` (``P1`` is the PIR sequence type, kept as
:attr:`PirEntry.kind`), one description line (HOMSTRAD: ``structureX:1b4k:  10 :A: 335 :A:...``),
then the aligned sequence over any number of lines, ended by ``*``. ``C;`` lines are comments.

Chain breaks: in HOMSTRAD ``.ali`` files ``/`` marks a chain break; it carries no residue but it
*does* occupy an alignment column, usually one where the other members have residues (checked on
the 2021 release: 90 of 115 ``/`` share their column with a residue of another member). Dropping
that column would delete those residues, so :func:`read_pir` turns each ``/`` into a gap ``-``
and records its column in :attr:`PirEntry.chain_breaks`. This is exactly how the family's
``.tem`` file writes the same alignment, so ``.ali`` and ``.tem`` columns correspond one to one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from homalign.errors import InputError
from homalign.io.atomic import atomic_write
from homalign.io.msa import MSA
from homalign.io.text import PathLike, check_readable, numbered_lines

_BAD_ALI_CHAR = re.compile(r"[^A-Za-z\-/\s*]")


@dataclass(frozen=True, slots=True)
class PirEntry:
    """One PIR entry.

    Attributes:
        id: the code after ``>XX;`` (e.g. ``1b4ka``).
        kind: the PIR sequence type before the ``;`` (``P1`` in HOMSTRAD).
        description: the whole description line (``structureX:...`` or a JOY track name).
        aligned: the aligned sequence, ``*`` stripped, ``/`` chain breaks turned into ``-``.
        chain_breaks: the columns where the file had a ``/`` (written back by :func:`write_pir`).
    """

    id: str
    kind: str
    description: str
    aligned: str
    chain_breaks: tuple[int, ...] = ()

    @property
    def sequence(self) -> str:
        """The residues (gaps removed)."""
        return "".join(c for c in self.aligned if c.isalpha())


@dataclass(frozen=True, slots=True)
class _RawEntry:
    kind: str
    id: str
    description: str
    data: str
    header_line: int


def _scan(path: PathLike, bad_char: re.Pattern[str] | None) -> Iterator[_RawEntry]:
    """Yield the entries of a PIR file, checking the structure (headers, description, ``*``)."""
    kind = rid = description = ""
    header_line = 0
    chunks: list[str] = []
    state = "between"  # between entries | description | sequence
    last = 0
    for number, line in numbered_lines(path):
        last = number
        if state == "description":
            description = line.strip()
            state = "sequence"
            continue
        if line.startswith("C;") or not line.strip():
            continue
        if line.startswith(">"):
            if state == "sequence":
                raise InputError(
                    f"entry starting on line {header_line} is not terminated by '*'",
                    path=path, line=number, record=rid,
                )
            head = line[1:].strip()
            kind, sep, rid = head.partition(";")
            kind, rid = kind.strip(), rid.strip()
            if not sep or not rid or any(c.isspace() for c in rid):
                raise InputError(f"bad PIR header {line!r} (expected '>P1;<id>')", path=path,
                                 line=number)
            header_line = number
            chunks = []
            state = "description"
            continue
        if state == "between":
            raise InputError("data outside a PIR entry (after '*' or before the first '>')",
                             path=path, line=number, record=rid or None)
        if bad_char is not None:
            bad = bad_char.search(line)
            if bad is not None:
                raise InputError(f"invalid character {bad.group()!r} in sequence", path=path,
                                 line=number, record=rid, column=bad.start() + 1)
        star = line.find("*")
        if star >= 0:
            if line[star + 1:].strip():
                raise InputError("data after the '*' terminator", path=path, line=number,
                                 record=rid, column=star + 2)
            chunks.append("".join(line[:star].split()))
            yield _RawEntry(kind, rid, description, "".join(chunks), header_line)
            state = "between"
        else:
            chunks.append("".join(line.split()))
    if state == "description":
        raise InputError("entry has no description line", path=path, line=last, record=rid)
    if state == "sequence":
        raise InputError(
            f"entry starting on line {header_line} is not terminated by '*' (end of file)",
            path=path, line=last, record=rid,
        )


def read_pir(path: PathLike) -> list[PirEntry]:
    """Read a PIR alignment (a HOMSTRAD ``.ali`` family file).

    Raises:
        InputError: a missing file, no entries, a bad header, a missing description line, an
            entry without its terminating ``*``, an invalid character, an empty sequence, a
            duplicate id, rows of unequal length (each naming file, line and record).
    """
    check_readable(path)
    entries: list[PirEntry] = []
    lines: dict[str, int] = {}
    for raw in _scan(path, _BAD_ALI_CHAR):
        if raw.id in lines:
            raise InputError(f"duplicate id (first entry on line {lines[raw.id]})", path=path,
                             line=raw.header_line, record=raw.id)
        lines[raw.id] = raw.header_line
        if not any(c.isalpha() for c in raw.data):
            raise InputError("entry has no residues", path=path, line=raw.header_line,
                             record=raw.id)
        breaks = tuple(i for i, c in enumerate(raw.data) if c == "/")
        aligned = raw.data.replace("/", "-")
        if entries and len(aligned) != len(entries[0].aligned):
            raise InputError(
                f"aligned sequence has {len(aligned)} columns, the first entry "
                f"({entries[0].id!r}) has {len(entries[0].aligned)}",
                path=path, line=raw.header_line, record=raw.id,
            )
        entries.append(PirEntry(raw.id, raw.kind, raw.description, aligned, breaks))
    if not entries:
        raise InputError("no PIR entries", path=path)
    return entries


def read_tem(path: PathLike) -> dict[str, dict[str, str]]:
    """Read a JOY template (HOMSTRAD ``.tem``): id → {track name → aligned string}.

    Each protein has a ``sequence`` entry and one entry per structural track whose description
    line is the track name (``secondary structure and phi angle``, ``solvent accessibility``,
    ``DSSP``, ``percentage accessibility``, ...). Track strings are kept verbatim (``*``
    stripped; ``/`` turned into ``-`` as in :func:`read_pir`); gaps are ``-``.

    Raises:
        InputError: structural PIR errors, a repeated (id, track), a track for an id without a
            ``sequence`` entry, a track whose length differs from its sequence, sequences of
            unequal length (each naming file, line and record).
    """
    check_readable(path)
    out: dict[str, dict[str, str]] = {}
    seen: dict[tuple[str, str], int] = {}
    width: int | None = None
    for raw in _scan(path, None):
        track = raw.description
        key = (raw.id, track)
        if key in seen:
            raise InputError(f"track {track!r} repeated (first on line {seen[key]})", path=path,
                             line=raw.header_line, record=raw.id)
        seen[key] = raw.header_line
        data = raw.data.replace("/", "-")
        tracks = out.setdefault(raw.id, {})
        if track == "sequence":
            if width is not None and len(data) != width:
                raise InputError(f"sequence has {len(data)} columns, the first has {width}",
                                 path=path, line=raw.header_line, record=raw.id)
            width = len(data)
        elif "sequence" not in tracks:
            raise InputError(f"track {track!r} comes before this protein's 'sequence' entry",
                             path=path, line=raw.header_line, record=raw.id)
        elif len(data) != len(tracks["sequence"]):
            raise InputError(
                f"track {track!r} has {len(data)} columns, the sequence has "
                f"{len(tracks['sequence'])}",
                path=path, line=raw.header_line, record=raw.id,
            )
        tracks[track] = data
    if not out:
        raise InputError("no PIR entries", path=path)
    return out


def format_pir(entry: PirEntry, width: int = 75) -> str:
    """Return the PIR text of one entry (``/`` restored at its chain breaks)."""
    if not entry.id or any(c.isspace() for c in entry.id):
        raise ValueError(f"PIR id must be one non-empty word, got {entry.id!r}")
    if "\n" in entry.description:
        raise ValueError(f"entry {entry.id!r}: description contains a line break")
    seq = list(entry.aligned)
    for col in entry.chain_breaks:
        if seq[col] != "-":
            raise ValueError(f"entry {entry.id!r}: chain break at column {col} is not a gap")
        seq[col] = "/"
    text = "".join(seq) + "*"
    lines = [text[i:i + width] for i in range(0, len(text), width)] if width > 0 else [text]
    return f">{entry.kind or 'P1'};{entry.id}\n{entry.description}\n" + "\n".join(lines) + "\n"


def write_pir(path: PathLike, entries: Iterable[PirEntry], width: int = 75) -> None:
    """Write PIR entries atomically, sequences wrapped at ``width`` (0: one line)."""
    with atomic_write(path) as handle:
        for entry in entries:
            handle.write(format_pir(entry, width))


def pir_to_msa(entries: list[PirEntry]) -> MSA:
    """The entries as an :class:`MSA` (ids, aligned rows, description lines)."""
    return MSA([e.id for e in entries], [e.aligned for e in entries],
               [e.description for e in entries])
