"""Search hits: the :class:`Hit` type, their ranking, and tabular / A3M / pairwise output."""

from __future__ import annotations

import io as _stdio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from homalign.alignment import Alignment

BLAST_TAB_COLUMNS = ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart",
                     "qend", "sstart", "send", "evalue", "bitscore")


@dataclass
class Hit:
    """One database sequence found by a query.

    ``alignment`` is the traced-back alignment (its ``evalue`` and ``bits`` are set too);
    ``target_index`` is the sequence's position in the database.
    """

    query_id: str
    target_id: str
    target_index: int
    score: float
    bits: float
    evalue: float
    alignment: Alignment | None = None

    def sort_key(self) -> tuple[float, float, int]:
        return (self.evalue, -self.score, self.target_index)


def rank_hits(hits: Iterable[Hit]) -> list[Hit]:
    """Hits sorted by E-value, then score (descending), then database order."""
    return sorted(hits, key=Hit.sort_key)


def _format_evalue(e: float) -> str:
    if e == 0.0:
        return "0.0"
    if e < 1e-180:
        return "0.0"
    return f"{e:.2e}" if e < 1e-3 else f"{e:.3g}"


def tab_row(hit: Hit, extra: Sequence[str] = ()) -> list[str]:
    """The BLAST ``-outfmt 6`` columns of a hit (plus ``qaln``/``taln`` when asked)."""
    aln = hit.alignment
    if aln is None:
        raise ValueError(f"hit {hit.target_id} has no alignment")
    qa, ta = aln.gapped()
    length = len(qa)
    ident = aln.n_identical
    qs, qe = aln.query_span
    ts, te = aln.target_span
    row = [
        hit.query_id, hit.target_id,
        f"{100.0 * ident / length:.3f}" if length else "0.000",
        str(length), str(aln.length - ident), str(aln.n_gap_opens),
        str(qs + 1), str(qe), str(ts + 1), str(te),
        _format_evalue(hit.evalue), f"{hit.bits:.1f}",
    ]
    for col in extra:
        if col == "qaln":
            row.append(qa)
        elif col == "taln":
            row.append(ta)
        else:
            raise ValueError(f"unknown extra column {col!r} (qaln, taln)")
    return row


def format_tab(hits: Iterable[Hit], extra: Sequence[str] = ()) -> str:
    return "".join("\t".join(tab_row(h, extra)) + "\n" for h in hits)


def a3m_rows(query_id: str, query: str, hits: Iterable[Hit]) -> tuple[list[str], list[str],
                                                                       list[list[str]]]:
    """Query-anchored MSA of the hits: (ids, match-column rows, insertions) as in
    :class:`homalign.io.MSA` (match columns are the query's residues)."""
    Lq = len(query)
    ids, rows, inserts = [query_id], [query], [[""] * (Lq + 1)]
    for h in hits:
        aln = h.alignment
        if aln is None or aln.length == 0:
            continue
        row = ["-"] * Lq
        ins = [""] * (Lq + 1)
        prev_i, prev_j = None, None
        for i, j in aln.pairs:
            i, j = int(i), int(j)
            row[i] = aln.target[j].upper()
            if prev_j is not None and j - prev_j > 1:
                assert prev_i is not None
                ins[prev_i + 1] += aln.target[prev_j + 1:j].lower()
            prev_i, prev_j = i, j
        ids.append(h.target_id)
        rows.append("".join(row))
        inserts.append(ins)
    return ids, rows, inserts


def format_pair(hit: Hit, width: int = 60) -> str:
    """A readable pairwise block: header, then query / midline / target lines."""
    aln = hit.alignment
    if aln is None:
        raise ValueError(f"hit {hit.target_id} has no alignment")
    qa, ta = aln.gapped()
    mid = "".join("|" if a == b else (" " if "-" in (a, b) else ".") for a, b in
                  zip(qa, ta, strict=True))
    qs, _ = aln.query_span
    ts, _ = aln.target_span
    out = [f">{hit.query_id} vs {hit.target_id}  score={hit.score:.1f} bits={hit.bits:.1f} "
           f"evalue={_format_evalue(hit.evalue)} identity={aln.identity:.3f} "
           f"aligned={aln.length}"]
    qi, ti = qs, ts
    w = max(len(hit.query_id), len(hit.target_id), 5)
    for start in range(0, len(qa), width):
        qb, mb, tb = qa[start:start + width], mid[start:start + width], ta[start:start + width]
        qn = sum(c != "-" for c in qb)
        tn = sum(c != "-" for c in tb)
        out.append(f"{hit.query_id:<{w}} {qi + 1:>6} {qb} {qi + qn}")
        out.append(f"{'':<{w}} {'':>6} {mb}")
        out.append(f"{hit.target_id:<{w}} {ti + 1:>6} {tb} {ti + tn}")
        out.append("")
        qi += qn
        ti += tn
    return "\n".join(out) + "\n"


def write_hits(path: str | Path | IO[str], results: Sequence[tuple[Any, list[Hit]]],
               fmt: str = "tab", extra: Sequence[str] = ()) -> None:
    """Write the hits of several queries: ``results`` is [(query Sequence, hits), ...].

    ``tab``: BLAST tabular (12 columns + ``extra``); ``pair``: readable pairwise blocks;
    ``a3m``: one query-anchored A3M — to a file only, one file per query is written as
    ``<path>`` when there is one query, else ``<path>/<query id>.a3m`` (a directory).
    Files are written atomically; ``"-"`` or a stream writes tab/pair text there.
    """
    from homalign.io import MSA, atomic_write, write_a3m

    if fmt in ("tab", "pair"):
        buf = _stdio.StringIO()
        for _query, hits in results:
            if fmt == "tab":
                buf.write(format_tab(hits, extra))
            else:
                for h in hits:
                    buf.write(format_pair(h))
                    buf.write("\n")
        text = buf.getvalue()
        if hasattr(path, "write"):
            path.write(text)  # type: ignore[union-attr]
        else:
            with atomic_write(Path(path)) as fh:
                fh.write(text)
        return
    if fmt != "a3m":
        raise ValueError(f"unknown output format {fmt!r} (tab, a3m, pair)")
    if hasattr(path, "write"):
        raise ValueError("a3m output needs a file or directory path")
    out = Path(path)  # type: ignore[arg-type]
    if len(results) > 1:
        out.mkdir(parents=True, exist_ok=True)
    for query, hits in results:
        ids, rows, ins = a3m_rows(query.id, query.residues, hits)
        msa = MSA(ids, rows, insertions=ins)
        write_a3m(out / f"{query.id}.a3m" if len(results) > 1 else out, msa)
