"""``homalign align QUERY.fa TARGET.fa``: align every query record with every target record."""

from __future__ import annotations

import argparse
import sys

from homalign.api import DEFAULT_METHOD, align
from homalign.cli import _common
from homalign.methods import method_names
from homalign.report import format_a3m, format_fasta, format_json, format_pair, format_tabular

FORMATS = ("pair", "fasta", "a3m", "sto", "tab", "json")


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "align", help="align two proteins (every query record against every target record)",
        description="Align proteins. Gap costs follow BLAST: a gap of length k costs "
                    "gap_open + k * gap_extend. QUERY or TARGET '-' reads standard input; "
                    "alignments are written as they are made, one pair at a time.",
    )
    p.add_argument("query", help="FASTA file with one or more query sequences ('-': stdin)")
    p.add_argument("target", help="FASTA file with one or more target sequences ('-': stdin)")
    p.add_argument("--method", default=DEFAULT_METHOD,
                   help=f"alignment method (default {DEFAULT_METHOD}); one of: "
                        f"{', '.join(method_names())}")
    _common.add_output_format(p, FORMATS, "pair", "; fasta, a3m, sto (Stockholm, insert "
                              "columns as HMMER writes them) = the aligned pair")
    p.add_argument("--template", default=None, metavar="TEM",
                   help="template mode of --method learned: a JOY/HOMSTRAD .tem file with every "
                        "target's secondary structure and accessibility (by record id)")
    p.add_argument("-o", "--out", default="-", help="output file (default: stdout)")
    _common.add_threads(p)
    _common.add_method_options(p)
    return p


def _template_options(path: str, targets, method: str) -> list[dict]:
    """Per target, the ``target_ss``/``target_acc`` options read from a ``.tem`` file."""
    from homalign.errors import InputError
    from homalign.model.template import read_template_annotations

    if method != "learned":
        raise InputError(f"--template is read by --method learned only, not {method!r}",
                         path=path)
    from homalign.io import read_tem

    notes = read_template_annotations(path)
    tems = read_tem(path)
    out = []
    for t in targets:
        if t.id not in notes:
            raise InputError("no secondary structure track for this target", path=path,
                             record=t.id)
        residues = "".join(c for c in tems[t.id]["sequence"] if c.isalpha()).upper()
        if residues != t.residues:  # the annotations are of this sequence, position by position
            raise InputError(f"the .tem record's sequence ({len(residues)} residues) is not the "
                             f"target's ({len(t)} residues)", path=path, record=t.id)
        ss, acc = notes[t.id]
        out.append({"target_ss": ss, "target_acc": acc})
    return out


def run(args: argparse.Namespace) -> int:
    from homalign.errors import InputError
    from homalign.threads import set_threads

    _common.check_one_stdin(args.query, args.target, args.template)
    _common.check_output(args.out, args.query, args.target, args.template,
                         getattr(args, "homologs", None))
    fmt, columns = _common.output_columns(args, "pair")
    options = _common.method_options(args)
    _common.check_method_options(args.method, options)
    if "max_homologs" in options and "homologs" not in options and args.method == "learned":
        raise InputError("--max-homologs needs --homologs DB")
    set_threads(_common.threads(args))
    queries = _common.read_sequences(args.query)
    targets = _common.read_sequences(args.target)
    if "homologs" in options:
        from homalign.search import open_database

        options["homologs"] = open_database(options["homologs"])
    per_target = [{} for _ in targets]
    if args.template is not None:
        per_target = _template_options(args.template, targets, args.method)
    with _common.output_stream(args.out) as out:
        for q in queries:
            for t, extra in zip(targets, per_target, strict=True):
                aln = align(q, t, method=args.method, **options, **extra)
                out.write(_render(aln, fmt, columns))
                if out is sys.stdout:
                    out.flush()
    return 0


def _render(aln, fmt: str, columns) -> str:
    if fmt == "tab":
        return format_tabular(aln, columns)
    if fmt == "json":
        return format_json(aln)
    if fmt == "sto":
        from homalign.io.stockholm import pair_stockholm

        return pair_stockholm(aln.query_id, aln.target_id, *aln.gapped(full=True))
    return {"pair": format_pair, "fasta": format_fasta, "a3m": format_a3m}[fmt](aln)
