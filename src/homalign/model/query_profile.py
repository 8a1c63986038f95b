"""Query profiles for the learned scores: the learned counterpart of PSI-BLAST's PSSM.

The learned substitution score is linear in the query side's residue and embedding::

    S[i, j] = s * M[a_i, b_j] + e_i^T W e'_j          (and the ranking adapter's e_i^T W_h e'_j)

so replacing the query's one-hot residue ``a_i`` by a distribution ``p_i`` over residues and its
embedding ``e_i`` by a weighted mean ``e_i`` of the embeddings aligned to column ``i`` scores a
target with the *average* of what each member of the query's family would score there. That is
PSI-BLAST's idea (a column's score is an average over the aligned sequences) in the model's own
feature space. :func:`build_profile` mixes the query with the aligned residues of its included
hits (from an earlier search round, aligned by the model's MEA decoding): in each column the query
keeps ``query_weight`` and the hits covering that column share the rest, each weighted by its
posterior-free coverage (uniform); columns no hit covers stay the query's own. The gap costs the
scorer derives from the embeddings follow the profile too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from homalign.alphabet import N_CODES
from homalign.model.inference import embedding_rows

PROFILE_COLUMNS = N_CODES + 1  # the scorer's matrix rows: every residue code plus padding


@dataclass(frozen=True)
class ProfileMember:
    """One aligned hit: its residue codes, embeddings (1, Lt, dim) (numpy or torch) and (query,
    hit) pairs."""

    codes: np.ndarray
    embedding: Any
    pairs: np.ndarray


@dataclass(frozen=True)
class LearnedProfile:
    """A query's profile: residue weights (L, K) float32, embeddings (1, L, dim) float32, member
    count."""

    residues: np.ndarray
    embedding: np.ndarray
    n_members: int



def build_profile(codes: np.ndarray, embedding: Any, members: Iterable[ProfileMember],
                  query_weight: float = 0.5) -> LearnedProfile:
    """Profile of a query (codes, embeddings (1, L, dim)) and its aligned ``members``."""
    if not 0.0 < query_weight <= 1.0:
        raise ValueError(f"query_weight must be in (0, 1], got {query_weight}")
    codes = np.asarray(codes, dtype=np.int64)
    L = len(codes)
    e_q = embedding_rows(embedding).astype(np.float64)
    sum_e = np.zeros_like(e_q)
    sum_r = np.zeros((L, PROFILE_COLUMNS))
    count = np.zeros(L)
    n = 0
    for m in members:
        p = np.asarray(m.pairs, dtype=np.int64).reshape(-1, 2)
        if len(p) == 0:
            continue
        i, j = p[:, 0], p[:, 1]
        if i.min() < 0 or i.max() >= L or j.min() < 0 or j.max() >= len(m.codes):
            raise ValueError("a profile member's pairs fall outside the query or the member")
        e_m = embedding_rows(m.embedding).astype(np.float64)
        np.add.at(sum_e, i, e_m[j])
        np.add.at(sum_r, (i, np.asarray(m.codes, dtype=np.int64)[j]), 1.0)
        np.add.at(count, i, 1.0)
        n += 1
    own = np.zeros((L, PROFILE_COLUMNS))
    own[np.arange(L), codes] = 1.0
    w = np.where(count > 0, 1.0 - query_weight, 0.0)[:, None]
    c = np.maximum(count, 1.0)[:, None]
    e = (1.0 - w) * e_q + w * sum_e / c
    r = (1.0 - w) * own + w * sum_r / c
    return LearnedProfile(np.ascontiguousarray(r, dtype=np.float32),
                          np.ascontiguousarray(e, dtype=np.float32)[None], n)


__all__ = ["LearnedProfile", "PROFILE_COLUMNS", "ProfileMember", "build_profile"]
