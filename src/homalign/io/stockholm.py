"""Stockholm alignments (Pfam, HMMER, Infernal).

Rows keep their characters (gaps ``-`` or ``.``, lowercase insert columns as written).
Annotations are kept in :attr:`MSA.annotations`, only the kinds present:

- ``"GF"``: {tag: text} (repeated tags joined with ``"\\n"``),
- ``"GS"``: {id: {tag: text}} (the ``DE`` tag goes to :attr:`MSA.descriptions` instead),
- ``"GR"``: {id: {tag: per-column string}}, ``"GC"``: {tag: per-column string}.

Other ``#`` lines are comments. Each alignment ends with ``//``; sequences split over several
blocks are joined.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from homalign.errors import InputError
from homalign.io.atomic import atomic_write
from homalign.io.msa import MSA
from homalign.io.text import PathLike, check_readable, numbered_lines

_BAD_CHAR = re.compile(r"[^A-Za-z.\-]")


class _Builder:
    """Collects one alignment's lines until ``//``."""

    def __init__(self, path: PathLike, start: int) -> None:
        self.path = path
        self.start = start
        self.rows: dict[str, list[str]] = {}
        self.last_line: dict[str, int] = {}
        self.gf: dict[str, str] = {}
        self.gs: dict[str, dict[str, str]] = {}
        self.gr: dict[str, dict[str, str]] = {}
        self.gc: dict[str, str] = {}

    def markup(self, number: int, line: str) -> None:
        kind = line[2:4]
        n_words = {"GF": 3, "GS": 4, "GR": 4, "GC": 3}.get(kind)
        if n_words is None or not line.startswith("#="):
            return  # a free comment
        words = line.split(None, n_words - 1)
        if len(words) < n_words - 1:
            raise InputError(f"incomplete #={kind} line", path=self.path, line=number)
        text = words[n_words - 1].strip() if len(words) == n_words else ""
        if kind == "GF":
            tag = words[1]
            self.gf[tag] = f"{self.gf[tag]}\n{text}" if tag in self.gf else text
        elif kind == "GC":
            self.gc[words[1]] = self.gc.get(words[1], "") + "".join(text.split())
        elif kind == "GS":
            tags = self.gs.setdefault(words[1], {})
            tags[words[2]] = f"{tags[words[2]]} {text}" if words[2] in tags else text
        else:
            tags = self.gr.setdefault(words[1], {})
            tags[words[2]] = tags.get(words[2], "") + "".join(text.split())

    def sequence(self, number: int, line: str) -> None:
        words = line.split()
        if len(words) != 2:
            raise InputError("expected '<id> <aligned sequence>'", path=self.path, line=number)
        rid, data = words
        bad = _BAD_CHAR.search(data)
        if bad is not None:
            raise InputError(f"invalid character {bad.group()!r} in sequence", path=self.path,
                             line=number, record=rid, column=line.index(data) + bad.start() + 1)
        self.rows.setdefault(rid, []).append(data)
        self.last_line[rid] = number

    def finish(self, number: int) -> MSA:
        if not self.rows:
            raise InputError(f"alignment starting on line {self.start} has no sequences",
                             path=self.path, line=number)
        ids = list(self.rows)
        rows = ["".join(parts) for parts in self.rows.values()]
        width = len(rows[0])
        for rid, row in zip(ids, rows, strict=True):
            if len(row) != width:
                raise InputError(f"row has {len(row)} columns, the first row ({ids[0]!r}) has "
                                 f"{width}", path=self.path, line=self.last_line[rid], record=rid)
        for rid, tags in self.gr.items():
            for tag, data in tags.items():
                if len(data) != width:
                    raise InputError(f"#=GR {tag} has {len(data)} columns, the alignment has "
                                     f"{width}", path=self.path, line=number, record=rid)
        for tag, data in self.gc.items():
            if len(data) != width:
                raise InputError(f"#=GC {tag} has {len(data)} columns, the alignment has {width}",
                                 path=self.path, line=number)
        descriptions = [self.gs.get(rid, {}).pop("DE", "") for rid in ids]
        gs = {rid: tags for rid, tags in self.gs.items() if tags}
        annotations: dict[str, Any] = {}
        for key, value in (("GF", self.gf), ("GS", gs), ("GR", self.gr), ("GC", self.gc)):
            if value:
                annotations[key] = value
        return MSA(ids, rows, descriptions, annotations=annotations)


def iter_stockholm(path: PathLike) -> Iterator[MSA]:
    """Stream every alignment of a Stockholm file (Pfam files hold many).

    Raises:
        InputError: a missing ``# STOCKHOLM`` header, a missing ``//`` terminator, a malformed
            line, an invalid character, rows or ``#=GR``/``#=GC`` lines of the wrong length, an
            alignment without sequences, a file without alignments (naming file, line, record).
    """
    check_readable(path)
    return _iter(path)


