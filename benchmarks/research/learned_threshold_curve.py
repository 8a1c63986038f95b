"""F1 (all pairs / twilight) of learned-aligner weights at several MEA thresholds, whole pairs.

    python benchmarks/research/learned_threshold_curve.py STEM [STEM ...] [--data DIR]
        [--thresholds 0.2,0.3,0.4,0.5,0.6] [--mode semiglobal]

``--data``: a directory of HOMSTRAD-style families (default: the HOMSTRAD dev families). An
*analysis* of calibration (does a model only need another threshold, or does it align worse at
every threshold?), not a selection tool: the bundled threshold is chosen on held-out train pairs
(``python -m homalign.model.evaluation STEM``, formerly ``train_loop --tune``). docs/learned.md
quoted it for the ninth pass's softmax-margin runs on dev.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    from homalign.paths import shared_data_root

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stems", nargs="+", help="weights stems (STEM.safetensors + STEM.json)")
    ap.add_argument("--data", type=Path, default=shared_data_root() / "homstrad" / "dev")
    ap.add_argument("--thresholds", default="0.2,0.3,0.4,0.5,0.6")
    ap.add_argument("--mode", default="semiglobal")
    args = ap.parse_args(argv)
    import torch

    from homalign.evaluate.metrics import score_pair
    from homalign.model.decode import mea_align, posterior_matrix
    from homalign.model.evaluation import from_directory
    from homalign.model.weights import load_model

    torch.set_num_threads(1)
    ths = [float(x) for x in args.thresholds.split(",")]
    pairs = from_directory(args.data)
    tw = np.array([p.identity < 0.3 for p in pairs])
    print(f"{len(pairs)} pairs ({int(tw.sum())} twilight) from {args.data}; F1 / twilight F1")
    for stem in args.stems:
        model, _ = load_model(stem)
        f1 = np.zeros((len(ths), len(pairs)))
        for k, p in enumerate(pairs):
            S, gaps = model.score_pair(p.q, p.t)
            P = posterior_matrix(S, gaps, args.mode)
            for a, th in enumerate(ths):
                f1[a, k] = score_pair(mea_align(P, th).pairs, p.pairs, len(p.q), len(p.t)).F1
        cells = " ".join(f"@{th}: {f1[a].mean():.4f} / {f1[a, tw].mean():.4f}"
                         for a, th in enumerate(ths))
        print(f"{stem} {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
