"""Pairwise scorer: substitution scores S[i, j] and position-specific gap costs from embeddings.

``S[i, j] = scale * BLOSUM62[a_i, b_j] + e_i^T W e'_j`` with W symmetric and zero at
initialisation, and per-residue gap costs ``open_i = softplus(o + u . e_i)``,
``extend_i = softplus(x + v . e_i)`` with u, v zero at initialisation and o, x set so that the
untrained scorer is BLOSUM62 with BLAST's 11/1 gaps in nats. The learned gaps use only the
``q_ins_*`` (query residue against a gap) and ``t_del_*`` (target residue against a gap) vectors of
the ``GapCosts`` contract, with the same heads for both sequences, so the scorer is symmetric.
In the spirit of DEDAL (Llinares-Lopez et al., Nature Methods 2023): learned, context-dependent
substitution and gap parameters fed to a (smoothed) Smith-Waterman/Gotoh DP.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from homalign.dp.soft import SoftGaps
from homalign.matrices import substitution_matrix
from homalign.model.config import NATS_PER_HALF_BIT, AlignerConfig
from homalign.model.encoder import PAD


def _inv_softplus(y: float) -> float:
    return y + math.log(-math.expm1(-y))


class PairRefiner(nn.Module):
    """A small 2-D convolutional network over the pair map that adds a correction to S.

    Input channels at cell (i, j): S, the scaled BLOSUM62 score and ``rank`` products
    ``(e_i P)_c (e'_j P)_c``; ``layers`` convolutions of width ``channels`` (GELU) and a final
    one-channel convolution, zero at initialisation (the untrained refiner changes nothing).
    Cells outside either sequence are zeroed before every convolution, so a padded batch gives
    the same corrections as one pair on its own. A cell's correction sees its ``kernel``-wide
    neighbourhood in every layer: the consistency of neighbouring (diagonal) matches, which the
    per-cell bilinear score cannot express.
    """

    def __init__(self, dim: int, channels: int, rank: int, kernel: int, layers: int) -> None:
        super().__init__()
        if kernel % 2 != 1:
            raise ValueError(f"pair_kernel must be odd, got {kernel}")
        self.proj = nn.Linear(dim, rank, bias=False)
        convs = []
        cin = 2 + rank
        for _ in range(layers):
            convs.append(nn.Conv2d(cin, channels, kernel, padding=kernel // 2))
            cin = channels
        self.convs = nn.ModuleList(convs)
        self.out = nn.Conv2d(cin, 1, kernel, padding=kernel // 2)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, S: Tensor, base: Tensor, e_q: Tensor, e_t: Tensor,
                mask: Tensor | None = None) -> Tensor:
        """Refined S; ``mask`` (B, Lq, Lt) marks the cells inside both sequences (None: all)."""
        pq, pt = self.proj(e_q), self.proj(e_t)                      # (B, Lq, r), (B, Lt, r)
        prod = pq.permute(0, 2, 1)[:, :, :, None] * pt.permute(0, 2, 1)[:, :, None, :]
        x = torch.cat([S[:, None], base[:, None], prod], dim=1)
        m = None if mask is None else mask[:, None].to(S.dtype)
        if m is not None:
            x = x * m
        for conv in self.convs:
            x = nn.functional.gelu(conv(x))
            if m is not None:
                x = x * m
        delta = self.out(x)[:, 0]
        return S + (delta if m is None else delta * m[:, 0])


class PairScorer(nn.Module):
    """Embeddings of two sequences -> (S (B, Lq, Lt), SoftGaps)."""

    def __init__(self, cfg: AlignerConfig) -> None:
        super().__init__()
        # scalars are stored as 1-element vectors (tools that view tensors as bytes need dim >= 1)
        m = torch.as_tensor(substitution_matrix(cfg.matrix).copy(), dtype=torch.float32)
        padded = torch.zeros(m.shape[0] + 1, m.shape[1] + 1)
        padded[:-1, :-1] = m
        self.register_buffer("matrix", padded)
        self.log_scale = nn.Parameter(torch.tensor([math.log(NATS_PER_HALF_BIT)]))
        self.W = nn.Parameter(torch.zeros(cfg.dim, cfg.dim))
        self.open_bias = nn.Parameter(torch.tensor([_inv_softplus(cfg.gap_open * NATS_PER_HALF_BIT)]))
        self.ext_bias = nn.Parameter(torch.tensor([_inv_softplus(cfg.gap_extend * NATS_PER_HALF_BIT)]))
        self.open_w = nn.Parameter(torch.zeros(cfg.dim))
        self.ext_w = nn.Parameter(torch.zeros(cfg.dim))
        self.refine = (PairRefiner(cfg.dim, cfg.pair_channels, cfg.pair_rank, cfg.pair_kernel,
                                   cfg.pair_layers) if cfg.pair_channels > 0 else None)

    def gap_costs(self, e: Tensor) -> tuple[Tensor, Tensor]:
        """Per-residue (open, extend) costs in nats, each (B, L)."""
        return (nn.functional.softplus(self.open_bias + e @ self.open_w),
                nn.functional.softplus(self.ext_bias + e @ self.ext_w))

    def base_scores(self, codes_q: Tensor, codes_t: Tensor) -> Tensor:
        """(B, Lq, Lt) unscaled matrix scores ``M[a_i, b_j]``."""
        return self.matrix[codes_q[:, :, None], codes_t[:, None, :]]

    def bilinear(self) -> Tensor:
        """The symmetric (dim, dim) matrix of the ``e_i^T W e'_j`` term."""
        return 0.5 * (self.W + self.W.T)

    def forward(self, codes_q: Tensor, e_q: Tensor, codes_t: Tensor, e_t: Tensor
                ) -> tuple[Tensor, SoftGaps]:
        base = self.base_scores(codes_q, codes_t)
        W = self.bilinear()
        scaled = torch.exp(self.log_scale) * base
        S = scaled + torch.einsum("bid,de,bje->bij", e_q, W, e_t)
        if self.refine is not None:
            mask = None
            if bool((codes_q == PAD).any()) or bool((codes_t == PAD).any()):
                mask = (codes_q != PAD)[:, :, None] & (codes_t != PAD)[:, None, :]
            S = self.refine(S, scaled, e_q, e_t, mask)
        qo, qe = self.gap_costs(e_q)
        to, te = self.gap_costs(e_t)
        B, LQ, LT = S.shape
        gaps = SoftGaps.from_vectors(B, LQ, LT, dtype=S.dtype, q_ins_open=qo, q_ins_ext=qe,
                                     t_del_open=to, t_del_ext=te)
        return S, gaps


class HomologyScore(nn.Module):
    """The ranking score's parameters: an adapter on the substitution scores, a match offset, a
    length slope and a logit scale.

    ``S_h[i, j] = S[i, j] + e_i^T W e'_j - shift`` (``W`` symmetric, zero at initialisation), so
    the untrained score is the aligner's own ``S`` minus a constant offset.
    """

    def __init__(self, dim: int = 32, shift: float = 0.5, slope: float = 1.0,
                 scale: float = 1.0) -> None:
        super().__init__()
        self.W = nn.Parameter(torch.zeros(dim, dim))
        self.shift = nn.Parameter(torch.tensor([shift]))
        self.slope = nn.Parameter(torch.tensor([slope]))
        self.log_scale = nn.Parameter(torch.tensor([math.log(scale)]))

    def substitution(self, S: Tensor, e_q: Tensor, e_t: Tensor) -> Tensor:
        """(B, Lq, Lt) ranking substitution scores from the aligner's S and embeddings."""
        W = 0.5 * (self.W + self.W.T)
        return S + torch.einsum("bid,de,bje->bij", e_q, W, e_t) - self.shift

    def to_dict(self) -> dict[str, float | str]:
        return {"score": "forward-local", "shift": float(self.shift.detach()),
                "slope": float(self.slope.detach()),
                "scale": float(self.log_scale.detach().exp()),
                "adapter_norm": float(self.W.detach().norm())}


__all__ = ["PAD", "HomologyScore", "PairRefiner", "PairScorer"]
