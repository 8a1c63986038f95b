"""Does composition-based lambda scaling help homalign's PSSM search?  TRAIN-fold queries only.

    python benchmarks/research/pssm_composition_tune.py --queries 200 --out runs/cbs.json

PSI-BLAST's composition-based statistics (Schäffer et al., Bioinformatics 2001, "mode 1") rescale
each target's lambda: ``lambda'`` solves ``mean_i sum_a c_t(a) exp(lambda' S_i(a)) = 1`` for the
PSSM ``S`` and the target's residue composition ``c_t`` (20 pseudo-residues of background added),
and the E-value uses ``lambda_gapped * lambda' / lambda_u``, ``lambda_u`` being the same root for
the background composition. For held-out train-fold queries (never dev), ``pssm@3`` as
:func:`homalign.search.iterative.iterative_search` runs it (two inclusion rounds of ``build_msa``,
then the profile ranks 1,000 prefilter candidates); rankings reported: BLAST's E-value, with the
composition scaling (``full``, and ``cap``: never raising lambda), each also with a per-target
``ln n`` term; all hit lists are cached in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from homalign.alphabet import BACKGROUND
from homalign.evaluate.homology import mean_sensitivity, query_sensitivity, train_fold_tuning_set
from homalign.io.atomic import atomic_write_bytes
from homalign.methods.profile import ProteinRep
from homalign.profile.profile import Profile
from homalign.search import search
from homalign.search.database import SequenceDB
from homalign.search.msa_build import build_msa
from homalign.stats import karlin_altschul

GRID = np.linspace(0.01, 1.2, 600)


def ungapped_lambda(pssm: np.ndarray, composition: np.ndarray) -> np.ndarray:
    """Smallest grid lambda with ``mean_i sum_a c(a) exp(lambda S_i(a)) >= 1`` per composition
    row (``composition`` (..., 20); ``pssm`` (L, 20) in matrix units)."""
    colsum = np.exp(GRID[:, None, None] * pssm[None]).mean(axis=1)  # (G, 20)
    f = composition @ colsum.T - 1.0
    return GRID[np.argmax(f >= 0, axis=-1)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    ts = train_fold_tuning_set(args.queries, heldout=True)
    db = SequenceDB.from_fasta(ts.fasta)
    length = dict(zip(db.ids, db.lengths.tolist(), strict=True))
    cache = json.loads(args.out.read_text()) if args.out.exists() else {}
    params = karlin_altschul("BLOSUM62", 11.0, 1.0)
    bg = np.asarray(BACKGROUND[:20], dtype=np.float64)
    bg /= bg.sum()
    counts = np.zeros((len(db), 20))
    for i in range(len(db)):
        c = db.codes_of(i)
        counts[i] = np.bincount(c[c < 20], minlength=20)
    t0 = time.time()
    for n, q in enumerate(ts.queries):
        if q in cache:
            continue
        qseq = db.sequence(db.index_of(q))
        msa = build_msa(qseq, db, 2, inclusion_evalue=1e-3, max_candidates=300)
        prof = Profile.from_msa(msa, pseudocounts="matrix", matrix="BLOSUM62")
        pssm = prof.pssm()[:, :20].astype(np.float64)
        hs = search(qseq, db, "pssm", evalue=1e9, max_hits=2000, traceback=False,
                    query_rep=ProteinRep(qseq, source=prof), params=params,
                    prefilter_options={"max_seqs": 1000})
        c = counts[[h.target_index for h in hs]]
        lam_t = ungapped_lambda(pssm, (c + 20 * bg) / (c.sum(1, keepdims=True) + 20))
        cache[q] = {"lambda_u": float(ungapped_lambda(pssm, bg)),
                    "hits": [(h.target_id, h.score, h.evalue, float(lt))
                             for h, lt in zip(hs, lam_t, strict=True)]}
        _save(args.out, cache)
        print(f"{n + 1}/{len(ts.queries)} {q} {time.time() - t0:.0f}s", file=sys.stderr,
              flush=True)

    queries = [q for q in ts.queries if q in cache]

    def ranking(q: str, mode: str, beta: float) -> list[str]:
        c = cache[q]
        keyed = []
        for t, s, e, lam_t in c["hits"]:
            r = {"none": 1.0, "full": lam_t / c["lambda_u"],
                 "cap": min(lam_t / c["lambda_u"], 1.0)}[mode]
            ln_ks = math.log(max(e, 1e-300)) + params.lam * s  # ln(K m' n'), per query
            keyed.append((ln_ks - params.lam * r * s + beta * math.log(length[t]), t))
        return [t for _, t in sorted(keyed) if t != q]

    print(f"{len(queries)} held-out train-fold queries")
    for mode in ("none", "full", "cap"):
        for beta in (0.0, 1.0):
            v = mean_sensitivity({q: query_sensitivity(q, ranking(q, mode, beta), ts.index)
                                  for q in queries})
            print(f"composition scaling {mode:4s}, + {beta:g} ln n: "
                  + " ".join(f"{lv}={x:.4f}" for lv, x in v.items()), flush=True)
    return 0


def _save(path: Path, cache: dict) -> None:
    atomic_write_bytes(path, json.dumps(cache).encode())  # a killed run leaves the old cache


if __name__ == "__main__":
    raise SystemExit(main())
