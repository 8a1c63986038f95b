"""Column scores of profile methods, computed for all column pairs at once.

Every function returns a float32 C-contiguous ``(Lq, Lt)`` matrix for :func:`homalign.dp.align`.

* :func:`pssm_sequence_scores` — PSI-BLAST class: ``S[i, j] = PSSM[i, target[j]]`` (fancy indexing).
* :func:`compass_scores` — COMPASS-like (Sadreyev & Grishin, JMB 326:317, 2003): each profile's
  observed frequencies, weighted by its effective count, scored by the other's log-odds:
  ``S = [n_i f_i · ln(Q_j / p) + n_j f_j · ln(Q_i / p)] / (n_i + n_j) / lambda`` — two matrix
  products. Dividing by ``n_i + n_j`` (our choice, unlike COMPASS's unnormalised sum) keeps the
  scale of a substitution matrix: two one-sequence profiles score the mean of their two PSSMs.
* :func:`prof_sim_scores` — PROF_SIM-like (Yona & Levitt, JMB 315:1257, 2002): the similarity of
  two distributions ``sim = (1 - D_JS(p, q)) * (1 + D_JS(r, P0)) / 2`` with ``r = (p + q) / 2``,
  ``P0`` the background and Jensen–Shannon divergences in bits; sim lies in [0, 1], so a local
  alignment uses ``scale * (sim - shift)``. Entropies of all ``(p_i + q_j) / 2`` are evaluated by
  a fused compiled kernel (:func:`prof_sim_similarity`); :func:`prof_sim_similarity_numpy` is the
  same in blocks of numpy broadcasting, kept as the reference.
* :func:`hhsearch_scores` — HHsearch (Söding, Bioinformatics 21:951, 2005):
  ``S[i, j] = log2 sum_a q_i(a) p_j(a) / f(a) + shift`` — one matrix product.
"""

from __future__ import annotations

import numpy as np

from homalign.score._kernels import abt, prof_sim

_BLOCK_CELLS = 1 << 21  # cells of the (rows, Lt, 20) block PROF_SIM evaluates at once


def _f32(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32)


def pssm_sequence_scores(pssm: np.ndarray, target_codes: np.ndarray) -> np.ndarray:
    """(Lq, Lt) scores of a query PSSM (Lq, 23) against a target's residue codes."""
    return _f32(np.asarray(pssm)[:, np.asarray(target_codes, dtype=np.intp)])


def compass_scores(
    q_freqs: np.ndarray, q_probs: np.ndarray, q_n: np.ndarray,
    t_freqs: np.ndarray, t_probs: np.ndarray, t_n: np.ndarray,
    background: np.ndarray, lam: float = 1.0,
) -> np.ndarray:
    """COMPASS-like Neff-weighted symmetric log-odds score (see the module docstring)."""
    bg = np.asarray(background, dtype=np.float64)
    q_lo = np.log(np.maximum(q_probs, 1e-12) / bg)
    t_lo = np.log(np.maximum(t_probs, 1e-12) / bg)
    qn = np.asarray(q_n, dtype=np.float64)[:, None]
    tn = np.asarray(t_n, dtype=np.float64)[:, None]
    A = abt(np.ascontiguousarray(qn * q_freqs), np.ascontiguousarray(t_lo))
    B = abt(np.ascontiguousarray(q_lo), np.ascontiguousarray(tn * t_freqs))
    return _f32((A + B) / (qn + tn.T) / lam)


