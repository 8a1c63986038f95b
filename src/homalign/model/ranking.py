"""The learned ranking score in closed form, for one query against many targets at once.

The ranking weights (``learned_search``: an aligner without pair refiner plus its homology
adapter, :class:`homalign.model.scorer.HomologyScore`) score a pair by the local forward score
(log-partition) of

    S_h[i, j] = M'[a_i, b_j] + e_i^T W e'_j - shift,   M' = scale * BLOSUM62,
    W = sym(W_aligner) + sym(W_adapter)

with per-residue gap costs ``open(e) = softplus(o + u . e)``, ``extend(e) = softplus(x + v . e)``
on each sequence's residues against gaps. Everything that depends on one target only (its
per-residue embeddings ``e'``) can be computed once and stored (``homalign makedb``); for a
query, ``A = e W`` and the query's row of ``M'`` are computed once, so that the scores against a
batch of targets are one matrix product ``A E^T`` plus a table lookup, exponentiated, and one
parallel DP (:func:`homalign.dp.forward_batch.local_forward_batch`). The result equals the
one-pair path (:func:`homalign.model.homology.ranking_scores` then
:func:`homalign.dp.posterior.log_partition`) to float32 rounding; tests check it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit, prange

from homalign.dp.forward_batch import local_forward_batch
from homalign.model.encoder_kernel import EMBED_BATCH_RESIDUES
from homalign.model.inference import ClosedFormScores, InferenceAligner
from homalign.score.bilinear import bilinear_exp, exp_inplace
from homalign.threads import one_blas_thread

#: above this S the float32 match weight exp(S) could overflow; such a target (never seen with
#: real proteins: per-residue scores are a few nats) is scored by the float64 reference path
MAX_CELL_SCORE = 60.0


@njit(cache=True, parallel=True, error_model="numpy")
def _half_to_single(h: np.ndarray, bits: np.ndarray, out: np.ndarray) -> None:
    """IEEE half bits ``h`` (uint16) to single precision, exactly, in one pass: ``bits`` (uint32)
    and ``out`` (float32) view the same buffer; a normal, infinite or NaN half is written as bits,
    a subnormal one (exponent 0) as ``m * 2**-24``, exact in float32."""
    for i in prange(h.shape[0]):
        x = np.uint32(h[i])
        e = (x >> np.uint32(10)) & np.uint32(31)
        m = x & np.uint32(1023)
        if e == np.uint32(0):
            v = np.float32(m) * np.float32(2.0 ** -24)
            out[i] = -v if x & np.uint32(0x8000) else v
        else:
            top = np.uint32(0x7F800000) if e == np.uint32(31) else (e + np.uint32(112)) << np.uint32(23)
            bits[i] = ((x & np.uint32(0x8000)) << np.uint32(16)) | top | (m << np.uint32(13))


def _as_float32(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous float32 array; float16 by a compiled exact conversion (numpy's
    converts one value at a time: ~5x slower)."""
    if a.dtype != np.float16:
        return np.ascontiguousarray(a, dtype=np.float32)
    h = np.ascontiguousarray(a).view(np.uint16)
    bits = np.empty(h.shape, dtype=np.uint32)
    _half_to_single(h.reshape(-1), bits.reshape(-1), bits.view(np.float32).reshape(-1))
    return bits.view(np.float32)


@dataclass(frozen=True)
class QueryRep:
    """What the batched kernel needs of a query: ``A = e W`` (Lq, d), the ``M'`` rows
    ``profile[i, b] = M'[a_i, b] - shift`` (Lq, K) and the query's gap costs (Lq,) each."""

    A: np.ndarray
    profile: np.ndarray
    open: np.ndarray
    extend: np.ndarray


