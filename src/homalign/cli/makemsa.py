"""``homalign makemsa DB OUTDIR``: an MSA for every database sequence (a profile database)."""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "makemsa", help="build an MSA database: one iterative-search A3M per database sequence",
        description="For every sequence of DB (FASTA or makedb directory) run ITERATIONS rounds "
                    "of homalign's PSI-BLAST-class search against DB and write OUTDIR/<id>.a3m "
                    "(HHblits-style database profiles; `search --method hhm --target-msa "
                    "OUTDIR`). Resumable: rerun the same command to finish an interrupted build; "
                    "each file is written whole or not at all.",
    )
    p.add_argument("db", help="database: FASTA file or makedb directory")
    p.add_argument("outdir", help="directory for the A3M files (created)")
    p.add_argument("--iterations", type=int, default=2, help="search rounds (default 2)")
    p.add_argument("--inclusion-evalue", type=float, default=1e-3,
                   help="E-value to include a hit in the next round's profile (default 1e-3)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def run(args: argparse.Namespace) -> int:
    from homalign.search.msadb import build_msa_db

    out = build_msa_db(args.db, args.outdir, args.iterations,
                       inclusion_evalue=args.inclusion_evalue, jobs=args.jobs,
                       progress=not args.no_progress)
    print(f"homalign makemsa: {out}: complete", file=sys.stderr)
    return 0
