"""``homalign search QUERY.fa DB``: ranked database hits with E-values for every query record."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

from homalign.cli import _common

FORMATS = ("tab", "json", "pair", "a3m")
#: options of an iterative search's own rounds (its PSSM rounds' scoring, the inclusion
#: threshold of its MSA rounds); the method's search does not get them
PSSM_ROUND_OPTIONS = ("matrix", "gap_open", "gap_extend", "inclusion_evalue")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from homalign.methods import method_names

    p = sub.add_parser(
        "search", help="search a protein database: hits ranked by E-value",
        description="Search every query record against DB (a FASTA file or a `homalign makedb` "
                    "directory). Hits are ranked by E-value and written query by query as each "
                    "query finishes (QUERY '-' reads standard input). BLAST tabular output has "
                    "exactly the 12 standard -outfmt 6 columns; --outfmt selects others. "
                    "Columns that need no alignment alone (ids, qlen, slen, evalue, bitscore, "
                    "score) skip the alignments: every hit within --evalue is listed.",
    )
    p.add_argument("query", help="FASTA file with one or more query sequences ('-': stdin)")
    p.add_argument("db", help="database: FASTA file or makedb directory")
    p.add_argument("--method", default="sw",
                   help=f"scoring method (default sw); one of: {', '.join(method_names())}")
    p.add_argument("--evalue", type=_positive_float, default=10.0,
                   help="report hits with E-value at most this (default 10)")
    p.add_argument("--max-hits", type=_common.positive_int, default=500,
                   help="at most N hits per query (default 500)")
    _common.add_output_format(p, FORMATS, "tab", "; a3m = one query-anchored MSA per query")
    p.add_argument("--aln", action="store_true",
                   help='tab: also the aligned strings, as --outfmt "6 std qseq sseq"')
    p.add_argument("-o", "--out", default="-",
                   help="output file (default stdout; a3m: a directory of <query id>.a3m files "
                        "for several queries, or when OUT is a directory or ends in /)")
    p.add_argument("--exhaustive", action="store_true",
                   help="skip the k-mer prefilter: full DP against every database sequence "
                        "(always so with --query-hmm, --query-hhm or --query-msa, whose model "
                        "the query sequence's k-mers do not represent, unless --max-seqs asks "
                        "for the prefilter)")
    p.add_argument("--max-seqs", type=_common.positive_int, default=None,
                   help="k-mer prefilter: keep at most N targets per query (default 1000). "
                        "sw scores every target and learned the database's best 80 by SW "
                        "(of its best 1000 by ungapped score) unless this is given")
    p.add_argument("--iterations", type=_common.positive_int, default=1,
                   help="N > 1: iterative profile search (PSI-BLAST style, N rounds); with a "
                        "method other than sw/pssm (e.g. learned), that method's ranking is "
                        "fused with the last PSSM round's; --matrix, --gap-open, --gap-extend "
                        "and --inclusion-evalue then set the PSSM rounds, not the fused method")
    p.add_argument("--profile-round", action=argparse.BooleanOptionalAction, default=None,
                   help="learned: fuse the ranking with one light PSSM round (an MSA of its "
                        "candidates' SW hits at E <= 1e-3, its PSSM over them and the "
                        "database's best 300 by SW; default on, ~1.5x the time of "
                        "--no-profile-round, more sensitive); --no-profile-round also uses "
                        "makedb --neighbours lists")
    p.add_argument("--target-msa", default=None, metavar="MSADB",
                   help="an MSA database of DB (homalign makemsa): the query's MSA also scores "
                        "every candidate's own MSA (HHsearch-class hhm score); with --method hhm "
                        "that is the result (HHblits class), with learned it joins the fusion")
    p.add_argument("--msa-db", default=None, metavar="SEQS",
                   help="with --iterations N: build the query's MSA from these sequences (FASTA "
                        "or makedb directory; e.g. DB plus unlabelled UniProt sequences) instead "
                        "of DB, as HHblits builds it from UniRef; only DB is searched")
    p.add_argument("--neighbour-support", type=float, default=None, metavar="W",
                   help="with --target-msa: each hit's E-value times min(1, E_nb)^W, but never "
                        "below min(E, E_nb), E_nb the best E-value among its MSA-database "
                        "neighbours in the list (so from W ~ 1 on a supported hit ties its "
                        "neighbour); a ranking value, not a calibrated E-value; default 2 when "
                        "fused with another method, 0 = off for --method hhm/pssm")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="shard the work over Ray workers (local Ray, or a cluster ADDRESS: "
                        "HOST:PORT, ray://HOST:PORT or auto); "
                        "results are written when all shards are done")
    p.add_argument("--workers", type=_common.positive_int, default=None,
                   help="number of Ray workers with --ray (default: --threads)")
    p.add_argument("--shard", choices=("queries", "db"), default=None,
                   help="with --ray: split the queries (default) or the database")
    _common.add_threads(p, "threads for numba, torch and BLAS; results are the same at any "
                           "count")
    _common.add_progress(p)
    _common.add_method_options(p, skip=("evalue", "target_msa", "db"))
    return p


def _split_options(args: argparse.Namespace, opts: dict[str, Any]
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the rounds' options, :data:`PSSM_ROUND_OPTIONS`; the method's own, the rest) of an
    iterative search. With ``pssm`` the method's own are its profile's (pseudocounts, admix,
    pssm_kind), which :func:`homalign.search.iterative.iterative_search` applies to its PSSM
    (or refuses: a query MSA); a method that does not declare one is refused by
    :func:`run`."""
    del args
    pssm = {k: opts[k] for k in PSSM_ROUND_OPTIONS if k in opts}
    return pssm, {k: v for k, v in opts.items() if k not in PSSM_ROUND_OPTIONS}


