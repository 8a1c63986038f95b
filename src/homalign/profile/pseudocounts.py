"""Pseudocounts: from observed column frequencies to emission probabilities.

Two priors, both vectorised over all columns:

* **Substitution-matrix pseudocounts** (PSI-BLAST, Altschul et al. 1997): the matrix's implied
  target frequencies ``q(a,b) = p(a) p(b) exp(lambda S(a,b))``, with ``lambda`` the positive root of
  ``sum q = 1`` under :data:`homalign.alphabet.BACKGROUND`, give ``P(a|b) = q(a,b) / sum_a q(a,b)``;
  a column's pseudocount vector is ``g(a) = sum_b f(b) P(a|b)``. The data and the pseudocounts are
  mixed as ``(alpha f + beta g) / (alpha + beta)`` with ``alpha = n - 1`` (``n`` the column's
  effective count) and ``beta = 10`` (PSI-BLAST's defaults), so a profile of one sequence is pure
  pseudocounts and its log-odds PSSM equals the matrix up to a per-row offset below 0.45 units.
  ``admix="hhsuite"`` uses HH-suite's ``tau = a / (1 + (n / b)^c)`` with a=1, b=1.5, c=1 instead.
* **Dirichlet mixture** (Sjölander et al. 1996; HMMER's default): the posterior mean estimate
  ``p(a) = sum_k P(k | c) (c(a) + alpha_k(a)) / (|c| + |alpha_k|)`` for counts ``c = n f``, with
  ``P(k | c)`` ∝ ``q_k B(c + alpha_k) / B(alpha_k)`` (log-Beta via lgamma, compiled).

Columns without any residue fall back to the background. Every output row sums to one.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from numba import njit

from homalign.alphabet import BACKGROUND, N_AA
from homalign.matrices import substitution_matrix
from homalign.profile.mixtures import SJOLANDER9_ALPHA, SJOLANDER9_WEIGHTS

PSEUDOCOUNT_METHODS = ("matrix", "dirichlet", "none")
PSIBLAST_BETA = 10.0
HHSUITE_TAU = (1.0, 1.5, 1.0)  # pca, pcb, pcc


@cache
def matrix_lambda(name: str = "BLOSUM62") -> float:
    """The ungapped Karlin–Altschul lambda (nats per score unit) of a matrix under BACKGROUND."""
    S = substitution_matrix(name)[:N_AA, :N_AA].astype(np.float64)
    pp = np.outer(BACKGROUND, BACKGROUND)

    def excess(lam: float) -> float:
        return float((pp * np.exp(lam * S)).sum() - 1.0)

    lo, hi = 1e-4, 5.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if excess(mid) > 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


@cache
def conditional_matrix(name: str = "BLOSUM62") -> np.ndarray:
    """float64 (20, 20) ``P[b, a] = P(a | b)`` from the matrix's implied target frequencies."""
    S = substitution_matrix(name)[:N_AA, :N_AA].astype(np.float64)
    lam = matrix_lambda(name)
    q = np.outer(BACKGROUND, BACKGROUND) * np.exp(lam * S)
    P = q / q.sum(axis=0, keepdims=True)  # column b normalised over a
    out = np.ascontiguousarray(P.T)
    out.setflags(write=False)
    return out


def matrix_pseudocounts(freqs: np.ndarray, name: str = "BLOSUM62") -> np.ndarray:
    """float64 (L, 20) ``g = f @ P(.|.)``; rows of ``freqs`` summing to zero give the background."""
    f = np.asarray(freqs, dtype=np.float64)
    g = f @ conditional_matrix(name)
    return _fill_empty(g, f)


def data_weight(n_eff: np.ndarray, admix: str = "psiblast") -> np.ndarray:
    """Weight of the observed frequencies (0..1) for effective counts ``n_eff`` (per column)."""
    n = np.maximum(np.asarray(n_eff, dtype=np.float64), 1.0)
    if admix == "psiblast":
        alpha = n - 1.0
        return alpha / (alpha + PSIBLAST_BETA)
    if admix == "hhsuite":
        a, b, c = HHSUITE_TAU
        tau = np.minimum(1.0, a / (1.0 + (n / b) ** c))
        return 1.0 - tau
    raise ValueError(f"unknown admix {admix!r}; choose 'psiblast' or 'hhsuite'")


