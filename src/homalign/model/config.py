"""The learned aligner's hyper-parameters (one JSON-serialisable dataclass, bundled with weights)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

NATS_PER_HALF_BIT = math.log(2.0) / 2.0
"""BLOSUM62 is in half-bit units: multiply by this to get nats (the CRF's temperature-1 units)."""


@dataclass
class AlignerConfig:
    """Architecture and decoding settings of :class:`homalign.model.AlignerModel`.

    The scorer starts exactly at BLOSUM62 with BLAST's 11/1 affine gaps, scaled to nats; every
    learned correction is initialised at zero (a strong prior: the untrained model *is* the
    classical CRF). ``mode`` is the path model of the training likelihood; ``decode_mode`` the one
    whose posteriors are decoded at inference (semiglobal: free end gaps, chosen on held-out train
    pairs, see docs/learned.md). ``pair_channels > 0`` adds a 2-D convolutional refinement of S
    (:class:`homalign.model.scorer.PairRefiner`; zero at initialisation). ``template`` lets the
    encoder read the target's known secondary structure and accessibility (template mode, as
    HHpred reads DSSP; :class:`homalign.model.encoder.ResidueEncoder`).
    """

    dim: int = 32
    kernel: int = 5
    dilations: tuple[int, ...] = (1, 2, 4)
    dropout: float = 0.2
    matrix: str = "BLOSUM62"
    gap_open: float = 11.0
    gap_extend: float = 1.0
    mode: str = "global"
    decode_mode: str = "semiglobal"
    mea_threshold: float = 0.3
    aux_ss: bool = True
    pair_channels: int = 0
    pair_rank: int = 2
    pair_kernel: int = 3
    pair_layers: int = 2
    template: bool = False

    def __post_init__(self) -> None:
        if self.kernel < 1 or self.kernel % 2 == 0:
            # an even width pads the two sides unequally: the output would change length
            raise ValueError(f"kernel must be an odd width >= 1, got {self.kernel}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["dilations"] = list(self.dilations)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> AlignerConfig:
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown aligner config keys: {sorted(unknown)}")
        d = dict(d)
        if "dilations" in d:
            d["dilations"] = tuple(int(x) for x in d["dilations"])
        return cls(**d)