def _prefilter(args: argparse.Namespace, opts: dict[str, Any]) -> bool:
    """Whether the search prefilters: not with ``--exhaustive``, nor by default with a query
    model or MSA (:func:`homalign.search.entry.default_prefilter`; ``--max-seqs`` asks for
    it)."""
    from homalign.search.entry import default_prefilter

    if args.exhaustive:
        return False
    return (args.max_seqs is not None or args.iterations > 1 or args.target_msa is not None
            or default_prefilter(opts))


def check_inputs(args: argparse.Namespace, opts: dict[str, Any], queries: list) -> None:
    """ValueError for method options a database search cannot use (see
    :func:`homalign.search.entry.check_query_inputs`), and for ``--msa iterative:N``, whose
    database is not an option of search."""
    from homalign.profile.sources import is_iterative
    from homalign.search.entry import check_query_inputs, check_query_model

    check_query_inputs(opts, len(queries))
    check_query_model(queries[0], opts)
    msa = str(opts.get("msa") or "")
    if is_iterative(msa):
        raise ValueError(f"--msa {msa} builds each protein's MSA by searching a database: in "
                         "search use --iterations N (the query's MSA from DB, PSI-BLAST "
                         "style) and --target-msa MSADB (homalign makemsa) for the targets'")


def _iterative(queries, db, args: argparse.Namespace, opts: dict[str, Any],
               traceback: bool = True) -> Iterator:
    """``--iterations N``: :func:`homalign.search.iterative.iterative_search` for each query
    (PSI-BLAST class for ``sw``/``pssm``; any other method is fused with the PSSM round); with
    ``--threads N``, a makedb directory or FASTA file and 20 queries or more, in N one-thread
    worker processes (:mod:`homalign.search.parallel`; the same hits)."""
    from tqdm import tqdm

    from homalign.search.parallel import iter_search

    pssm, own = _split_options(args, opts)
    pf_opts = {"max_seqs": args.max_seqs} if args.max_seqs is not None else None
    yield from tqdm(iter_search(queries, db, args.method, workers=_common.threads(args),
                                iterations=args.iterations, evalue=args.evalue,
                                max_hits=args.max_hits, prefilter=_prefilter(args, opts),
                                prefilter_options=pf_opts, target_msa=args.target_msa,
                                neighbour_support=args.neighbour_support,
                                msa_db=args.msa_db, traceback=traceback, **pssm, **own),
                    total=len(queries), desc="iterative search", unit="query",
                    disable=not _common.progress(args), dynamic_ncols=True)


