"""An ensemble of learned aligners: the mean of their substitution scores and gap costs.

``EnsembleAligner([m1, ..., mK])`` scores a pair with every member and averages S[i, j] and each
position-specific gap-cost vector, then the exact DP runs once on the mean. Averaging scores
(log-potentials) is a product of experts: the ensemble's path distribution is the normalised
geometric mean of the members' (Hinton 2002). On held-out pairs it does as well as averaging the
members' posterior matrices (docs/learned.md) at the cost of one DP instead of K. It helps when
members come from different training trajectories (different initialisations or objectives);
checkpoints of one trajectory are better averaged in weight space (:mod:`homalign.model.average`).

The class, :class:`homalign.model.aligner.EnsembleAligner`, lives beside the single aligner (so
that :mod:`homalign.model.weights` can build either without importing this module); this module
joins saved models into one. The ensemble has the aligner's inference surface (``embed``, ``score_embedded``, ``score_pair``,
``cfg``): its embedding of a sequence is the members' embeddings concatenated along the last
axis, so a prepared protein (``search``) is embedded once for all members. It is an inference
object: train members one by one (``homalign train``), then join them with

    python -m homalign.model.ensemble OUT STEM [STEM ...]

which writes one safetensors file (member ``k``'s tensors under ``members.k.``) and a JSON whose
``ensemble`` entry lists the member count and where each member came from.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from homalign.model.aligner import EnsembleAligner


def join_models(stems: list[str | Path]) -> tuple[EnsembleAligner, dict]:
    """The ensemble of the models saved at ``stems`` and the metadata to save it with."""
    from homalign.model.weights import load_model

    loaded = [load_model(s) for s in stems]
    for stem, (_, meta) in zip(stems, loaded, strict=True):
        if meta.get("ensemble"):
            raise ValueError(f"{stem} is already an ensemble; list its members instead")
    ens = EnsembleAligner([m for m, _ in loaded])
    members = [{"stem": str(s), "config": meta["config"],
                **({"averaged": meta["averaged"]} if "averaged" in meta else {})}
               for s, (_, meta) in zip(stems, loaded, strict=True)]
    return ens, {"ensemble": {"members": members}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Join saved aligners into one ensemble model.")
    ap.add_argument("out", type=Path, help="output stem")
    ap.add_argument("stems", nargs="+", help="member models (two or more)")
    args = ap.parse_args(argv)
    from homalign.model.weights import save_model

    ens, meta = join_models(args.stems)
    save_model(ens, args.out, meta)
    print(f"joined {len(args.stems)} models ({ens.n_parameters()} parameters) into "
          f"{args.out}.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["join_models", "main"]
