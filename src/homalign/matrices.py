"""Substitution matrices, loaded from Biopython (never retyped) and re-ordered to ``ALPHABET``."""

from __future__ import annotations

from functools import cache

import numpy as np

from homalign.alphabet import ALPHABET

MATRIX_NAMES = ("BLOSUM45", "BLOSUM62", "BLOSUM80", "PAM250")


@cache
def substitution_matrix(name: str = "BLOSUM62") -> np.ndarray:
    """float32 (23, 23) matrix in ALPHABET order (read-only)."""
    from Bio.Align import substitution_matrices

    key = name.upper()
    if key not in MATRIX_NAMES:
        raise ValueError(f"unknown substitution matrix {name!r}; choose one of {MATRIX_NAMES}")
    bio = substitution_matrices.load(key)
    index = [bio.alphabet.index(a) for a in ALPHABET]
    out = np.asarray(bio, dtype=np.float32)[np.ix_(index, index)].copy()
    out.setflags(write=False)
    return out


def score_matrix(query_codes: np.ndarray, target_codes: np.ndarray, name: str = "BLOSUM62") -> np.ndarray:
    """float32 (Lq, Lt) substitution scores of every residue pair, by vectorised lookup."""
    m = substitution_matrix(name)
    return np.ascontiguousarray(m[np.ix_(query_codes, target_codes)])
