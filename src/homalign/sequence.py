"""A protein sequence: an id, its residues and their integer codes (computed once)."""

from __future__ import annotations

from collections.abc import Iterator
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
        if not isinstance(self.id, str) or not isinstance(self.residues, str):
            bad = self.id if not isinstance(self.id, str) else self.residues
            raise TypeError(f"a Sequence's id and residues are str, got "
                            f"{type(bad).__name__} {bad!r:.40}")
        object.__setattr__(self, "residues", self.residues.rstrip("*").upper())
        # validate once, eagerly, so bad input fails where it was read
        _ = self.codes

    @cached_property
    def codes(self) -> np.ndarray:
        return encode(self.residues, path=self.source, record=self.id)

    def __len__(self) -> int:
        return len(self.residues)


def as_sequence(value: Sequence | str, default_id: str = "seq") -> Sequence:
    """Accept a Sequence or a plain residue string (TypeError for anything else, e.g. a path:
    read a FASTA file with :func:`read_sequences`)."""
    if isinstance(value, Sequence):
        return value
    if not isinstance(value, str):
        hint = " (read a FASTA file with homalign.read_sequences)" if isinstance(
            value, Path) else ""
        raise TypeError(f"{default_id} must be a Sequence or a residue string, got "
                        f"{type(value).__name__}{hint}")
    return Sequence(default_id, value)


def iter_sequences(path: str | Path) -> Iterator[Sequence]:
    """Stream the records of a FASTA file as validated sequences (gap characters removed), one
    at a time; a bad record raises :class:`homalign.errors.InputError` when it is reached."""
    from homalign.io import read_fasta

    source = str(path)
    for r in read_fasta(path):
        yield Sequence(r.id, r.sequence.replace("-", "").replace(".", ""), r.description,
                       source=source)


def read_sequences(path: str | Path) -> list[Sequence]:
    """Read every record of a FASTA file as validated sequences."""
    return list(iter_sequences(path))
