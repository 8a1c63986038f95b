"""Which Smith-Waterman scoring picks the learned search's candidates: held-out TRAIN-fold queries.

    python benchmarks/research/candidate_sw_tune.py --db astral-2.07-40.trainval.fa \\
        --queries HELDOUT.txt --settings BLOSUM62:11:1,BLOSUM45:14:2 [--methods learned] --out OUT

For each ``MATRIX:OPEN:EXTEND`` setting, :data:`homalign.search.engine.CANDIDATE_SW` is set to it
and ``homalign benchmark homology`` runs the methods (one process, one thread) on the queries
(``HELDOUT.txt``: ``python benchmarks/evalue_calibration.py --heldout-queries HELDOUT.txt``,
never the dev queries); ``OUT/<setting>/`` gets each run's lists and per-query sensitivities,
and the last lines compare every setting with the first, query by query (mean difference and a
bootstrap 95% interval of family and superfamily sensitivity).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np


def _per_query(path: Path, method: str) -> dict[str, tuple[float, float]]:
    with open(path) as fh:
        return {r["query"]: (float(r["family"]), float(r["superfamily"]))
                for r in csv.DictReader(fh) if r["method"] == method}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True)
    p.add_argument("--queries", required=True)
    p.add_argument("--settings", default="BLOSUM62:11:1,BLOSUM45:14:2,BLOSUM45:15:2")
    p.add_argument("--methods", default="learned")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    from homalign.cli import main as homalign
    from homalign.search import engine

    runs = []
    for setting in args.settings.split(","):
        matrix, go, ge = setting.split(":")
        engine.CANDIDATE_SW = (matrix, float(go), float(ge))
        out = args.out / setting.replace(":", "_")
        rc = homalign(["benchmark", "homology", "--db", args.db, "--queries", args.queries,
                       "--methods", args.methods, "-j", "1", "--no-progress", "--out", str(out)])
        if rc != 0:
            return rc
        runs.append((setting, out))
    rng = np.random.default_rng(0)
    for method in args.methods.split(","):
        base = _per_query(runs[0][1] / "per_query.csv", method)
        for setting, out in runs[1:]:
            other = _per_query(out / "per_query.csv", method)
            qs = sorted(set(base) & set(other))
            for k, level in enumerate(("family", "superfamily")):
                d = np.array([other[q][k] - base[q][k] for q in qs])
                boot = [rng.choice(d, len(d)).mean() for _ in range(5000)]
                lo, hi = np.percentile(boot, [2.5, 97.5])
                print(f"{method} {setting} vs {runs[0][0]}: {level} {d.mean():+.4f} "
                      f"({lo:+.4f} .. {hi:+.4f}), {len(qs)} queries", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
