"""Held-out F1 of the learned aligner with consistency through database homologues (never dev).

    python benchmarks/research/learned_consistency_heldout.py --homologs DB [--max-homologs 2,4]
        [--thresholds 0.15,0.2,0.3] [--evalues 1e-3,1e-2]
        [--prefilter k=4,threshold=20,max_seqs=50,two_hit=false,index=true]

``DB`` is a FASTA file or ``homalign makedb`` directory of unlabelled sequences, e.g. the 20,000
UniProt sequences of Debian's mmseqs2-examples
(``homalign makedb /usr/share/doc/mmseqs2/example-data/DB.fasta.gz``-style, unpacked first).
Each variant is ``homalign.align(x, y, method="learned", homologs=DB, max_homologs=K,
threshold=T)``; ``K = 0`` is the plain sequence-only aligner at its own threshold. The held-out
sets and the scoring are ``benchmarks/learned_heldout.py``'s ("all" pools both sets). The
defaults of the ``homologs`` option (:mod:`homalign.methods.learned`) were chosen with this script
(docs/learned.md, twelfth pass).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--homologs", required=True, help="sequence database (FASTA or makedb dir)")
    ap.add_argument("--max-homologs", default="0,2,4", help="comma-separated K per sequence")
    ap.add_argument("--thresholds", default="0.15,0.2,0.3", help="comma-separated MEA thresholds")
    ap.add_argument("--evalues", default="1e-3", help="comma-separated homologue E-value cuts")
    ap.add_argument("--prefilter", metavar="KEY=VALUE,...",
                    help="the homologue search's k-mer prefilter options (k, threshold, "
                         "max_seqs, two_hit, index; default: the shipped "
                         "homalign.search.homologs.HOMOLOG_PREFILTER)")
    args = ap.parse_args(argv)
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from learned_heldout import heldout_report, heldout_sets

    import homalign
    from homalign.alphabet import decode
    from homalign.search import open_database
    from homalign.sequence import Sequence

    torch.set_num_threads(1)
    if args.prefilter:
        from homalign.search import homologs

        types = {"k": int, "threshold": float, "max_seqs": int,
                 "two_hit": lambda v: v.lower() == "true", "index": lambda v: v.lower() == "true", "window": int, "xdrop": float}
        homologs.HOMOLOG_PREFILTER = {
            key: types[key](value)
            for key, value in (item.split("=") for item in args.prefilter.split(","))}
    db = open_database(args.homologs)
    ks = [int(k) for k in args.max_homologs.split(",")]
    thresholds = [float(t) for t in args.thresholds.split(",")]
    evalues = [float(e) for e in args.evalues.split(",")]
    used: list[int] = []

    def predict(p):
        x, y = Sequence("x", decode(p.q)), Sequence("y", decode(p.t))
        out = {}
        for k in ks:
            if k == 0:
                out["sequence-only"] = homalign.align(x, y, method="learned").pairs
                continue
            for ev in evalues:
                for thr in thresholds:
                    a = homalign.align(x, y, method="learned", homologs=db, max_homologs=k,
                                       threshold=thr, homolog_evalue=ev)
                    label = f"K={k} threshold={thr:g}"
                    out[label if len(evalues) == 1 else f"{label} E<{ev:g}"] = a.pairs
            if k == max(ks):
                used.append(len(a.extra["homologs"]))
        return out

    for label, line in heldout_report(heldout_sets(), predict).items():
        print(f"{label}: {line}", flush=True)
    if used:
        n = len(used)
        print(f"intermediates per pair (K = {max(ks)}): mean {sum(used) / n:.2f}, none for "
              f"{sum(u == 0 for u in used)} of {n} pairs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
