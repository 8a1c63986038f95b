"""Residue encoder: embedding + a few residual dilated 1-D convolutions (small on purpose).

Padding positions (code ``PAD``) are zeroed after every layer so that a padded batch, or a row of
sequences with at least ``reach`` pads between them, gives the same embeddings as each sequence
alone.
"""

from __future__ import annotations

from torch import Tensor, nn

from homalign.alphabet import N_CODES
from homalign.model.encoder_kernel import N_TEMPLATE, PAD


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
        # the conv reads a contiguous (B, dim, L) copy: on a transposed view oneDNN runs ~4x
        # slower (the same bits)
        h = (self.norm(x) * mask).transpose(1, 2).contiguous()
        h = self.conv(h).transpose(1, 2)
        return (x + self.drop(nn.functional.gelu(h))) * mask


class ResidueEncoder(nn.Module):
    """Codes (B, L) -> embeddings (B, L, dim).

    With ``template=True`` the encoder also reads known structure annotations of a protein
    (template tokens, :func:`template_tokens`), added to the residue embeddings before the
    convolutions; their embedding starts at zero, so a template encoder initialised from a
    sequence-only one is that encoder until trained, and token 0 (nothing known) never adds anything.
    """

    def __init__(self, dim: int, kernel: int, dilations: tuple[int, ...], dropout: float,
                 template: bool = False) -> None:
        super().__init__()
        self.embed = nn.Embedding(N_CODES + 1, dim, padding_idx=PAD)
        self.blocks = nn.ModuleList(ConvBlock(dim, kernel, d, dropout) for d in dilations)
        self.norm = nn.LayerNorm(dim)
        self.template = nn.Embedding(N_TEMPLATE, dim, padding_idx=0) if template else None
        if self.template is not None:
            nn.init.zeros_(self.template.weight)

    @property
    def reach(self) -> int:
        """Positions either side that one convolution reads (the widest block's)."""
        return max(int(b.conv.padding[0]) for b in self.blocks)

    def forward(self, codes: Tensor, tokens: Tensor | None = None) -> Tensor:
        mask = (codes != PAD).unsqueeze(-1).to(self.embed.weight.dtype)
        x = self.embed(codes)
        if tokens is not None:
            if self.template is None:
                raise ValueError("this encoder was built without template=True")
            x = x + self.template(tokens)
        x = x * mask
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x) * mask
