"""How deep the learned search looks, against its time: where its candidates come from (the
whole database by Smith-Waterman score, or the k-mer prefilter with its neighbourhood threshold)
and how many the learned ranking scores (``LEARNED_RESCORE``).

    homalign makedb $HOMALIGN_DATA/scope/astral-2.07-40.trainval.fa TRAINVAL.db
    python benchmarks/research/search_depth_tune.py --db TRAINVAL.db [--queries 563] \\
        [--settings sw:-:80,11:1000:80,10:1000:150] [--min-score 15] [--ungapped 1000,0] \\
        --out OUT.csv

Held-out *train-fold* queries only (:func:`homalign.evaluate.homology.train_fold_tuning_set`,
``heldout=True``: the folds the adapter and null law never saw), scores only, one thread. Each
setting is ``THRESHOLD:MAX_SEQS:RESCORE`` (neighbourhood score, the prefilter's
candidates, the learned ranking's; ``sw:-:RESCORE``: the best RESCORE of the whole database by
Smith-Waterman score, the search's default, whose Smith-Waterman pass scores the best
``--ungapped`` values by ungapped score (``engine.UNGAPPED_CANDIDATES``; 0: every target); a
fourth field ``k=4/index=1/two_hit=0/xdrop=10``
passes further prefilter options); the table gives family and superfamily sensitivity to the first
false positive (published protocol) and milliseconds a query (the queries run once before the
timed pass, so compiled code and caches are warm).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

from homalign.evaluate.homology import mean_sensitivity, sensitivities, train_fold_tuning_set
from homalign.search import engine, open_database, search
from homalign.threads import set_threads


def _extra(fields: list[str]) -> dict:
    """``k=4/index=1/two_hit=0/xdrop=10``: further prefilter options of a setting."""
    out: dict = {}
    for item in "/".join(fields).split("/"):
        if not item:
            continue
        key, _, value = item.partition("=")
        out[key] = (bool(int(value)) if key in ("index", "two_hit")
                    else int(value) if key in ("k", "window") else float(value))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True, help="homalign makedb directory of the trainval FASTA")
    p.add_argument("--queries", type=int, default=563, help="held-out train-fold queries")
    p.add_argument("--settings", default="sw:-:80,sw:-:120,11:1000:80,10:1000:80")
    p.add_argument("--min-score", type=float, default=15.0, help="ungapped score to pass")
    p.add_argument("--ungapped", default=None,
                   help="UNGAPPED_CANDIDATES values for the sw settings, e.g. 1000,500,2000,0 "
                        "(0: SW of every target; default: the shipped value)")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    set_threads(1)
    tuning = train_fold_tuning_set(args.queries, heldout=True)
    db = open_database(args.db)
    seqs = [db.sequence(db.index_of(q)) for q in tuning.queries]
    ungapped = ([int(x) or 2**62 for x in args.ungapped.split(",")] if args.ungapped
                else [engine.UNGAPPED_CANDIDATES])
    rows = []
    for setting, n_ungapped in ((s, u) for s in args.settings.split(",") for u in ungapped):
        engine.UNGAPPED_CANDIDATES = n_ungapped
        threshold, max_seqs, rescore, *extra = setting.split(":")
        opts = {"prefilter_options": None if threshold == "sw" else {
            "threshold": float(threshold), "max_seqs": int(max_seqs),
            "min_score": float(args.min_score), **_extra(extra)}, "rescore": int(rescore)}
        search(seqs[0], db, "learned", traceback=False, **opts)  # warm
        start = time.perf_counter()
        results = {q.id: [(h.target_id, h.score, h.evalue) for h in
                          search(q, db, "learned", evalue=1e9, max_hits=2000, traceback=False,
                                 **opts)] for q in seqs}
        ms = 1000 * (time.perf_counter() - start) / len(seqs)
        sens = mean_sensitivity(sensitivities(results, tuning.queries, tuning.index))
        rows.append({"threshold": threshold, "max_seqs": max_seqs, "rescore": rescore,
                     "extra": "/".join(extra),
                     "ungapped": n_ungapped if n_ungapped < 2**62 else 0,
                     "min_score": args.min_score,
                     "family": round(sens["family"], 4),
                     "superfamily": round(sens["superfamily"], 4), "ms_per_query": round(ms, 1)})
        print(rows[-1], file=sys.stderr, flush=True)
    with open(args.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
