"""Held-out F1 of ensembles of learned aligners, by mean scores or by mean posteriors (never dev).

    python benchmarks/research/learned_ensemble_heldout.py A+B A+B+C ... [--average scores|posteriors]

Each argument is a ``+``-joined list of weights stems. ``--average scores`` (default) is what
``homalign.model.aligner.EnsembleAligner`` ships: the members' mean S and gap costs, one DP;
``posteriors`` averages the members' posterior matrices instead (one DP per member). The held-out
sets, whole pairs, semiglobal posteriors and MEA threshold 0.3 are those of
``benchmarks/learned_heldout.py``; "all" pools the 477 pairs of both sets. docs/learned.md's
ensemble table comes from this script (2026-12-01, tenth pass; its exploration rows with
``--average posteriors``, the bundled ``ens1`` with ``scores``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ensembles", nargs="+", help="STEM+STEM[+...] (a single STEM is one model)")
    ap.add_argument("--average", choices=("scores", "posteriors"), default="scores")
    ap.add_argument("--threshold", type=float, default=0.3)
    args = ap.parse_args(argv)
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from learned_heldout import heldout_report, heldout_sets

    from homalign.model.aligner import EnsembleAligner
    from homalign.model.decode import mea_align, posterior_matrix
    from homalign.model.weights import load_model

    torch.set_num_threads(1)
    sets = heldout_sets()
    cache: dict[str, object] = {}
    for spec in args.ensembles:
        members = [cache.setdefault(s, load_model(s)[0].eval()) for s in spec.split("+")]
        if len(members) > 1 and args.average == "scores":
            members = [EnsembleAligner(members)]

        def predict(p, members=members, spec=spec):
            P = np.mean([posterior_matrix(*m.score_pair(p.q, p.t), "semiglobal")
                         for m in members], axis=0)
            return {spec: mea_align(P, args.threshold).pairs}

        print(f"{spec} ({args.average}): {heldout_report(sets, predict)[spec]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
