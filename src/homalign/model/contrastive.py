"""Homology training signal: rank a query's homolog above unrelated proteins (SCOPe labels).

The CRF likelihood of reference alignments teaches the scorer *where* two related proteins align
but not *whether* they are related: its scores have a positive mean (a "local" alignment of two
unrelated proteins spans them whole), so the local score grows with length and ranks homologs
worse than BLOSUM62 (benchmarks/learned_homology_tune.py). This module adds the missing signal.

A batch holds B SCOPe superfamily pairs (query_k, partner_k) from B different folds. Every query
is scored against every partner by the *local forward score* (log-partition over all local
alignments, HMMER3's ranking score) of ``S_h = S + e W e' - shift`` (a learned adapter and
per-match offset, :class:`HomologyScore`);
``logit[i, j] = scale * (F[i, j] - slope * log(m_i n_j))`` (the Karlin-Altschul length
term). The loss is the symmetric in-batch softmax cross-entropy (InfoNCE; each row's and each
column's own partner is the positive, pairs of the same fold off the diagonal are masked), which
directly rewards the per-query ranking that "sensitivity up to the first false positive" measures.
Gradients reach S_h (and, unless ``adapter_only``, the aligner's S, gaps and encoder) through
the compiled CRF forward-backward (posteriors). Training the adapter alone keeps the aligner's
alignments exactly as they were: sharing the scores degraded alignment (held-out F1 0.797 ->
0.778 in 200 steps of run hom1, docs/learned.md).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from homalign.model.crf import crf_log_partition_batch, score_log_partition_batch
from homalign.model.encoder import PAD
from homalign.model.scorer import HomologyScore


@dataclass
class ScopPairs:
    """SCOPe domains of the training folds grouped by superfamily (at least two members each)."""

    codes: list[np.ndarray]
    fold: np.ndarray  # fold id per domain
    groups: list[np.ndarray]  # domain indices of each superfamily

    def __len__(self) -> int:
        return len(self.groups)


def load_scop_pairs(fasta: str | Path, exclude: set[str], val_fraction: float = 0.08
                    ) -> tuple[ScopPairs, ScopPairs]:
    """(train, validation) superfamily groups; validation = whole folds chosen by a hash."""
    from homalign.sequence import read_sequences

    seqs = [s for s in read_sequences(fasta) if s.id not in exclude]
    sccs = [s.description.split()[0] for s in seqs]
    folds = [".".join(c.split(".")[:2]) for c in sccs]
    fold_ids = {f: k for k, f in enumerate(sorted(set(folds)))}
    by_sf: dict[str, list[int]] = {}
    for k, c in enumerate(sccs):
        by_sf.setdefault(".".join(c.split(".")[:3]), []).append(k)
    cut = int(val_fraction * 10_000)
    out: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    for sf in sorted(by_sf):
        members = by_sf[sf]
        if len(members) < 2:
            continue
        fold = ".".join(sf.split(".")[:2])
        held = zlib.crc32(fold.encode()) % 10_000 < cut
        out[1 if held else 0].append(np.asarray(members))
    codes = [s.codes for s in seqs]
    fold = np.asarray([fold_ids[f] for f in folds])
    return ScopPairs(codes, fold, out[0]), ScopPairs(codes, fold, out[1])


def sample_batch(data: ScopPairs, batch: int, rng: np.random.Generator, window: int = 300
                 ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """B (query, partner) superfamily pairs from B different folds, padded, cropped to ``window``.

    Returns (q codes (B, Lq), partner codes (B, Lt), lq, lt, same_fold (B, B) bool).
    """
    picked: list[tuple[int, int]] = []
    used: set[int] = set()
    while len(picked) < batch:
        g = data.groups[int(rng.integers(len(data.groups)))]
        a, b = (int(x) for x in rng.choice(g, 2, replace=False))
        if int(data.fold[a]) in used:
            continue
        used.add(int(data.fold[a]))
        picked.append((a, b))

    def window_of(c: np.ndarray) -> np.ndarray:
        if len(c) <= window:
            return c
        s = int(rng.integers(len(c) - window + 1))
        return c[s:s + window]

    qs = [window_of(data.codes[a]) for a, _ in picked]
    ts = [window_of(data.codes[b]) for _, b in picked]

    def pad(cs: list[np.ndarray]) -> Tensor:
        out = np.full((len(cs), max(len(c) for c in cs)), PAD, dtype=np.int64)
        for k, c in enumerate(cs):
            out[k, :len(c)] = c
        return torch.as_tensor(out)

    f = np.array([data.fold[a] for a, _ in picked])
    same = torch.as_tensor(f[:, None] == f[None, :])
    return (pad(qs), pad(ts), torch.tensor([len(c) for c in qs]),
            torch.tensor([len(c) for c in ts]), same)


def homology_logits(model: nn.Module, head: HomologyScore, q: Tensor, t: Tensor, lq: Tensor,
                    lt: Tensor, adapter_only: bool = False) -> Tensor:
    """(B, B) logits: local forward score of every query against every partner.

    ``adapter_only``: the aligner (encoder, scorer) is a fixed feature extractor and only
    ``head`` learns (its gradient stops at S, the gaps and the embeddings).
    """
    B = q.shape[0]
    with torch.set_grad_enabled(torch.is_grad_enabled() and not adapter_only):
        e_q, e_t = model.encoder(q), model.encoder(t)
        qi = torch.arange(B).repeat_interleave(B)
        tj = torch.arange(B).repeat(B)
        S, gaps = model.scorer(q[qi], e_q[qi], t[tj], e_t[tj])
    S_h = head.substitution(S, e_q[qi], e_t[tj])
    logz = score_log_partition_batch if adapter_only else crf_log_partition_batch
    F = logz(S_h, gaps, lq[qi], lt[tj], "local").view(B, B)
    log_mn = torch.log(lq.to(F.dtype))[:, None] + torch.log(lt.to(F.dtype))[None, :]
    return head.log_scale.exp() * (F - head.slope * log_mn)


def homology_loss(logits: Tensor, same_fold: Tensor) -> Tensor:
    """Symmetric in-batch softmax cross-entropy; same-fold off-diagonal pairs are masked."""
    B = logits.shape[0]
    eye = torch.eye(B, dtype=torch.bool)
    masked = logits.masked_fill(same_fold & ~eye, float("-inf"))
    target = torch.arange(B)
    return 0.5 * (nn.functional.cross_entropy(masked, target)
                  + nn.functional.cross_entropy(masked.T, target))


__all__ = ["HomologyScore", "ScopPairs", "homology_logits", "homology_loss", "load_scop_pairs",
           "sample_batch"]
