"""Agreement of homalign's SW and NW scores with an independent implementation (Biopython).

For every reference pair of a family directory (default: the bundled HOMSTRAD dev split), align
query to target with homalign's ``sw`` (local) and ``nw`` (global) methods — BLOSUM62, gap open 11,
extend 1, BLAST's convention (a gap of length k costs 11 + k) — and score the same pair with
``Bio.Align.PairwiseAligner`` (BLOSUM62, ``open_gap_score = -(11 + 1)``, ``extend_gap_score = -1``,
end gaps charged like internal gaps in global mode). Reports the fraction of pairs whose optimal
scores are equal (|difference| < 1e-3; scores are integers) and the largest difference.

Usage::

    python benchmarks/agreement.py [--data DIR] [--max-pairs N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

TOLERANCE = 1e-3


def biopython_aligner(mode: str):
    from Bio.Align import PairwiseAligner, substitution_matrices

    aligner = PairwiseAligner()
    aligner.mode = mode
    aligner.substitution_matrix = substitution_matrices.load("BLOSUM62")
    aligner.open_gap_score = -(11 + 1)
    aligner.extend_gap_score = -1
    return aligner


def agreement(pairs, method: str, bio_mode: str) -> dict:
    """Scores of ``method`` vs Biopython on every pair: equal fraction, max |diff|, timings."""
    from homalign.methods import get_method

    m = get_method(method)
    aligner = biopython_aligner(bio_mode)
    equal, worst, t_ours, t_bio = 0, 0.0, 0.0, 0.0
    disagreements = []
    for ref in pairs:
        t0 = time.perf_counter()
        ours = m.align(ref.query, ref.target).score
        t1 = time.perf_counter()
        theirs = aligner.score(ref.query.residues, ref.target.residues)
        t2 = time.perf_counter()
        t_ours += t1 - t0
        t_bio += t2 - t1
        diff = abs(float(ours) - float(theirs))
        worst = max(worst, diff)
        if diff < TOLERANCE:
            equal += 1
        else:
            disagreements.append((ref.family, ref.query.id, ref.target.id, ours, theirs))
    return {"method": method, "pairs": len(pairs), "equal": equal,
            "fraction_equal": equal / len(pairs) if pairs else float("nan"),
            "max_abs_diff": worst, "seconds_homalign": t_ours, "seconds_biopython": t_bio,
            "disagreements": disagreements}


def main(argv: list[str] | None = None) -> int:
    from homalign.evaluate import bundled_homstrad_dev, load_reference_pairs
    from homalign.evaluate.alignment_benchmark import select_pairs

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="family directory (default: bundled dev split)")
    ap.add_argument("--max-pairs", type=int, default=None)
    args = ap.parse_args(argv)
    data = args.data or bundled_homstrad_dev()
    pairs = select_pairs(load_reference_pairs(data), args.max_pairs)
    # warm-up outside the timings (numba compilation / cache loading)
    from homalign.methods import get_method

    for name in ("sw", "nw"):
        get_method(name).align(pairs[0].query, pairs[0].target)
    print(f"data: {data} ({len(pairs)} pairs)")
    print("| method | Biopython mode | pairs | equal scores | fraction | max abs diff |"
          " homalign s | Biopython s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    ok = True
    for method, mode in (("sw", "local"), ("nw", "global")):
        r = agreement(pairs, method, mode)
        ok &= r["equal"] == r["pairs"]
        print(f"| {method} | {mode} | {r['pairs']} | {r['equal']} | {r['fraction_equal']:.4f} | "
              f"{r['max_abs_diff']:.3g} | {r['seconds_homalign']:.1f} | "
              f"{r['seconds_biopython']:.1f} |")
        for fam, q, t, ours, theirs in r["disagreements"][:10]:
            print(f"  differs: {fam} {q} vs {t}: homalign {ours} Biopython {theirs}",
                  file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