def _iter(path: PathLike) -> Iterator[MSA]:
    current: _Builder | None = None
    n = 0
    last = 0
    for number, line in numbered_lines(path):
        last = number
        stripped = line.strip()
        if not stripped:
            continue
        if current is None:
            if not stripped.startswith("# STOCKHOLM"):
                raise InputError("expected a '# STOCKHOLM 1.0' header", path=path, line=number)
            current = _Builder(path, number)
        elif stripped == "//":
            yield current.finish(number)
            n += 1
            current = None
        elif line.startswith("#"):
            current.markup(number, line)
        else:
            current.sequence(number, line)
    if current is not None:
        raise InputError(f"alignment starting on line {current.start} has no '//' terminator",
                         path=path, line=last)
    if n == 0:
        raise InputError("no Stockholm alignment (empty file?)", path=path)


def read_stockholm(path: PathLike) -> MSA:
    """Read a Stockholm file holding exactly one alignment (else see :func:`iter_stockholm`)."""
    alignments = iter_stockholm(path)
    first = next(alignments)
    for _ in alignments:
        raise InputError("file holds more than one alignment; use iter_stockholm", path=path)
    return first


def _name_ok(name: str, what: str) -> str:
    if not name or any(c.isspace() for c in name):
        raise ValueError(f"Stockholm {what} must be one non-empty word, got {name!r}")
    return name


def format_stockholm(msa: MSA) -> str:
    """The Stockholm text of one alignment (one block; A3M insertions are not written); rows
    with the same id are refused (every Stockholm reader would join them into one)."""
    seen: dict[str, int] = {}
    for row, rid in enumerate(msa.ids, 1):
        if rid in seen:
            raise ValueError(f"Stockholm names each row once: {rid!r} is the name of rows "
                             f"{seen[rid]} and {row} (make the ids unique first)")
        seen[rid] = row
    ann = msa.annotations
    out = ["# STOCKHOLM 1.0"]
    for tag, text in ann.get("GF", {}).items():
        out.extend(f"#=GF {_name_ok(tag, 'tag')} {part}".rstrip() for part in text.split("\n"))
    gs: dict[str, dict[str, str]] = {rid: dict(tags) for rid, tags in ann.get("GS", {}).items()}
    for rid, desc in zip(msa.ids, msa.descriptions, strict=True):
        if desc:
            gs.setdefault(rid, {})["DE"] = desc
    for rid, tags in gs.items():
        for tag, text in tags.items():
            if "\n" in text:
                raise ValueError(f"#=GS {rid} {tag}: text contains a line break")
            out.append(f"#=GS {_name_ok(rid, 'id')} {_name_ok(tag, 'tag')} {text}".rstrip())
    if len(out) > 1:
        out.append("")
    gr: dict[str, dict[str, str]] = ann.get("GR", {})
    gc: dict[str, str] = ann.get("GC", {})
    names = [_name_ok(rid, "id") for rid in msa.ids]
    names += [f"#=GR {rid} {tag}" for rid, tags in gr.items() for tag in tags]
    names += [f"#=GC {tag}" for tag in gc]
    pad = max(len(name) for name in names) + 1 if names else 1
    for rid, row in zip(msa.ids, msa.rows, strict=True):
        out.append(f"{rid:<{pad}}{row}")
        for tag, data in gr.get(rid, {}).items():
            out.append(f"{'#=GR ' + rid + ' ' + tag:<{pad}}{data}")
    for rid, tags in gr.items():
        if rid not in msa.ids:
            out.extend(f"{'#=GR ' + rid + ' ' + tag:<{pad}}{data}" for tag, data in tags.items())
    for tag, data in gc.items():
        out.append(f"{'#=GC ' + _name_ok(tag, 'tag'):<{pad}}{data}")
    out.append("//")
    return "\n".join(out) + "\n"


def pair_stockholm(query_id: str, target_id: str, query_row: str, target_row: str) -> str:
    """A pairwise alignment as Stockholm the way HMMER writes one (``hmmalign``, ``--hand``
    input): the query defines the match columns, marked ``x`` in ``#=GC RF``; a column where the
    query has a gap is an insert column, ``.`` in the query row and ``.``/lowercase residues in
    the target row; match columns are uppercase with ``-`` gaps.

    ``query_row``, ``target_row``: the two gapped rows (``-`` gaps), of equal length.
    """
    if len(query_row) != len(target_row):
        raise ValueError("the two rows of a pairwise alignment differ in length")
    q, t, rf = [], [], []
    for a, b in zip(query_row, target_row, strict=True):
        if a == "-":
            q.append(".")
            t.append("." if b == "-" else b.lower())
            rf.append(".")
        else:
            q.append(a.upper())
            t.append("-" if b == "-" else b.upper())
            rf.append("x")
    ids = [_name_ok(query_id, "id"), _name_ok(target_id, "id")]
    if ids[0] == ids[1]:
        raise ValueError(f"Stockholm needs two different sequence names, both are {ids[0]!r}")
    pad = max(len(ids[0]), len(ids[1]), len("#=GC RF")) + 1
    return (f"# STOCKHOLM 1.0\n\n{ids[0]:<{pad}}{''.join(q)}\n{ids[1]:<{pad}}{''.join(t)}\n"
            f"{'#=GC RF':<{pad}}{''.join(rf)}\n//\n")


def write_stockholm(path: PathLike, msa: MSA) -> None:
    """Write one alignment as Stockholm, atomically."""
    text = format_stockholm(msa)
    with atomic_write(path) as handle:
        handle.write(text)
