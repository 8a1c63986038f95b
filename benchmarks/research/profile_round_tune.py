"""The learned search's light PSSM round (``--profile-round``): held-out TRAIN-fold queries.

    python benchmarks/research/profile_round_tune.py --db astral-2.07-40.trainval.fa \\
        --queries HELDOUT.txt --settings 300:20:1e-3:0.5,80:0:1e-3:0.5 --out OUT

Each ``PSSM_CANDIDATES:EXTRA_CANDIDATES:INCLUSION_EVALUE:WEIGHT`` setting is set on
:mod:`homalign.search.profile_round` and ``homalign benchmark homology --methods learned`` runs
(one process, one thread) on the queries (``HELDOUT.txt``: ``python
benchmarks/evalue_calibration.py --heldout-queries HELDOUT.txt``, never the dev queries), then
``learned`` without the round (``BY_DEFAULT = False``); ``OUT/<setting>/`` gets each run, and
the last lines compare every setting with the plain search query by query (mean difference and
a bootstrap 95% interval of family and superfamily sensitivity) and give each run's seconds.
The settings' tail calibration is the shipped one (it changes no ranking).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np


def _per_query(path: Path) -> dict[str, tuple[float, float]]:
    with open(path / "per_query.csv") as fh:
        return {r["query"]: (float(r["family"]), float(r["superfamily"]))
                for r in csv.DictReader(fh)}


def _seconds(path: Path) -> float:
    with open(path / "summary.csv") as fh:
        return float(next(csv.DictReader(fh))["seconds"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True)
    p.add_argument("--queries", required=True)
    p.add_argument("--settings", default="300:20:1e-3:0.5")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    from homalign.cli import main as homalign
    from homalign.search import profile_round

    def bench(method: str, out: Path) -> int:
        return homalign(["benchmark", "homology", "--db", args.db, "--queries", args.queries,
                         "--methods", method, "-j", "1", "--no-progress", "--out", str(out)])

    runs = []
    for setting in args.settings.split(","):
        pc, extra, inclusion, weight = setting.split(":")
        profile_round.PSSM_CANDIDATES, profile_round.EXTRA_CANDIDATES = int(pc), int(extra)
        profile_round.INCLUSION_EVALUE, profile_round.WEIGHT = float(inclusion), float(weight)
        out = args.out / setting.replace(":", "_")
        if bench("learned", out) != 0:
            return 1
        runs.append((setting, out))
    profile_round.BY_DEFAULT = False
    if bench("learned", args.out / "learned") != 0:
        return 1
    base = _per_query(args.out / "learned")
    rng = np.random.default_rng(0)
    print(f"learned: {_seconds(args.out / 'learned'):.1f} s", file=sys.stderr)
    for setting, out in runs:
        other = _per_query(out)
        qs = sorted(set(base) & set(other))
        for k, level in enumerate(("family", "superfamily")):
            d = np.array([other[q][k] - base[q][k] for q in qs])
            boot = [rng.choice(d, len(d)).mean() for _ in range(5000)]
            lo, hi = np.percentile(boot, [2.5, 97.5])
            print(f"{setting} vs learned: {level} {np.mean([other[q][k] for q in qs]):.4f} "
                  f"{d.mean():+.4f} ({lo:+.4f} .. {hi:+.4f}), {len(qs)} queries, "
                  f"{_seconds(out):.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
