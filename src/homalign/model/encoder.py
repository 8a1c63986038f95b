"""Residue encoder: embedding + a few residual dilated 1-D convolutions (small on purpose).

Padding positions (code ``PAD``) are zeroed after every layer so that a padded batch gives the same
embeddings as each sequence alone.
"""

from __future__ import annotations

from torch import Tensor, nn

from homalign.alphabet import N_CODES

PAD = N_CODES
"""Code used to pad batches (one past the alphabet)."""


class ConvBlock(nn.Module):
    """Pre-norm residual block: LayerNorm -> dilated conv -> GELU -> dropout, added to the input."""

    def __init__(self, dim: int, kernel: int, dilation: int, dropout: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.conv = nn.Conv1d(dim, dim, kernel, padding=dilation * (kernel - 1) // 2,
                              dilation=dilation)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor, mask: Tensor | None) -> Tensor:
        # padded positions must stay zero (as the conv's own zero padding of a lone sequence);
        # mask None: no padding (one sequence), nothing to zero
        h = self.norm(x)
        if mask is not None:
            h = h * mask
        h = self.conv(h.transpose(1, 2)).transpose(1, 2)
        x = x + self.drop(nn.functional.gelu(h))
        return x if mask is None else x * mask


class ResidueEncoder(nn.Module):
    """Codes (B, L) -> embeddings (B, L, dim)."""

    def __init__(self, dim: int, kernel: int, dilations: tuple[int, ...], dropout: float) -> None:
        super().__init__()
        self.embed = nn.Embedding(N_CODES + 1, dim, padding_idx=PAD)
        self.blocks = nn.ModuleList(ConvBlock(dim, kernel, d, dropout) for d in dilations)
        self.norm = nn.LayerNorm(dim)

    def forward(self, codes: Tensor) -> Tensor:
        if not bool((codes == PAD).any()):
            x = self.embed(codes)
            for block in self.blocks:
                x = block(x, None)
            return self.norm(x)
        mask = (codes != PAD).unsqueeze(-1).to(self.embed.weight.dtype)
        x = self.embed(codes) * mask
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x) * mask
