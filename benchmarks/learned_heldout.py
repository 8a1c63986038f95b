"""F1 and twilight F1 of learned-aligner weights on held-out TRAIN pairs (never dev).

    python benchmarks/learned_heldout.py src/homalign/weights/learned runs/NAME/best ...
    python benchmarks/learned_heldout.py runs/NAME/best --against src/homalign/weights/learned

Two held-out sets, reported separately and pooled ("all", 477 pairs) for each weights stem: the HOMSTRAD train families that
``homalign.model.data.split_by_group`` holds out (at most 40 pairs per family: 387 pairs, 161
below 30% identity), and the held-out TM-align train pairs (90; a seeded sample if over 200). Whole pairs (no cropping), semiglobal
posteriors, MEA threshold 0.3 — what the ``learned`` method does. The "held-out HOMSTRAD" and
"held-out TM-align" numbers of docs/learned.md come from this script (the bundled ``learned``:
HOMSTRAD F1 0.8649 / twilight 0.7456, TM-align 0.5788 / 0.5469).
``heldout_report`` is the scoring the ensemble and decoding benchmarks share.

``--against REF`` also scores the weights ``REF`` and prints, for each stem, its mean per-pair F1
difference from ``REF`` on the same pairs with a 95% paired-bootstrap interval (5,000 resamples
of the pairs, per set and pooled): whether a gap is larger than the choice of pairs explains.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

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


def heldout_report(sets: list[tuple[str, list]],
                   predict: Callable[[object], dict[str, np.ndarray]]) -> dict[str, str]:
    """F1 / twilight F1 (reference identity < 30%) of each label's predicted pairs, per set and
    pooled ("all"), as one line per label. ``predict(pair)`` returns ``{label: pairs}`` for every
    label, so variants that share work on a pair compute it once."""
    f1, where, tw = heldout_f1(sets, predict)
    return {label: _line(a, where, tw, [n for n, _ in sets]) for label, a in f1.items()}


def _line(a: np.ndarray, where: np.ndarray, tw: np.ndarray, names: list[str]) -> str:
    """"name F1 / twilight F1" per set, then pooled ("all")."""
    cols = [f"{n} {a[where == n].mean():.4f} / {a[(where == n) & tw].mean():.4f}" for n in names]
    return " | ".join([*cols, f"all {a.mean():.4f} / {a[tw].mean():.4f}"])


def heldout_f1(sets: list[tuple[str, list]], predict: Callable[[object], dict[str, np.ndarray]]
               ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Per-pair F1 of each label (``{label: array}``, pairs in ``sets`` order), each pair's set
    name and whether it is a twilight pair (reference identity < 30%)."""
    from homalign.evaluate.metrics import score_pair

    f1: dict[str, list[float]] = {}
    names, twilight = [], []
    for name, pairs in sets:
        for p in pairs:
            for label, pred in predict(p).items():
                f1.setdefault(label, []).append(score_pair(pred, p.pairs, len(p.q), len(p.t)).F1)
            names.append(name)
            twilight.append(p.identity < 0.3)
    return {k: np.array(v) for k, v in f1.items()}, np.array(names), np.array(twilight)


def paired_interval(diff: np.ndarray, resamples: int = 5000, seed: int = 0
                    ) -> tuple[float, float, float]:
    """Mean of per-pair differences and its 95% bootstrap interval (pairs resampled with
    replacement).

    >>> mean, lo, hi = paired_interval(np.array([0.1, 0.1, 0.1]))
    >>> round(mean, 3), round(lo, 3), round(hi, 3)
    (0.1, 0.1, 0.1)
    """
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(diff), (resamples, len(diff)))
    boots = diff[idx].mean(axis=1)
    return float(diff.mean()), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stems", nargs="+", help="weights stems (STEM.safetensors + STEM.json)")
    ap.add_argument("--threshold", type=float, default=0.3)
    ap.add_argument("--mode", default="semiglobal")
    ap.add_argument("--against", metavar="REF", help="weights stem to compare each stem with, "
                    "pair by pair (paired bootstrap)")
    args = ap.parse_args(argv)
    import torch

    from homalign.model.decode import mea_align, posterior_matrix
    from homalign.model.weights import load_model

    torch.set_num_threads(1)
    sets = heldout_sets()
    per_pair: dict[str, np.ndarray] = {}
    where = np.array([])
    for stem in ([args.against] if args.against else []) + args.stems:
        model = load_model(stem)[0].eval()

        def predict(p, model=model, stem=stem):
            P = posterior_matrix(*model.score_pair(p.q, p.t), args.mode)
            return {stem: mea_align(P, args.threshold).pairs}

        f1, where, tw = heldout_f1(sets, predict)
        per_pair[stem] = f1[stem]
        print(stem, _line(f1[stem], where, tw, [n for n, _ in sets]), flush=True)
    if args.against:
        for stem in args.stems:
            diff = per_pair[stem] - per_pair[args.against]
            cols = []
            for n in [name for name, _ in sets] + ["all"]:
                d = diff if n == "all" else diff[where == n]
                mean, lo, hi = paired_interval(d)
                cols.append(f"{n} {mean:+.4f} (95% {lo:+.4f} .. {hi:+.4f})")
            print(f"{stem} - {args.against}:", " | ".join(cols), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
