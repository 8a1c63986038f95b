"""``homalign makedb DB.fa OUTDIR``: a database directory for ``search``."""

from __future__ import annotations

import argparse
import json
import sys

from homalign.cli import _common


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "makedb", help="build a search database (packed sequences, learned embeddings) from a FASTA file",
        description="Write OUTDIR with the packed sequences (the search prefilter scans them), "
                    "the learned search's target embeddings and a manifest (format version, SHA-256 of every file). The "
                    "directory is written under a temporary name and renamed when complete.",
    )
    p.add_argument("fasta", help="protein FASTA file (unique ids; '-': stdin)")
    p.add_argument("outdir", help="database directory to create")
    p.add_argument("-k", type=int, default=3, choices=(2, 3, 4), help="k-mer length (default 3)")
    p.add_argument("--force", action="store_true", help="replace an existing database")
    p.add_argument("--no-learned", action="store_true",
                   help="skip the learned search's target embeddings (then computed in memory "
                        "by every learned search of this database)")
    p.add_argument("--embedding-dtype", choices=("float16", "float32"), default="float16",
                   help="storage type of the learned target embeddings (default float16: "
                        "scores within 1e-4 relative of float32)")
    p.add_argument("--neighbours", action="store_true",
                   help="also store every sequence's own learned-search hits, for "
                        "intermediate-sequence search with search --no-profile-round (costs "
                        "one learned search per sequence; "
                        "on a complete OUTDIR of the same FASTA this adds them, or finishes a "
                        "killed build, without rebuilding the rest)")
    _common.add_threads(p)
    _common.add_progress(p)
    return p


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from homalign.search import makedb
    from homalign.search.database import MANIFEST, same_source
    from homalign.threads import set_threads

    set_threads(_common.threads(args))
    with _common.input_path(args.fasta) as fasta:
        if args.neighbours and not args.force and same_source(args.outdir, fasta):
            out = Path(args.outdir)  # complete: add (or finish) the neighbour lists only
        else:
            out = makedb(fasta, args.outdir, k=args.k, overwrite=args.force,
                         learned=not args.no_learned, embedding_dtype=args.embedding_dtype,
                         progress=_common.progress(args))
    if args.neighbours:
        from homalign.search.neighbours_build import add_neighbours

        nb = add_neighbours(out, progress=_common.progress(args))
        print(f"homalign makedb: {out}: {len(nb.index)} neighbour links", file=sys.stderr)
    meta = json.loads((out / MANIFEST).read_text())  # the counts, without reading the codes
    print(f"homalign makedb: {out}: {meta['n_sequences']} sequences, {meta['n_residues']} "
          "residues", file=sys.stderr)
    return 0
