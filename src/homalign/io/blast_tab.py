"""BLAST tabular output (``-outfmt 6``), optionally with the aligned strings appended, and
column selection by BLAST's field names (``-outfmt "6 qseqid sseqid ... qseq sseq"``).

Numbers are formatted the way BLAST+ writes its tabular output: percent identity with three
decimals; the E-value ``0.0`` below 1e-180, ``%.2e`` below 0.0009, then ``%.3f``, ``%.2f``,
``%.1f`` and ``%.0f`` for the bands up to 0.1, 1, 10 and above; the bit score ``%.1f`` below 100,
then truncated to an integer, ``%.3e`` from 100000. Formatting is idempotent: reading a line and
writing it again gives the same text. A value a method does not compute (an E-value or a bit
score without a null law) is written :data:`NOT_COMPUTED` (``NA``) and read back as NaN.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, TextIO

from homalign.errors import InputError
from homalign.io.atomic import atomic_write
from homalign.io.text import PathLike, check_readable, numbered_lines

BLAST_TAB_COLUMNS = (
    "qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart", "qend", "sstart",
    "send", "evalue", "bitscore",
)
EXTRA_COLUMNS = ("qaln", "taln")
#: what a column holds when the method does not compute it (no E-value law, no bit score)
NOT_COMPUTED = "NA"
#: the BLAST+ ``-outfmt 6`` fields homalign writes, with their meaning (BLAST's names)
OUTFMT_FIELDS = {
    "qseqid": "query id", "qacc": "query id", "qaccver": "query id",
    "sseqid": "subject id", "sacc": "subject id", "saccver": "subject id",
    "pident": "percent identical columns of the alignment",
    "length": "alignment length (columns, gaps included)",
    "mismatch": "aligned non-identical pairs", "gapopen": "gap openings",
    "gaps": "gap columns", "nident": "identical pairs",
    "positive": "pairs with a positive BLOSUM62 score",
    "ppos": "percent positive columns", "qstart": "query start (1-based)",
    "qend": "query end", "sstart": "subject start", "send": "subject end",
    "qlen": "query length", "slen": "subject length",
    "qseq": "aligned part of the query (with gaps)",
    "sseq": "aligned part of the subject (with gaps)",
    "evalue": f"E-value ({NOT_COMPUTED} where the method has no null law)",
    "bitscore": f"bit score ({NOT_COMPUTED} where the method has none)",
    "score": "raw score, rounded to an integer as BLAST's",
    "qcovhsp": "percent of the query covered by the alignment",
}

#: the fields a search hit has without its alignment: a search asked for these alone computes
#: no alignment (as MMseqs2 computes a backtrace only for the columns that need one)
HIT_FIELDS = frozenset({"qseqid", "qacc", "qaccver", "sseqid", "sacc", "saccver", "qlen", "slen",
                        "evalue", "bitscore", "score"})


def parse_outfmt(text: str) -> tuple[str, ...]:
    """The columns of a BLAST ``-outfmt`` string: ``"6"`` or ``"6 std"`` the 12 standard ones,
    ``"6 qseqid sseqid evalue qseq sseq"`` those (``std`` inside expands to the 12)."""
    words = text.replace(",", " ").split()
    if not words or words[0] != "6":
        raise InputError(f"--outfmt {text!r}: only tabular format 6 is written (\"6 FIELD ...\"; "
                         f"fields: {' '.join(OUTFMT_FIELDS)})")
    cols: list[str] = []
    for w in words[1:] or ["std"]:
        if w == "std":
            cols.extend(BLAST_TAB_COLUMNS)
        elif w in OUTFMT_FIELDS:
            cols.append(w)
        else:
            import difflib

            close = difflib.get_close_matches(w, OUTFMT_FIELDS, n=1)
            raise InputError(f"--outfmt: unknown field {w!r}"
                             + (f" (did you mean {close[0]!r}?)" if close else "")
                             + f"; fields: std {' '.join(OUTFMT_FIELDS)}")
    return tuple(cols)


def format_value(name: str, value: object) -> str:
    """One field as BLAST+ writes it (None or NaN: :data:`NOT_COMPUTED`)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NOT_COMPUTED
    if name == "evalue":
        return format_evalue(float(value))  # type: ignore[arg-type]
    if name == "bitscore":
        return format_bitscore(float(value))  # type: ignore[arg-type]
    if name in ("pident", "ppos"):
        return f"{float(value):.3f}"  # type: ignore[arg-type]
    if name in ("score", "qcovhsp"):
        return str(int(round(float(value))))  # type: ignore[arg-type]
    return str(value)


def format_fields(values: dict[str, object], columns: Sequence[str]) -> str:
    """One tab-separated line (with its newline) of the ``columns`` of ``values``."""
    fields = [format_value(c, values[c]) for c in columns]
    for value in fields:
        if not value or "\t" in value or "\n" in value:
            raise ValueError(f"field {value!r} is empty or contains a tab or line break")
    if fields and fields[0].startswith("#"):
        raise ValueError(f"first field {fields[0]!r} starts with '#' (read back as a comment)")
    return "\t".join(fields) + "\n"
_TYPES = (str, str, float, int, int, int, int, int, int, int, float, float)


