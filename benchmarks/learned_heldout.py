"""F1 and twilight F1 of learned-aligner weights on held-out TRAIN pairs (never dev).

    python benchmarks/learned_heldout.py src/homalign/weights/learned runs/NAME/best ...

Two held-out sets, reported separately for each weights stem: the HOMSTRAD train families that
``homalign.model.data.split_by_group`` holds out (at most 40 pairs per family: 387 pairs, 161
below 30% identity), and the held-out TM-align train pairs (90; a seeded sample if over 200). Whole pairs (no cropping), semiglobal
posteriors, MEA threshold 0.3 — what the ``learned`` method does. The "held-out HOMSTRAD" and
"held-out TM-align" numbers of docs/learned.md's experiment table come from this script (bundled
weights, 2026-12-01: HOMSTRAD F1 0.8568 / twilight 0.7273, TM-align 0.5448 / 0.5103).
"""

from __future__ import annotations

import argparse

import numpy as np


def heldout_sets() -> list[tuple[str, list]]:
    """The two held-out sets, [("homstrad", pairs), ("tmalign", pairs)], as this script uses them."""
    from homalign.model.data import load_homstrad, load_tmalign, split_by_group
    from homalign.paths import shared_data_root

    root = shared_data_root()
    _, homstrad = split_by_group(load_homstrad(root / "homstrad" / "train", 40))
    _, tm = split_by_group(load_tmalign(root / "scope" / "tmalign-pairs.train.tsv"))
    pick = np.random.default_rng(1).choice(len(tm), min(200, len(tm)), replace=False)
    return [("homstrad", homstrad), ("tmalign", [tm[k] for k in sorted(pick)])]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stems", nargs="+", help="weights stems (STEM.safetensors + STEM.json)")
    ap.add_argument("--threshold", type=float, default=0.3)
    ap.add_argument("--mode", default="semiglobal")
    args = ap.parse_args(argv)
    import torch

    from homalign.model.decode import mea_align, posterior_matrix
    from homalign.model.train_loop import pair_f1
    from homalign.model.weights import load_model

    torch.set_num_threads(1)
    sets = heldout_sets()
    for stem in args.stems:
        model, _meta = load_model(stem)
        model.eval()
        out = []
        for name, pairs in sets:
            twilight = np.array([p.identity < 0.3 for p in pairs])
            f1 = np.array([pair_f1(mea_align(posterior_matrix(*model.score_pair(p.q, p.t),
                                                              args.mode), args.threshold).pairs,
                                   p.pairs) for p in pairs])
            out.append(f"{name} n={len(pairs)} f1 {f1.mean():.4f} "
                       f"twilight(n={twilight.sum()}) {f1[twilight].mean():.4f}")
        print(stem, " | ".join(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
