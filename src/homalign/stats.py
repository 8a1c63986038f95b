"""Extreme-value statistics of alignment scores: E-values and bit scores.

The score ``S`` of the best local alignment of two unrelated sequences of lengths ``m`` and ``n``
follows a Gumbel (extreme-value) law, ``P(S >= x) ≈ 1 - exp(-K m n e^{-λ x})`` (Karlin & Altschul,
PNAS 1990), so the number of chance hits scoring at least ``S`` in a search of a query of length
``m`` against a database of ``n`` residues is ``E = K m n e^{-λ S}`` and the bit score is
``(λ S - ln K) / ln 2``.

Two sources of ``(λ, K)``:

* **Published Karlin–Altschul values** for standard matrices and gap costs: the tables of NCBI
  BLAST's ``blast_stat.c`` (``blosum45_values``, ``blosum62_values``, ``blosum80_values``,
  ``pam250_values``; columns gap open, gap extend, λ, K, H, α, β), used with BLAST's finite-size
  (effective length) correction ``BLAST_ComputeLengthAdjustment`` (Altschul, Bundschuh, Olsen &
  Hwa, NAR 2001): both the query and every database sequence are shortened by ``ℓ`` where
  ``ℓ = (α/λ) (ln K + ln((m - ℓ)(n - N ℓ))) + β``.
* **A maximum-likelihood Gumbel fit** for every other method
  (:func:`homalign.search.calibration.calibrate`, which runs the method): scores of
  unrelated pairs (shuffled sequences, i.i.d. background sequences, or cross-fold pairs of real
  domains) are fitted with the per-pair location ``μ = ln(K m n) / λ``; the fit is cached as JSON
  under ``$HOMALIGN_CACHE/evd/`` (default ``~/.cache/homalign/evd/``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence as SequenceABC
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from homalign.alphabet import ALPHABET, BACKGROUND

LN2 = math.log(2.0)

# NCBI BLAST blast_stat.c (c++/src/algo/blast/core/blast_stat.c): gap open, gap extend, λ, K, H,
# α, β for gapped local alignment with each matrix (BLAST convention: a gap of length k costs
# open + k * extend). Published values, copied as facts.
_KA_TABLES: dict[str, list[tuple[int, int, float, float, float, float, float]]] = {
    "BLOSUM62": [
        (11, 2, 0.297, 0.082, 0.27, 1.1, -10), (10, 2, 0.291, 0.075, 0.23, 1.3, -15),
        (9, 2, 0.279, 0.058, 0.19, 1.5, -19), (8, 2, 0.264, 0.045, 0.15, 1.8, -26),
        (7, 2, 0.239, 0.027, 0.10, 2.5, -46), (6, 2, 0.201, 0.012, 0.061, 3.3, -58),
        (13, 1, 0.292, 0.071, 0.23, 1.2, -11), (12, 1, 0.283, 0.059, 0.19, 1.5, -19),
        (11, 1, 0.267, 0.041, 0.14, 1.9, -30), (10, 1, 0.243, 0.024, 0.10, 2.5, -44),
        (9, 1, 0.206, 0.010, 0.052, 4.0, -87),
    ],
    "BLOSUM45": [
        (13, 3, 0.207, 0.049, 0.14, 1.5, -22), (12, 3, 0.199, 0.039, 0.11, 1.8, -34),
        (11, 3, 0.190, 0.031, 0.095, 2.0, -38), (10, 3, 0.179, 0.023, 0.075, 2.4, -51),
        (16, 2, 0.210, 0.051, 0.14, 1.5, -24), (15, 2, 0.203, 0.041, 0.12, 1.7, -31),
        (14, 2, 0.195, 0.032, 0.10, 1.9, -36), (13, 2, 0.185, 0.024, 0.084, 2.2, -45),
        (12, 2, 0.171, 0.016, 0.061, 2.8, -65), (19, 1, 0.205, 0.040, 0.11, 1.9, -43),
        (18, 1, 0.198, 0.032, 0.10, 2.0, -43), (17, 1, 0.189, 0.024, 0.079, 2.4, -57),
        (16, 1, 0.176, 0.016, 0.063, 2.8, -67),
    ],
    "BLOSUM80": [
        (25, 2, 0.342, 0.17, 0.66, 0.52, -1.6), (13, 2, 0.336, 0.15, 0.57, 0.59, -3),
        (9, 2, 0.319, 0.11, 0.42, 0.76, -6), (8, 2, 0.308, 0.090, 0.35, 0.89, -9),
        (7, 2, 0.293, 0.070, 0.27, 1.1, -14), (6, 2, 0.268, 0.045, 0.19, 1.4, -19),
        (11, 1, 0.314, 0.095, 0.35, 0.90, -9), (10, 1, 0.299, 0.071, 0.27, 1.1, -14),
        (9, 1, 0.279, 0.048, 0.20, 1.4, -19),
    ],
    "PAM250": [
        (15, 3, 0.205, 0.049, 0.13, 1.6, -23), (14, 3, 0.200, 0.043, 0.12, 1.7, -26),
        (13, 3, 0.194, 0.036, 0.10, 1.9, -31), (12, 3, 0.186, 0.029, 0.085, 2.2, -41),
        (11, 3, 0.174, 0.020, 0.070, 2.5, -48), (17, 2, 0.204, 0.047, 0.12, 1.7, -28),
        (16, 2, 0.198, 0.038, 0.11, 1.8, -29), (15, 2, 0.191, 0.031, 0.087, 2.2, -44),
        (14, 2, 0.182, 0.024, 0.073, 2.5, -53), (13, 2, 0.171, 0.017, 0.059, 2.9, -64),
        (21, 1, 0.205, 0.045, 0.11, 1.8, -34), (20, 1, 0.199, 0.037, 0.10, 1.9, -35),
        (19, 1, 0.192, 0.029, 0.083, 2.3, -52), (18, 1, 0.183, 0.021, 0.070, 2.6, -60),
        (17, 1, 0.171, 0.014, 0.052, 3.3, -86),
    ],
}


@dataclass(frozen=True)
class EVDParams:
    """Null-score law of a scoring scheme.

    ``model="local"`` (local alignment scores): the Gumbel law ``E = K m n exp(-lam S)``.
    ``H``, ``alpha`` and ``beta`` (BLAST's relative entropy and finite-size constants) are set only
    for published Karlin–Altschul values; without them no length correction is applied.
    ``gamma`` (local model only): a fitted length exponent, ``E = K (m n)^gamma exp(-lam S)`` per
    pair, for scores whose null drifts with length faster than Karlin–Altschul theory says (a
    learned score on real proteins, :func:`fit_gumbel` with ``length_exponent=True``); database
    E-values are then per target, ``N K (m n_t)^gamma exp(-lam S)`` (HMMER's ``E = Z P``), where
    ``None`` keeps BLAST's ``K m' n' exp(-lam S)`` over the effective database search space.

    ``model="regression"`` (global, glocal, semiglobal scores, which drift with the lengths
    themselves): the score is standardised, ``z = (S - μ(m, n)) / σ(m, n)`` with
    ``μ = c0 + c1 ln(mn) + c2 m + c3 n + c4 max(m-n, 0) + c5 max(n-m, 0)`` (``coef``) and
    ``σ = exp(v0 + v1 ln m + v2 ln n + v3 ln(1 + |m-n|))`` (``scale_coef``),
    and its upper tail is exponential (the tail of an extreme-value law):
    ``P(Z ≥ z) = p_tail exp(-lam (z - tau))`` above ``tau`` (``tail = (tau, p_tail)``).

    ``model="gumbel-regression"`` (a local score whose null drifts with the lengths in location
    and spread alike: the learned ranking's forward score, which grows linearly with long
    proteins): ``P(S ≥ s) = 1 - exp(-exp(-(s - μ) / β))`` with
    ``μ = coef · (1, l, l², (m + n) / 1000, |m - n| / 1000)`` and
    ``ln β = scale_coef · (1, l)``, ``l = max(ln(m n), min_log_mn)``: a pair shorter than the fit's shortest is scored as that
    one, which overstates its null and so its P-value (:func:`fit_gumbel_regression`).
    ``lam`` and ``K`` are unused (1). ``source`` says where the values came from.
    """

    lam: float
    K: float
    H: float | None = None
    alpha: float | None = None
    beta: float | None = None
    source: str = ""
    model: str = "local"
    coef: tuple[float, ...] | None = None
    scale_coef: tuple[float, ...] | None = None
    tail: tuple[float, ...] | None = None
    gamma: float | None = None
    min_log_mn: float | None = None

    def __post_init__(self) -> None:
        if self.model not in ("local", "regression", "gumbel-regression"):
            raise ValueError(f"unknown EVD model {self.model!r}")
        if self.gamma is not None and (self.model != "local" or not self.gamma > 0):
            raise ValueError("gamma (a length exponent > 0) belongs to the local model only")
        if self.model == "regression" and (
                self.coef is None or len(self.coef) != 6 or self.scale_coef is None
                or len(self.scale_coef) != 4 or self.tail is None or len(self.tail) != 2):
            raise ValueError("a regression EVD model needs coef (6), scale_coef (4) and tail (2)")
        if self.model == "gumbel-regression" and (
                self.coef is None or len(self.coef) != 5 or self.scale_coef is None
                or len(self.scale_coef) != 2 or self.min_log_mn is None):
            raise ValueError("a gumbel-regression EVD model needs coef (5), scale_coef (2) and "
                             "min_log_mn")
        for name in ("coef", "scale_coef", "tail"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(float(c) for c in value))

    @property
    def logK(self) -> float:
        return math.log(self.K)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def karlin_altschul(matrix: str, gap_open: float, gap_extend: float) -> EVDParams | None:
    """Published BLAST λ, K, H, α, β for ``matrix`` with gap costs ``open + k*extend``, or None."""
    table = _KA_TABLES.get(matrix.upper())
    if table is None:
        return None
    for go, ge, lam, K, H, alpha, beta in table:
        if float(go) == float(gap_open) and float(ge) == float(gap_extend):
            return EVDParams(lam, K, H, alpha, beta,
                             source=f"NCBI blast_stat.c {matrix.upper()} {go}/{ge}")
    return None


def length_adjustment(params: EVDParams, query_length: int, db_length: int, db_count: int) -> int:
    """BLAST's length adjustment ℓ (``BLAST_ComputeLengthAdjustment`` in blast_stat.c).

    The fixed point of ``ℓ = (α/λ)(ln K + ln((m-ℓ)(n-Nℓ))) + β``, rounded down; 0 when the
    parameters carry no α, β.
    """
    if params.alpha is None or params.beta is None:
        return 0
    m, n, N = float(query_length), float(db_length), float(max(db_count, 1))
    K, logK, a_l, beta = params.K, params.logK, params.alpha / params.lam, params.beta
    c = n * m - max(m, n) / K
    if c < 0:
        return 0
    mb = m * N + n
    ell_max = 2 * c / (mb + math.sqrt(mb * mb - 4 * N * c))
    ell_min = 0.0
    ell_next = 0.0
    converged = False
    for it in range(1, 21):
        ell = ell_next
        ss = (m - ell) * (n - N * ell)
        ell_bar = a_l * (logK + math.log(ss)) + beta
        if ell_bar >= ell:
            ell_min = ell
            if ell_bar - ell_min <= 1.0:
                converged = True
                break
            if ell_min == ell_max:
                break
        else:
            ell_max = ell
        if ell_min <= ell_bar <= ell_max:
            ell_next = ell_bar
        else:
            ell_next = ell_max if it == 1 else (ell_min + ell_max) / 2
    adj = int(ell_min)
    if converged:
        ell = math.ceil(ell_min)
        if ell <= ell_max:
            ss = (m - ell) * (n - N * ell)
            if a_l * (logK + math.log(ss)) + beta >= ell:
                adj = int(ell)
    return max(adj, 0)


def search_space(params: EVDParams, query_length: int, db_length: int, db_count: int) -> float:
    """Effective search space ``(m - ℓ)(n - N ℓ)`` (at least 1 residue each)."""
    ell = length_adjustment(params, query_length, db_length, db_count)
    m_eff = max(query_length - ell, 1)
    n_eff = max(db_length - db_count * ell, 1)
    return float(m_eff) * float(n_eff)


def evalue(
    score: float | np.ndarray,
    params: EVDParams,
    query_length: int,
    db_length: int,
    db_count: int = 1,
) -> float | np.ndarray:
    """E-value of ``score`` for a query of ``query_length`` against ``db_length`` residues in
    ``db_count`` sequences (a single pair: ``db_length`` = target length, ``db_count=1``)."""
    space = search_space(params, query_length, db_length, db_count)
    s = np.asarray(score, dtype=np.float64)
    out = params.K * space * np.exp(-params.lam * s)
    return float(out) if out.ndim == 0 else out


def _location_design(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Regressors of the null location: 1, ln(mn), m, n, max(m-n, 0), max(n-m, 0).

    The last two carry the end-to-end gap costs that global-type modes must pay when one
    sequence is longer than the other.
    """
    m = np.asarray(m, dtype=np.float64).reshape(-1)
    n = np.asarray(n, dtype=np.float64).reshape(-1)
    return np.stack([np.ones_like(m), np.log(m) + np.log(n), m, n, np.maximum(m - n, 0.0),
                     np.maximum(n - m, 0.0)], axis=1)


def _scale_design(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Regressors of the log null scale: 1, ln m, ln n, ln(1 + |m - n|)."""
    m = np.asarray(m, dtype=np.float64).reshape(-1)
    n = np.asarray(n, dtype=np.float64).reshape(-1)
    return np.stack([np.ones_like(m), np.log(m), np.log(n), np.log1p(np.abs(m - n))], axis=1)


def _gumbel_regression_design(m: np.ndarray, n: np.ndarray, min_log_mn: float
                              ) -> tuple[np.ndarray, np.ndarray]:
    """Regressors of the ``"gumbel-regression"`` location, ``(1, l, l², (m + n) / 1000,
    |m - n| / 1000)``, and log scale, ``(1, l)``, with ``l = max(ln(m n), min_log_mn)``."""
    m = np.asarray(m, dtype=np.float64).reshape(-1)
    n = np.asarray(n, dtype=np.float64).reshape(-1)
    ell = np.maximum(np.log(m) + np.log(n), min_log_mn)
    one = np.ones_like(ell)
    return (np.stack([one, ell, ell * ell, (m + n) / 1000.0, np.abs(m - n) / 1000.0], axis=1),
            np.stack([one, ell], axis=1))


#: the longest sequence a ``"gumbel-regression"`` law is evaluated at; its fits saw chains of
#: up to ten domains, and past ~2,500 residues its location drifts down (random 40,000-residue
#: queries got E ~ 1e-5 against one domain)
REGRESSION_MAX_LENGTH = 2000.0


def location_scale(params: EVDParams, query_lengths: Any, target_lengths: Any
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``(μ(m, n), β(m, n))`` of a ``"gumbel-regression"`` law at the given lengths.

    A sequence longer than :data:`REGRESSION_MAX_LENGTH` (``L``) is taken as ``m / L``
    independent stretches of ``L`` residues, as a local score's maximum over a long sequence
    is: the law at the clamped lengths, its location raised to that of the maximum of
    ``k = max(1, m / L) max(1, n / L)`` such scores (a Gumbel law's maximum of ``k`` draws is
    the law shifted by ``β ln k``), so ``P ≈ k P_L`` far out, as E-values scale with the search
    space; below ``L`` the law is as fitted."""
    if params.model != "gumbel-regression":
        raise ValueError(f"standardized scores need a gumbel-regression law, not {params.model!r}")
    m, n = np.broadcast_arrays(np.asarray(query_lengths, dtype=np.float64),
                               np.asarray(target_lengths, dtype=np.float64))
    cap = REGRESSION_MAX_LENGTH
    X, Z = _gumbel_regression_design(np.minimum(m, cap), np.minimum(n, cap),
                                     float(params.min_log_mn))  # type: ignore[arg-type]
    mu = (X @ np.asarray(params.coef)).reshape(m.shape)
    beta = np.exp(Z @ np.asarray(params.scale_coef)).reshape(m.shape)
    k = np.maximum(m / cap, 1.0) * np.maximum(n / cap, 1.0)
    return mu + beta * np.log(k), beta


def standardized_scores(scores: Any, params: EVDParams, query_lengths: Any,
                        target_lengths: Any) -> np.ndarray:
    """``z = (S - μ(m, n)) / β(m, n)`` of a ``"gumbel-regression"`` law: a standard Gumbel
    variable for unrelated pairs of any lengths, so ``P(S ≥ s) = 1 - exp(-e^{-z})``."""
    s = np.asarray(scores, dtype=np.float64)
    mu, beta = location_scale(params, query_lengths, target_lengths)
    s, mu, beta = np.broadcast_arrays(s, mu, beta)
    return (s - mu) / beta


def pair_pvalues(scores: Any, params: EVDParams, query_lengths: Any,
                 target_lengths: Any) -> np.ndarray:
    """``P(S ≥ s)`` of a pair of unrelated sequences of the given lengths (no length correction)."""
    s = np.asarray(scores, dtype=np.float64)
    m = np.asarray(query_lengths, dtype=np.float64)
    n = np.asarray(target_lengths, dtype=np.float64)
    if params.model == "local":
        g = 1.0 if params.gamma is None else params.gamma
        return -np.expm1(-params.K * (m * n) ** g * np.exp(-params.lam * s))
    if params.model == "gumbel-regression":
        return -np.expm1(-np.exp(-standardized_scores(s, params, m, n)))
    s, m, n = np.broadcast_arrays(s, m, n)
    tau, p_tail = params.tail  # type: ignore[misc]
    mu = (_location_design(m, n) @ np.asarray(params.coef)).reshape(s.shape)
    sigma = np.exp(_scale_design(m, n) @ np.asarray(params.scale_coef)).reshape(s.shape)
    z = (s - mu) / sigma
    return np.minimum(1.0, p_tail * np.exp(-params.lam * (z - tau)))


def bit_score(score: Any, params: EVDParams, query_length: Any = None,
              target_length: Any = None) -> float | np.ndarray:
    """Normalised score in bits: ``(λS - ln K) / ln 2`` for the local model.

    With a length exponent ``gamma`` they are ``(λS - ln K - (γ - 1) ln(m n)) / ln 2``, and
    for the regression models ``log2(m n / P)`` (``P`` the pair's tail probability),
    so that in both models a pair's expected chance count is about ``m n 2^-bits``; the lengths
    are then required.
    """
    s = np.asarray(score, dtype=np.float64)
    if params.model == "local" and params.gamma is None:
        out = (params.lam * s - params.logK) / LN2
    elif params.model == "local":
        if query_length is None or target_length is None:
            raise ValueError("bit scores with a length exponent need the sequence lengths")
        lmn = np.log(np.asarray(query_length, dtype=np.float64)) + np.log(
            np.asarray(target_length, dtype=np.float64))
        out = (params.lam * s - params.logK - (params.gamma - 1.0) * lmn) / LN2
    else:
        if query_length is None or target_length is None:
            raise ValueError("bit scores of a regression model need the sequence lengths")
        m = np.asarray(query_length, dtype=np.float64)
        n = np.asarray(target_length, dtype=np.float64)
        if params.model == "gumbel-regression":  # -ln P without underflow: P ≈ e^{-z} far out
            z = standardized_scores(s, params, m, n)
            neg_log_p = np.where(z > 30.0, z, -np.log(-np.expm1(-np.exp(-np.minimum(z, 30.0)))))
            out = np.log2(m * n) + neg_log_p / LN2
        else:
            p = np.maximum(pair_pvalues(s, params, m, n), 1e-300)
            out = np.log2(m * n) - np.log2(p)
    return float(out) if np.ndim(out) == 0 else out


def db_evalues(scores: Any, params: EVDParams, query_length: int, target_lengths: Any,
               db_length: int, db_count: int) -> np.ndarray:
    """E-values of a query's scores against targets of a database.

    Local model: ``K (m-ℓ)(n-Nℓ) e^{-λS}`` over the database's effective search space (BLAST);
    with a length exponent, per target ``N K (m n_t)^γ e^{-λS}``.
    Regression model: ``N · P(S ≥ s | m, n_t)``, the pair's tail probability times the number
    of database sequences (as HMMER's ``E = Z · P``).
    """
    s = np.asarray(scores, dtype=np.float64)
    if params.model == "local" and params.gamma is not None:
        lmn = math.log(query_length) + np.log(np.asarray(target_lengths, dtype=np.float64))
        return db_count * params.K * np.exp(params.gamma * lmn - params.lam * s)
    if params.model == "local":
        return np.asarray(evalue(s, params, query_length, db_length, db_count), dtype=np.float64)
    return db_count * pair_pvalues(s, params, query_length, np.asarray(target_lengths))


def length_histogram(lengths: Any, bins: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """A database's sequence lengths as ``(lengths, counts)`` over ``bins`` log-spaced bins, each
    bin's length the geometric mean of its members' (what :func:`chance_evalues` sums over)."""
    n = np.asarray(lengths, dtype=np.float64).reshape(-1)
    n = n[n > 0]
    if n.size == 0:
        return np.ones(1), np.zeros(1)
    edges = np.geomspace(float(n.min()), float(n.max()) * (1 + 1e-9), bins + 1)
    which = np.clip(np.searchsorted(edges, n, side="right") - 1, 0, bins - 1)
    counts = np.bincount(which, minlength=bins).astype(np.float64)
    logsum = np.bincount(which, weights=np.log(n), minlength=bins)
    keep = counts > 0
    return np.exp(logsum[keep] / counts[keep]), counts[keep]


def chance_evalues(values: Any, key: EVDParams, law: EVDParams, query_length: int,
                   db_count: int, histogram: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """E-values that count the database's chance hits ranked at least as high, for values of a
    length-corrected ranking.

    ``values`` are on the scale of ``key``'s database E-values (a local law with a length
    exponent: ``v = N K (m n)^γ e^{-λ s}`` for a hit of score ``s`` against a target of length
    ``n``; a fused ranking's values are on the same scale), so a value stands for the rank
    ``k = λ s - γ ln(m n) = ln(N K / v)``. A database target of length ``n_b`` reaches that rank
    with a score of at least ``s_b = (k + γ ln(m n_b)) / λ``, which an unrelated one does with
    probability ``P_law(S ≥ s_b | m, n_b)`` under ``law``, the score's null law over all lengths
    (a ``"gumbel-regression"`` law). Summed over the database's lengths (``histogram``,
    :func:`length_histogram`): ``E = Σ_b c_b P_law(S ≥ s_b | m, n_b)``. ``E`` grows with ``v``,
    so it keeps the ranking, and it counts chance hits as the database's own lengths make them:
    a database of long proteins holds more of them at every rank than ``v`` says.
    """
    if key.model != "local" or key.gamma is None:
        raise ValueError("chance E-values map the values of a local law with a length exponent")
    v = np.maximum(np.asarray(values, dtype=np.float64).reshape(-1, 1), 1e-300)
    lengths, counts = (np.asarray(x, dtype=np.float64).reshape(1, -1) for x in histogram)
    m = float(query_length)
    k = math.log(float(max(db_count, 1)) * key.K) - np.log(v)
    s_b = (k + key.gamma * np.log(m * lengths)) / key.lam
    p = pair_pvalues(s_b, law, m, np.broadcast_to(lengths, s_b.shape))
    return (p * counts).sum(axis=1)


# --------------------------------------------------------------------------------------------
# Gumbel fit
# --------------------------------------------------------------------------------------------

def _golden_max(f: Any, lo: float, hi: float, iterations: int = 80) -> float:
    """The maximiser of a unimodal ``f`` on ``[lo, hi]`` by golden-section search."""
    gr = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - gr * (b - a), a + gr * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iterations):
        if fc > fd:
            b, d, fd = d, c, fc
            c = b - gr * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + gr * (b - a)
            fd = f(d)
    return (a + b) / 2


def _gumbel_profile(s: np.ndarray, lmn: np.ndarray, lam: float, gamma: float
                    ) -> tuple[float, float]:
    """(log-likelihood, optimal ln K) of ``P(S < s) = exp(-K (mn)^γ e^{-λs})`` at (λ, γ)."""
    x = -lam * s + gamma * lmn
    xmax = float(x.max())
    log_sum = xmax + math.log(float(np.exp(x - xmax).sum()))
    logK = math.log(s.size) - log_sum
    z = lam * s - logK - gamma * lmn
    ll = s.size * math.log(lam) - float(z.sum()) - float(np.exp(-z).sum())
    return ll, logK


def _fit_lambda(s: np.ndarray, lmn: np.ndarray, gamma: float) -> tuple[float, float]:
    """(λ, log-likelihood) maximising the profile likelihood at a fixed length exponent."""
    scale = 1.2825 / float(s.std())  # the method-of-moments λ = π / (σ √6)
    grid = scale * np.geomspace(0.05, 20.0, 60)
    lls = [_gumbel_profile(s, lmn, float(g), gamma)[0] for g in grid]
    best = int(np.argmax(lls))
    lam = _golden_max(lambda x: _gumbel_profile(s, lmn, x, gamma)[0],
                      float(grid[max(best - 1, 0)]), float(grid[min(best + 1, len(grid) - 1)]))
    return lam, _gumbel_profile(s, lmn, lam, gamma)[0]


def fit_gumbel(scores: np.ndarray, query_lengths: np.ndarray, target_lengths: np.ndarray,
               source: str = "ML Gumbel fit", length_exponent: bool = False) -> EVDParams:
    """Maximum-likelihood ``(λ, K)`` of ``P(S < s) = exp(-K m n e^{-λ s})`` on unrelated pairs.

    Each pair has its own location ``ln(K m n)/λ``. For a fixed λ the optimal ``ln K`` is closed
    form, ``ln K = ln N - ln Σ exp(-λ s_i + ln m_i n_i)``; λ maximises the profile likelihood
    (golden-section search on a bracketing grid). ``length_exponent=True`` also fits ``γ`` of
    ``exp(-K (m n)^γ e^{-λ s})`` (location ``ln(K (mn)^γ)/λ``; golden-section search over
    ``γ`` in [0.1, 5] of the likelihood profiled over λ and K) — for scores of real unrelated
    proteins that drift with length faster than Karlin–Altschul's ``γ = 1``.
    """
    s = np.asarray(scores, dtype=np.float64)
    lmn = np.log(np.asarray(query_lengths, dtype=np.float64)) + np.log(
        np.asarray(target_lengths, dtype=np.float64))
    if s.size < 10:
        raise ValueError(f"need at least 10 scores to fit a Gumbel distribution, got {s.size}")
    if not np.isfinite(s).all():
        raise ValueError("scores to fit contain NaN or infinity")
    if float(s.std()) == 0.0:
        raise ValueError("all calibration scores are equal; cannot fit a Gumbel distribution")
    if not length_exponent:
        lam, _ = _fit_lambda(s, lmn, 1.0)
        return EVDParams(lam=lam, K=math.exp(_gumbel_profile(s, lmn, lam, 1.0)[1]),
                         source=source)
    if float(np.ptp(lmn)) == 0.0:
        raise ValueError("a length exponent needs pairs of different lengths")
    gamma = _golden_max(lambda g: _fit_lambda(s, lmn, g)[1], 0.1, 5.0, iterations=40)
    lam, _ = _fit_lambda(s, lmn, gamma)
    logK = _gumbel_profile(s, lmn, lam, gamma)[1]
    return EVDParams(lam=lam, K=math.exp(logK), source=source, gamma=gamma)


def fit_regression_tail(scores: np.ndarray, query_lengths: np.ndarray,
                        target_lengths: np.ndarray, tail_fraction: float = 0.05,
                        source: str = "regression location/scale, exponential tail"
                        ) -> EVDParams:
    """The ``"regression"`` model of :class:`EVDParams` fitted on unrelated pairs' scores.

    Location by least squares on ``(1, ln mn, m, n, (m-n)+, (n-m)+)``; scale by least squares of
    the log absolute residuals on ``(1, ln m, ln n, ln(1+|m-n|))`` (rescaled to unit variance);
    then the maximum-likelihood
    exponential rate of the standardised scores above their ``1 - tail_fraction`` quantile.
    """
    s = np.asarray(scores, dtype=np.float64)
    m = np.asarray(query_lengths, dtype=np.float64)
    n = np.asarray(target_lengths, dtype=np.float64)
    if s.size < 50:
        raise ValueError(f"need at least 50 scores to fit a regression tail, got {s.size}")
    X = _location_design(m, n)
    coef, *_ = np.linalg.lstsq(X, s, rcond=None)
    resid = s - X @ coef
    # scale: log|residual| linear in its regressors (always positive), then rescaled so that
    # the standardised residuals have unit variance
    V = _scale_design(m, n)
    vcoef, *_ = np.linalg.lstsq(V, np.log(np.abs(resid) + 1e-6), rcond=None)
    sigma = np.exp(V @ vcoef)
    vcoef[0] += 0.5 * math.log(float(np.mean((resid / sigma) ** 2)))
    z = resid / np.exp(V @ vcoef)
    tau = float(np.quantile(z, 1.0 - tail_fraction))
    excess = z[z > tau] - tau
    if excess.size < 5 or float(excess.mean()) <= 0:
        raise ValueError("too few distinct tail scores to fit")
    lam = 1.0 / float(excess.mean())
    p_tail = float((z > tau).mean())
    return EVDParams(lam=lam, K=1.0, source=source, model="regression",
                     coef=tuple(float(c) for c in coef), scale_coef=tuple(float(v) for v in vcoef),
                     tail=(tau, p_tail))


def _gumbel_regression_nll(theta: np.ndarray, s: np.ndarray, X: np.ndarray, Z: np.ndarray,
                           t: np.ndarray | None) -> tuple[float, np.ndarray]:
    """Mean negative log-likelihood of the ``"gumbel-regression"`` law and its gradient.
    ``t``: per pair, a censoring point (finite: the pair counts as ``S < t``, likelihood
    ``exp(-e^{-z_t})``; NaN: its score counts, density ``e^{-z - e^{-z}} / β``)."""
    c, v = theta[:X.shape[1]], theta[X.shape[1]:]
    with np.errstate(over="ignore", invalid="ignore"):  # a trial step may overflow: rejected
        mu, log_beta = X @ c, Z @ v
        beta = np.exp(log_beta)
        cens = np.zeros(s.shape, dtype=bool) if t is None else np.isfinite(t)
        z = (np.where(cens, t if t is not None else s, s) - mu) / beta
        ez = np.exp(-z)
        ll = np.where(cens, ez, log_beta + z + ez)
        d_mu = np.where(cens, ez, ez - 1.0) / beta  # d(-log L) / dμ
        d_lb = np.where(cens, z * ez, 1.0 - z + z * ez)  # d(-log L) / d ln β
        k = s.size
        return float(ll.sum() / k), np.concatenate([X.T @ d_mu, Z.T @ d_lb]) / k


def _newton(f: Any, theta: np.ndarray, iterations: int = 200) -> np.ndarray:
    """Minimise a smooth ``f(θ) -> (value, gradient)``: Newton steps on a central-difference
    Hessian of the gradient, Levenberg-damped, with backtracking."""
    value, grad = f(theta)
    damp = 1e-6
    for _ in range(iterations):
        if float(np.abs(grad).max()) < 1e-10:
            break
        h = 1e-5 * np.maximum(1.0, np.abs(theta))
        H = np.empty((theta.size, theta.size))
        for i in range(theta.size):
            e = np.zeros_like(theta)
            e[i] = h[i]
            H[:, i] = (f(theta + e)[1] - f(theta - e)[1]) / (2 * h[i])
        H = 0.5 * (H + H.T)
        while True:
            step = np.linalg.solve(H + damp * np.eye(theta.size), -grad)
            new_value, new_grad = f(theta + step)
            if np.isfinite(new_value) and new_value <= value:
                theta, value, grad = theta + step, new_value, new_grad
                damp = max(damp / 10, 1e-9)
                break
            damp *= 10
            if damp > 1e12:
                return theta
    return theta


def fit_gumbel_regression(scores: np.ndarray, query_lengths: np.ndarray,
                          target_lengths: np.ndarray, censor: float = 0.2,
                          source: str = "Gumbel location-scale regression") -> EVDParams:
    """The ``"gumbel-regression"`` law of :class:`EVDParams` fitted on unrelated pairs' scores.

    Maximum likelihood (Newton's method) over every pair; then, since E-values live in the upper
    tail, a refit in which each pair below its fitted ``1 - censor`` quantile counts only as
    being below it (a censored likelihood): the law's location and spread are set by the top
    ``censor`` of the scores at every length. The pairs should span the lengths the law will
    score; ``min_log_mn`` is the shortest pair's ``ln(m n)``.
    """
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    m = np.asarray(query_lengths, dtype=np.float64).reshape(-1)
    n = np.asarray(target_lengths, dtype=np.float64).reshape(-1)
    if s.size < 50:
        raise ValueError(f"need at least 50 scores to fit a Gumbel regression, got {s.size}")
    if not (np.isfinite(s).all() and (m > 0).all() and (n > 0).all()):
        raise ValueError("scores to fit must be finite and lengths positive")
    if not 0.0 < censor <= 1.0:
        raise ValueError(f"censor must be in (0, 1], got {censor}")
    min_log_mn = float((np.log(m) + np.log(n)).min())
    X, Z = _gumbel_regression_design(m, n, min_log_mn)
    if np.linalg.matrix_rank(X) < X.shape[1]:  # Z's columns are among X's
        raise ValueError("the pairs' lengths are too alike to fit a length-dependent law")
    c0, *_ = np.linalg.lstsq(X, s, rcond=None)
    beta0 = max(float(np.std(s - X @ c0)) * math.sqrt(6) / math.pi, 1e-6)
    c0[0] -= 0.5772156649 * beta0  # a Gumbel's mean is μ + γ_E β
    theta = _newton(lambda th: _gumbel_regression_nll(th, s, X, Z, None),
                    np.concatenate([c0, [math.log(beta0), 0.0]]))
    if censor < 1.0:
        mu, beta = X @ theta[:5], np.exp(Z @ theta[5:])
        cut = mu - beta * math.log(-math.log1p(-censor))  # P(S ≥ cut) = censor
        t = np.where(s < cut, cut, np.nan)
        theta = _newton(lambda th: _gumbel_regression_nll(th, s, X, Z, t), theta)
    return EVDParams(lam=1.0, K=1.0, source=source, model="gumbel-regression",
                     coef=tuple(float(x) for x in theta[:5]),
                     scale_coef=tuple(float(x) for x in theta[5:]), min_log_mn=min_log_mn)


# --------------------------------------------------------------------------------------------
# Unrelated pairs (the method calibration in homalign.search.calibration scores them)
# --------------------------------------------------------------------------------------------

def random_sequences(n: int, rng: np.random.Generator, min_len: int = 60,
                     max_len: int = 400) -> list[str]:
    """i.i.d. residues from the BLOSUM62 background, lengths log-uniform in [min_len, max_len]."""
    lengths = np.exp(rng.uniform(math.log(min_len), math.log(max_len), size=n)).astype(int)
    letters = np.frombuffer(ALPHABET[:20].encode(), dtype=np.uint8)
    return [letters[rng.choice(20, size=int(L), p=BACKGROUND)].tobytes().decode()
            for L in lengths]


def unrelated_pairs(
    n_pairs: int,
    *,
    sequences: SequenceABC[Any] | None = None,
    labels: SequenceABC[str] | None = None,
    seed: int = 0,
) -> tuple[list[Any], list[Any], str]:
    """Pairs of unrelated proteins for calibration.

    * ``sequences`` with ``labels`` (e.g. SCOP folds): pairs drawn from different labels
      (cross-fold pairs), source ``"cross-fold"``;
    * ``sequences`` alone: each sequence against a residue shuffle of another, ``"shuffled"``;
    * neither: i.i.d. background sequences of realistic lengths, ``"iid-background"``.
    Returns (queries, targets, source) as :class:`homalign.sequence.Sequence` objects.
    """
    from homalign.sequence import Sequence

    rng = np.random.default_rng(seed)
    if sequences is None:
        pool = random_sequences(2 * n_pairs, rng)
        qs = [Sequence(f"rq{i}", pool[2 * i]) for i in range(n_pairs)]
        ts = [Sequence(f"rt{i}", pool[2 * i + 1]) for i in range(n_pairs)]
        return qs, ts, "iid-background"
    seqs = list(sequences)
    if len(seqs) < 2:
        raise ValueError("calibration needs at least two sequences")
    if labels is not None:
        labs = list(labels)
        if len(labs) != len(seqs):
            raise ValueError("labels and sequences differ in length")
        if len(set(labs)) < 2:
            raise ValueError("cross-fold calibration needs at least two different labels")
        qs, ts = [], []
        while len(qs) < n_pairs:
            a, b = (int(x) for x in rng.integers(0, len(seqs), size=2))
            if labs[a] != labs[b]:
                qs.append(seqs[a])
                ts.append(seqs[b])
        return qs, ts, "cross-fold"
    qs, ts = [], []
    for k in range(n_pairs):
        a, b = (int(x) for x in rng.integers(0, len(seqs), size=2))
        res = np.array(list(seqs[b].residues))
        rng.shuffle(res)
        qs.append(seqs[a])
        ts.append(Sequence(f"shuf{k}_{seqs[b].id}", "".join(res)))
    return qs, ts, "shuffled"
