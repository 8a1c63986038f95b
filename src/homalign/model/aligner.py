"""The learned aligner network: residue encoder + pairwise scorer (+ auxiliary structure heads)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields

import numpy as np
import torch
from torch import Tensor, nn

from homalign.dp.soft import SoftGaps
from homalign.model.config import AlignerConfig
from homalign.model.encoder import PAD, ResidueEncoder
from homalign.model.encoder_kernel import EMBED_BATCH_RESIDUES, EncoderKernel, pack_rows
from homalign.model.inference import ClosedFormScores, embedding_rows
from homalign.model.scorer import HomologyScore, PairScorer

N_SS = 3  # helix, strand, other (from the JOY "secondary structure and phi angle" track)
N_ACC = 2  # accessible, buried (JOY "solvent accessibility": T / F)


def packed_batches(codes: list[np.ndarray], gap: int, residues: int = EMBED_BATCH_RESIDUES
                   ) -> Iterator[tuple[np.ndarray, np.ndarray, Tensor]]:
    """:func:`homalign.model.encoder_kernel.pack_rows` with each row as an int64 (1, N) tensor."""
    for idx, starts, row in pack_rows(codes, gap, residues):
        yield idx, starts, torch.from_numpy(row)[None]


def _torch_scores(score, codes_q: np.ndarray, codes_t: np.ndarray):
    """(S float32, GapCosts) of one pair from ``score(cq, ct) -> (S, SoftGaps)`` on
    batch-of-one tensors (the torch scorers: models with a pair refiner)."""
    from homalign.dp import GapCosts

    cq = torch.as_tensor(codes_q.astype(np.int64))[None]
    ct = torch.as_tensor(np.asarray(codes_t).astype(np.int64))[None]
    S, gaps = score(cq, ct)
    return (np.ascontiguousarray(S[0].numpy(), dtype=np.float32),
            GapCosts(**gaps.to_numpy(0, len(codes_q), len(codes_t))))


class AlignerModel(nn.Module):
    """Sequences in, alignment scores out.

    ``forward(codes_q, codes_t)`` takes padded (B, L) code tensors (pad = ``PAD``) and returns
    ``(S, gaps, e_q, e_t)``; ``ss_logits(e)``/``acc_logits(e)`` are the auxiliary heads used only
    in training (secondary structure and accessibility predicted from sequence).
    """

    def __init__(self, cfg: AlignerConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg or AlignerConfig()
        c = self.cfg
        self.encoder = ResidueEncoder(c.dim, c.kernel, c.dilations, c.dropout, c.template)
        self.scorer = PairScorer(c)
        self.ss_head = nn.Linear(c.dim, N_SS)
        self.acc_head = nn.Linear(c.dim, N_ACC)
        self.homology = HomologyScore(c.dim)  # ranking adapter (homalign.model.contrastive)

    def forward(self, codes_q: Tensor, codes_t: Tensor, tokens_t: Tensor | None = None
                ) -> tuple[Tensor, SoftGaps, Tensor, Tensor]:
        """``tokens_t``: the target's template tokens (template mode; ``cfg.template``)."""
        e_q = self.encoder(codes_q)
        e_t = self.encoder(codes_t, tokens_t)
        S, gaps = self.scorer(codes_q, e_q, codes_t, e_t)
        return S, gaps, e_q, e_t

    def ss_logits(self, e: Tensor) -> Tensor:
        return self.ss_head(e)

    def acc_logits(self, e: Tensor) -> Tensor:
        return self.acc_head(e)

    def encoder_kernel(self) -> EncoderKernel | None:
        """The encoder's inference form (:mod:`homalign.model.encoder_kernel`) for its current
        weights, or None in training mode (dropout); rebuilt when a parameter changes (an
        optimiser step or a load bumps its version)."""
        if self.encoder.training:
            return None
        key = tuple((id(p), p._version) for p in self.encoder.parameters())
        cached = self.__dict__.get("_kernel")
        if cached is None or cached[0] != key:
            cached = (key, EncoderKernel.from_encoder(self.encoder))
            self.__dict__["_kernel"] = cached
        return cached[1]

    @torch.no_grad()
    def embed(self, codes: np.ndarray, tokens: np.ndarray | None = None) -> Tensor:
        """Embeddings (1, L, dim) of one encoded sequence; ``tokens``: its template tokens
        (template mode). In eval mode the encoder kernel computes them (torch's values to float32
        rounding), in training mode the torch encoder."""
        kernel = self.encoder_kernel()
        if kernel is not None:
            return torch.from_numpy(kernel(codes, tokens))[None]
        tok = None if tokens is None else torch.as_tensor(np.asarray(tokens, dtype=np.int64))[None]
        return self.encoder(torch.as_tensor(codes.astype(np.int64))[None], tok)

    @torch.no_grad()
    def embed_many(self, codes: list[np.ndarray]) -> list[Tensor]:
        """:meth:`embed` of each sequence, packed into rows of whole sequences
        (:func:`packed_batches`: equal to each sequence embedded alone, to float rounding)."""
        kernel = self.encoder_kernel()
        if kernel is not None:
            return [torch.from_numpy(e)[None] for e in kernel.embed_many(codes)]
        out: list[Tensor] = [torch.empty(0)] * len(codes)
        for idx, starts, row in packed_batches(codes, self.encoder.reach):
            e = self.encoder(row)
            for k, s in zip(idx.tolist(), starts.tolist(), strict=True):
                out[k] = e[:, s:s + len(codes[k])]
        return out

    @torch.no_grad()
    def score_embedded(self, codes_q: np.ndarray, e_q: Tensor, codes_t: np.ndarray, e_t: Tensor):
        """(S float32 (Lq, Lt), GapCosts) for the exact DP, from precomputed embeddings."""
        return self.score_many(codes_q, e_q, [codes_t], [e_t])[0]

    @torch.no_grad()
    def score_many(self, codes_q: np.ndarray, e_q: Tensor, codes_t: list[np.ndarray],
                   e_t: list[Tensor]) -> list:
        """:meth:`score_embedded` of the query against each target: the closed form
        (:mod:`homalign.model.inference`) with the query's side computed once; a model with a
        pair refiner runs its torch scorer pair by pair."""
        form = self.closed_form()
        if form is not None:
            q = form.query(codes_q, embedding_rows(e_q))
            return form.many(q, list(codes_t), [embedding_rows(e) for e in e_t])
        return [_torch_scores(lambda cq, ct, e=e: self.scorer(cq, e_q, ct, e), codes_q, c)
                for c, e in zip(codes_t, e_t, strict=True)]

    def closed_form(self) -> ClosedFormScores | None:
        """The inference form of the scorer's current weights (None with a pair refiner)."""
        if self.scorer.refine is not None:
            return None
        return ClosedFormScores.from_scorers([self.scorer], [self.cfg.dim])

    @torch.no_grad()
    def homology_embedded(self, codes_q: np.ndarray, e_q: Tensor, codes_t: np.ndarray,
                          e_t: Tensor, scores=None):
        """(S_h float32 (Lq, Lt), GapCosts): the scores whose local forward score ranks homologs.

        ``scores``: this pair's ``score_embedded`` result, reused instead of recomputed.
        """
        if scores is None:
            scores = self.score_embedded(codes_q, e_q, codes_t, e_t)
        S, gaps = scores
        S_h = self.homology.substitution(torch.as_tensor(S)[None], e_q, e_t)[0]
        return np.ascontiguousarray(S_h.numpy(), dtype=np.float32), gaps

    def score_pair(self, codes_q: np.ndarray, codes_t: np.ndarray,
                   tokens_t: np.ndarray | None = None):
        """(S float32 (Lq, Lt), GapCosts) of two encoded sequences (eval mode, no gradient)."""
        return self.score_embedded(codes_q, self.embed(codes_q), codes_t,
                                   self.embed(codes_t, tokens_t))

    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def _mean_scores(outs: list[tuple[Tensor, SoftGaps]]) -> tuple[Tensor, SoftGaps]:
    """The element-wise mean of K members' (S, SoftGaps)."""
    k = len(outs)
    S = sum(o[0] for o in outs) / k
    gaps = SoftGaps(**{f.name: sum(getattr(o[1], f.name) for o in outs) / k
                       for f in fields(SoftGaps)})
    return S, gaps


