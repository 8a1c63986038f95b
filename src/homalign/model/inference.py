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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from homalign.dp import GapCosts
from homalign.model.config import AlignerConfig
from homalign.model.encoder_kernel import EncoderKernel
from homalign.threads import one_blas_thread

#: a scorer's arrays by their state-dict names (``scorer.`` stripped)
SCORER_KEYS = ("log_scale", "W", "open_w", "ext_w", "open_bias", "ext_bias", "matrix")


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
        return cls.from_arrays([{k: getattr(sc, k).detach().cpu().numpy() for k in SCORER_KEYS}
                                for sc in scorers], dims)

    @classmethod
    def from_arrays(cls, scorers: list[Mapping[str, np.ndarray]], dims: list[int]
                    ) -> ClosedFormScores:
        """From K scorers' arrays (:data:`SCORER_KEYS`, as saved), no torch: the mean scale,
        ``W = block_diag(sym(W_k)) / K`` and each member's gap heads, in float32 as torch
        computes them."""
        k = len(scorers)
        f32 = [{n: np.asarray(sc[n], dtype=np.float32) for n in SCORER_KEYS} for sc in scorers]
        scale = sum(float(np.exp(sc["log_scale"].reshape(-1)[0])) for sc in f32) / k
        W = np.zeros((sum(dims), sum(dims)), dtype=np.float32)
        heads, start = [], 0
        for sc, d in zip(f32, dims, strict=True):
            W[start:start + d, start:start + d] = np.float32(0.5) * (sc["W"] + sc["W"].T)
            w = np.stack([sc["open_w"], sc["ext_w"]], axis=1)
            bias = np.array([sc["open_bias"].reshape(-1)[0], sc["ext_bias"].reshape(-1)[0]],
                            dtype=np.float32)
            heads.append((start, start + d, np.ascontiguousarray(w), bias))
            start += d
        W /= np.float32(k)
        matrix = np.float32(scale) * f32[0]["matrix"]
        return cls(np.ascontiguousarray(matrix, dtype=np.float32), np.ascontiguousarray(W),
                   tuple(heads))

    def gap_costs(self, e: np.ndarray, lengths: Sequence[int] | np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Per-residue (open, extend) costs in nats of embeddings ``e`` (n, D): the members'
        mean of ``softplus(bias + e w)``. ``lengths``: ``e`` holds sequences back to back, and
        each one's costs come from a product of its own rows (one BLAS call a sequence: BLAS
        rounds a row by how many rows share the call, so a batch would move its members' costs
        off what each alone gets)."""
        e = np.ascontiguousarray(e, dtype=np.float32)
        ends = np.cumsum(lengths).tolist() if lengths is not None else [len(e)]
        if ends[-1] != len(e):
            raise ValueError(f"lengths sum to {ends[-1]}, the embeddings have {len(e)} rows")
        g = np.zeros((len(e), 2), dtype=np.float32)
        lin = np.empty((len(e), 2), dtype=np.float32)
        with one_blas_thread():
            for a, b, w, bias in self.heads:
                start = 0
                for end in ends:
                    lin[start:end] = e[start:end, a:b] @ w
                    start = end
                y = lin + bias  # softplus(y) = max(y, 0) + log1p(exp(-|y|)): numpy's SIMD
                g += np.maximum(y, np.float32(0.0)) + np.log1p(np.exp(-np.abs(y)))  # 8x logaddexp
        g /= np.float32(len(self.heads))
        return np.ascontiguousarray(g[:, 0]), np.ascontiguousarray(g[:, 1])

    def query(self, codes: np.ndarray, e: np.ndarray) -> QuerySide:
        """The query's side from its codes and embeddings (Lq, D)."""
        e = np.ascontiguousarray(e, dtype=np.float32).reshape(len(codes), -1)
        with one_blas_thread():
            A = e @ self.W
            rows = self.matrix[np.asarray(codes, dtype=np.int64)]
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
        lens = [len(c) for c in codes]
        o, x = self.gap_costs(np.concatenate(E), lens)
        ends = np.cumsum(lens).tolist()
        gaps = GapCosts.query_against_many(q.open, q.extend,
                                           np.split(o, ends[:-1]), np.split(x, ends[:-1]))
        out = []
        with one_blas_thread():
            for c, e, g in zip(codes, E, gaps, strict=True):
                S = np.ascontiguousarray(q.A @ e.T, dtype=np.float32)  # (Lq, Lt)
                _add_columns(S, q.rows, np.asarray(c, dtype=np.int64))
                out.append((S, g))
        return out


@njit(cache=True, nogil=True)
def _add_columns(S, rows, codes):  # noqa: ANN001, ANN201
    """``S[i, j] += rows[i, codes[j]]`` in place: one pass, no (Lq, Lt) temporary (the float32
    sums of ``S += rows[:, codes]``)."""
    for i in range(S.shape[0]):
        r = rows[i]
        s = S[i]
        for j in range(S.shape[1]):
            s[j] += r[codes[j]]


