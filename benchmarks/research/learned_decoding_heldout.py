"""Held-out F1 of decoding variants of one learned aligner (never dev).

    python benchmarks/research/learned_decoding_heldout.py STEM VARIANT [VARIANT ...]

A VARIANT is ``MODES@THRESHOLD[,gap=G][,shift=C]``: the posteriors of each ``+``-joined path
model in MODES (``semiglobal``, ``global``, ``local``, ``glocal``) are averaged and MEA-decoded
at THRESHOLD, after every gap cost is multiplied by G (default 1) and C nats are added to every
substitution score (default 0). ``semiglobal@0.3`` is what the ``learned`` method does. The
held-out sets (whole pairs) are ``benchmarks/learned_heldout.py``'s; "all" pools their 477
pairs. docs/learned.md's "eleventh pass" table comes from this script, e.g.

    python benchmarks/research/learned_decoding_heldout.py src/homalign/weights/learned \\
        semiglobal@0.3 semiglobal+local@0.3 semiglobal@0.3,gap=0.92 semiglobal@0.3,shift=-0.1
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

MODES = ("semiglobal", "global", "local", "glocal")


@dataclass(frozen=True)
class Variant:
    modes: tuple[str, ...]
    threshold: float
    gap: float = 1.0
    shift: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Variant:
        head, *opts = text.split(",")
        modes, sep, thr = head.partition("@")
        if not sep:
            raise ValueError(f"variant {text!r}: expected MODES@THRESHOLD")
        bad = [m for m in modes.split("+") if m not in MODES]
        if bad:
            raise ValueError(f"variant {text!r}: unknown mode(s) {bad}; choose from {MODES}")
        kw: dict[str, float] = {}
        for opt in opts:
            key, _, value = opt.partition("=")
            if key not in ("gap", "shift"):
                raise ValueError(f"variant {text!r}: unknown option {key!r} (gap=, shift=)")
            kw[key] = float(value)
        return cls(tuple(modes.split("+")), float(thr), **kw)

    @property
    def label(self) -> str:
        return f"{'+'.join(self.modes)}@{self.threshold:g} gap x{self.gap:g} shift {self.shift:+g}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stem", help="weights stem (a single model or an ensemble)")
    ap.add_argument("variants", nargs="+", type=Variant.parse)
    args = ap.parse_args(argv)
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from learned_heldout import heldout_report, heldout_sets

    from homalign.dp import GapCosts
    from homalign.model.decode import mea_align, posterior_matrix
    from homalign.model.weights import load_model

    torch.set_num_threads(1)
    model = load_model(args.stem)[0].eval()

    def predict(p) -> dict[str, np.ndarray]:
        S, gaps = model.score_pair(p.q, p.t)
        cache: dict[tuple, np.ndarray] = {}   # posteriors shared by variants on this pair
        out = {}
        for v in args.variants:
            G = GapCosts(**{f.name: getattr(gaps, f.name) * v.gap for f in fields(GapCosts)})
            Ps = [cache.setdefault((m, v.gap, v.shift), posterior_matrix(S + v.shift, G, m))
                  for m in v.modes]
            out[v.label] = mea_align(np.mean(Ps, axis=0), v.threshold).pairs
        return out

    for label, line in heldout_report(heldout_sets(), predict).items():
        print(f"{label}: {line}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
