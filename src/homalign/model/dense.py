"""Per-sequence vectors for the dense prefilter of the learned search.

A sequence becomes one unit vector ``v``; two sequences are close when ``v . v'`` is high. The
encoder reads each residue's one-hot code and its per-residue embedding under the learned ranking
weights (``learned_search``: the same embeddings ``homalign makedb`` stores for the ranking, so a
database's vectors cost one small pass over what is already there), then

    h = conv1x1(x);  h += conv_d(gelu(norm(h)))  for dilations d;  v = norm(W [attn(h); mean(h)])

with attention pooling ``attn(h) = sum_i softmax(a . h_i) h_i``. It is trained contrastively on
SCOPe train folds (:mod:`homalign.model.dense_task`): two members of a superfamily are a positive
pair, the partners of other folds in the batch are the negatives (InfoNCE).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from homalign.alphabet import ALPHABET

#: residue codes of the one-hot input (homalign's alphabet, NCBI order, X included)
N_CODES = len(ALPHABET)
#: residues of one inference batch (sorted by length, so padding is small)
BATCH_RESIDUES = 64_000


@dataclass(frozen=True)
class DenseConfig:
    """Shape of a :class:`DenseEncoder`. ``ranking_dim``: width of the ranking embeddings it
    reads (0: codes only)."""

    dim: int = 128
    channels: int = 128
    kernel: int = 5
    dilations: tuple[int, ...] = (1, 2, 4, 8)
    ranking_dim: int = 32

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DenseConfig:
        unknown = set(d) - {f for f in cls.__dataclass_fields__}
        if unknown:
            raise ValueError(f"unknown dense config fields: {sorted(unknown)}")
        d = dict(d)
        if "dilations" in d:
            d["dilations"] = tuple(int(x) for x in d["dilations"])
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["dilations"] = list(self.dilations)
        return out


class DenseEncoder(nn.Module):
    """Sequences (one-hot codes + ranking embeddings) to unit vectors (see module docstring)."""

    def __init__(self, cfg: DenseConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg = cfg if cfg is not None else DenseConfig()
        c = cfg.channels
        self.inp = nn.Conv1d(N_CODES + cfg.ranking_dim, c, 1)
        self.blocks = nn.ModuleList(
            nn.Conv1d(c, c, cfg.kernel, padding=(cfg.kernel // 2) * d, dilation=d)
            for d in cfg.dilations)
        self.norms = nn.ModuleList(nn.GroupNorm(1, c) for _ in cfg.dilations)
        self.att = nn.Conv1d(c, 1, 1)
        self.out = nn.Linear(2 * c, cfg.dim)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """``x`` (B, N_CODES + ranking_dim, L) features, ``mask`` (B, L) 1 on residues; returns
        (B, dim) unit vectors."""
        h = self.inp(x) * mask[:, None]
        for conv, norm in zip(self.blocks, self.norms, strict=True):
            h = (h + conv(F.gelu(norm(h)))) * mask[:, None]
        a = self.att(h).squeeze(1).masked_fill(mask == 0, float("-inf")).softmax(-1)
        pooled = torch.cat([(h * a[:, None]).sum(-1),
                            h.sum(-1) / mask.sum(-1, keepdim=True).clamp_min(1.0)], -1)
        return F.normalize(self.out(pooled), dim=-1)

    def features(self, codes: list[np.ndarray], embeddings: list[np.ndarray] | None
                 ) -> tuple[Tensor, Tensor]:
        """The padded (x, mask) of sequences ``codes`` with their ranking ``embeddings``
        ((L, ranking_dim) each; None when ``ranking_dim`` is 0)."""
        need = self.cfg.ranking_dim > 0
        if need != (embeddings is not None):
            raise ValueError("ranking embeddings are needed exactly when ranking_dim > 0")
        L = max((len(c) for c in codes), default=1)
        x = np.zeros((len(codes), N_CODES + self.cfg.ranking_dim, max(L, 1)), dtype=np.float32)
        mask = np.zeros((len(codes), max(L, 1)), dtype=np.float32)
        for b, c in enumerate(codes):
            n = len(c)
            x[b, np.asarray(c, dtype=np.int64), np.arange(n)] = 1.0
            if embeddings is not None:
                e = np.asarray(embeddings[b], dtype=np.float32)
                if e.shape != (n, self.cfg.ranking_dim):
                    raise ValueError(f"embedding of sequence {b} has shape {e.shape}, "
                                     f"expected ({n}, {self.cfg.ranking_dim})")
                x[b, N_CODES:, :n] = e.T
            mask[b, :n] = 1.0
        return torch.from_numpy(x), torch.from_numpy(mask)

    @torch.no_grad()
    def embed_many(self, codes: list[np.ndarray], embeddings: list[np.ndarray] | None = None,
                   batch_residues: int = BATCH_RESIDUES) -> np.ndarray:
        """float32 (n, dim) unit vectors, in eval mode, batched by length. A sequence's vector
        does not depend on its batch beyond float rounding of the convolutions."""
        was = self.training
        self.eval()
        out = np.zeros((len(codes), self.cfg.dim), dtype=np.float32)
        order = np.argsort([len(c) for c in codes], kind="stable")
        start = 0
        try:
            while start < len(order):
                stop = start + 1
                while (stop < len(order)
                       and (stop + 1 - start) * len(codes[order[stop]]) <= batch_residues):
                    stop += 1
                idx = order[start:stop]
                x, m = self.features([codes[k] for k in idx],
                                     None if embeddings is None else [embeddings[k] for k in idx])
                out[idx] = self(x, m).numpy()
                start = stop
        finally:
            self.train(was)
        return out


__all__ = ["BATCH_RESIDUES", "DenseConfig", "DenseEncoder", "N_CODES"]
