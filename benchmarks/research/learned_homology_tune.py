"""Which score of the learned model ranks homologs best?  Measured on TRAIN-fold SCOPe queries.

    python benchmarks/research/learned_homology_tune.py --queries 60 --weights src/homalign/weights/learned

For train-fold queries (never the dev queries) against the SCOPe trainval database, with the
search prefilter's candidates, compute per-query sensitivity to the first false positive
(the SCOPe protocol of ``homalign.evaluate.homology``) when targets are ranked by:

- ``viterbi@d``: the best local path score of ``S - d`` (a per-pair score offset d in nats,
  as HHsearch's column-score ``shift``: the CRF-trained S has a positive mean, so without an
  offset a "local" alignment spans whole sequences and the score grows with length);
- ``forward@d``: the local log-partition (all local alignments, HMMER3-style forward score) of
  ``S - d``;
- ``sw``: BLOSUM62 11/1 Smith-Waterman on the same candidates (reference);
- ``adapter``: when the weights carry a trained homology adapter, the score ``search`` ranks by
  (local forward score of ``S_h``, :mod:`homalign.model.contrastive`).

Scores are ranked raw and, for the head-style ranking, minus ``b log(m n)`` is not needed within
one query only up to the target length, so each score is also reported length-corrected
(``@lc``: minus log(target length), the Karlin-Altschul null for one query).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from homalign.dp import GapCosts, align_batch
from homalign.dp.posterior import log_partition
from homalign.evaluate.homology import (
    mean_sensitivity,
    query_sensitivity,
    train_fold_tuning_set,
)
from homalign.matrices import substitution_matrix
from homalign.model.weights import load_model
from homalign.search.database import SequenceDB
from homalign.search.prefilter import prefilter


def shifted(S: np.ndarray, d: float) -> np.ndarray:
    return np.ascontiguousarray(S - np.float32(d), dtype=np.float32)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weights", default="src/homalign/weights/learned")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--shifts", default="0,0.2,0.35,0.5,0.7")
    ap.add_argument("--forward", action="store_true", help="also rank by forward scores")
    ap.add_argument("--rerank", type=int, default=0,
                    help="re-rank the top K by SW by posterior-based scores (ea, ea+sw)")
    ap.add_argument("--heldout", action="store_true",
                    help="queries only from the train folds held out from homology training "
                         "(homalign.model.contrastive.load_scop_pairs' validation folds)")
    ap.add_argument("--out", type=Path, default=None, help="JSON with per-query results")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    ts = train_fold_tuning_set(args.queries, args.heldout)
    fasta, index, queries = ts.fasta, ts.index, ts.queries
    db = SequenceDB.from_fasta(fasta)
    model, meta = load_model(args.weights)
    model.eval()
    shifts = [float(x) for x in args.shifts.split(",")]
    blosum = np.asarray(substitution_matrix("BLOSUM62"), dtype=np.float32)
    emb: dict[int, torch.Tensor] = {}
    ranked: dict[str, dict[str, list[str]]] = {}
    t0 = time.time()
    for n, qid in enumerate(queries):
        qi = db.index_of(qid)
        q = db.sequence(qi)
        cand = prefilter(q.codes, db)
        eq = model.embed(q.codes)
        scores: dict[str, np.ndarray] = {}
        Ss, gs, sws, tl = [], [], [], []
        for t in cand:
            t = int(t)
            if t not in emb:
                emb[t] = model.embed(db.sequence(t).codes)
            tc = db.sequence(t).codes
            S, g = model.score_embedded(q.codes, eq, tc, emb[t])
            Ss.append(S)
            gs.append(g)
            sws.append(np.ascontiguousarray(blosum[q.codes][:, tc]))
            tl.append(len(tc))
        tl_a = np.log(np.asarray(tl, dtype=np.float64))
        if meta.get("homology_score"):
            from homalign.model.homology import ranking_scores
            from homalign.score.pair_scores import score_values

            scores["adapter"] = score_values([
                ranking_scores(model, meta, q.codes, eq, db.sequence(int(t)).codes, emb[int(t)])
                for t in cand])
        scores["sw"] = np.asarray(align_batch(
            sws, [GapCosts.uniform(len(q.codes), n_t) for n_t in tl], mode="local",
            score_only=True))
        for d in shifts:
            v = np.asarray(align_batch([shifted(S, d) for S in Ss], gs, mode="local",
                                       score_only=True), dtype=np.float64)
            scores[f"viterbi@{d}"] = v
            scores[f"viterbi@{d}@lc"] = v - tl_a
            if args.forward:
                f = np.array([log_partition(shifted(S, d), g, mode="local")
                              for S, g in zip(Ss, gs, strict=True)])
                scores[f"forward@{d}"] = f
                scores[f"forward@{d}@lc"] = f - tl_a
        if args.rerank:
            from homalign.model.decode import mea_align, posterior_matrix

            top = np.argsort(-scores["sw"], kind="stable")[: args.rerank]
            ea = np.full(len(cand), -np.inf)
            ean = np.full(len(cand), -np.inf)
            for j in top:
                P = posterior_matrix(Ss[j], gs[j], model.cfg.decode_mode)
                pairs = mea_align(P, model.cfg.mea_threshold).pairs
                tot = float(P[pairs[:, 0], pairs[:, 1]].sum()) if len(pairs) else 0.0
                ea[j] = tot / min(len(q.codes), tl[j])
                ean[j] = tot
            scores["ea"] = ea
            scores["ea_abs"] = ean
            scores["ea_x_sw"] = np.where(np.isfinite(ea), ea * 1e3, 0) + scores["sw"] * 1e-3
        ids = [db.ids[int(t)] for t in cand]
        ranked[qid] = {k: [ids[j] for j in np.argsort(-v, kind="stable")]
                       for k, v in scores.items()}
        print(f"{n + 1}/{len(queries)} {qid} candidates {len(cand)} "
              f"{time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    keys = list(next(iter(ranked.values())))
    table = {}
    for k in keys:
        per = {q: query_sensitivity(q, r[k], index) for q, r in ranked.items()}
        table[k] = mean_sensitivity(per)
    for k, v in table.items():
        print(f"{k:22s} " + " ".join(f"{lv}={x:.3f}" for lv, x in v.items()))
    if args.out:
        args.out.write_text(json.dumps({"queries": queries, "table": table}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
