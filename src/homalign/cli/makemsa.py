"""``homalign makemsa DB OUTDIR``: an MSA for every database sequence (a profile database)."""

from __future__ import annotations

import argparse
import sys

from homalign.cli import _common


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "makemsa", help="build an MSA database: one iterative-search A3M per database sequence",
        description="For every sequence of DB (FASTA or makedb directory) run ITERATIONS rounds "
                    "of homalign's PSI-BLAST-class search against DB and write OUTDIR/<id>.a3m "
                    "(HHblits-style database profiles; `search --method hhm --target-msa "
                    "OUTDIR`), then every sequence's HMM into OUTDIR/hmms/ (what searches against "
                    "the MSA database read). Resumable: rerun the same command to finish an "
                    "interrupted build, or to rewrite the HMMs of changed A3M files; each file "
                    "is written whole or not at all.",
    )
    p.add_argument("db", help="database: FASTA file or makedb directory")
    p.add_argument("outdir", help="directory for the A3M files (created)")
    p.add_argument("--iterations", type=int, default=2, help="search rounds (default 2)")
    p.add_argument("--inclusion-evalue", type=float, default=1e-3,
                   help="E-value to include a hit in the next round's profile (default 1e-3)")
    _common.add_threads(p, "worker processes", aliases=("--jobs",))
    _common.add_progress(p)
    return p


def run(args: argparse.Namespace) -> int:
    import os

    from homalign.search.msadb import build_msa_db
    from homalign.threads import set_threads

    if args.db == _common.STDIN:
        from homalign.errors import InputError

        raise InputError("makemsa reads its database from a FASTA file or makedb directory, "
                         "not standard input (each worker opens it)")
    jobs = _common.threads(args)
    pinned = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")
    saved = {var: os.environ.get(var) for var in pinned}
    if jobs == 1:
        set_threads(1)
    else:  # the worker processes are the parallelism: one thread each (spawned, they read this)
        os.environ.update({var: "1" for var in pinned})
    try:
        out = build_msa_db(args.db, args.outdir, args.iterations,
                           inclusion_evalue=args.inclusion_evalue, jobs=jobs,
                           progress=_common.progress(args))
    finally:  # this process's own environment as it was: numba refuses to compile again in a
        # process whose NUMBA_NUM_THREADS differs from the thread pool it started
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
    print(f"homalign makemsa: {out}: complete", file=sys.stderr)
    return 0
