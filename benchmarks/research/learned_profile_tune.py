"""Does a learned-profile second round (iterative search) rank homologs better?  TRAIN-fold queries.

    python benchmarks/research/learned_profile_tune.py --queries 40 --heldout --out runs/lp.json \
        --inclusion 1e-3 --k 20 --query-weight 0.5

For train-fold SCOPe queries (never the dev queries) against the trainval database: round 1 is the
``learned`` search; its hits with E <= ``--inclusion`` (at most ``--k``, best first) are aligned to
the query by the model's MEA decoding and averaged into a query profile
(:mod:`homalign.model.query_profile`); round 2 searches with the profile, over the prefilter candidates
of the query and of its ``--cand-members`` best included hits. Prints the superfamily / family
sensitivity up to the first false positive of round 1 and round 2. Round-1 hit lists and the
members' alignments are cached in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from homalign.evaluate.homology import (
    mean_sensitivity,
    query_sensitivity,
    train_fold_tuning_set,
)
from homalign.methods import get_method
from homalign.methods.learned import profile_rep
from homalign.search import search
from homalign.search.database import SequenceDB
from homalign.search.engine import TargetReps
from homalign.search.prefilter import prefilter


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--heldout", action="store_true")
    ap.add_argument("--inclusion", type=float, default=1e-3)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--query-weight", type=float, default=0.5)
    ap.add_argument("--cand-members", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    ts = train_fold_tuning_set(args.queries, args.heldout)
    fasta, index, queries = ts.fasta, ts.index, ts.queries
    cache = json.loads(args.out.read_text()) if args.out.exists() else {}
    round1: dict[str, list] = cache.get("round1", {})
    db = SequenceDB.from_fasta(fasta)
    m = get_method("learned")
    reps = TargetReps(m, db, dict(m.defaults))
    t0 = time.time()
    rank1, rank2, rank_min = {}, {}, {}
    for n, q in enumerate(queries):
        qi = db.index_of(q)
        qseq = db.sequence(qi)
        qrep = reps.get(qi)
        if q not in round1:
            hs = search(qseq, db, "learned", evalue=1e9, max_hits=2000, traceback=False,
                        target_reps=reps)
            round1[q] = [(h.target_id, h.evalue) for h in hs]
            args.out.write_text(json.dumps({"round1": round1}))
        rank1[q] = [t for t, _ in round1[q] if t != q]
        inc = [t for t, e in round1[q] if t != q and e <= args.inclusion][: args.k]
        members = []
        for t in inc:
            ti = db.index_of(t)
            aln = m.align_prepared(qseq, db.sequence(ti), qrep, reps.get(ti))
            members.append((reps.get(ti), aln.pairs))
        prof = profile_rep(qrep, members, query_weight=args.query_weight)
        cand = [prefilter(qseq.codes, db)]
        cand += [prefilter(db.codes_of(db.index_of(t)), db) for t in inc[: args.cand_members]]
        cand = np.unique(np.concatenate(cand))
        hs2 = search(qseq, db, "learned", evalue=1e9, max_hits=2000, traceback=False,
                     target_reps=reps, query_rep=prof, candidates=cand)
        rank2[q] = [h.target_id for h in hs2 if h.target_id != q]
        best = {t: e for t, e in round1[q] if t != q}
        for h in hs2:
            if h.target_id != q:
                best[h.target_id] = min(best.get(h.target_id, np.inf), h.evalue)
        rank_min[q] = sorted(best, key=lambda t: best[t])
        s1 = query_sensitivity(q, rank1[q], index)["superfamily"]
        s2 = query_sensitivity(q, rank2[q], index)["superfamily"]
        print(f"{n + 1}/{len(queries)} {q} members {len(inc)} cand {len(cand)} "
              f"sf {s1:.3f} -> {s2:.3f} {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    for name, r in (("round 1", rank1), ("round 2 (profile)", rank2),
                    ("min(E1, E2)", rank_min)):
        v = mean_sensitivity({q: query_sensitivity(q, r[q], index) for q in queries})
        print(f"{name:20s} " + " ".join(f"{lv}={x:.3f}" for lv, x in v.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
