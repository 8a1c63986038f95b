"""A protein sequence: an id, its residues and their integer codes (computed once)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from homalign.alphabet import encode


@dataclass(frozen=True)
class Sequence:
    """A validated protein sequence. ``residues`` is upper case, without gaps or ``*``."""

    id: str
    residues: str
    description: str = ""
    source: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "residues", self.residues.rstrip("*").upper())
        # validate once, eagerly, so bad input fails where it was read
        _ = self.codes

    @cached_property
    def codes(self) -> np.ndarray:
        return encode(self.residues, path=self.source, record=self.id)

    def __len__(self) -> int:
        return len(self.residues)


def as_sequence(value: Sequence | str, default_id: str = "seq") -> Sequence:
    """Accept a Sequence or a plain residue string."""
    if isinstance(value, Sequence):
        return value
    return Sequence(default_id, value)


def read_sequences(path: str | Path) -> list[Sequence]:
    """Read every record of a FASTA file as validated sequences."""
    from homalign.io import read_fasta

    return [
        Sequence(r.id, r.sequence.replace("-", "").replace(".", ""), r.description, source=str(path))
        for r in read_fasta(path)
    ]
