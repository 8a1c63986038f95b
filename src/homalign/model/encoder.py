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

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        # padded positions must stay zero (as the conv's own zero padding of a lone sequence)
        h = (self.norm(x) * mask).transpose(1, 2)
        h = self.conv(h).transpose(1, 2)
        return (x + self.drop(nn.functional.gelu(h))) * mask


class ResidueEncoder(nn.Module):
    """Codes (B, L) -> embeddings (B, L, dim)."""

    def __init__(self, dim: int, kernel: int, dilations: tuple[int, ...], dropout: float) -> None:
        super().__init__()
        self.embed = nn.Embedding(N_CODES + 1, dim, padding_idx=PAD)
        self.blocks = nn.ModuleList(ConvBlock(dim, kernel, d, dropout) for d in dilations)
        self.norm = nn.LayerNorm(dim)

    def forward(self, codes: Tensor) -> Tensor:
        mask = (codes != PAD).unsqueeze(-1).to(self.embed.weight.dtype)
        x = self.embed(codes) * mask
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x) * mask