class EnsembleAligner(nn.Module):
    """K aligners with the same decoding settings whose scores are averaged."""

    def __init__(self, members: list[AlignerModel]) -> None:
        super().__init__()
        if len(members) < 2:
            raise ValueError(f"an ensemble needs at least two members, got {len(members)}")
        first = members[0].cfg
        for k, m in enumerate(members[1:], start=1):
            for field in ("decode_mode", "mea_threshold", "template", "matrix"):
                if getattr(m.cfg, field) != getattr(first, field):
                    raise ValueError(f"ensemble member {k} has {field}={getattr(m.cfg, field)!r}, "
                                     f"member 0 has {getattr(first, field)!r}")
        self.members = nn.ModuleList(members)
        self.cfg = first
        self.dims = [m.cfg.dim for m in members]
        # without pair refiners the mean S is one matrix lookup plus one block-diagonal bilinear
        # form over the concatenated embeddings (the same numbers, one lookup instead of K)
        m0 = members[0].scorer.matrix
        self._fused = all(m.scorer.refine is None and torch.equal(m.scorer.matrix, m0)
                          for m in members)

    def _split(self, e: Tensor) -> list[Tensor]:
        if e.shape[-1] != sum(self.dims):
            raise ValueError(f"ensemble embedding has width {e.shape[-1]}, expected "
                             f"{sum(self.dims)} (the members' {self.dims} concatenated)")
        return list(torch.split(e, self.dims, dim=-1))

    def forward(self, codes_q: Tensor, codes_t: Tensor, tokens_t: Tensor | None = None
                ) -> tuple[Tensor, SoftGaps, Tensor, Tensor]:
        """Padded batches, as ``AlignerModel.forward``: (mean S, mean gap costs, e_q, e_t) with
        the members' embeddings concatenated."""
        outs = [m(codes_q, codes_t, tokens_t) for m in self.members]
        S, gaps = _mean_scores([(o[0], o[1]) for o in outs])
        return (S, gaps, torch.cat([o[2] for o in outs], dim=-1),
                torch.cat([o[3] for o in outs], dim=-1))

    @torch.no_grad()
    def embed(self, codes: np.ndarray, tokens: np.ndarray | None = None) -> Tensor:
        """(1, L, sum of member dims): the members' embeddings side by side."""
        return torch.cat([m.embed(codes, tokens) for m in self.members], dim=-1)

    @torch.no_grad()
    def embed_many(self, codes: list[np.ndarray]) -> list[Tensor]:
        """:meth:`embed` of each sequence, each member in packed rows."""
        per_member = [m.embed_many(codes) for m in self.members]
        return [torch.cat(es, dim=-1) for es in zip(*per_member, strict=True)]

    @torch.no_grad()
    def closed_form(self) -> ClosedFormScores | None:
        """The inference form of the members' mean scores (None unless ``_fused``)."""
        if not self._fused:
            return None
        return ClosedFormScores.from_scorers([m.scorer for m in self.members], self.dims)

    @torch.no_grad()
    def score_many(self, codes_q: np.ndarray, e_q: Tensor, codes_t: list[np.ndarray],
                   e_t: list[Tensor]) -> list:
        """(S float32 (Lq, Lt), GapCosts) against each target: the members' mean S and mean
        gap-cost vectors (the closed form when ``_fused``, else the members' torch scorers)."""
        form = self.closed_form()
        if form is not None:
            q = form.query(codes_q, embedding_rows(e_q))
            return form.many(q, list(codes_t), [embedding_rows(e) for e in e_t])

        def mean(cq: Tensor, ct: Tensor, e: Tensor) -> tuple:
            return _mean_scores([m.scorer(cq, a, ct, b) for m, a, b in
                                 zip(self.members, self._split(e_q), self._split(e),
                                     strict=True)])

        return [_torch_scores(lambda cq, ct, e=e: mean(cq, ct, e), codes_q, c)
                for c, e in zip(codes_t, e_t, strict=True)]

    def score_embedded(self, codes_q: np.ndarray, e_q: Tensor, codes_t: np.ndarray, e_t: Tensor):
        """(S float32 (Lq, Lt), GapCosts) of one pair (:meth:`score_many`)."""
        return self.score_many(codes_q, e_q, [codes_t], [e_t])[0]

    # the same composition as a single aligner's (embed both, then score)
    score_pair = AlignerModel.score_pair
    n_parameters = AlignerModel.n_parameters


__all__ = ["N_ACC", "N_SS", "PAD", "AlignerModel", "EnsembleAligner"]