@njit(cache=True)
def _mixture_posterior(counts, alpha, log_q, out):  # pragma: no cover - compiled
    L, A = counts.shape
    K = alpha.shape[0]
    alpha_sum = np.zeros(K)
    lg_alpha = np.zeros(K)
    for k in range(K):
        s = 0.0
        for a in range(A):
            s += alpha[k, a]
        alpha_sum[k] = s
        lg_alpha[k] = math.lgamma(s)  # with the lg_a terms below: -log B(alpha_k) + log B(...)
    logp = np.zeros(K)
    lg_a = np.zeros((K, A))
    for k in range(K):
        for a in range(A):
            lg_a[k, a] = math.lgamma(alpha[k, a])
    for i in range(L):
        n = 0.0
        for a in range(A):
            n += counts[i, a]
        best = -1e300
        for k in range(K):
            v = log_q[k] + lg_alpha[k] - math.lgamma(alpha_sum[k] + n)
            for a in range(A):
                c = counts[i, a]
                if c > 0.0:  # lgamma(alpha + 0) cancels against the prior's lgamma(alpha)
                    v += math.lgamma(alpha[k, a] + c) - lg_a[k, a]
            logp[k] = v
            if v > best:
                best = v
        z = 0.0
        for k in range(K):
            logp[k] = math.exp(logp[k] - best)
            z += logp[k]
        for a in range(A):
            out[i, a] = 0.0
        for k in range(K):
            w = logp[k] / z / (n + alpha_sum[k])
            for a in range(A):
                out[i, a] += w * (counts[i, a] + alpha[k, a])
    return out


def dirichlet_mixture(
    counts: np.ndarray,
    alpha: np.ndarray = SJOLANDER9_ALPHA,
    weights: np.ndarray = SJOLANDER9_WEIGHTS,
) -> np.ndarray:
    """float64 (L, 20) posterior mean probabilities under a Dirichlet mixture, from counts (L, 20)."""
    c = np.ascontiguousarray(counts, dtype=np.float64)
    out = np.empty_like(c)
    return _mixture_posterior(c, np.ascontiguousarray(alpha, dtype=np.float64),
                              np.log(np.asarray(weights, dtype=np.float64)), out)


def add_pseudocounts(
    freqs: np.ndarray,
    n_eff: np.ndarray,
    method: str = "matrix",
    *,
    matrix: str = "BLOSUM62",
    admix: str = "psiblast",
) -> np.ndarray:
    """Emission probabilities (L, 20) from observed frequencies and per-column effective counts.

    ``method``: "matrix" (PSI-BLAST style), "dirichlet" (9-component mixture) or "none" (the
    observed frequencies, background where a column holds no residue).
    """
    f = np.asarray(freqs, dtype=np.float64)
    n = np.broadcast_to(np.asarray(n_eff, dtype=np.float64), (len(f),))
    if method == "none":
        return _fill_empty(f.copy(), f)
    if method == "matrix":
        w = data_weight(n, admix)[:, None]
        return _fill_empty(w * f + (1.0 - w) * matrix_pseudocounts(f, matrix), f)
    if method == "dirichlet":
        return _fill_empty(dirichlet_mixture(np.maximum(n, 1.0)[:, None] * f), f)
    raise ValueError(f"unknown pseudocount method {method!r}; choose one of {PSEUDOCOUNT_METHODS}")


def _fill_empty(probs: np.ndarray, freqs: np.ndarray) -> np.ndarray:
    empty = freqs.sum(axis=1) <= 0
    if empty.any():
        probs[empty] = BACKGROUND
    probs /= probs.sum(axis=1, keepdims=True)
    return probs
