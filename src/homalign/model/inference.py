"""The aligner's scores in closed form, for inference: numpy, one query against many targets.

An aligner without a pair refiner (every shipped one) scores residue ``i`` of the query against
residue ``j`` of the target as

    S[i, j] = scale * M[a_i, b_j] + e_i^T W e'_j

and charges per-residue gap costs ``softplus(bias + w . e)``; an ensemble of K such aligners with
one substitution matrix has the mean of those, which is the same form with
``scale = mean(scale_k)``, ``W = block_diag(W_k) / K`` over the concatenated embeddings and the
mean of the members' gap heads. Everything that depends on the query alone (``A = e W`` and its
rows of ``scale * M``) is computed once, so a target costs one matrix product and one table
lookup: no torch call per pair. :meth:`homalign.model.aligner.AlignerModel.score_embedded` and
:meth:`~homalign.model.aligner.AlignerModel.score_many` use it; the torch ``forward`` (training)
computes the same numbers (tests: equal to float32 rounding).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from homalign.dp import GapCosts
from homalign.threads import one_blas_thread


@dataclass(frozen=True)
class QuerySide:
    """What scoring a query against any target needs: ``A = e W`` (Lq, D), its rows of
    ``scale * M`` (Lq, K: ``rows[:, b]`` is every query position's score against residue ``b``)
    and its gap costs (Lq,) each."""

    A: np.ndarray
    rows: np.ndarray
    open: np.ndarray
    extend: np.ndarray


@dataclass(frozen=True)
class ClosedFormScores:
    """Closed form of an aligner's (or a fused ensemble's) ``S`` and gap costs."""

    matrix: np.ndarray  # float32 (K, K): scale * padded substitution matrix
    W: np.ndarray  # float32 (D, D), symmetric
    #: per member: (first, last) embedding columns, gap weights (d, 2) [open, extend], bias (2,)
    heads: tuple[tuple[int, int, np.ndarray, np.ndarray], ...]

    @classmethod
    def from_scorers(cls, scorers: list, dims: list[int]) -> ClosedFormScores:
        """From K :class:`homalign.model.scorer.PairScorer` without refiners, one substitution
        matrix, whose embeddings (widths ``dims``) are concatenated."""
        k = len(scorers)
        with torch.no_grad():
            scale = sum(float(torch.exp(sc.log_scale)) for sc in scorers) / k
            W = torch.block_diag(*(sc.bilinear() for sc in scorers)) / k
            heads, start = [], 0
            for sc, d in zip(scorers, dims, strict=True):
                w = torch.stack([sc.open_w, sc.ext_w], dim=1).numpy().astype(np.float32)
                bias = np.array([float(sc.open_bias), float(sc.ext_bias)], dtype=np.float32)
                heads.append((start, start + d, np.ascontiguousarray(w), bias))
                start += d
            matrix = (scale * scorers[0].matrix).numpy()
        return cls(np.ascontiguousarray(matrix, dtype=np.float32),
                   np.ascontiguousarray(W.numpy(), dtype=np.float32), tuple(heads))

    def gap_costs(self, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-residue (open, extend) costs in nats of embeddings ``e`` (n, D): the members'
        mean of ``softplus(bias + e w)``."""
        e = np.ascontiguousarray(e, dtype=np.float32)
        g = np.zeros((len(e), 2), dtype=np.float32)
        with one_blas_thread():
            for a, b, w, bias in self.heads:
                g += np.logaddexp(np.float32(0.0), e[:, a:b] @ w + bias).astype(np.float32)
        g /= np.float32(len(self.heads))
        return np.ascontiguousarray(g[:, 0]), np.ascontiguousarray(g[:, 1])

    def query(self, codes: np.ndarray, e: np.ndarray,
              profile: np.ndarray | None = None) -> QuerySide:
        """The query's side from its codes and embeddings (Lq, D); ``profile`` (Lq, K) residue
        weights (rows summing to 1) replace its one-hot residues in the matrix term."""
        e = np.ascontiguousarray(e, dtype=np.float32).reshape(len(codes), -1)
        with one_blas_thread():
            A = e @ self.W
            if profile is None:
                rows = self.matrix[np.asarray(codes, dtype=np.int64)]
            else:
                prof = np.asarray(profile, dtype=np.float32)
                if prof.shape != (len(codes), self.matrix.shape[0]):
                    raise ValueError(f"profile_q has shape {prof.shape}: expected {len(codes)} "
                                     f"rows of {self.matrix.shape[0]} residue columns")
                rows = prof @ self.matrix
        o, x = self.gap_costs(e)
        return QuerySide(np.ascontiguousarray(A), np.ascontiguousarray(rows, dtype=np.float32),
                         o, x)

    def many(self, q: QuerySide, codes: list[np.ndarray], embeddings: list[np.ndarray]
             ) -> list[tuple[np.ndarray, GapCosts]]:
        """(S float32 (Lq, Lt), GapCosts) of the query against each target (embeddings (Lt, D)):
        the targets packed back to back, their gap costs in one product, each ``S`` one matrix
        product and one table lookup (per target: the same rounding in any batch)."""
        if not codes:
            return []
        E = [np.ascontiguousarray(e, dtype=np.float32).reshape(len(c), -1)
             for c, e in zip(codes, embeddings, strict=True)]
        o, x = self.gap_costs(np.concatenate(E))
        lens = [len(c) for c in codes]
        ends = np.cumsum(lens).tolist()
        gaps = GapCosts.query_against_many(q.open, q.extend,
                                           np.split(o, ends[:-1]), np.split(x, ends[:-1]))
        out = []
        with one_blas_thread():
            for c, e, g in zip(codes, E, gaps, strict=True):
                S = q.A @ e.T
                S += np.take(q.rows, np.asarray(c, dtype=np.int64), axis=1)  # (Lq, Lt)
                out.append((np.ascontiguousarray(S, dtype=np.float32), g))
        return out


__all__ = ["ClosedFormScores", "QuerySide"]
