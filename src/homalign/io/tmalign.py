"""TM-align reference pairs (``scope/tmalign-pairs.*.tsv``).

Columns: ``query target query_sccs target_sccs tm1 tm2 tm3 rmsd aligned cigar query_seq
target_seq``. The cigar walks both sequences from their first residue: ``P`` and ``M`` consume one
residue of each (an aligned pair; ``P`` = within TM-align's distance cut-off, ``M`` = farther),
``D`` consumes a query residue only, ``I`` a target residue only (this file's convention, the
opposite of :mod:`homalign.dp`'s cigar letters).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from homalign.errors import InputError
from homalign.io.text import PathLike, check_readable, numbered_lines

TMALIGN_COLUMNS = (
    "query", "target", "query_sccs", "target_sccs", "tm1", "tm2", "tm3", "rmsd", "aligned",
    "cigar", "query_seq", "target_seq",
)
_CIGAR_OP = re.compile(r"(\d+)([PMDI])")
_CIGAR = re.compile(r"(?:\d+[PMDI])+")


@dataclass(frozen=True, eq=False, slots=True)
class TMAlignPair:
    """One TM-align reference alignment of two SCOPe domains.

    Attributes:
        query, target: ASTRAL domain ids; query_sccs, target_sccs: their SCOP classifications.
        tm1, tm2, tm3: the TM-scores as the source lists them; rmsd: over the aligned pairs.
        aligned: TM-align's aligned length (= number of P and M pairs, checked).
        cigar: the raw cigar; query_seq, target_seq: the domain sequences.
        pairs: int32 ``(k, 2)`` aligned residue pairs ``(i, j)``, 0-based, increasing.
        close: bool ``(k,)``, True for ``P`` pairs (within the distance cut-off).
    """

    query: str
    target: str
    query_sccs: str
    target_sccs: str
    tm1: float
    tm2: float
    tm3: float
    rmsd: float
    aligned: int
    cigar: str
    query_seq: str
    target_seq: str
    pairs: np.ndarray
    close: np.ndarray


def cigar_pairs(cigar: str, query_length: int | None = None, target_length: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Decode a TM-align cigar into ``(pairs, close, query_length, target_length)``.

    When ``query_length`` and ``target_length`` are given, the residues the cigar consumes are
    checked against them *before* anything is expanded (memory is bounded by the lengths).

    Raises:
        ValueError: the cigar is not a sequence of ``<count><P|M|D|I>`` with counts > 0, or it
            does not consume exactly the given lengths.
    """
    if not _CIGAR.fullmatch(cigar):
        bad = _CIGAR.match(cigar)
        pos = bad.end() if bad is not None else 0
        raise ValueError(f"unreadable cigar at character {pos + 1}: {cigar[pos:pos + 10]!r}")
    ops = _CIGAR_OP.findall(cigar)
    numbers = [int(n) for n, _ in ops]
    if any(n == 0 for n in numbers):
        raise ValueError("cigar operation with count 0")
    qlen = sum(n for n, (_, op) in zip(numbers, ops, strict=True) if op in "PMD")
    tlen = sum(n for n, (_, op) in zip(numbers, ops, strict=True) if op in "PMI")
    if query_length is not None and target_length is not None and (
            qlen != query_length or tlen != target_length):
        raise ValueError(f"cigar consumes {qlen} query and {tlen} target residues, the sequences "
                         f"have {query_length} and {target_length}")
    if qlen + tlen > 10**7:
        raise ValueError(f"cigar too long ({qlen} query, {tlen} target residues)")
    counts = np.array(numbers, dtype=np.int64)
    letters = np.frombuffer("".join(op for _, op in ops).encode("ascii"), dtype=np.uint8)
    steps = np.repeat(letters, counts)
    is_pair = (steps == ord("P")) | (steps == ord("M"))
    q_advance = is_pair | (steps == ord("D"))
    t_advance = is_pair | (steps == ord("I"))
    i = np.cumsum(q_advance) - 1
    j = np.cumsum(t_advance) - 1
    pairs = np.stack([i[is_pair], j[is_pair]], axis=1).astype(np.int32).reshape(-1, 2)
    close = steps[is_pair] == ord("P")
    return pairs, close, int(q_advance.sum()), int(t_advance.sum())


def _number(text: str, kind: type, path: PathLike, line: int, record: str, name: str) -> float:
    try:
        value = kind(text)
    except ValueError:
        raise InputError(f"column {name!r}: not a number: {text!r}", path=path, line=line,
                         record=record, column=TMALIGN_COLUMNS.index(name) + 1) from None
    if kind is float and not math.isfinite(value):
        raise InputError(f"column {name!r}: not a finite number: {text!r}", path=path,
                         line=line, record=record, column=TMALIGN_COLUMNS.index(name) + 1)
    return value


def read_tmalign_pairs(path: PathLike) -> Iterator[TMAlignPair]:
    """Stream the pairs of a TM-align pairs TSV (header line required).

    Raises:
        InputError: a wrong header, a line with the wrong number of fields, a bad number, a bad
            cigar, a cigar that does not consume exactly both sequences, an ``aligned`` count that
            differs from the cigar's pairs, an empty sequence (naming file, line, record = the
            ``query-target`` pair; ``position`` is the 1-based field).
    """
    check_readable(path)
    return _iter_pairs(path)


def _iter_pairs(path: PathLike) -> Iterator[TMAlignPair]:
    header_seen = False
    for number, line in numbered_lines(path):
        if not header_seen:
            if tuple(line.split("\t")) != TMALIGN_COLUMNS:
                raise InputError("expected the header line '" + " ".join(TMALIGN_COLUMNS)
                                 + "' (tab-separated)", path=path, line=number)
            header_seen = True
            continue
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(TMALIGN_COLUMNS):
            raise InputError(f"expected {len(TMALIGN_COLUMNS)} tab-separated fields, found "
                             f"{len(fields)}", path=path, line=number)
        query, target, qsccs, tsccs = fields[:4]
        record = f"{query}-{target}"
        tm1, tm2, tm3, rmsd = (_number(fields[k], float, path, number, record, TMALIGN_COLUMNS[k])
                               for k in range(4, 8))
        aligned = int(_number(fields[8], int, path, number, record, "aligned"))
        cigar, qseq, tseq = fields[9], fields[10], fields[11]
        for col, seq in ((11, qseq), (12, tseq)):
            if not seq.isalpha():
                raise InputError("sequence must be non-empty letters", path=path, line=number,
                                 record=record, column=col)
        try:
            pairs, close, qlen, tlen = cigar_pairs(cigar, len(qseq), len(tseq))
        except ValueError as exc:
            raise InputError(str(exc), path=path, line=number, record=record,
                             column=10) from None
        if qlen != len(qseq) or tlen != len(tseq):
            raise InputError(
                f"cigar consumes {qlen} query and {tlen} target residues, the sequences have "
                f"{len(qseq)} and {len(tseq)}",
                path=path, line=number, record=record, column=10,
            )
        if aligned != len(pairs):
            raise InputError(f"'aligned' is {aligned} but the cigar has {len(pairs)} pairs",
                             path=path, line=number, record=record, column=9)
        yield TMAlignPair(query, target, qsccs, tsccs, tm1, tm2, tm3, rmsd, aligned, cigar,
                          qseq, tseq, pairs, close)
    if not header_seen:
        raise InputError("empty file (expected a header line)", path=path)
