"""SCOP labels of ASTRAL domains and the held-out tuning folds: the data split that the homology
benchmark (:mod:`homalign.evaluate.homology`) and the training code (the homology adapter's pairs,
the null-law fit) share. A leaf: it reads FASTA headers and nothing else of homalign.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

from homalign.errors import InputError

#: fraction of SCOP folds held out (crc32 of the fold name) for tuning on train folds
HELDOUT_FOLD_FRACTION = 0.08


@dataclass(frozen=True)
class Scop:
    """A SCOP classification ``class.fold.superfamily.family`` split into its levels."""

    family: str
    superfamily: str
    fold: str

    @classmethod
    def parse(cls, sccs: str) -> Scop:
        parts = sccs.split(".")
        if len(parts) != 4 or not all(parts):
            raise ValueError(f"not a SCOP sccs class.fold.superfamily.family: {sccs!r}")
        return cls(sccs, ".".join(parts[:3]), ".".join(parts[:2]))


def labels_from_fasta(path: str | Path) -> dict[str, Scop]:
    """id → SCOP levels from ASTRAL headers ``>d1dlwa_ a.1.1.1 (A:) ...``."""
    from homalign.io import read_fasta

    out: dict[str, Scop] = {}
    for rec in read_fasta(path):
        words = rec.description.split()
        if not words:
            raise InputError("header lacks the SCOP sccs after the id", path=path,
                             record=rec.id)
        try:
            out[rec.id] = Scop.parse(words[0])
        except ValueError as exc:
            raise InputError(str(exc), path=path, record=rec.id) from None
    if not out:
        raise InputError("no records", path=path)
    return out


def is_heldout_fold(fold: str, fraction: float = HELDOUT_FOLD_FRACTION) -> bool:
    """Whether a SCOP fold is held out (crc32 of the fold name): from the homology adapter's
    training (``homalign.model.contrastive.load_scop_pairs``) and the null-law fit, and the folds
    of the train-fold tuning queries."""
    return zlib.crc32(fold.encode()) % 10_000 < int(fraction * 10_000)


__all__ = ["HELDOUT_FOLD_FRACTION", "Scop", "is_heldout_fold", "labels_from_fasta"]
