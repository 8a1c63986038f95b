"""Average the weights of saved models (stochastic weight averaging over checkpoints).

    python -m homalign.model.average OUT STEM [STEM ...]

Every ``STEM`` (``.safetensors`` + ``.json`` written by :func:`homalign.model.save_model`, e.g.
exports of ``homalign train`` runs) must have the same
architecture (config); ``OUT`` gets the element-wise mean of their parameters (computed in float64)
and the first model's config, with the averaged stems recorded in its JSON. Averaging the
checkpoints of one run's last part is cheaper and less noisy than choosing one of them on a small
held-out set (Izmailov et al., UAI 2018). Within one ``homalign train`` run, a config's
``[average]`` table does this at the listed steps (``<logdir>/export/average``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from homalign.model.aligner import AlignerModel
from homalign.model.weights import load_model, save_model


def average_models(stems: list[str | Path]) -> AlignerModel:
    """The model whose parameters are the mean of those of ``stems`` (same config, else
    ValueError naming the first stem that differs)."""
    if not stems:
        raise ValueError("average_models needs at least one model")
    models = [load_model(s) for s in stems]
    first, first_meta = models[0]
    for stem, (_, meta) in zip(stems[1:], models[1:], strict=True):
        if meta["config"] != first_meta["config"]:
            raise ValueError(f"{stem}: config differs from {stems[0]}'s; cannot average")
    own = first.state_dict()
    mean = {k: sum(m.state_dict()[k].double() for m, _ in models) / len(models) for k in own}
    first.load_state_dict({k: v.to(own[k].dtype) for k, v in mean.items()})
    return first


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="output stem")
    ap.add_argument("stems", nargs="+", help="models to average")
    args = ap.parse_args(argv)
    model = average_models(args.stems)
    save_model(model, args.out, {"averaged": [str(s) for s in args.stems]})
    print(f"averaged {len(args.stems)} models into {args.out}.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["average_models", "main"]
