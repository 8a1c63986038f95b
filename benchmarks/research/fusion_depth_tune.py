"""How many candidates the learned ranking of ``learned@3`` must score: all of the prefilter's,
or the PSSM round's best K (with or without the learned search's own best 80 by SW); with
``--seeds``, whether the last round's prefilter seeds with the query's PSSM
(``homalign.search.iterative.PROFILE_SEEDS``), end to end for ``pssm@3`` and ``learned@3``.

    homalign makedb $HOMALIGN_DATA/scope/astral-2.07-40.trainval.fa TRAINVAL.db
    python benchmarks/research/fusion_depth_tune.py --db TRAINVAL.db [--queries 563] \\
        [--depths 40,80,150,300 | --seeds |
         --end-to-end 150,200,300 [--methods pssm,learned] [--msa-candidates sw,kmer]
         [--ungapped 1000,0]] --out OUT.csv

Held-out *train-fold* queries only (:func:`homalign.evaluate.homology.train_fold_tuning_set`,
``heldout=True``), scores only, one thread. Each query's MSA (2 rounds), its PSSM round and the
learned ranking of *all* prefilter candidates are computed once; a depth keeps the learned
E-values of its subset only (a target's learned score depends on that pair alone) and fuses as
:func:`homalign.search.iterative.iterative_search` does (weight 0.5, a missing target takes the
learned list's worst E-value). The table gives family and superfamily sensitivity to the first
false positive and the mean number of targets the learned ranking scores.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

import numpy as np

from homalign.evaluate.homology import mean_sensitivity, sensitivities, train_fold_tuning_set
from homalign.methods.profile import ProteinRep
from homalign.profile.profile import Profile
from homalign.search import Hit, fuse_hits, open_database, search
from homalign.search.engine import candidates_of
from homalign.search.iterative import DEFAULT_FUSION_WEIGHT
from homalign.search.msa_build import build_msa
from homalign.search.prefilter import prefilter
from homalign.stats import karlin_altschul
from homalign.threads import set_threads


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True, help="homalign makedb directory of the trainval FASTA")
    p.add_argument("--queries", type=int, default=563, help="held-out train-fold queries")
    p.add_argument("--depths", default="40,80,150,300")
    p.add_argument("--seeds", action="store_true", help="PSSM seeds of the last round, off/on")
    p.add_argument("--end-to-end", dest="end_to_end", default=None,
                   help="FUSION_RESCORE values (e.g. 150,200,300): METHOD@3 end to end each")
    p.add_argument("--methods", default="learned", help="with --end-to-end: e.g. pssm,learned")
    p.add_argument("--msa-candidates", dest="msa_candidates", default="sw",
                   help="with --end-to-end: the MSA rounds' candidates, sw and/or kmer "
                        "(homalign.search.iterative.SW_CANDIDATES on / off)")
    p.add_argument("--ungapped", default=None,
                   help="with --end-to-end: UNGAPPED_CANDIDATES values, e.g. 1000,0 (0: SW of "
                        "every target; default: the shipped value)")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    set_threads(1)
    tuning = train_fold_tuning_set(args.queries, heldout=True)
    db = open_database(args.db)
    if args.seeds:
        return _write(_seeds(db, tuning), args.out)
    if args.end_to_end:
        return _write(_end_to_end(db, tuning, [int(x) for x in args.end_to_end.split(",")],
                                  args.methods.split(","), args.msa_candidates.split(","),
                                  _ungapped_values(args.ungapped)), args.out)
    params = karlin_altschul("BLOSUM62", 11.0, 1.0)
    runs = {}
    for qid in tuning.queries:
        q = db.sequence(db.index_of(qid))
        rep = ProteinRep(q, source=Profile.from_msa(build_msa(q, db, 2), pseudocounts="matrix",
                                                    matrix="BLOSUM62"))
        sw = candidates_of(q, db, "learned")  # the learned search's own: best 80 by SW
        cand = np.union1d(prefilter(q.codes, db), sw)  # as iterative_search's last round
        own = search(q, db, "learned", evalue=math.inf, max_hits=None, candidates=cand,
                     traceback=False, calibrated=False)
        pssm = search(q, db, "pssm", evalue=math.inf, max_hits=None, candidates=cand,
                      traceback=False, query_rep=rep, params=params, matrix="BLOSUM62",
                      gap_open=11.0, gap_extend=1.0)
        runs[qid] = (own, pssm, set(sw.tolist()))

    def row(depth: int | None, with_sw: bool) -> dict:
        results, sizes = {}, []
        for qid, (own, pssm, sw) in runs.items():
            keep = ({h.target_index for h in pssm[:depth]} | (sw if with_sw else set())
                    if depth is not None else {h.target_index for h in own})
            mine: list[Hit] = [h for h in own if h.target_index in keep]
            sizes.append(len(mine))
            w = DEFAULT_FUSION_WEIGHT
            results[qid] = [(h.target_id, h.score, h.evalue)
                            for h in fuse_hits([mine, pssm], [w, 1.0 - w])]
        sens = mean_sensitivity(sensitivities(results, tuning.queries, tuning.index))
        return {"depth": "all" if depth is None else depth, "with_sw_best": with_sw,
                "family": round(sens["family"], 4), "superfamily": round(sens["superfamily"], 4),
                "learned_targets": round(float(np.mean(sizes)), 1)}

    rows = [row(None, False)]
    for d in (int(x) for x in args.depths.split(",")):
        rows += [row(d, True), row(d, False)]
    for r in rows:
        print(r, file=sys.stderr)
    return _write(rows, args.out)


def _write(rows: list[dict], out: Path) -> int:
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


def _timed(db, tuning, method: str) -> dict:
    """``method``@3 end to end over the tuning queries (scores only): family and superfamily
    sensitivity and milliseconds a query, after one warm-up query."""
    import time

    from homalign.search import iterative

    def run(qid: str) -> list:
        q = db.sequence(db.index_of(qid))
        return [(h.target_id, h.score, h.evalue) for h in
                iterative.iterative_search(q, db, 3, method, evalue=1e9, max_hits=2000,
                                           traceback=False)]

    run(tuning.queries[0])
    start = time.perf_counter()
    results = {qid: run(qid) for qid in tuning.queries}
    ms = 1000 * (time.perf_counter() - start) / len(tuning.queries)
    sens = mean_sensitivity(sensitivities(results, tuning.queries, tuning.index))
    return {"family": round(sens["family"], 4), "superfamily": round(sens["superfamily"], 4),
            "ms_per_query": round(ms, 1)}


def _seeds(db, tuning) -> list[dict]:
    """pssm@3 and learned@3 with the last round seeded by the sequence, then by the PSSM."""
    from homalign.search import iterative

    rows = []
    for seeds in (False, True):
        iterative.PROFILE_SEEDS = seeds
        for method in ("pssm", "learned"):
            rows.append({"method": f"{method}@3", "pssm_seeds": seeds,
                         **_timed(db, tuning, method)})
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def _ungapped_values(arg: str | None) -> list[int]:
    """``--ungapped`` as UNGAPPED_CANDIDATES values (0: larger than any database)."""
    from homalign.search import engine

    if not arg:
        return [engine.UNGAPPED_CANDIDATES]
    return [int(x) or 2**62 for x in arg.split(",")]


def _end_to_end(db, tuning, depths: list[int], methods: list[str],
                msa_candidates: list[str], ungapped: list[int]) -> list[dict]:
    """METHOD@3 (the shipped PSSM seeds) for each MSA-round candidate source (``sw``: the
    database's best by SW, ``kmer``: the k-mer prefilter's), ``FUSION_RESCORE`` depth and
    ``UNGAPPED_CANDIDATES`` value."""
    from homalign.search import engine, iterative

    rows = []
    for n_ungapped in ungapped:
        engine.UNGAPPED_CANDIDATES = n_ungapped
        for source in msa_candidates:
            iterative.SW_CANDIDATES = source == "sw"
            for depth in depths:
                iterative.FUSION_RESCORE = depth
                for method in methods:
                    rows.append({"method": f"{method}@3", "msa_candidates": source,
                                 "fusion_rescore": depth,
                                 "ungapped": n_ungapped if n_ungapped < 2**62 else 0,
                                 **_timed(db, tuning, method)})
                    print(rows[-1], file=sys.stderr, flush=True)
    return rows


if __name__ == "__main__":
    sys.exit(main())
