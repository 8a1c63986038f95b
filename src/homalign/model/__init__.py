"""The learned aligner: a small residue encoder, a pairwise scorer (substitution scores and
position-specific gap costs) trained as a CRF over alignment paths, and a homology head.

Public API::

    from homalign.model import AlignerModel, AlignerConfig, load_bundled, load_model, save_model
    model, meta = load_bundled()
    S, gaps = model.score_pair(query_codes, target_codes)   # float32 (Lq, Lt) nats, GapCosts

The bundled aligner is a ``homalign.model.aligner.EnsembleAligner``: the same inference
surface, the mean scores of its members.
"""

from typing import Any

from homalign.model.config import AlignerConfig
from homalign.model.weights import load_bundled, load_model, save_model

__all__ = ["AlignerConfig", "AlignerModel", "load_bundled", "load_model", "save_model"]


def __getattr__(name: str) -> Any:
    # the torch model on first use: inference (homalign.model.inference) runs without torch
    if name == "AlignerModel":
        from homalign.model.aligner import AlignerModel

        return AlignerModel
    raise AttributeError(f"module 'homalign.model' has no attribute {name!r}")