def _entropy_bits(x: np.ndarray) -> np.ndarray:
    """Shannon entropy (bits) over the last axis; 0 log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(x > 0, x * np.log2(x), 0.0).sum(axis=-1)


def prof_sim_similarity(p: np.ndarray, q: np.ndarray, background: np.ndarray) -> np.ndarray:
    """(Lq, Lt) PROF_SIM similarity in [0, 1] of every pair of rows of p (Lq, 20), q (Lt, 20)."""
    return prof_sim(np.ascontiguousarray(p, dtype=np.float64),
                    np.ascontiguousarray(q, dtype=np.float64),
                    np.ascontiguousarray(background, dtype=np.float64))


def prof_sim_similarity_numpy(p: np.ndarray, q: np.ndarray, background: np.ndarray) -> np.ndarray:
    """:func:`prof_sim_similarity` by numpy broadcasting over (rows, Lt, 20) blocks."""
    p = np.asarray(p, dtype=np.float32)
    q = np.asarray(q, dtype=np.float32)
    bg = np.asarray(background, dtype=np.float32)
    hp = _entropy_bits(p)
    hq = _entropy_bits(q)
    hbg = float(_entropy_bits(bg))
    out = np.empty((len(p), len(q)), dtype=np.float32)
    rows = max(1, _BLOCK_CELLS // max(1, len(q) * p.shape[1]))
    for s in range(0, len(p), rows):
        r = 0.5 * (p[s : s + rows, None, :] + q[None, :, :])  # (b, Lt, 20)
        hr = _entropy_bits(r)
        d_pq = hr - 0.5 * (hp[s : s + rows, None] + hq[None, :])
        d_r0 = _entropy_bits(0.5 * (r + bg)) - 0.5 * (hr + hbg)
        out[s : s + rows] = (1.0 - d_pq) * (1.0 + d_r0) * 0.5
    return out


def prof_sim_scores(
    p: np.ndarray, q: np.ndarray, background: np.ndarray, *, shift: float = 0.5,
    scale: float = 10.0,
) -> np.ndarray:
    """``scale * (sim - shift)``: PROF_SIM similarity made usable by local alignment."""
    sim = prof_sim_similarity(p, q, background)
    return _f32(scale * (sim - shift))


def hhsearch_scores(
    q_probs: np.ndarray, t_probs: np.ndarray, background: np.ndarray, *, shift: float = 0.0,
    scale: float = 1.0,
) -> np.ndarray:
    """``scale * (log2 sum_a q_i(a) t_j(a) / f(a) + shift)`` for all column pairs, in float32
    (the sum, its logarithm and the result: within ~1e-6 bits of float64).

    The sums are one float32 BLAS product (3x a compiled loop at L = 250). A threaded BLAS may
    round a product differently from one thread (OpenBLAS on an AMD EPYC: ~1 float32 ulp in 3%
    of the cells), so a search scores and traces its pairs on one BLAS thread
    (:func:`homalign.threads.one_blas_thread`): the same bits at any ``--threads``, and many
    small products do not oversubscribe the cores."""
    return hhsearch_scores_of(hhsearch_query_odds(q_probs, background),
                              hhsearch_target_columns(t_probs), shift=shift, scale=scale)


def hhsearch_query_odds(q_probs: np.ndarray, background: np.ndarray) -> np.ndarray:
    """The query side of :func:`hhsearch_scores`: ``q_i(a) / f(a)``, float32 (L, 20)."""
    bg = np.asarray(background, dtype=np.float64)
    return np.ascontiguousarray(np.asarray(q_probs, dtype=np.float64) / bg, dtype=np.float32)


def hhsearch_target_columns(t_probs: np.ndarray) -> np.ndarray:
    """The target side of :func:`hhsearch_scores`: ``t_j(a)`` as float32 (20, L)."""
    return np.ascontiguousarray(np.asarray(t_probs, dtype=np.float32).T)


def hhsearch_scores_of(q_odds: np.ndarray, t_columns: np.ndarray, *, shift: float = 0.0,
                       scale: float = 1.0) -> np.ndarray:
    """:func:`hhsearch_scores` from its two prepared sides (:func:`hhsearch_query_odds`,
    :func:`hhsearch_target_columns`): a search prepares the query's side once for all its
    pairs."""
    m = q_odds @ t_columns
    np.maximum(m, np.float32(1e-30), out=m)
    np.log2(m, out=m)
    if shift != 0.0:
        m += np.float32(shift)
    if scale != 1.0:
        m *= np.float32(scale)
    return m
