"""The learned aligner network: residue encoder + pairwise scorer (+ auxiliary structure heads)."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from homalign.dp.soft import SoftGaps
from homalign.model.config import AlignerConfig
from homalign.model.encoder import PAD, ResidueEncoder
from homalign.model.scorer import HomologyScore, PairScorer

N_SS = 3  # helix, strand, other (from the JOY "secondary structure and phi angle" track)
N_ACC = 2  # accessible, buried (JOY "solvent accessibility": T / F)


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

    @torch.no_grad()
    def embed(self, codes: np.ndarray, tokens: np.ndarray | None = None) -> Tensor:
        """Embeddings (1, L, dim) of one encoded sequence (call in eval mode); ``tokens``: its
        template tokens (template mode)."""
        tok = None if tokens is None else torch.as_tensor(np.asarray(tokens, dtype=np.int64))[None]
        return self.encoder(torch.as_tensor(codes.astype(np.int64))[None], tok)

    @torch.no_grad()
    def score_embedded(self, codes_q: np.ndarray, e_q: Tensor, codes_t: np.ndarray, e_t: Tensor,
                       profile_q: np.ndarray | None = None):
        """(S float32 (Lq, Lt), GapCosts) for the exact DP, from precomputed embeddings.

        ``profile_q`` (Lq, K): a query profile's residue weights (see ``PairScorer.forward``).
        """
        from homalign.dp import GapCosts

        cq = torch.as_tensor(codes_q.astype(np.int64))[None]
        ct = torch.as_tensor(codes_t.astype(np.int64))[None]
        prof = None if profile_q is None else torch.as_tensor(profile_q, dtype=torch.float32)[None]
        S, gaps = self.scorer(cq, e_q, ct, e_t, prof)
        lq, lt = len(codes_q), len(codes_t)
        S_np = np.ascontiguousarray(S[0].numpy(), dtype=np.float32)
        return S_np, GapCosts(**gaps.to_numpy(0, lq, lt))

    @torch.no_grad()
    def homology_embedded(self, codes_q: np.ndarray, e_q: Tensor, codes_t: np.ndarray,
                          e_t: Tensor, scores=None, profile_q: np.ndarray | None = None):
        """(S_h float32 (Lq, Lt), GapCosts): the scores whose local forward score ranks homologs.

        ``scores``: this pair's ``score_embedded`` result, reused instead of recomputed.
        """
        if scores is None:
            scores = self.score_embedded(codes_q, e_q, codes_t, e_t, profile_q)
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


__all__ = ["AlignerModel", "N_ACC", "N_SS", "PAD"]
