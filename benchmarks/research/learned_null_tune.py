"""Is the learned search's null model the weak point?  TRAIN-fold queries only.

    python benchmarks/research/learned_null_tune.py --queries 100 --null-pairs 3000 --out runs/null.json

The learned search ranks by the local forward score ``F`` with E-values from a Gumbel law fitted
on i.i.d. background sequences over the database's search space (BLAST-style), so the target's
length does not enter the ranking. Real proteins are not i.i.d.: the learned score of two
unrelated real proteins drifts with their lengths. This script

1. caches the raw learned scores of held-out train-fold queries against their prefilter
   candidates (``search(..., traceback=False)``; never the dev queries),
2. scores ``--null-pairs`` cross-fold pairs of train-fold domains (the held-out folds and the
   dev queries' folds excluded) — real unrelated proteins,
3. fits the regression null of :func:`homalign.stats.fit_regression_tail` to them, and
4. reports superfamily / family sensitivity to the first false positive of the rankings: the
   E-value as the search computed it (``--label`` it: the i.i.d. fit, or a null the weights
   carry), ``ln E + beta ln n`` for several ``beta``, the cross-fold regression null's
   ``N * P(S >= s | m, n)``, the cross-fold Gumbel law with a fitted length exponent
   (``K (m n)^gamma e^{-lambda S}``, what ``python -m homalign.model.homology --null-pairs``
   ships) and the homology head's logit; ``--calibration``: each null's E-values on real decoys;
   ``--exhaustive N``: both laws on the search without the prefilter, for N of the queries.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from homalign.evaluate.homology import mean_sensitivity, query_sensitivity, train_fold_tuning_set
from homalign.io.atomic import atomic_write_bytes
from homalign.search import search
from homalign.search.database import SequenceDB
from homalign.search.engine import TargetReps


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--null-pairs", type=int, default=3000)
    ap.add_argument("--method", default="learned")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--label", default="as searched", help="what null the cached E-values had")
    ap.add_argument("--exhaustive", type=int, default=0, metavar="N",
                    help="also the search without prefilter for N of the queries (~25 s each)")
    ap.add_argument("--calibration", action="store_true",
                    help="also each null's E-values on real decoys (dev queries against "
                         "held-out-fold domains)")
    args = ap.parse_args(argv)
    from homalign.methods import get_method
    from homalign.search.calibration import calibrate, pair_scores
    from homalign.stats import fit_gumbel, fit_regression_tail, pair_pvalues

    ts = train_fold_tuning_set(args.queries, heldout=True)
    cache = json.loads(args.out.read_text()) if args.out.exists() else {}
    hits = cache.setdefault(f"hits:{args.method}", {})
    db = SequenceDB.from_fasta(ts.fasta)
    m = get_method(args.method)
    reps = TargetReps(m, db, dict(m.defaults))
    t0 = time.time()
    for n, q in enumerate(ts.queries):
        if q in hits:
            continue
        hs = search(db.sequence(db.index_of(q)), db, args.method, evalue=1e9, max_hits=2000,
                    traceback=False, target_reps=reps)
        hits[q] = [(h.target_id, h.score, h.evalue) for h in hs]
        _save(args.out, cache)
        print(f"{n + 1}/{len(ts.queries)} {q} {time.time() - t0:.0f}s", file=sys.stderr,
              flush=True)

    key = f"null:{args.method}:{args.null_pairs}"
    if key not in cache:
        from homalign.model.homology import null_fit_pairs

        dev = set((ts.fasta.parent / "dev-queries.txt").read_text().split())
        pairs = null_fit_pairs(ts.fasta, dev, args.null_pairs)
        scores, _ = pair_scores(args.method, [a for a, _ in pairs], [b for _, b in pairs],
                                 dict(m.defaults))
        cache[key] = [(len(a), len(b), float(s)) for (a, b), s in zip(pairs, scores, strict=True)]
        _save(args.out, cache)
        print(f"null pairs scored {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    null = np.asarray(cache[key], dtype=np.float64)
    reg = fit_regression_tail(null[:, 2], null[:, 0], null[:, 1])
    gg = fit_gumbel(null[:, 2], null[:, 0], null[:, 1], length_exponent=True)
    print(f"null: Gumbel with length exponent: lambda {gg.lam:.3f}, gamma {gg.gamma:.3f}; "
          f"gamma = 1: lambda {fit_gumbel(null[:, 2], null[:, 0], null[:, 1]).lam:.3f}")
    c = np.polyfit(np.log(null[:, 0] * null[:, 1]), null[:, 2], 1)
    print(f"null: mean score {null[:, 2].mean():.2f}; S ~ {c[0]:.2f} ln(mn) + {c[1]:.2f}; "
          f"regression coef {np.round(reg.coef, 3).tolist()}")

    lengths = dict(zip(db.ids, db.lengths.tolist(), strict=True))
    queries = [q for q in ts.queries if q in hits]

    def report(name: str, key_fn) -> None:
        ranks = {}
        for q in queries:
            lst = [(t, key_fn(q, t, s, e)) for t, s, e in hits[q] if t != q]
            ranks[q] = [t for t, _ in sorted(lst, key=lambda x: x[1])]
        v = mean_sensitivity({q: query_sensitivity(q, ranks[q], ts.index) for q in queries})
        print(f"{name:36s} " + " ".join(f"{lv}={x:.4f}" for lv, x in v.items()), flush=True)

    report(f"search E-value ({args.label})", lambda q, t, s, e: e)
    for beta in (0.5, 1.0, 1.5, 2.0, 2.5, 3.0):
        report(f"ln E + {beta} ln n", lambda q, t, s, e, b=beta:
               np.log(max(e, 1e-300)) + b * np.log(lengths[t]))
    report("cross-fold regression null", lambda q, t, s, e: float(
        pair_pvalues(s, reg, lengths[q], lengths[t])))
    report("cross-fold Gumbel, length exponent", lambda q, t, s, e: float(
        -gg.lam * s + gg.gamma * np.log(lengths[q] * lengths[t])))
    head = _meta(args.method).get("homology")
    if head:
        report("homology head logit", lambda q, t, s, e: -(
            head["a"] * s - head["b"] * np.log(lengths[q] * lengths[t])))
    first_fp = []
    for q in queries:
        for t, _s, _e in sorted(hits[q], key=lambda x: x[2]):
            if t != q and ts.labels[t].fold != ts.labels[q].fold:
                first_fp.append(lengths[t])
                break
    print(f"median length of the first false positive (search E-value) {np.median(first_fp):.0f};"
          f" of the database {np.median(db.lengths):.0f}")
    if args.exhaustive:
        exhaustive_check(args, db, reps, ts, cache, gg, lengths)
    if args.calibration:
        nulls = {"i.i.d. Gumbel fit (calibrate)": calibrate(args.method, {}, n_pairs=2000,
                                                            seed=0),
                 "cross-fold Gumbel, length exponent": gg, "cross-fold regression": reg}
        decoy_calibration(args.method, ts, cache, args.out, nulls)
    return 0


def exhaustive_check(args, db: SequenceDB, reps, ts, cache: dict, gg, lengths: dict) -> None:
    """The learned search without the prefilter (every database target; top 3,000 kept) for the
    ``--exhaustive`` first tuning queries, ranked by the search's E-value and by the length-exponent
    null, beside the prefiltered search of the same queries."""
    sub = train_fold_tuning_set(args.exhaustive, heldout=True).queries
    hits_ex = cache.setdefault(f"exhaustive:{args.method}", {})
    t0 = time.time()
    for n, q in enumerate(sub):
        if q in hits_ex:
            continue
        hs = search(db.sequence(db.index_of(q)), db, args.method, evalue=1e9, max_hits=3000,
                    prefilter=False, traceback=False, target_reps=reps)
        hits_ex[q] = [(h.target_id, h.score, h.evalue) for h in hs]
        _save(args.out, cache)
        print(f"exhaustive {n + 1}/{len(sub)} {q} {time.time() - t0:.0f}s", file=sys.stderr,
              flush=True)
    pre = cache[f"hits:{args.method}"]
    both = [q for q in sub if q in pre]
    for name, lists in (("prefilter", pre), ("exhaustive", hits_ex)):
        for law, key in (("search E-value", lambda t, s, e: e),
                         ("length-exponent null",
                          lambda t, s, e: -gg.lam * s + gg.gamma * np.log(lengths[t]))):
            ranks = {q: [t for _, t in sorted((key(t, s, e), t) for t, s, e in lists[q]) if t != q]
                     for q in both}
            v = mean_sensitivity({q: query_sensitivity(q, ranks[q], ts.index) for q in both})
            print(f"{len(both)} queries, {name:10s} {law:22s} "
                  + " ".join(f"{lv}={x:.4f}" for lv, x in v.items()), flush=True)


def decoy_calibration(method: str, ts, cache: dict, out: Path, nulls: dict) -> None:
    """Hits per query with E <= x of 40 evenly spaced dev queries searched against 400 domains of
    the held-out train folds (real unrelated proteins; neither is in the null fit), exhaustively,
    under each null (ideal: x). The same decoys as ``benchmarks/homology.py calibration
    --decoys cross-fold``."""
    from homalign.evaluate.homology import cross_fold_decoys
    from homalign.stats import db_evalues

    key = f"decoys:{method}"
    if key not in cache:
        dev = (ts.fasta.parent / "dev-queries.txt").read_text().split()
        queries, decoy_seqs = cross_fold_decoys(ts.fasta, dev)
        decoys = SequenceDB.from_sequences(decoy_seqs)
        rows = []
        for q in queries:
            for h in search(q, decoys, method, evalue=1e30, prefilter=False, max_hits=None,
                            traceback=False):
                rows.append((q.id, len(q), int(decoys.lengths[h.target_index]), h.score))
        cache[key] = {"rows": rows, "residues": decoys.total_length, "n": len(decoys)}
        _save(out, cache)
    d = cache[key]
    print("| null | E <= 0.1 | E <= 1 | E <= 5 | E <= 10 |")
    print("|---|---|---|---|---|")
    for name, params in nulls.items():
        ev = []
        for q in sorted({r[0] for r in d["rows"]}):
            r = [x for x in d["rows"] if x[0] == q]
            ev += db_evalues(np.array([x[3] for x in r]), params, r[0][1],
                             np.array([x[2] for x in r]), d["residues"], d["n"]).tolist()
        ev = np.asarray(ev)
        print(f"| {name} | " + " | ".join(f"{(ev <= x).sum() / 40:.2f}" for x in (0.1, 1, 5, 10))
              + " |")


def _meta(method: str) -> dict:
    if method != "learned":
        return {}
    from homalign.methods.learned import _model

    return _model()[1]


def _save(path: Path, cache: dict) -> None:
    atomic_write_bytes(path, json.dumps(cache).encode())  # a killed run leaves the old cache


if __name__ == "__main__":
    raise SystemExit(main())