@dataclass(frozen=True)
class RankingModel:
    """Closed form of a ranking weight set (see the module docstring)."""

    aligner: InferenceAligner  # the ranking weights' aligner (one member)
    W: np.ndarray  # float32 (d, d)
    matrix: np.ndarray  # float32 (K, K): scale * padded substitution matrix
    shift: float
    fingerprint: str
    gaps: ClosedFormScores  # the aligner's closed form: its gap-cost heads

    @classmethod
    def from_state(cls, state: Mapping[str, np.ndarray], meta: Mapping[str, Any],
                   weights: bytes) -> RankingModel:
        """From the ranking weights' arrays and JSON; ``weights``: the safetensors bytes they
        were read from (the fingerprint). No torch."""
        aligner = InferenceAligner.from_state(state, meta)
        if len(aligner.encoders) != 1 or aligner.homology is None:
            raise ValueError("the batched ranking score needs one aligner with a homology "
                             "adapter")
        sc = {k: np.asarray(state["scorer." + k], dtype=np.float32)
              for k in ("W", "log_scale", "matrix")}
        Wh, shift = aligner.homology
        W = np.float32(0.5) * (sc["W"] + sc["W"].T) + Wh
        matrix = np.exp(sc["log_scale"].reshape(-1)[:1]) * sc["matrix"]
        return cls(aligner, np.ascontiguousarray(W, dtype=np.float32),
                   np.ascontiguousarray(matrix, dtype=np.float32), shift,
                   hashlib.sha256(weights).hexdigest()[:16], aligner.form)

    @property
    def dim(self) -> int:
        return int(self.W.shape[0])

    # --- per-sequence work ----------------------------------------------------------------
    def embed_many(self, codes: list[np.ndarray]) -> list[np.ndarray]:
        """float32 (L, d) embeddings of each sequence, in packed rows
        (:meth:`homalign.model.aligner.AlignerModel.embed_many`)."""
        return self.aligner.encoders[0].embed_many(codes)

    def gap_costs(self, e: np.ndarray, lengths: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Per-residue (open, extend) costs in nats of embeddings ``e`` (n, d), float32 each
        (the scorer's ``softplus(bias + w . e)`` on one BLAS thread; ``lengths``: sequences back
        to back, each from its own product, so a target's costs do not depend on its batch)."""
        return self.gaps.gap_costs(e, lengths)

    def query(self, codes: np.ndarray, embedding: np.ndarray | None = None) -> QueryRep:
        """The query's side: ``embedding`` (Lq, d) if already computed."""
        e = self.embed_many([codes])[0] if embedding is None else np.asarray(
            embedding, dtype=np.float32).reshape(len(codes), self.dim)
        rows = self.matrix[np.asarray(codes, dtype=np.int64)]  # (Lq, K)
        o, x = self.gap_costs(e)
        with one_blas_thread():
            A = e @ self.W
        return QueryRep(np.ascontiguousarray(A, dtype=np.float32),
                        np.ascontiguousarray(rows - self.shift, dtype=np.float32), o, x)

    # --- many targets ----------------------------------------------------------------------
    def scores(self, q: QueryRep, codes: np.ndarray, embeddings: np.ndarray,
               lengths: np.ndarray) -> np.ndarray:
        """float64 ranking score of the query against targets packed back to back:
        ``codes`` (N,), ``embeddings`` (N, d) (float16 or float32), ``lengths`` (n,)."""
        lengths = np.asarray(lengths, dtype=np.int64)
        n_res = int(lengths.sum())
        if len(codes) != n_res or len(embeddings) != n_res:
            raise ValueError("codes, embeddings and lengths disagree")
        if n_res == 0:
            return np.zeros(len(lengths))
        # exp(S) = exp(A E^T) * exp(profile)[i, code_j]: one matrix product, one exp, a lookup
        E = _as_float32(embeddings)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
        # a target whose cells might overflow float32 (bilinear term + the best residue score
        # above MAX_CELL_SCORE) goes to the float64 reference; Cauchy-Schwarz spares the scan
        top = max(float(q.profile.max()), 0.0)
        bound = float(np.linalg.norm(q.A, axis=1).max() * np.sqrt(
            np.einsum("ij,ij->i", E, E).max())) + top
        risky = np.zeros(len(lengths), dtype=bool)
        # fixed-order product and exp (score.bilinear): the same values at any --threads
        S_np = bilinear_exp(q.A, E, exp=bound <= MAX_CELL_SCORE)  # (Lq, N)
        if bound > MAX_CELL_SCORE:
            risky = np.maximum.reduceat(S_np.max(axis=0), starts) + top > MAX_CELL_SCORE
            if risky.any():
                S_np[:, np.repeat(risky, lengths)] = 0.0
            exp_inplace(S_np)
        o, x = self.gap_costs(E, lengths)
        out = local_forward_batch(S_np, starts, lengths, q.open, q.extend, o, x, codes,
                                  np.exp(q.profile))
        for k in np.flatnonzero(risky):  # exact float64 log-space path (pathological inputs)
            from homalign.dp import GapCosts
            from homalign.dp.posterior import log_partition

            a, b = starts[k], starts[k] + lengths[k]
            Sk = q.A @ E[a:b].T + q.profile[:, np.asarray(codes[a:b], dtype=np.int64)]
            g = GapCosts.from_vectors(len(q.open), int(lengths[k]), q_ins_open=q.open,
                                      q_ins_ext=q.extend, t_del_open=o[a:b], t_del_ext=x[a:b])
            out[k] = log_partition(np.ascontiguousarray(Sk, dtype=np.float32), g, mode="local",
                                   method="log")
        return out


__all__ = ["EMBED_BATCH_RESIDUES", "QueryRep", "RankingModel"]
