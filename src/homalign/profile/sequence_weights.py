"""Sequence weights and the effective number of sequences of an MSA.

* :func:`henikoff_weights` — position-based weights (Henikoff & Henikoff, JMB 243:574, 1994): in a
  column with ``r`` distinct amino acids, a sequence whose residue occurs ``n`` times there gets
  ``1 / (r n)``; a sequence's weight is the sum over columns, normalised so weights sum to one.
  Gaps and the ambiguity codes B, Z, X neither receive nor cast weight (as in HMMER's PB weights).
* :func:`column_neff` — per-column diversity ``exp(-sum_a f(a) ln f(a))`` of weighted frequencies
  (1 for a conserved column, at most 20), HH-suite's definition of Neff; :func:`msa_neff` is its
  mean over the columns that hold any residue.

MSAs are passed as integer code matrices ``(n_seqs, n_cols)``: 0..22 index
``homalign.alphabet.ALPHABET`` and :data:`GAP_CODE` (23) marks a gap.
"""

from __future__ import annotations

import numpy as np

from homalign.alphabet import N_AA, N_CODES

GAP_CODE = N_CODES  # 23: a gap in an MSA code matrix


def henikoff_weights(codes: np.ndarray) -> np.ndarray:
    """float64 (n_seqs,) position-based weights summing to one."""
    codes = np.asarray(codes)
    n, L = codes.shape
    if n == 0:
        raise ValueError("cannot weight an empty MSA")
    canon = codes < N_AA
    cols = np.broadcast_to(np.arange(L), codes.shape)
    flat = (cols * N_AA + np.where(canon, codes, 0))[canon]
    counts = np.bincount(flat, minlength=L * N_AA).reshape(L, N_AA).astype(np.float64)
    distinct = (counts > 0).sum(axis=1).astype(np.float64)
    per_cell = np.zeros(codes.shape, dtype=np.float64)
    c = counts[cols[canon], codes[canon]]
    per_cell[canon] = 1.0 / (distinct[cols[canon]] * c)
    w = per_cell.sum(axis=1)
    total = w.sum()
    if total <= 0:
        return np.full(n, 1.0 / n)
    return w / total


def column_neff(freqs: np.ndarray) -> np.ndarray:
    """float64 (L,) exp(entropy) of each row of ``freqs`` (rows summing to one, or all zero → 1)."""
    f = np.asarray(freqs, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(f > 0, f * np.log(f), 0.0).sum(axis=1)
    return np.exp(h)


def msa_neff(freqs: np.ndarray) -> float:
    """Mean :func:`column_neff` over the columns that hold any residue (1.0 for none)."""
    f = np.asarray(freqs, dtype=np.float64)
    occupied = f.sum(axis=1) > 0
    if not occupied.any():
        return 1.0
    return float(column_neff(f[occupied]).mean())
