"""Human- and machine-readable renderings of an Alignment (pairwise text, FASTA, A3M, BLAST
tabular with BLAST's column names, JSON Lines), shared by ``homalign align`` and ``search``."""

from __future__ import annotations

import json
import math
from typing import Any

from homalign.alignment import Alignment
from homalign.alphabet import encode
from homalign.matrices import substitution_matrix


def _midline(qa: str, ta: str) -> str:
    m = substitution_matrix("BLOSUM62")
    out = []
    for a, b in zip(qa, ta, strict=True):
        if a == "-" or b == "-":
            out.append(" ")
        elif a == b:
            out.append(a)
        else:
            out.append("+" if m[encode(a)[0], encode(b)[0]] > 0 else " ")
    return "".join(out)


def format_pair(aln: Alignment, width: int = 60, *, score: float | None = None,
                evalue: float | None = None, bits: float | None = None,
                query_id: str | None = None, target_id: str | None = None) -> str:
    """A BLAST-like pairwise display of the aligned region. A search hit passes its own
    ``score`` (the ranking score, as in tab and JSON output), ``evalue``, ``bits`` and ids; where
    its score is not the alignment's, the alignment's follows as ``aln_score``. A global
    alignment (``extra["mode"]``) is shown end to end, its end gaps counted, as needle shows
    one."""
    full = aln.extra.get("mode") == "global"
    qa, ta = aln.gapped(full=full)
    cols = len(qa)
    n_gaps = qa.count("-") + ta.count("-")
    ev = aln.evalue if evalue is None else evalue
    bs = aln.bits if bits is None else bits
    sc = aln.score if score is None else float(score)
    head = [
        f"# {query_id or aln.query_id} (L={len(aln.query)}) vs {target_id or aln.target_id}"
        f" (L={len(aln.target)})  method={aln.method}",
        f"# score={sc:.2f}"
        + (f" aln_score={aln.score:.2f}" if sc != aln.score else "")
        + (f" bits={bs:.1f}" if bs is not None and not math.isnan(bs) else " bits=NA")
        + (f" evalue={ev:.2g}" if ev is not None and not math.isnan(ev) else " evalue=NA")
        + f" aligned={aln.length} identities={aln.n_identical}/{cols}"
        + (f" ({100 * aln.n_identical / cols:.0f}%)" if cols else "")
        + f" gaps={n_gaps}/{cols} cigar={aln.cigar or '-'}",
    ]
    prob = aln.extra.get("homology_probability")
    if prob is not None:
        head.append(f"# homology_probability={float(prob):.3f}")
    if "homologs" in aln.extra:  # learned with consistency: the intermediates it went through
        head.append(f"# homologs={len(aln.extra['homologs'])}"
                    + (" " + " ".join(aln.extra["homologs"]) if aln.extra["homologs"] else ""))
    if not cols:
        return "\n".join(head + ["# no alignment"]) + "\n"
    mid = _midline(qa, ta)
    qi, ti = (0, 0) if full else (aln.query_span[0], aln.target_span[0])
    lines = head + [""]
    for s in range(0, cols, width):
        qs, ts, ms = qa[s:s + width], ta[s:s + width], mid[s:s + width]
        qn, tn = len(qs) - qs.count("-"), len(ts) - ts.count("-")
        lines.append(f"Query  {qi + 1:<6d}{qs}  {qi + qn}")
        lines.append(f"       {'':6s}{ms}")
        lines.append(f"Sbjct  {ti + 1:<6d}{ts}  {ti + tn}")
        lines.append("")
        qi, ti = qi + qn, ti + tn
    return "\n".join(lines)


def format_fasta(aln: Alignment, full: bool = True) -> str:
    """The two gapped sequences as aligned FASTA (whole sequences by default)."""
    qa, ta = aln.gapped(full=full)
    return f">{aln.query_id}\n{qa}\n>{aln.target_id}\n{ta}\n"


def format_a3m(aln: Alignment) -> str:
    """A3M with the query as master: target residues in insert states are lowercase."""
    qa, ta = aln.gapped(full=True)
    row = []
    for a, b in zip(qa, ta, strict=True):
        if a == "-":
            row.append(b.lower())
        else:
            row.append(b)
    return f">{aln.query_id}\n{aln.query}\n>{aln.target_id}\n{''.join(row)}\n"


def tabular_hit(aln: Alignment, evalue: float | None = None, bits: float | None = None, *,
                query_id: str | None = None, target_id: str | None = None):
    """The BLAST ``-outfmt 6`` row of an alignment (plus qaln/taln), as ``homalign.io.TabularHit``
    (a search hit passes its own E-value, bits and ids).

    BLAST's columns: ``length`` counts alignment columns (gaps included), ``pident`` identical
    columns / length, ``mismatch`` aligned non-identical pairs, ``gapopen`` gap runs; positions
    are 1-based and inclusive."""
    from homalign.io import TabularHit

    qa, ta = aln.gapped()
    cols = len(qa)
    qs, qe = aln.query_span
    ts, te = aln.target_span
    ev = aln.evalue if evalue is None else evalue
    bs = aln.bits if bits is None else bits
    return TabularHit(
        qseqid=query_id or aln.query_id, sseqid=target_id or aln.target_id,
        pident=100.0 * aln.n_identical / cols if cols else 0.0,
        length=cols, mismatch=aln.length - aln.n_identical, gapopen=aln.n_gap_opens,
        qstart=qs + 1, qend=qe, sstart=ts + 1, send=te,
        evalue=float("nan") if ev is None else ev,  # written NA: not computed
        bitscore=float("nan") if bs is None else bs,
        qaln=qa, taln=ta,
    )