def _plain(queries, db, args: argparse.Namespace, opts: dict[str, Any],
           traceback: bool = True) -> Iterator:
    """One search per query, yielding each query's hits as soon as they are ranked: with
    ``--threads N``, a makedb directory or FASTA file and 20 queries or more, N one-thread worker
    processes search whole queries side by side (:mod:`homalign.search.parallel`; the same
    hits)."""
    from tqdm import tqdm

    from homalign.search.parallel import iter_search

    pf_opts = {"max_seqs": args.max_seqs} if args.max_seqs is not None else None
    yield from tqdm(iter_search(queries, db, args.method, workers=_common.threads(args),
                                evalue=args.evalue, max_hits=args.max_hits,
                                prefilter=_prefilter(args, opts), prefilter_options=pf_opts,
                                traceback=traceback, **_round(args), **opts),
                    total=len(queries), desc=f"search {args.method}", unit="query",
                    disable=not _common.progress(args), dynamic_ncols=True)


def _ray(queries, db, args: argparse.Namespace, opts: dict[str, Any],
         traceback: bool = True) -> list:
    from homalign.search.ray_backend import search_ray

    workers = args.workers or _common.threads(args)
    pf_opts = {"max_seqs": args.max_seqs} if args.max_seqs is not None else None
    if args.iterations > 1 or args.target_msa is not None:
        pssm, own = _split_options(args, opts)
        it_opts = {"neighbour_support": args.neighbour_support, "msa_db": args.msa_db}
        return search_ray(queries, args.db, args.method, address=args.ray,
                          workers=workers, iterations=args.iterations,
                          target_msa=args.target_msa, iterative_options=it_opts,
                          evalue=args.evalue, max_hits=args.max_hits,
                          prefilter=_prefilter(args, opts), prefilter_options=pf_opts,
                          traceback=traceback, **pssm, **own)
    return search_ray(queries, db, args.method, address=args.ray, workers=workers,
                      shard=args.shard or "queries", evalue=args.evalue, max_hits=args.max_hits,
                      prefilter=_prefilter(args, opts), prefilter_options=pf_opts,
                      traceback=traceback, **_round(args), **opts)


def _round(args: argparse.Namespace) -> dict[str, Any]:
    """``profile_round`` as ``--[no-]profile-round`` says (nothing: the search's default)."""
    return {} if args.profile_round is None else {"profile_round": args.profile_round}


def needs_alignments(fmt: str, columns) -> bool:
    """Whether output ``fmt`` with ``columns`` shows anything of an alignment (else the search
    can skip them: :data:`homalign.io.blast_tab.HIT_FIELDS`)."""
    from homalign.io.blast_tab import HIT_FIELDS

    return fmt != "tab" or not set(columns) <= HIT_FIELDS


def aligned(hits: list) -> list:
    """The hits that have an alignment of at least one residue pair: a method can score a
    target and align none of the query's residues with it (a HMMER model's nodes the query
    does not occupy); BLAST tabular has no line for such a hit, so no format that shows
    alignments lists it (columns that need no alignment compute none, and list every hit)."""
    return [h for h in hits if h.alignment is None or len(h.alignment.pairs) > 0]


