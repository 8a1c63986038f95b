"""What the learned search's ungapped first pass keeps, and what it costs.

    python benchmarks/research/ungapped_recall.py --db TRAINVAL.db --queries Q.fa \\
        [--depths 1000,2000] [--hits] [--labels astral-2.07-40.trainval.fa]

One thread. For each query: the share of Smith-Waterman's own best ``LEARNED_RESCORE`` (80)
among the best N by ungapped score (``--depths``; the search's default N is
``engine.UNGAPPED_CANDIDATES``), and milliseconds a query of the ungapped pass over every target,
of Smith-Waterman of its best N (the first depth) and of Smith-Waterman of every target, after
one warm-up query. With ``--hits``, the learned search's hits at E <= 10 (scores only) with the
ungapped pass and with Smith-Waterman of every target, counted by the SCOPe class of the pair
(same superfamily, same fold, another fold; ``decoy_*`` ids and ids without a label apart) from
the ``--labels`` FASTA headers.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

import numpy as np


def _scop(path: str) -> dict[str, list[str]]:
    out = {}
    with open(path) as fh:
        for line in fh:
            if line.startswith(">"):
                name, sccs = line[1:].split()[:2]
                out[name] = sccs.split(".")
    return out


def _kind(q: str, t: str, labels: dict[str, list[str]]) -> str:
    if t.startswith("decoy"):
        return "decoy"
    if q not in labels or t not in labels:
        return "unlabelled"
    a, b = labels[q], labels[t]
    return "superfamily" if a[:3] == b[:3] else "fold" if a[:2] == b[:2] else "other fold"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True, help="homalign makedb directory")
    p.add_argument("--queries", required=True, help="FASTA file of queries")
    p.add_argument("--depths", default="1000", help="ungapped depths N, e.g. 1000,2000")
    p.add_argument("--hits", action="store_true", help="also the hits at E <= 10 by class")
    p.add_argument("--labels", default=None, help="FASTA with SCOPe sccs in its headers")
    args = p.parse_args(argv)

    from homalign.search import engine, open_database, search
    from homalign.search.prefilter import best_n
    from homalign.search.sw_scores import sw_scores
    from homalign.search.ungapped import ungapped_scores
    from homalign.sequence import read_sequences
    from homalign.threads import set_threads

    set_threads(1)
    db = open_database(args.db)
    queries = list(read_sequences(args.queries))
    depths = [int(x) for x in args.depths.split(",")]
    every = np.arange(len(db))
    keep = engine.LEARNED_RESCORE
    recall = collections.defaultdict(list)
    ms = collections.Counter()
    for k, q in enumerate(queries):
        t0 = time.perf_counter()
        ug = ungapped_scores(q.codes, db.codes, db.offsets, every, db=db)
        t1 = time.perf_counter()
        first = np.flatnonzero(best_n(ug, depths[0]))
        sw_scores(q.codes, db.codes, db.offsets, every[first], **engine.candidate_sw(), db=db)
        t2 = time.perf_counter()
        sw = sw_scores(q.codes, db.codes, db.offsets, every, **engine.candidate_sw(),
                       db=db).astype(np.float64)
        t3 = time.perf_counter()
        if k:  # the first query warms up
            ms["ungapped pass, every target"] += t1 - t0
            ms[f"SW of its best {depths[0]}"] += t2 - t1
            ms["SW of every target"] += t3 - t2
        top = set(np.flatnonzero(best_n(sw, keep)).tolist())
        for n in depths:
            recall[n].append(len(top & set(np.flatnonzero(best_n(ug, n)).tolist())) / keep)
    for n in depths:
        r = np.array(recall[n])
        print(f"SW's best {keep} among the best {n} by ungapped score: mean {r.mean():.3f}, "
              f"5th percentile {np.percentile(r, 5):.3f}, lowest {r.min():.3f}")
    for label, sec in ms.items():
        print(f"{label:40s} {1000 * sec / max(len(queries) - 1, 1):7.2f} ms a query")
    if args.hits:
        labels = _scop(args.labels) if args.labels else {}
        for name, depth in (("ungapped pass", engine.UNGAPPED_CANDIDATES),
                            ("SW of every target", 2**62)):
            engine.UNGAPPED_CANDIDATES = depth
            db.cache.pop("sw-pass", None)
            counts = collections.Counter()
            for q in queries:
                for h in search(q, db, "learned", evalue=10, traceback=False):
                    if h.target_id != q.id:
                        counts[_kind(q.id, h.target_id, labels)] += 1
            print(f"hits at E <= 10, {name}: {dict(sorted(counts.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