@dataclass(frozen=True, slots=True)
class TabularHit:
    """One line of ``-outfmt 6``: the 12 standard columns plus optional aligned strings.

    Positions are 1-based and inclusive, as BLAST writes them.
    """

    qseqid: str
    sseqid: str
    pident: float
    length: int
    mismatch: int
    gapopen: int
    qstart: int
    qend: int
    sstart: int
    send: int
    evalue: float
    bitscore: float
    qaln: str | None = None
    taln: str | None = None


_EVALUE_BANDS = ((0.0009, ".2e"), (0.1, ".3f"), (1.0, ".2f"), (10.0, ".1f"), (math.inf, ".0f"))


def format_evalue(evalue: float) -> str:
    """An E-value as BLAST+ tabular output writes it.

    A value that rounds up to the next band is written in that band's format (0.996 → ``1.0``,
    not ``1.00``), so that writing what was read reproduces the text.
    """
    if math.isnan(evalue):
        return NOT_COMPUTED
    if evalue < 1.0e-180:
        return "0.0"
    for limit, spec in _EVALUE_BANDS:
        if evalue < limit:
            text = format(evalue, spec)
            if float(text) < limit:
                return text
            evalue = float(text)
    return "inf"


def format_bitscore(bits: float) -> str:
    """A bit score as BLAST+ writes it: ``%.1f`` below 100, an integer (truncated) up to 99999,
    ``%.3e`` from 100000 (BLAST switches to the integer at 99.9; here at 100, so that a value
    always reads back to the same text)."""
    if math.isnan(bits):
        return NOT_COMPUTED
    if bits >= 100000:
        return f"{bits:.3e}"
    if bits >= 100:
        return str(int(bits))
    text = f"{bits:.1f}"
    return "100" if float(text) >= 100 else text


def _check_extra(extra: Sequence[str]) -> tuple[str, ...]:
    extra = tuple(extra)
    unknown = [name for name in extra if name not in EXTRA_COLUMNS]
    if unknown:
        raise ValueError(f"unknown extra columns {unknown}; known: {list(EXTRA_COLUMNS)}")
    return extra


def format_hit(hit: TabularHit, extra: Sequence[str] = ()) -> str:
    """One tab-separated line (with its newline)."""
    fields = [
        hit.qseqid, hit.sseqid, f"{hit.pident:.3f}", str(hit.length), str(hit.mismatch),
        str(hit.gapopen), str(hit.qstart), str(hit.qend), str(hit.sstart), str(hit.send),
        format_evalue(hit.evalue), format_bitscore(hit.bitscore),
    ]
    for name in extra:
        value = getattr(hit, name)
        if value is None:
            raise ValueError(f"hit {hit.qseqid}/{hit.sseqid} has no {name!r} to write")
        fields.append(value)
    for value in fields:
        if not value or "\t" in value or "\n" in value:
            raise ValueError(f"hit {hit.qseqid}/{hit.sseqid}: field {value!r} is empty or "
                             "contains a tab or line break")
    if hit.qseqid.startswith("#"):
        raise ValueError(f"qseqid {hit.qseqid!r} starts with '#' (read back as a comment line)")
    return "\t".join(fields) + "\n"


def write_blast_tab(
    path_or_stream: PathLike | TextIO, hits: Iterable[TabularHit], extra: Sequence[str] = ()
) -> int:
    """Write hits as BLAST tabular lines; ``extra`` may name ``("qaln", "taln")``.

    A path is written atomically; a text stream (e.g. ``sys.stdout``) is written to directly.

    Returns:
        The number of hits written.
    """
    extra = _check_extra(extra)
    if isinstance(path_or_stream, str | os.PathLike):
        with atomic_write(path_or_stream) as handle:
            return _write_lines(handle, hits, extra)
    return _write_lines(path_or_stream, hits, extra)


def _write_lines(handle: IO[str], hits: Iterable[TabularHit], extra: tuple[str, ...]) -> int:
    n = 0
    for hit in hits:
        handle.write(format_hit(hit, extra))
        n += 1
    return n


def read_blast_tab(path: PathLike, extra: Sequence[str] = ()) -> Iterator[TabularHit]:
    """Stream the hits of a BLAST tabular file (``#`` comment lines and blank lines skipped).

    Raises:
        InputError: a line with the wrong number of fields or a field that is not a number
            (naming file, line, record ``qseqid/sseqid`` and the 1-based field).
    """
    check_readable(path)
    return _iter_hits(path, _check_extra(extra))


def _iter_hits(path: PathLike, extra: tuple[str, ...]) -> Iterator[TabularHit]:
    n_fields = len(BLAST_TAB_COLUMNS) + len(extra)
    for number, line in numbered_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != n_fields:
            raise InputError(f"expected {n_fields} tab-separated fields "
                             f"({' '.join(BLAST_TAB_COLUMNS + extra)}), found {len(fields)}",
                             path=path, line=number)
        record = f"{fields[0]}/{fields[1]}"
        values: list[object] = []
        for k, (name, kind) in enumerate(zip(BLAST_TAB_COLUMNS, _TYPES, strict=True)):
            if kind is float and fields[k] == NOT_COMPUTED:
                values.append(math.nan)
                continue
            try:
                values.append(kind(fields[k]))
            except ValueError:
                raise InputError(f"column {name!r}: not {'an integer' if kind is int else 'a number'}"
                                 f": {fields[k]!r}", path=path, line=number, record=record,
                                 column=k + 1) from None
        extras = dict(zip(extra, fields[len(BLAST_TAB_COLUMNS):], strict=True))
        yield TabularHit(*values, **extras)  # type: ignore[arg-type]

