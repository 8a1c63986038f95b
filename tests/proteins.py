"""Synthetic proteins for tests: residues from the BLOSUM62 background, and mutated copies."""

from __future__ import annotations

import numpy as np

from homalign.alphabet import ALPHABET, BACKGROUND

AA = ALPHABET[:20]


def random_protein(rng: np.random.Generator, n: int) -> str:
    """Residues drawn from the BLOSUM62 background (the composition of real proteins)."""
    p = np.asarray(BACKGROUND[:20], dtype=np.float64)
    return "".join(AA[k] for k in rng.choice(20, n, p=p / p.sum()))


def mutate(rng: np.random.Generator, s: str, rate: float) -> str:
    """``s`` with each residue, with probability ``rate``, redrawn from the background."""
    sub = random_protein(rng, len(s))
    return "".join(sub[k] if rng.random() < rate else c for k, c in enumerate(s))
