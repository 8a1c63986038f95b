"""Search hits: the :class:`Hit` type, their ranking, and tabular / A3M / pairwise output."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from homalign.alignment import Alignment
from homalign.io import MSA
from homalign.sequence import Sequence as Protein

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


EVALUE_FLOOR = 1e-300


def fuse_hits(lists: Sequence[Sequence[Hit]], weights: Sequence[float]) -> list[Hit]:
    """One ranking from several searches of the same query: each target's E-value becomes the
    weighted geometric mean ``exp(sum_k w_k ln E_k)`` of its E-values in the ``lists``.

    The hit (score, bits, alignment) is the first list's that holds the target; a target missing
    from a list takes that list's largest E-value. Weights must be non-negative and sum to 1. The
    fused value ranks targets; it is not itself a calibrated E-value.
    """
    import math

    if len(lists) != len(weights) or not lists:
        raise ValueError("fuse_hits needs one weight per hit list")
    if any(w < 0 for w in weights) or abs(sum(weights) - 1.0) > 1e-9:
        raise ValueError(f"fusion weights must be non-negative and sum to 1, got {list(weights)}")
    index = [np.fromiter((h.target_index for h in hits), np.int64, len(hits)) for hits in lists]
    held = [h for hits in lists for h in hits]
    targets, first = np.unique(np.concatenate(index), return_index=True)  # first list's hit
    log_e = np.zeros(len(targets))
    for w, hits, idx in zip(weights, lists, index, strict=True):
        e = np.maximum(np.fromiter((h.evalue for h in hits), np.float64, len(hits)),
                       EVALUE_FLOOR)
        col = np.full(len(targets), math.log(e.max()) if len(e) else 0.0)
        col[np.searchsorted(targets, idx)] = np.log(e)  # a target listed twice: its last value
        log_e += w * col
    fused = np.exp(log_e)
    score = np.array([held[k].score for k in first.tolist()], dtype=np.float64)
    out = []
    for n in np.lexsort((targets, -score, fused)).tolist():
        h, f = held[int(first[n])], float(fused[n])
        if h.alignment is not None:
            h.alignment.evalue = f
        out.append(Hit(h.query_id, h.target_id, h.target_index, h.score, h.bits, f, h.alignment))
    return out


def to_tabular(hit: Hit):
    """The BLAST ``-outfmt 6`` row of a hit, with ``qaln``/``taln``, as ``homalign.io.TabularHit``
    (:func:`homalign.report.tabular_hit` with the hit's E-value, bits and ids)."""
    from homalign.report import tabular_hit

    if hit.alignment is None:
        raise ValueError(f"hit {hit.target_id} has no alignment")
    return tabular_hit(hit.alignment, hit.evalue, hit.bits, query_id=hit.query_id,
                       target_id=hit.target_id)


def format_tab(hits: Iterable[Hit], extra: Sequence[str] = ()) -> str:
    """BLAST tabular lines of the hits (formatted by :mod:`homalign.io.blast_tab`)."""
    from homalign.io.blast_tab import format_hit

    return "".join(format_hit(to_tabular(h), extra) for h in hits)


def msa_from_alignments(query: Protein, alignments: Iterable[Alignment]) -> MSA:
    """An :class:`homalign.io.MSA` (A3M insertions kept) of the query and the targets of its
    pairwise ``alignments``, one row each (:meth:`Alignment.a3m_row`)."""
    L = len(query)
    ids, rows, ins = [query.id], [query.residues], [[""] * (L + 1)]
    for aln in alignments:
        row, inserts = aln.a3m_row(L)
        ids.append(aln.target_id)
        rows.append(row)
        ins.append(inserts)
    return MSA(ids, rows, insertions=ins)


def hits_msa(query: Protein, hits: Iterable[Hit]) -> MSA:
    """The query-anchored MSA of the hits that have a non-empty alignment (A3M output)."""
    return msa_from_alignments(query, [h.alignment for h in hits
                                       if h.alignment is not None and h.alignment.length])


def format_pair(hit: Hit, width: int = 60) -> str:
    """A readable pairwise block (:func:`homalign.report.format_pair` with the hit's ranking
    score, E-value, bits and ids), as ``homalign search --format pair`` writes it."""
    from homalign.report import format_pair as format_alignment

    if hit.alignment is None:
        raise ValueError(f"hit {hit.target_id} has no alignment")
    return format_alignment(hit.alignment, width, score=hit.score, evalue=hit.evalue,
                            bits=hit.bits, query_id=hit.query_id, target_id=hit.target_id)


def write_hits(path: str | Path | IO[str], results: Sequence[tuple[Any, list[Hit]]],
               fmt: str = "tab", extra: Sequence[str] = ()) -> None:
    """Write the hits of several queries: ``results`` is [(query Sequence, hits), ...].

    ``tab``: BLAST tabular (12 columns + ``extra``); ``pair``: readable pairwise blocks;
    ``a3m``: one query-anchored A3M per query, as ``<path>/<query id>.a3m`` (a directory,
    made when missing) when there are several queries or ``path`` is a directory (or ends in
    ``/``), else as the file ``<path>``.
    Files are written atomically; ``"-"`` or a stream writes tab/pair text there.
    """
    from homalign.io import atomic_write, write_a3m

    if fmt == "tab":
        from homalign.io import write_blast_tab

        rows = [to_tabular(h) for _query, hits in results for h in hits]
        write_blast_tab(path if hasattr(path, "write") else Path(path), rows,  # type: ignore
                        extra=tuple(extra))
        return
    if fmt == "pair":
        text = "".join(format_pair(h) + "\n" for _query, hits in results for h in hits)
        if hasattr(path, "write"):
            path.write(text)  # type: ignore[union-attr]
        else:
            with atomic_write(Path(path)) as fh:  # type: ignore[arg-type]
                fh.write(text)
        return
    if fmt != "a3m":
        raise ValueError(f"unknown output format {fmt!r} (tab, a3m, pair)")
    if hasattr(path, "write"):
        raise ValueError("a3m output needs a file or directory path")
    out = Path(path)  # type: ignore[arg-type]
    into_dir = len(results) > 1 or out.is_dir() or str(path).endswith(("/", os.sep))
    if into_dir:
        from homalign.search.msadb_files import msa_filename

        names = [msa_filename(query.id) for query, _hits in results]  # all, before any write
        out.mkdir(parents=True, exist_ok=True)
    for k, (query, hits) in enumerate(results):
        write_a3m(out / names[k] if into_dir else out, hits_msa(query, hits))