def blast_fields(aln: Alignment, *, query_id: str | None = None, target_id: str | None = None,
                 evalue: float | None = None, bits: float | None = None,
                 score: float | None = None,
                 columns: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Every BLAST ``-outfmt 6`` field of :data:`homalign.io.blast_tab.OUTFMT_FIELDS` for an
    alignment (E-value / bits: the given ones, else the alignment's, else None = not computed;
    ``score``: the given one, e.g. a search hit's ranking score, else the alignment's).
    ``columns``: the fields needed, when not all: the gapped strings (``qseq``, ``sseq``) and
    the positives (``positive``, ``ppos``) are computed only for them (a search writes every hit)."""
    qs, qe = aln.query_span
    ts, te = aln.target_span
    n = aln.length
    # columns of the aligned region: its pairs and the residues of either side between them
    cols = (qe - qs) + (te - ts) - n if n else 0
    ident = aln.n_identical
    qid = aln.query_id if query_id is None else query_id
    tid = aln.target_id if target_id is None else target_id
    out = _hit_values(qid, tid, len(aln.query), len(aln.target),
                      aln.evalue if evalue is None else evalue, aln.bits if bits is None else bits,
                      aln.score if score is None else score)
    out.update({
        "pident": 100.0 * ident / cols if cols else 0.0, "length": cols,
        "mismatch": n - ident, "gapopen": aln.n_gap_opens, "gaps": cols - n, "nident": ident,
        "qstart": qs + 1, "qend": qe, "sstart": ts + 1, "send": te,
        "qcovhsp": 100.0 * (qe - qs) / len(aln.query) if len(aln.query) else 0.0,
    })
    if columns is None or "qseq" in columns or "sseq" in columns:
        out["qseq"], out["sseq"] = aln.gapped()
    if columns is None or "positive" in columns or "ppos" in columns:
        m = substitution_matrix("BLOSUM62")
        p = aln.pairs  # the aligned (non-gap) columns
        positive = int((m[encode(aln.query)[p[:, 0]], encode(aln.target)[p[:, 1]]] > 0).sum()
                       ) if len(p) else 0
        out["positive"] = positive
        out["ppos"] = 100.0 * positive / cols if cols else 0.0
    return out


def format_hit_tabular(columns: tuple[str, ...], *, query_id: str, target_id: str, qlen: int,
                       slen: int, evalue: float | None, bits: float | None,
                       score: float | None) -> str:
    """One BLAST tabular line of ``columns``, all of
    :data:`homalign.io.blast_tab.HIT_FIELDS`, for a search hit without an alignment."""
    from homalign.io.blast_tab import HIT_FIELDS, format_fields

    extra = set(columns) - HIT_FIELDS
    if extra:
        raise ValueError(f"columns {sorted(extra)} need an alignment")
    return format_fields(_hit_values(query_id, target_id, qlen, slen, evalue, bits, score),
                         columns)


def _hit_values(qid: str, tid: str, qlen: int, slen: int, evalue: float | None,
                bits: float | None, score: float | None) -> dict[str, Any]:
    """The fields of :data:`homalign.io.blast_tab.HIT_FIELDS`: what a hit has without its
    alignment."""
    return {"qseqid": qid, "qacc": qid, "qaccver": qid, "sseqid": tid, "sacc": tid,
            "saccver": tid, "qlen": qlen, "slen": slen, "evalue": evalue, "bitscore": bits,
            "score": score}


def format_tabular(aln: Alignment, columns: tuple[str, ...], **kw: Any) -> str:
    """One BLAST tabular line of ``columns`` (BLAST's names) for an alignment, or "" when it has
    no aligned pair (BLAST writes no line for a pair without a hit)."""
    from homalign.io.blast_tab import format_fields

    if len(aln.pairs) == 0:
        return ""
    return format_fields(blast_fields(aln, columns=columns, **kw), columns)


def _json_number(x: Any) -> Any:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) or math.isinf(x) else x


def format_json(aln: Alignment, **kw: Any) -> str:
    """One JSON Lines record: BLAST's field names, plus method, cigar and (learned)
    homology_probability; a value not computed is null."""
    f = blast_fields(aln, **kw)
    rec: dict[str, Any] = {
        "qseqid": f["qseqid"], "sseqid": f["sseqid"], "method": aln.method,
        "evalue": _json_number(f["evalue"]), "bitscore": _json_number(f["bitscore"]),
        "score": _json_number(f["score"]),
    }
    for k in ("pident", "length", "mismatch", "gapopen", "gaps", "nident", "positive", "qstart",
              "qend", "sstart", "send", "qlen", "slen", "qseq", "sseq"):
        rec[k] = f[k]
    if len(aln.pairs) == 0:
        for k in ("qstart", "qend", "sstart", "send"):
            rec[k] = None
    rec["cigar"] = aln.cigar or None
    for k in ("homology_probability", "homology_score", "homologs", "probability"):
        if k in aln.extra:
            v = aln.extra[k]
            rec[k] = v if isinstance(v, list) else _json_number(v)
    return json.dumps(rec, separators=(",", ":")) + "\n"
