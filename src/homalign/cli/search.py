"""``homalign search QUERY.fa DB``: ranked database hits with E-values for every query record."""

from __future__ import annotations

import argparse
import sys
from typing import Any

FORMATS = ("tab", "a3m", "pair")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from homalign.methods import method_names

    p = sub.add_parser(
        "search", help="search a protein database: hits ranked by E-value",
        description="Search every query record against DB (a FASTA file or a `homalign makedb` "
                    "directory). Hits are ranked by E-value; BLAST tabular output has the 12 "
                    "standard -outfmt 6 columns (qaln taln appended with --aln).",
    )
    p.add_argument("query", help="FASTA file with one or more query sequences")
    p.add_argument("db", help="database: FASTA file or makedb directory")
    p.add_argument("--method", default="sw",
                   help=f"scoring method (default sw); one of: {', '.join(method_names())}")
    p.add_argument("--evalue", type=_positive_float, default=10.0,
                   help="report hits with E-value at most this (default 10)")
    p.add_argument("--max-hits", type=_positive_int, default=500,
                   help="at most N hits per query (default 500)")
    p.add_argument("--format", choices=FORMATS, default="tab", help="output format (default tab)")
    p.add_argument("--aln", action="store_true", help="tab: append the qaln and taln columns")
    p.add_argument("-o", "--out", default="-",
                   help="output file (default stdout; a3m with several queries: a directory)")
    p.add_argument("--exhaustive", action="store_true",
                   help="skip the k-mer prefilter: full DP against every database sequence")
    p.add_argument("--max-seqs", type=_positive_int, default=None,
                   help="prefilter: keep at most N targets per query (default 1000)")
    p.add_argument("--iterations", type=_positive_int, default=1,
                   help="N > 1: iterative profile search (PSI-BLAST style, N rounds); with a "
                        "method other than sw/pssm (e.g. learned), that method's ranking is "
                        "fused with the last PSSM round's")
    p.add_argument("--target-msa", default=None, metavar="MSADB",
                   help="an MSA database of DB (homalign makemsa): the query's MSA also scores "
                        "every candidate's own MSA (HHsearch-class hhm score); with --method hhm "
                        "that is the result (HHblits class), with learned it joins the fusion")
    p.add_argument("--msa-db", default=None, metavar="SEQS",
                   help="with --iterations N: build the query's MSA from these sequences (FASTA "
                        "or makedb directory; e.g. DB plus unlabelled UniProt sequences) instead "
                        "of DB, as HHblits builds it from UniRef; only DB is searched")
    p.add_argument("--neighbour-support", type=float, default=None, metavar="W",
                   help="with --target-msa: each hit's E-value times min(1, E_nb)^W, E_nb the "
                        "best E-value among its MSA-database neighbours in the list (a ranking "
                        "value, not a calibrated E-value; default 2 when fused with another "
                        "method, 0 = off for --method hhm/pssm)")
    p.add_argument("--matrix", default=None, help="substitution matrix (sequence methods)")
    p.add_argument("--gap-open", type=float, default=None, help="gap open cost (BLAST convention)")
    p.add_argument("--gap-extend", type=float, default=None, help="gap extend cost")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="shard the work over Ray workers (local Ray, or a cluster ADDRESS)")
    p.add_argument("--workers", type=_positive_int, default=2,
                   help="number of Ray workers with --ray (default 2)")
    p.add_argument("--shard", choices=("queries", "db"), default="queries",
                   help="with --ray: split the queries (default) or the database")
    p.add_argument("-j", "--threads", type=_positive_int, default=None,
                   help="threads for numba, torch and BLAS (default: all cores); results are "
                        "the same at any count")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def _method_options(args: argparse.Namespace) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if args.matrix is not None:
        opts["matrix"] = args.matrix
    if args.gap_open is not None:
        opts["gap_open"] = args.gap_open
    if args.gap_extend is not None:
        opts["gap_extend"] = args.gap_extend
    return opts