def render_hits(hits, fmt: str, columns, query, db) -> str:
    """The text of one query's hits in ``fmt`` (tab with ``columns``, json or pair); without
    alignments (:func:`needs_alignments` False) a line is the hit's own fields, the lengths
    those of ``query`` and of its target in ``db``."""
    from homalign.report import format_hit_tabular, format_json, format_tabular
    from homalign.search.hits import format_pair as format_hit_pair

    if not needs_alignments(fmt, columns):
        return "".join(format_hit_tabular(
            columns, query_id=h.query_id, target_id=h.target_id, qlen=len(query),
            slen=int(db.lengths[h.target_index]), evalue=h.evalue, bits=h.bits, score=h.score)
            for h in hits)
    out = []
    for h in hits:
        if h.alignment is None:
            raise ValueError(f"hit {h.target_id} has no alignment")
        kw = {"query_id": h.query_id, "target_id": h.target_id, "evalue": h.evalue,
              "bits": h.bits, "score": h.score}
        if fmt == "tab":
            out.append(format_tabular(h.alignment, columns, **kw))
        elif fmt == "json":
            out.append(format_json(h.alignment, **kw))
        else:
            out.append(format_hit_pair(h, 60) + "\n")
    return "".join(out)


def run(args: argparse.Namespace) -> int:
    from homalign.search import open_database
    from homalign.threads import set_threads

    fmt, columns = _common.output_columns(args, "tab")
    _common.check_output(args.out, args.query, args.db)
    if args.aln:
        if fmt != "tab" or args.outfmt is not None:
            raise ValueError("--aln appends qseq sseq to --format tab; with --outfmt name them")
        columns = (*columns, "qseq", "sseq")
    opts = _common.method_options(args)
    if args.iterations > 1 or args.target_msa is not None:
        from homalign.search.iterative import PSSM_METHODS

        _pssm, own = _split_options(args, opts)
        # sw or pssm with --iterations is one PSI-BLAST-class search: pssm's options
        _common.check_method_options("pssm" if args.method in PSSM_METHODS else args.method,
                                     own)
    else:
        _common.check_method_options(args.method, opts)
    if args.neighbour_support is not None and args.target_msa is None:
        raise ValueError("--neighbour-support needs --target-msa")
    if args.ray is None and (args.workers is not None or args.shard is not None):
        raise ValueError("--workers and --shard are for --ray (without it, -j N sets the "
                         "worker processes)")
    if args.msa_db is not None and args.iterations < 2:
        raise ValueError("--msa-db needs --iterations 2 or more (it builds the query's MSA)")
    if args.profile_round is not None and (args.iterations > 1 or args.target_msa is not None
                                           or args.method != "learned"):
        raise ValueError("--[no-]profile-round is for --method learned without --iterations or "
                         "--target-msa (those have PSSM rounds of their own)")
    set_threads(_common.threads(args))
    queries = _common.read_sequences(args.query)
    if not queries:
        raise ValueError(f"{args.query}: no query sequences")
    check_inputs(args, opts, queries)
    db = open_database(args.db)
    traceback = needs_alignments(fmt, columns)
    if args.ray is not None:
        results: Any = _ray(queries, db, args, opts, traceback)
    elif args.iterations > 1 or args.target_msa is not None:
        results = _iterative(queries, db, args, opts, traceback)
    else:
        results = _plain(queries, db, args, opts, traceback)
    if traceback:
        results = ((q, aligned(hits)) for q, hits in results)
    if fmt == "a3m":
        return _write_a3m(list(results), args.out)
    with _common.output_stream(args.out) as out:
        for q, hits in results:
            out.write(render_hits(hits, fmt, columns, q, db))
            if out is sys.stdout:
                out.flush()
    return 0


def _write_a3m(results: list, path: str) -> int:
    from homalign.search import write_hits

    if path != "-":
        write_hits(path, results, fmt="a3m")
        return 0
    if len(results) > 1:
        raise ValueError("a3m output of several queries needs -o DIRECTORY")
    from homalign.search.hits import hits_msa

    q, hits = results[0]
    msa = hits_msa(q, hits)
    sys.stdout.write("".join(f">{i}\n{r}\n" for i, r in zip(msa.ids, msa.to_a3m_rows(),
                                                             strict=True)))
    return 0
