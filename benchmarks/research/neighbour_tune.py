"""Intermediate-sequence search settings, offline: a learned search's hit lists plus the
database's neighbour lists (LINK_EVALUE, PATH_PENALTY and the list cut of search/engine.py).

    homalign benchmark homology --db astral-2.07-40.trainval.fa --queries HELDOUT.txt \\
        --methods learned --out CAL                     # HELDOUT: evalue_calibration.py
    homalign makedb astral-2.07-40.trainval.fa TRAINVAL.db --neighbours   # lists cut at E <= 1
    python benchmarks/research/neighbour_tune.py --db astral-2.07-40.trainval.fa \\
        --hits CAL/hits/learned.tsv --queries HELDOUT.txt --neighbours TRAINVAL.db

The hit lists hold the null law's E-values; they go through the shipped calibration first.
A target reached only through a neighbour keeps the lifted value (the search also scores it
directly, so it can only do better). Result (563 held-out queries, 2026-12-02): superfamily
0.1098 -> 0.1137 at link 1e-4, penalty 100, other-fold hits at E <= 1e-3 unchanged; penalty 10
and link 1e-2 reach 0.1179 at 2.7x the other-fold hits.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from homalign.evaluate.homology import (
    ScopIndex,
    labels_from_fasta,
    mean_sensitivity,
    read_query_list,
    sensitivities,
)
from homalign.search import SequenceDB
from homalign.search.tail_calibration import calibration_for


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--hits", type=Path, required=True)
    p.add_argument("--queries", type=Path, required=True)
    p.add_argument("--neighbours", type=Path, required=True, help="directory with the lists")
    args = p.parse_args()
    labels = labels_from_fasta(args.db)
    index = ScopIndex(labels)
    db = SequenceDB.from_fasta(args.db)
    n_db = len(db)
    pos = {x: i for i, x in enumerate(db.ids)}
    indptr = np.load(args.neighbours / "neighbours_indptr.npy")
    nidx = np.load(args.neighbours / "neighbours_index.npy")
    nev = np.load(args.neighbours / "neighbours_evalue.npy")
    cal = calibration_for("learned")
    assert cal is not None
    direct: dict[str, dict[str, float]] = {}
    for line in open(args.hits):
        q, t, _s, e = line.rstrip("\n").split("\t")
        direct.setdefault(q, {})[t] = float(e)
    for q, d in direct.items():
        direct[q] = dict(zip(d, cal.evalues(list(d.values()), n_db), strict=True))
    queries = read_query_list(args.queries, labels)

    def run(penalty: float, link: float, cut: float) -> str:
        res = {}
        for q in queries:
            d = dict(direct.get(q, {}))
            for n, e_qn in list(d.items()):
                if e_qn > link or n == q:
                    continue
                i = pos[n]
                for t, e_nt in zip(nidx[indptr[i]:indptr[i + 1]], nev[indptr[i]:indptr[i + 1]],
                                   strict=True):
                    if e_nt <= cut:
                        v = penalty * max(e_qn, e_nt)
                        if v < d.get(db.ids[t], math.inf):
                            d[db.ids[t]] = v
            res[q] = [(t, -math.log(max(e, 1e-300)), e) for t, e in d.items()]
        m = mean_sensitivity(sensitivities(res, queries, index))
        other = dict.fromkeys((1e-3, 1e-2, 1.0), 0)
        for q, hs in res.items():
            for t, _, e in hs:
                if t != q and t in labels and labels[t].fold != labels[q].fold:
                    for x in other:
                        other[x] += e <= x
        return (f"| {penalty:g} | {link:g} | {cut:g} | {m['family']:.4f} | "
                f"{m['superfamily']:.4f} | " + " | ".join(
                    f"{other[x] / len(queries):.4f}" for x in other) + " |")

    print("| penalty | link E | list cut | family | superfamily | other-fold E<=1e-3 | "
          "E<=1e-2 | E<=1 |")
    print("|---|---|---|---|---|---|---|---|")
    print(run(1.0, -1.0, 0.0))  # no lifting
    for penalty in (1.0, 10.0, 100.0, 1000.0):
        for link in (1e-5, 1e-4, 1e-3, 1e-2):
            for cut in (1e-2, 1.0):
                print(run(penalty, link, cut), flush=True)


if __name__ == "__main__":
    main()