def _iterative(queries, db, args: argparse.Namespace, opts: dict[str, Any]):
    """``--iterations N``: :func:`homalign.search.iterative.iterative_search` for each query
    (PSI-BLAST class for ``sw``/``pssm``; any other method is fused with the PSSM round)."""
    from tqdm import tqdm

    from homalign.search import open_database
    from homalign.search.iterative import PSSM_METHODS, iterative_search

    pssm = {k: opts[k] for k in ("matrix", "gap_open", "gap_extend") if k in opts}
    own = {} if args.method in PSSM_METHODS else opts
    pf_opts = {"max_seqs": args.max_seqs} if args.max_seqs is not None else None
    msa_db = open_database(args.msa_db) if args.msa_db is not None else None
    results = []
    for q in tqdm(queries, desc="iterative search", unit="query", disable=args.no_progress):
        hits = iterative_search(q, db, args.iterations, args.method, evalue=args.evalue,
                                max_hits=args.max_hits, prefilter=not args.exhaustive,
                                prefilter_options=pf_opts, target_msa=args.target_msa,
                                neighbour_support=args.neighbour_support,
                                msa_db=msa_db, **pssm, **own)
        results.append((q, hits))
    return results


def run(args: argparse.Namespace) -> int:
    from homalign.search import open_database, search_many, write_hits
    from homalign.sequence import read_sequences
    from homalign.threads import set_threads

    set_threads(args.threads)
    queries = read_sequences(args.query)
    if not queries:
        raise ValueError(f"{args.query}: no query sequences")
    db = open_database(args.db)
    opts = _method_options(args)
    pf_opts = {"max_seqs": args.max_seqs} if args.max_seqs is not None else None
    if args.neighbour_support is not None and args.target_msa is None:
        raise ValueError("--neighbour-support needs --target-msa")
    if args.msa_db is not None and args.iterations < 2:
        raise ValueError("--msa-db needs --iterations 2 or more (it builds the query's MSA)")
    if (args.iterations > 1 or args.target_msa is not None) and args.ray is not None:
        from homalign.search.iterative import PSSM_METHODS
        from homalign.search.ray_backend import search_ray

        pssm = {k: opts[k] for k in ("matrix", "gap_open", "gap_extend") if k in opts}
        own = {} if args.method in PSSM_METHODS else opts
        it_opts = {"neighbour_support": args.neighbour_support,
                   "msa_db": args.msa_db}
        results = search_ray(queries, args.db, args.method, address=args.ray,
                             workers=args.workers, iterations=args.iterations,
                             target_msa=args.target_msa, iterative_options=it_opts,
                             evalue=args.evalue, max_hits=args.max_hits,
                             prefilter=not args.exhaustive, prefilter_options=pf_opts,
                             **pssm, **own)
    elif args.iterations > 1 or args.target_msa is not None:
        results = _iterative(queries, db, args, opts)
    elif args.ray is not None:
        from homalign.search.ray_backend import search_ray

        results = search_ray(queries, db, args.method, address=args.ray, workers=args.workers,
                             shard=args.shard, evalue=args.evalue, max_hits=args.max_hits,
                             prefilter=not args.exhaustive, prefilter_options=pf_opts, **opts)
    else:
        results = search_many(queries, db, args.method, progress=not args.no_progress,
                              evalue=args.evalue, max_hits=args.max_hits,
                              prefilter=not args.exhaustive, prefilter_options=pf_opts, **opts)
    extra = ("qaln", "taln") if args.aln else ()
    if args.out == "-":
        if args.format == "a3m" and len(results) > 1:
            raise ValueError("a3m output of several queries needs -o DIRECTORY")
        if args.format == "a3m":
            from homalign.io import MSA
            from homalign.search.hits import a3m_rows

            q, hits = results[0]
            ids, rows, ins = a3m_rows(q.id, q.residues, hits)
            a3m = MSA(ids, rows, insertions=ins).to_a3m_rows()
            sys.stdout.write("".join(f">{i}\n{r}\n" for i, r in zip(ids, a3m, strict=True)))
        else:
            write_hits(sys.stdout, results, fmt=args.format, extra=extra)
    else:
        write_hits(args.out, results, fmt=args.format, extra=extra)
    return 0
