"""Human- and machine-readable renderings of an Alignment (pairwise text, FASTA, A3M, BLAST tab)."""

from __future__ import annotations

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


def format_pair(aln: Alignment, width: int = 60) -> str:
    """A BLAST-like pairwise display of the aligned region."""
    qa, ta = aln.gapped()
    cols = len(qa)
    n_gaps = qa.count("-") + ta.count("-")
    head = [
        f"# {aln.query_id} (L={len(aln.query)}) vs {aln.target_id} (L={len(aln.target)})"
        f"  method={aln.method}",
        f"# score={aln.score:.2f}"
        + (f" bits={aln.bits:.1f}" if aln.bits is not None else "")
        + (f" evalue={aln.evalue:.2g}" if aln.evalue is not None else "")
        + f" aligned={aln.length} identities={aln.n_identical}/{cols}"
        + (f" ({100 * aln.n_identical / cols:.0f}%)" if cols else "")
        + f" gaps={n_gaps}/{cols} cigar={aln.cigar or '-'}",
    ]
    if "homologs" in aln.extra:  # learned with consistency: the intermediates it went through
        head.append(f"# homologs={len(aln.extra['homologs'])}"
                    + (" " + " ".join(aln.extra["homologs"]) if aln.extra["homologs"] else ""))
    if not cols:
        return "\n".join(head + ["# no alignment"]) + "\n"
    mid = _midline(qa, ta)
    qi, ti = aln.query_span[0], aln.target_span[0]
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


def tabular_hit(aln: Alignment, evalue: float | None = None, bits: float | None = None):
    """The BLAST ``-outfmt 6`` row of an alignment (plus qaln/taln), as ``homalign.io.TabularHit``."""
    from homalign.io import TabularHit

    qa, ta = aln.gapped()
    cols = len(qa)
    qs, qe = aln.query_span
    ts, te = aln.target_span
    ev = aln.evalue if evalue is None else evalue
    bs = aln.bits if bits is None else bits
    return TabularHit(
        qseqid=aln.query_id, sseqid=aln.target_id,
        pident=100.0 * aln.n_identical / cols if cols else 0.0,
        length=cols, mismatch=aln.length - aln.n_identical, gapopen=aln.n_gap_opens,
        qstart=qs + 1, qend=qe, sstart=ts + 1, send=te,
        evalue=float("nan") if ev is None else ev,
        bitscore=aln.score if bs is None else bs,
        qaln=qa, taln=ta,
    )
