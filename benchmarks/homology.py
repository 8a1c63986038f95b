"""SCOPe homology benchmark, prefilter check and peak memory of a search.

    # sensitivity (Foldseek protocol) of homalign methods and peers, into OUT/
    python benchmarks/homology.py sensitivity --methods sw,blastp,mmseqs --out OUT [--limit N]
    # prefilter: true positives kept against the exhaustive run, and the speed-up
    python benchmarks/homology.py prefilter --out OUT [--limit N]
    # peak resident memory of `homalign search` over the whole database (a child process)
    python benchmarks/homology.py memory --out OUT [--limit N]
    # E-value calibration on decoys: mean hits per query with E <= x on random sequences
    python benchmarks/homology.py calibration --out OUT [--methods sw,nw,glocal] [--decoys cross-fold]
    # sensitivity of a fusion (homalign.search.fuse_hits) of hit lists saved by earlier runs
    # (--neighbour-support W --target-msa MSADB: then homalign.search.msadb.neighbour_support)
    python benchmarks/homology.py fuse --hits A/hits/learned.tsv B/hits/pssm@3.tsv \
        --weights 0.5,0.5 --name learned@3 --out OUT
    # the ceiling of a hit list: the share of each query's superfamily members (other families)
    # present in it at all, mean over scorable queries
    python benchmarks/homology.py inlist --hits A/hits/learned.tsv --out OUT
    # a saved hit list's E-values recomputed with the method's current null law (same scores)
    python benchmarks/homology.py restat --methods learned --hits A/hits/learned.tsv --out OUT

Defaults: the SCOPe 2.07 40% trainval database and the dev queries of $HOMALIGN_DATA/scope
(override with --db / --queries or $HOMALIGN_DATA). ``--limit N`` takes N queries evenly spaced
over the list. Each sub-command writes a CSV into OUT and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from measure import run_measured

DATA = Path(os.environ.get("HOMALIGN_DATA", "$HOMALIGN_DATA"))  # no machine default
DEFAULT_DB = DATA / "scope" / "astral-2.07-40.trainval.fa"
DEFAULT_QUERIES = DATA / "scope" / "dev-queries.txt"
HOMALIGN = [sys.executable, "-c", "import sys; from homalign.cli import main; sys.exit(main())"]


def _write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _queries(args) -> list[str]:
    from homalign.evaluate.homology import labels_from_fasta, read_query_list

    qs = read_query_list(args.queries, labels_from_fasta(args.db))
    if args.limit:
        qs = qs[::max(len(qs) // args.limit, 1)][:args.limit]
    return qs


def sensitivity(args) -> None:
    from homalign.evaluate.homology import run_benchmark

    methods = [m for m in args.methods.split(",") if m]
    rows = run_benchmark(args.db, args.queries, methods, args.out, prefilter=not args.exhaustive,
                         max_hits=args.max_hits, threads=args.threads, limit=args.limit,
                         progress=True, peer_evalue=args.peer_evalue)
    ref = {r["method"]: r["seconds"] for r in rows}
    print("| method | queries | family | superfamily | fold | seconds | time / blastp "
          "| time / mmseqs |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        rb = f"{r['seconds'] / ref['blastp']:.2f}" if "blastp" in ref else "-"
        rm = f"{r['seconds'] / ref['mmseqs']:.2f}" if "mmseqs" in ref else "-"
        print(f"| {r['method']} | {r['queries']} | {r['family']:.3f} | {r['superfamily']:.3f} "
              f"| {r['fold']:.3f} | {r['seconds']:.1f} | {rb} | {rm} |")


def prefilter(args) -> None:
    from homalign.evaluate.homology import (
        ScopIndex,
        labels_from_fasta,
        mean_sensitivity,
        sensitivities,
    )
    from homalign.search import SequenceDB, search
    from homalign.search.prefilter import DEFAULT_MAX_SEQS

    labels = labels_from_fasta(args.db)
    index = ScopIndex(labels)
    db = SequenceDB.from_fasta(args.db)
    qs = [db.sequence(db.index_of(q)) for q in _queries(args)]
    search(qs[0], db, evalue=args.evalue)  # compile
    runs = {}
    # the k-mer prefilter runs only when asked for (sw alone scores every target by default)
    kmer = {"max_seqs": DEFAULT_MAX_SEQS}
    for name, pf, opts in (("exhaustive", False, None), ("prefilter", True, kmer)):
        t0 = time.perf_counter()
        res = {q.id: search(q, db, evalue=args.evalue, max_hits=None, prefilter=pf,
                            prefilter_options=opts, traceback=False) for q in qs}
        runs[name] = (time.perf_counter() - t0, res)
    (t_ex, ex), (t_pf, pf) = runs["exhaustive"], runs["prefilter"]

    def same_fold(q, t):
        return q != t and labels[q].fold == labels[t].fold

    tp_ex = {(q, h.target_id) for q, hits in ex.items() for h in hits if same_fold(q, h.target_id)}
    tp_pf = {(q, h.target_id) for q, hits in pf.items() for h in hits if same_fold(q, h.target_id)}
    all_ex = {(q, h.target_id) for q, hits in ex.items() for h in hits}
    all_pf = {(q, h.target_id) for q, hits in pf.items() for h in hits}
    sens = {}
    for name, res in (("exhaustive", ex), ("prefilter", pf)):
        conv = {q: [(h.target_id, h.score, h.evalue) for h in hits] for q, hits in res.items()}
        sens[name] = mean_sensitivity(sensitivities(conv, list(res), index))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    row = {"queries": len(qs), "evalue": args.evalue, "tp_exhaustive": len(tp_ex),
           "tp_kept": len(tp_ex & tp_pf), "tp_kept_fraction": len(tp_ex & tp_pf) / max(len(tp_ex), 1),
           "hits_kept_fraction": len(all_ex & all_pf) / max(len(all_ex), 1),
           "seconds_exhaustive": t_ex, "seconds_prefilter": t_pf, "speedup": t_ex / t_pf}
    for name in sens:
        for level, v in sens[name].items():
            row[f"{name}_{level}"] = v
    with open(out / "prefilter.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(row))
        w.writeheader()
        w.writerow(row)
    print("| queries | E ≤ | same-fold hits (exhaustive) | kept by prefilter | all hits kept "
          "| exhaustive s | prefilter s | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {len(qs)} | {args.evalue:g} | {len(tp_ex)} | {row['tp_kept_fraction']:.3f} "
          f"| {row['hits_kept_fraction']:.3f} | {t_ex:.1f} | {t_pf:.1f} | {row['speedup']:.2f} |")
    for name in sens:
        print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in sens[name].items()))


def memory(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from homalign.search import SequenceDB

    db = SequenceDB.from_fasta(args.db)
    qfa = out / "memory-queries.fa"
    qfa.write_text("".join(f">{q}\n{db.residues(db.index_of(q))}\n" for q in _queries(args)))
    dbdir = out / "memory-db"
    if not dbdir.exists():
        subprocess.run([*HOMALIGN, "makedb", str(args.db), str(dbdir)], check=True)
    rows = []
    for mode in ("prefilter", "exhaustive"):
        cmd = [*HOMALIGN, "search", str(qfa), str(dbdir),
               "-o", str(out / f"memory-{mode}.tsv"), "--no-progress"]
        if mode == "exhaustive":
            cmd.append("--exhaustive")
        seconds, peak_mib = run_measured(cmd)
        rows.append({"mode": mode, "queries": qfa.read_text().count(">"),
                     "peak_rss_mib": peak_mib, "seconds": seconds})
    _write_csv(out / "memory.csv", rows)
    print("| mode | queries | peak RSS (MiB) | seconds |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['mode']} | {r['queries']} | {r['peak_rss_mib']:.0f} | {r['seconds']:.1f} |")


def calibration(args) -> None:
    import numpy as np

    from homalign.methods import get_method
    from homalign.search import SequenceDB, search
    from homalign.search.calibration import calibrate, evd_params
    from homalign.sequence import Sequence
    from homalign.stats import random_sequences

    rng = np.random.default_rng(7)
    if args.decoys == "iid":
        db = SequenceDB.from_sequences(
            [Sequence(f"d{i}", s) for i, s in enumerate(random_sequences(400, rng, 80, 400))])
        qs = [Sequence(f"q{i}", s) for i, s in enumerate(random_sequences(40, rng, 80, 400))]
    else:  # real proteins: dev queries against domains of the held-out train folds
        from homalign.evaluate.homology import cross_fold_decoys

        qs, decoys = cross_fold_decoys(args.db, _queries(args))
        db = SequenceDB.from_sequences(decoys)
    cases = []
    for m in [m for m in args.methods.split(",") if m]:
        cases.append((m, {}))
        if m == "sw" and args.decoys == "iid":
            cases.append(("sw", {"gap_open": 14.0, "gap_extend": 2.0}))  # no published values
        if get_method(m).null_params is not None and get_method(m).null_params() is not None:
            cases.append((m, {"iid fit": True}))  # the i.i.d. fit it would get without one
    rows = []
    for method, opts in cases:
        params = None
        if opts.pop("iid fit", False) or (method != "sw" and get_method(method).null_params
                                          is None) or (method == "sw" and opts):
            params = calibrate(method, opts, n_pairs=2000, seed=1)
        ev = np.array([h.evalue for q in qs for h in search(
            q, db, method, evalue=20, prefilter=False, max_hits=None, params=params,
            traceback=False, **opts)])
        label = method + (f" {opts['gap_open']:g}/{opts['gap_extend']:g}" if opts else "")
        shipped = params is None and method != "sw"
        if params is None:
            params = evd_params(method, opts)
        source = ("Karlin-Altschul (NCBI table)" if method == "sw" and not opts
                  else "shipped: " + params.source if shipped else params.source)
        rows.append({"method": label, "source": source,
                     **{f"E<={x:g}": float((ev <= x).sum()) / len(qs) for x in (0.1, 1, 5, 10)}})
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    _write_csv(out / "calibration.csv", rows)
    print("| method | E-value source | E ≤ 0.1 | E ≤ 1 | E ≤ 5 | E ≤ 10 |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['method']} | {r['source']} | {r['E<=0.1']:.2f} | {r['E<=1']:.2f} "
              f"| {r['E<=5']:.2f} | {r['E<=10']:.2f} |")


def fuse(args) -> None:
    """Fuse saved hit lists (``hits/<method>.tsv`` of ``sensitivity`` runs) exactly as
    :func:`homalign.search.iterative.iterative_search` does, and score the fusion. Equal to a
    ``METHOD@N`` run when the lists cover the same prefilter candidates (E-values as written,
    4 significant digits)."""
    from homalign.evaluate.homology import (
        ScopIndex,
        labels_from_fasta,
        mean_sensitivity,
        read_query_list,
        sensitivities,
    )
    from homalign.search import Hit, fuse_hits

    weights = [float(w) for w in args.weights.split(",")]
    ids: dict[str, int] = {}
    lists: list[dict[str, list[Hit]]] = []
    for path in args.hits:
        per_query: dict[str, list[Hit]] = {}
        with open(path) as fh:
            for n, line in enumerate(fh, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 4:
                    raise SystemExit(f"{path}:{n}: expected query, target, score, evalue")
                q, t, score, ev = parts
                per_query.setdefault(q, []).append(
                    Hit(q, t, ids.setdefault(t, len(ids)), float(score), 0.0, float(ev)))
        lists.append(per_query)
    labels = labels_from_fasta(args.db)
    queries = read_query_list(args.queries, labels)
    def fused(q: str) -> list[Hit]:
        hits = fuse_hits([lst.get(q, []) for lst in lists], weights)
        if args.neighbour_support:
            from homalign.search.msadb import neighbour_support

            hits = neighbour_support(hits, q, args.target_msa, args.neighbour_support)
        return hits

    if args.neighbour_support and args.target_msa is None:
        raise SystemExit("--neighbour-support needs --target-msa MSADB")
    results = {q: [(h.target_id, h.score, h.evalue) for h in fused(q)]
               for q in queries if any(q in lst for lst in lists)}
    # rank by the fused E-value: sensitivities() sorts by score, so pass -ln E as the score
    ranked = {q: [(t, -math.log(max(e, 1e-300)), e) for t, _s, e in v] for q, v in
              results.items()}
    per_query = sensitivities(ranked, queries, ScopIndex(labels))
    means = mean_sensitivity(per_query)
    args.out.mkdir(parents=True, exist_ok=True)
    row = {"method": args.name, "queries": len(per_query), **means}
    _write_csv(args.out / "summary.csv", [row])
    _write_csv(args.out / "per_query.csv", [{"method": args.name, "query": q, **v}
                                            for q, v in per_query.items()])
    print("| method | queries | family | superfamily | fold |")
    print("|---|---|---|---|---|")
    print(f"| {args.name} | {len(per_query)} | {means['family']:.3f} | "
          f"{means['superfamily']:.3f} | {means['fold']:.3f} |")
    # calibration on real proteins: hits per query at E <= x in another fold / in the same fold
    cuts = (1e-5, 1e-3, 0.1, 1.0, 10.0)
    other, same = dict.fromkeys(cuts, 0), dict.fromkeys(cuts, 0)
    for q, hits in results.items():
        for t, _s, e in hits:
            if t == q or t not in labels or q not in labels:
                continue
            tally = same if labels[t].fold == labels[q].fold else other
            for x in cuts:
                tally[x] += e <= x
    n = max(len(results), 1)
    print(f"\nhits per query ({len(results)} queries), other fold / same fold:")
    print("| " + " | ".join(f"E <= {x:g}" for x in cuts) + " |")
    print("|" + "---|" * len(cuts))
    print("| " + " | ".join(f"{other[x] / n:.2f} / {same[x] / n:.1f}" for x in cuts) + " |")


def restat(args) -> None:
    """Recompute the E-values of a saved hit list (``hits/<method>.tsv``) with the current null
    law of ``--methods`` (one method; its scores must not have changed, e.g. new statistics for the
    same weights), write it to ``OUT/hits/<method>.tsv`` and score it. Equal to a rerun of the
    search up to the rounding of the scores in the file. ``--db`` gives the lengths and database size."""
    import numpy as np

    from homalign.evaluate.homology import (
        ScopIndex,
        labels_from_fasta,
        mean_sensitivity,
        read_query_list,
        sensitivities,
    )
    from homalign.search.database import SequenceDB
    from homalign.search.engine import method_params
    from homalign.stats import db_evalues

    method = args.methods
    db = SequenceDB.from_fasta(args.db)
    length = dict(zip(db.ids, db.lengths.tolist(), strict=True))
    params = method_params(method, {})
    per_query: dict[str, list[tuple[str, float]]] = {}
    with open(args.hits[0]) as fh:
        for n, line in enumerate(fh, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4 or parts[1] not in length or parts[0] not in length:
                raise SystemExit(f"{args.hits[0]}:{n}: expected query, target, score, evalue "
                                 f"of sequences in {args.db}")
            per_query.setdefault(parts[0], []).append((parts[1], float(parts[2])))
    results = {}
    for q, hits in per_query.items():
        scores = np.array([s for _, s in hits])
        ev = db_evalues(scores, params, length[q], np.array([length[t] for t, _ in hits]),
                        db.total_length, len(db))
        results[q] = sorted(((t, s, float(e)) for (t, s), e in zip(hits, ev, strict=True)),
                            key=lambda x: (x[2], -x[1]))
    labels = labels_from_fasta(args.db)
    queries = read_query_list(args.queries, labels)
    ranked = {q: [(t, -math.log(max(e, 1e-300)), e) for t, _s, e in v]
              for q, v in results.items()}
    per_query_sens = sensitivities(ranked, [q for q in queries if q in results],
                                   ScopIndex(labels))
    means = mean_sensitivity(per_query_sens)
    (args.out / "hits").mkdir(parents=True, exist_ok=True)
    with open(args.out / "hits" / f"{method}.tsv", "w") as fh:
        for q, v in results.items():
            fh.writelines(f"{q}\t{t}\t{s:.6g}\t{e:.4g}\n" for t, s, e in v)
    _write_csv(args.out / "summary.csv", [{"method": method, "queries": len(per_query_sens),
                                           **means, "null": params.source}])
    _write_csv(args.out / "per_query.csv", [{"method": method, "query": q, **v}
                                            for q, v in per_query_sens.items()])
    print(f"null: {params.source}")
    print("| method | queries | family | superfamily | fold |")
    print("|---|---|---|---|---|")
    print(f"| {method} | {len(per_query_sens)} | {means['family']:.3f} | "
          f"{means['superfamily']:.3f} | {means['fold']:.3f} |")


def inlist(args) -> None:
    """Mean over scorable queries of the share of their superfamily members (outside their
    family) that appear anywhere in a saved hit list: what no re-ranking of that list can pass."""
    from homalign.evaluate.homology import ScopIndex, labels_from_fasta, read_query_list

    labels = labels_from_fasta(args.db)
    index = ScopIndex(labels)
    queries = set(read_query_list(args.queries, labels))
    found: dict[str, set[str]] = {}
    with open(args.hits[0]) as fh:
        for line in fh:
            q, t = line.split("\t")[:2]
            if q in queries:
                found.setdefault(q, set()).add(t)
    shares = []
    for q in sorted(queries):
        total = index.counts(q).superfamily
        if not index.scorable(q) or not total:
            continue
        ql = labels[q]
        hits = {t for t in found.get(q, ()) if t != q and t in labels
                and labels[t].superfamily == ql.superfamily and labels[t].family != ql.family}
        shares.append(len(hits) / total)
    args.out.mkdir(parents=True, exist_ok=True)
    row = {"hits": str(args.hits[0]), "queries": len(shares),
           "superfamily_in_list": sum(shares) / max(len(shares), 1)}
    _write_csv(args.out / "inlist.csv", [row])
    print(f"{row['hits']}: {row['queries']} queries, superfamily members in the list "
          f"{row['superfamily_in_list']:.3f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("sensitivity", "prefilter", "memory", "calibration", "fuse",
                                     "inlist", "restat"))
    p.add_argument("--db", type=Path, default=DEFAULT_DB)
    p.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    p.add_argument("--methods", default="sw,blastp,mmseqs")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--exhaustive", action="store_true")
    p.add_argument("--max-hits", type=int, default=2000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--evalue", type=float, default=10.0)
    p.add_argument("--peer-evalue", type=float, default=10.0)
    p.add_argument("--hits", type=Path, nargs="+", help="fuse: hit lists (query target score E)")
    p.add_argument("--weights", default="0.5,0.5", help="fuse: one weight per hit list")
    p.add_argument("--name", default="fused", help="fuse: the row's method name")
    p.add_argument("--target-msa", type=Path, default=None,
                   help="fuse: the MSA database the lists were searched with")
    p.add_argument("--neighbour-support", type=float, default=0.0,
                   help="fuse: then homalign.search.msadb.neighbour_support with this weight")
    p.add_argument("--decoys", choices=("iid", "cross-fold"), default="iid",
                   help="calibration: i.i.d. random sequences, or 40 dev queries against 400 "
                        "domains of the held-out train folds (real unrelated proteins)")
    args = p.parse_args()
    {"sensitivity": sensitivity, "prefilter": prefilter, "memory": memory,
     "calibration": calibration, "fuse": fuse, "inlist": inlist, "restat": restat}[args.what](args)


if __name__ == "__main__":
    main()