def _scorer_arrays(state: Mapping[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    missing = [prefix + n for n in SCORER_KEYS if prefix + n not in state]
    if missing:
        raise ValueError(f"weights hold no {', '.join(missing)}")
    return {n: np.asarray(state[prefix + n]) for n in SCORER_KEYS}


@dataclass(frozen=True)
class InferenceAligner:
    """An aligner (or a fused ensemble) for inference from its saved arrays, without torch: the
    encoder kernels (:mod:`homalign.model.encoder_kernel`) and the closed form. The numbers of
    :class:`homalign.model.aligner.AlignerModel` / ``EnsembleAligner`` in eval mode (tests), on
    numpy arrays; embeddings are (1, L, D) arrays. Weights with a pair refiner need the torch
    model (:meth:`from_state` refuses them)."""

    cfg: AlignerConfig
    encoders: tuple[EncoderKernel, ...]  # one a member
    form: ClosedFormScores
    #: the ranking adapter of a single aligner: (sym(W_h) float32 (d, d), shift), or None
    homology: tuple[np.ndarray, float] | None = None

    @classmethod
    def from_state(cls, state: Mapping[str, np.ndarray], meta: Mapping[str, Any]
                   ) -> InferenceAligner:
        """From a weight set's arrays (``safetensors.numpy``) and its JSON (``config``, or
        ``ensemble`` with the members' configs; members' arrays under ``members.k.``)."""
        if meta.get("ensemble"):
            configs = [m["config"] for m in meta["ensemble"]["members"]]
            prefixes = [f"members.{k}." for k in range(len(configs))]
        else:
            configs, prefixes = [meta["config"]], [""]
        cfgs = [AlignerConfig.from_dict(c) for c in configs]
        for c in cfgs:
            if c.pair_channels > 0:
                raise ValueError("a pair refiner needs the torch model")
        if len({c.matrix for c in cfgs}) != 1:
            raise ValueError("ensemble members with different substitution matrices")
        encoders = tuple(EncoderKernel.from_state(state, c.dilations, prefix=p + "encoder.")
                         for c, p in zip(cfgs, prefixes, strict=True))
        form = ClosedFormScores.from_arrays(
            [_scorer_arrays(state, p + "scorer.") for p in prefixes], [c.dim for c in cfgs])
        homology = None
        if len(cfgs) == 1 and "homology.W" in state:
            Wh = np.asarray(state["homology.W"], dtype=np.float32)
            homology = (np.float32(0.5) * (Wh + Wh.T),
                        float(np.asarray(state["homology.shift"], dtype=np.float32).reshape(-1)[0]))
        return cls(cfgs[0], encoders, form, homology)

    @property
    def dim(self) -> int:
        return sum(e.dim for e in self.encoders)

    def embed(self, codes: np.ndarray, tokens: np.ndarray | None = None) -> np.ndarray:
        """float32 (1, L, D): the members' embeddings side by side; ``tokens``: template tokens
        (template weights)."""
        return np.concatenate([e(codes, tokens) for e in self.encoders], axis=-1)[None]

    def embed_many(self, codes: list[np.ndarray]) -> list[np.ndarray]:
        """:meth:`embed` of each sequence, each member in packed rows."""
        per_member = [e.embed_many(codes) for e in self.encoders]
        if len(per_member) == 1:
            return [e[None] for e in per_member[0]]
        return [np.concatenate(es, axis=-1)[None] for es in zip(*per_member, strict=True)]

    def closed_form(self) -> ClosedFormScores:
        return self.form

    def score_many(self, codes_q: np.ndarray, e_q: Any, codes_t: list[np.ndarray],
                   e_t: list[Any]) -> list:
        """(S float32 (Lq, Lt), GapCosts) of the query against each target."""
        q = self.form.query(codes_q, embedding_rows(e_q))
        return self.form.many(q, list(codes_t), [embedding_rows(e) for e in e_t])

    def score_embedded(self, codes_q: np.ndarray, e_q: Any, codes_t: np.ndarray, e_t: Any):
        """(S float32 (Lq, Lt), GapCosts) of one pair."""
        return self.score_many(codes_q, e_q, [codes_t], [e_t])[0]

    def score_pair(self, codes_q: np.ndarray, codes_t: np.ndarray,
                   tokens_t: np.ndarray | None = None):
        """(S, GapCosts) of two encoded sequences."""
        return self.score_embedded(codes_q, self.embed(codes_q), codes_t,
                                   self.embed(codes_t, tokens_t))

    def homology_embedded(self, codes_q: np.ndarray, e_q: Any, codes_t: np.ndarray, e_t: Any,
                          scores=None):
        """(S_h float32 (Lq, Lt), GapCosts): ``S + e_q sym(W_h) e_t^T - shift``, the scores
        whose local forward score ranks homologues (:class:`~homalign.model.scorer.
        HomologyScore`)."""
        if self.homology is None:
            raise ValueError("these weights have no homology adapter")
        if scores is None:
            scores = self.score_embedded(codes_q, e_q, codes_t, e_t)
        S, gaps = scores
        Wh, shift = self.homology
        with one_blas_thread():
            S_h = S + (embedding_rows(e_q) @ Wh) @ embedding_rows(e_t).T - np.float32(shift)
        return np.ascontiguousarray(S_h, dtype=np.float32), gaps


def embedding_rows(e: Any) -> np.ndarray:
    """float32 (L, D) of a (1, L, D) or (L, D) embedding, numpy or torch (detached)."""
    a = e.detach().cpu().numpy() if hasattr(e, "detach") else np.asarray(e)
    return np.ascontiguousarray(a.reshape(-1, a.shape[-1]), dtype=np.float32)


__all__ = ["SCORER_KEYS", "ClosedFormScores", "InferenceAligner", "QuerySide", "embedding_rows"]
