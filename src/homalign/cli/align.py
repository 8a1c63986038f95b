"""``homalign align QUERY.fa TARGET.fa``: align every query record with every target record."""

from __future__ import annotations

import argparse
import sys

from homalign.api import DEFAULT_METHOD, align
from homalign.methods import method_names
from homalign.report import format_a3m, format_fasta, format_pair, tabular_hit
from homalign.sequence import read_sequences

FORMATS = ("pair", "fasta", "a3m", "tab")


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "align", help="align two proteins (every query record against every target record)",
        description="Align proteins. Gap costs follow BLAST: a gap of length k costs "
                    "gap_open + k * gap_extend.",
    )
    p.add_argument("query", help="FASTA file with one or more query sequences")
    p.add_argument("target", help="FASTA file with one or more target sequences")
    p.add_argument("--method", default=DEFAULT_METHOD,
                   help=f"alignment method (default {DEFAULT_METHOD}); one of: "
                        f"{', '.join(method_names())}")
    p.add_argument("--matrix", default="BLOSUM62", help="substitution matrix (sequence methods)")
    p.add_argument("--gap-open", type=float, default=11.0, help="gap open cost (default 11)")
    p.add_argument("--gap-extend", type=float, default=1.0, help="gap extend cost (default 1)")
    p.add_argument("--format", choices=FORMATS, default="pair", help="output format")
    p.add_argument("--msa", default=None,
                   help="how profile methods get MSAs: single | iterative:N (needs --db)")
    p.add_argument("--db", default=None, help="sequence database FASTA for --msa iterative:N")
    p.add_argument("--template", default=None, metavar="TEM",
                   help="template mode of --method learned: a JOY/HOMSTRAD .tem file with every "
                        "target's secondary structure and accessibility (by record id)")
    p.add_argument("--homologs", default=None, metavar="DB",
                   help="--method learned: sharpen each pair's posteriors through both "
                        "sequences' homologues in this sequence database (FASTA or makedb "
                        "directory; intermediate-sequence consistency, ProbCons-style)")
    p.add_argument("--max-homologs", type=int, default=None, metavar="K",
                   help="with --homologs: intermediates per sequence (default 4)")
    p.add_argument("-o", "--out", default="-", help="output file (default: stdout)")
    return p


def _template_options(path: str, targets, method: str) -> list[dict]:
    """Per target, the ``target_ss``/``target_acc`` options read from a ``.tem`` file."""
    from homalign.errors import InputError
    from homalign.model.template import read_template_annotations

    if method != "learned":
        raise InputError(f"--template is read by --method learned only, not {method!r}",
                         path=path)
    notes = read_template_annotations(path)
    out = []
    for t in targets:
        if t.id not in notes:
            raise InputError("no secondary structure track for this target", path=path,
                             record=t.id)
        ss, acc = notes[t.id]
        out.append({"target_ss": ss, "target_acc": acc})
    return out


def run(args: argparse.Namespace) -> int:
    queries = read_sequences(args.query)
    targets = read_sequences(args.target)
    options = {"matrix": args.matrix, "gap_open": args.gap_open, "gap_extend": args.gap_extend}
    if args.msa is not None:
        options["msa"] = args.msa
    if args.db is not None:
        options["db"] = args.db
    if args.homologs is not None or args.max_homologs is not None:
        from homalign.errors import InputError

        if args.method not in ("learned", "learned-homologs"):
            raise InputError("--homologs is read by --method learned (or learned-homologs) "
                             f"only, not {args.method!r}", path=args.homologs)
        if args.homologs is None:
            raise InputError("--max-homologs needs --homologs DB")
        from homalign.search import open_database

        options["homologs"] = open_database(args.homologs)
        if args.max_homologs is not None:
            options["max_homologs"] = args.max_homologs
    per_target = [{} for _ in targets]
    if args.template is not None:
        per_target = _template_options(args.template, targets, args.method)
    alignments = [align(q, t, method=args.method, **options, **extra)
                  for q in queries for t, extra in zip(targets, per_target, strict=True)]
    if args.out == "-":
        _emit(alignments, args.format, sys.stdout)
    else:
        from homalign.io.atomic import atomic_write

        with atomic_write(args.out) as fh:
            _emit(alignments, args.format, fh)
    return 0


def _emit(alignments, fmt: str, stream) -> None:
    if fmt == "tab":
        from homalign.io import write_blast_tab

        write_blast_tab(stream, [tabular_hit(a) for a in alignments], extra=("qaln", "taln"))
        return
    render = {"pair": format_pair, "fasta": format_fasta, "a3m": format_a3m}[fmt]
    for a in alignments:
        stream.write(render(a))
