"""E-value calibration on real proteins: chance hits per query at E-value thresholds.

Reads the hit lists of a ``homalign benchmark homology`` run (``OUT/hits/<method>.tsv``: query,
target, score, E-value) and counts, per query, the hits in another SCOP fold (chance hits among
real proteins) with E ≤ x. Ideal: x per query (a little less, as only other-fold targets count).

``--fit NAME``: fit the :class:`homalign.search.tail_calibration.TailCalibration` of the ranking
``NAME`` (e.g. ``learned``, ``learned@3``) to those counts and write it to
``src/homalign/search/tail_calibration.json``, composed with the calibration the lists were made with
(so a refit on calibrated lists is correct). Fit on held-out train-fold queries only::

    homalign benchmark homology --db astral-2.07-40.trainval.fa --queries HELDOUT.txt \\
        --methods learned,blastp --out OUT
    python benchmarks/evalue_calibration.py --db astral-2.07-40.trainval.fa \\
        --queries HELDOUT.txt --hits OUT/hits/learned.tsv --fit learned

``--fit-truncation NAME`` then fits the truncation of that calibration (the chance hits the
candidate limit keeps off a learned search's list) on lists made with it, to one other-fold hit a
query at E ≤ 1, and stores it beside the power law.

``HELDOUT.txt``: ``python benchmarks/evalue_calibration.py --heldout-queries HELDOUT.txt``
writes the train-fold domains of the held-out folds (:func:`is_heldout_fold`).

Decoys, where every hit is a chance hit (full-length proteins, any method)::

    python benchmarks/evalue_calibration.py --shuffle DB.fa DECOYS.fa --take 60 --copies 3
    homalign search DECOYS.fa DB --method learned --outfmt "6 qseqid sseqid evalue" > L.tsv
    blastp -query DECOYS.fa -db BLASTDB -outfmt "6 qseqid sseqid evalue" > B.tsv
    python benchmarks/evalue_calibration.py --decoys DECOYS.fa --decoy-hits L.tsv B.tsv
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from homalign.evaluate.homology import is_heldout_fold, labels_from_fasta
from homalign.search.tail_calibration import calibration_for, fit_tail, fit_truncation

THRESHOLDS = (1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0)
#: the fit uses E <= 1 only: at E <= 10 the counts are cut by the candidate limit (a learned
#: search scores 150 prefilter candidates), which bends the curve down
FIT_MAX = 1.0
TABLE = (Path(__file__).resolve().parents[1] / "src" / "homalign" / "search"
         / "tail_calibration.json")


def read_hits(path: Path) -> dict[str, list[tuple[str, float]]]:
    out: dict[str, list[tuple[str, float]]] = {}
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4:
                raise SystemExit(f"{path}:{n}: expected query, target, score, evalue")
            out.setdefault(parts[0], []).append((parts[1], float(parts[3])))
    return out


def chance_counts(hits: dict[str, list[tuple[str, float]]], queries: list[str],
                  labels: dict) -> tuple[np.ndarray, np.ndarray]:
    """(other-fold, same-fold) hit totals over ``queries`` at each of :data:`THRESHOLDS`."""
    other, same = np.zeros(len(THRESHOLDS)), np.zeros(len(THRESHOLDS))
    x = np.array(THRESHOLDS)
    for q in queries:
        for t, e in hits.get(q, []):
            if t == q or t not in labels:
                continue
            tally = same if labels[t].fold == labels[q].fold else other
            tally += e <= x
    return other, same


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--db", type=Path, help="ASTRAL FASTA the lists were searched against")
    p.add_argument("--queries", type=Path, help="query ids, one a line (all of the run's)")
    p.add_argument("--hits", type=Path, nargs="*", default=[], help="hits/<method>.tsv files")
    p.add_argument("--fit", metavar="NAME", help="fit and store the calibration of ranking NAME "
                   "(one --hits file)")
    p.add_argument("--fit-truncation", metavar="NAME",
                   help="fit and store the truncation of ranking NAME's shipped calibration "
                        "(one --hits file made with it): 1 other-fold hit a query at E <= 1")
    p.add_argument("--apply", metavar="NAME", help="count the lists' E-values after the shipped "
                   "calibration of ranking NAME (lists made without it)")
    p.add_argument("--source", default="", help="provenance line stored with the fit")
    p.add_argument("--heldout-queries", type=Path, metavar="OUT",
                   help="write the held-out train-fold domains of --db (default: the shared "
                        "trainval) and the dev list's complement to OUT, then stop")
    p.add_argument("--dev", type=Path, help="dev query list excluded by --heldout-queries")
    p.add_argument("--shuffle", type=Path, nargs=2, metavar=("IN", "OUT"),
                   help="write --copies residue shuffles of each sequence of IN to OUT, then stop")
    p.add_argument("--copies", type=int, default=3)
    p.add_argument("--take", type=int, default=None,
                   help="with --shuffle: N evenly spaced records of IN (default all)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--decoys", type=Path, help="the decoy queries of --decoy-hits")
    p.add_argument("--decoy-hits", type=Path, nargs="*", default=[],
                   help="tabular hits (qseqid sseqid evalue) of the decoys: chance hits per query")
    args = p.parse_args()
    if args.shuffle is not None:
        from homalign.io import read_fasta

        rng = np.random.default_rng(args.seed)
        recs = list(read_fasta(args.shuffle[0]))
        if args.take:
            recs = [recs[int(k)] for k in np.linspace(0, len(recs) - 1, args.take)]
        with open(args.shuffle[1], "w") as out:
            for copy in range(args.copies):
                for rec in recs:
                    res = np.array(list(rec.sequence))
                    rng.shuffle(res)
                    out.write(f">{rec.id}_shuf{copy}\n{''.join(res)}\n")
        return
    if args.decoy_hits:
        from homalign.io import read_fasta

        n_queries = sum(1 for _ in read_fasta(args.decoys))
        print(f"{n_queries} decoy queries; hits per query with E <= x")
        print("| hits | " + " | ".join(f"E <= {x:g}" for x in THRESHOLDS) + " |")
        print("|---|" + "---|" * len(THRESHOLDS))
        for path in args.decoy_hits:
            e = np.array([float(line.split("\t")[2]) for line in open(path) if line.strip()])
            print(f"| {path.name} | " + " | ".join(
                f"{(e <= x).sum() / n_queries:.3g}" for x in THRESHOLDS) + " |")
        return

    if args.heldout_queries is not None:
        if args.db is None or args.dev is None:
            raise SystemExit("--heldout-queries needs --db and --dev")
        labels = labels_from_fasta(args.db)
        dev = set(args.dev.read_text().split())
        ids = [i for i in sorted(labels) if i not in dev and is_heldout_fold(labels[i].fold)]
        args.heldout_queries.write_text("".join(f"{i}\n" for i in ids))
        print(f"{len(ids)} held-out train-fold domains -> {args.heldout_queries}")
        return
    if args.db is None or args.queries is None or not args.hits:
        raise SystemExit("give --db, --queries and --hits")
    labels = labels_from_fasta(args.db)
    queries = [q for q in args.queries.read_text().split() if q in labels]
    n_db = len(labels)
    print(f"{len(queries)} queries, {n_db} database sequences; other-fold / same-fold hits per "
          "query with E <= x")
    print("| hits | " + " | ".join(f"E <= {x:g}" for x in THRESHOLDS) + " |")
    print("|---|" + "---|" * len(THRESHOLDS))
    counts = {}
    tail = calibration_for(args.apply) if args.apply else None
    if args.apply and tail is None:
        raise SystemExit(f"no shipped calibration for {args.apply!r}")
    undo = calibration_for(args.fit or args.fit_truncation or "")
    lists = {}
    for path in args.hits:
        hits = read_hits(path)
        if undo is not None and undo.truncation:  # lists made with it: back to the power law
            hits = {q: list(zip([t for t, _ in v], undo.undo_truncation([e for _, e in v], n_db),
                                strict=True)) for q, v in hits.items()}
        if tail is not None:
            hits = {q: list(zip([t for t, _ in v], tail.evalues([e for _, e in v], n_db),
                                strict=True)) for q, v in hits.items()}
        lists[path] = hits
        other, same = chance_counts(hits, queries, labels)
        counts[path] = other
        print(f"| {path.name} | " + " | ".join(
            f"{o / len(queries):.3g} / {s / len(queries):.3g}" for o, s in
            zip(other, same, strict=True)) + " |")
    if args.fit_truncation is not None:
        if len(args.hits) != 1:
            raise SystemExit("--fit-truncation takes one --hits file")
        fit_truncation_of(args.fit_truncation, lists[args.hits[0]], args.hits[0].name, queries,
                          labels, n_db, args.source)
        return
    if args.fit is None:
        return
    if len(args.hits) != 1:
        raise SystemExit("--fit takes one --hits file")
    x = np.array(THRESHOLDS)
    fitted = fit_tail(x[x <= FIT_MAX], counts[args.hits[0]][x <= FIT_MAX], len(queries), n_db,
                      source=args.source)
    before = calibration_for(args.fit)
    cal = before.compose(fitted) if before is not None else fitted
    table = json.loads(TABLE.read_text()) if TABLE.is_file() else {}
    table[args.fit] = {"A": cal.A, "b": cal.b, "source": args.source,
                       "queries": len(queries), "db_sequences": n_db}
    if before is not None and before.truncation:
        print(f"{args.fit}: its truncation is dropped with the old power law; refit it "
              "(--fit-truncation) on lists made with the new one")
    TABLE.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    pred = fitted.evalues(np.array(THRESHOLDS), n_db)
    print(f"\n{args.fit}: A = {cal.A:.4g}, b = {cal.b:.4g} (this fit: A = {fitted.A:.4g}, "
          f"b = {fitted.b:.4g}) -> {TABLE}")
    print("| x | " + " | ".join(f"{x:g}" for x in THRESHOLDS) + " |")
    print("|---|" + "---|" * len(THRESHOLDS))
    print("| observed per query | " + " | ".join(
        f"{o / len(queries):.3g}" for o in counts[args.hits[0]]) + " |")
    print("| fitted per query | " + " | ".join(f"{v:.3g}" for v in pred) + " |")


def fit_truncation_of(name: str, hits: dict[str, list[tuple[str, float]]], list_name: str,
                      queries: list[str], labels: dict, n_db: int, source: str = "") -> None:
    """Fit ranking ``name``'s truncation on one hit list (its E-values before the shipped
    truncation, as ``main`` undoes it) and store it beside its power law."""
    from homalign.search.engine import LEARNED_RESCORE

    shipped = calibration_for(name)
    if shipped is None:
        raise SystemExit(f"no shipped calibration for {name!r}")
    qs = set(queries)
    other = [e for q, v in hits.items() if q in qs
             for t, e in v if t != q and t in labels and labels[t].fold != labels[q].fold]
    k = fit_truncation(other, len(queries))
    cal = shipped.with_truncation(k, n_db, LEARNED_RESCORE) if k else shipped
    table = json.loads(TABLE.read_text())
    table[name].update(truncation=k, truncation_db=n_db, candidates=LEARNED_RESCORE,
                       truncation_source=source or f"python benchmarks/evalue_calibration.py "
                       f"--hits {list_name} --fit-truncation {name} on {len(queries)} queries")
    TABLE.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    e = np.sort(np.asarray(other))
    after = cal.truncate(e, n_db) if k else e
    print(f"\n{name}: truncation k = {k:.4g} at {n_db} sequences, {LEARNED_RESCORE} candidates "
          f"-> {TABLE}")
    print("| other-fold hits per query | " + " | ".join(f"E <= {x:g}" for x in THRESHOLDS) + " |")
    print("|---|" + "---|" * len(THRESHOLDS))
    for label, vals in (("before", e), ("after", after)):
        print(f"| {label} | " + " | ".join(f"{(vals <= x).sum() / len(queries):.3g}"
                                           for x in THRESHOLDS) + " |")


if __name__ == "__main__":
    main()
