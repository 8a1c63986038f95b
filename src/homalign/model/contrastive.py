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

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from homalign.model.crf import crf_log_partition_batch, score_log_partition_batch
from homalign.model.encoder import PAD
from homalign.model.scorer import HomologyScore
from homalign.scop import is_heldout_fold


@dataclass
class ScopPairs:
    """SCOPe domains of the training folds grouped by superfamily (at least two members each)."""

    codes: list[np.ndarray]
    fold: np.ndarray  # fold id per domain
    groups: list[np.ndarray]  # domain indices of each superfamily
    db: object | None = None  # SequenceDB of the same domains (for hard-negative mining)
    hard: dict[int, np.ndarray] = field(default_factory=dict)  # domain -> its hard negatives

    def __len__(self) -> int:
        return len(self.groups)

    def members(self) -> np.ndarray:
        return np.concatenate(self.groups) if self.groups else np.zeros(0, dtype=np.int64)

    def hard_negatives(self, k: int, top: int = 20) -> np.ndarray:
        """Other-fold domains of this split that the k-mer prefilter ranks highest for ``k``
        (the false positives a BLOSUM62 ranking would meet first), memoised."""
        if k not in self.hard:
            from homalign.search.prefilter import prefilter_scores

            assert self.db is not None, "hard negatives need ScopPairs.db"
            sc = np.asarray(prefilter_scores(self.codes[k], self.db), dtype=np.float64)
            allowed = np.zeros(len(self.codes), dtype=bool)
            allowed[self.members()] = True
            sc[~allowed | (self.fold == self.fold[k])] = -np.inf
            order = np.argsort(-sc, kind="stable")[:top]
            self.hard[k] = order[np.isfinite(sc[order])]
        return self.hard[k]


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
    out: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    for sf in sorted(by_sf):
        members = by_sf[sf]
        if len(members) < 2:
            continue
        held = is_heldout_fold(".".join(sf.split(".")[:2]), val_fraction)
        out[1 if held else 0].append(np.asarray(members))
    from homalign.search.database import SequenceDB

    codes = [s.codes for s in seqs]
    fold = np.asarray([fold_ids[f] for f in folds])
    db = SequenceDB.from_sequences(seqs)
    return ScopPairs(codes, fold, out[0], db), ScopPairs(codes, fold, out[1], db)


def sample_batch(data: ScopPairs, batch: int, rng: np.random.Generator, window: int = 300,
                 hard: bool = False) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """B (query, partner) superfamily pairs from B different folds, padded, cropped to ``window``.

    Returns (q codes (B, Lq), column codes (C, Lt), lq, lt, same_fold (B, C) bool): the columns
    are the B partners, then (``hard=True``) one hard negative per query
    (:meth:`ScopPairs.hard_negatives`), so C = B or 2B.
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

    cols = [b for _, b in picked]
    if hard:
        for a, _ in picked:
            neg = data.hard_negatives(a)
            cols.append(int(rng.choice(neg)) if len(neg) else int(rng.choice(data.members())))
    qs = [window_of(data.codes[a]) for a, _ in picked]
    ts = [window_of(data.codes[c]) for c in cols]

    def pad(cs: list[np.ndarray]) -> Tensor:
        out = np.full((len(cs), max(len(c) for c in cs)), PAD, dtype=np.int64)
        for k, c in enumerate(cs):
            out[k, :len(c)] = c
        return torch.as_tensor(out)

    fq = np.array([data.fold[a] for a, _ in picked])
    fc = np.array([data.fold[c] for c in cols])
    same = torch.as_tensor(fq[:, None] == fc[None, :])
    return (pad(qs), pad(ts), torch.tensor([len(c) for c in qs]),
            torch.tensor([len(c) for c in ts]), same)


def homology_logits(model: nn.Module, head: HomologyScore, q: Tensor, t: Tensor, lq: Tensor,
                    lt: Tensor, adapter_only: bool = False) -> Tensor:
    """(B, C) logits: local forward score of every query against every column sequence.

    ``adapter_only``: the aligner (encoder, scorer) is a fixed feature extractor and only
    ``head`` learns (its gradient stops at S, the gaps and the embeddings).
    """
    B, C = q.shape[0], t.shape[0]
    with torch.set_grad_enabled(torch.is_grad_enabled() and not adapter_only):
        e_q, e_t = model.encoder(q), model.encoder(t)
        qi = torch.arange(B).repeat_interleave(C)
        tj = torch.arange(C).repeat(B)
        S, gaps = model.scorer(q[qi], e_q[qi], t[tj], e_t[tj])
    S_h = head.substitution(S, e_q[qi], e_t[tj])
    logz = score_log_partition_batch if adapter_only else crf_log_partition_batch
    F = logz(S_h, gaps, lq[qi], lt[tj], "local").view(B, C)
    log_mn = torch.log(lq.to(F.dtype))[:, None] + torch.log(lt.to(F.dtype))[None, :]
    return head.log_scale.exp() * (F - head.slope * log_mn)


def homology_loss(logits: Tensor, same_fold: Tensor) -> Tensor:
    """Symmetric in-batch softmax cross-entropy over (B, C) logits whose first B columns are the
    partners (the diagonal holds the positives); same-fold non-positive pairs are masked. Rows
    compare a query's partner with every column (hard negatives included), columns compare a
    partner's query with the other queries."""
    B, C = logits.shape
    pos = torch.zeros(B, C, dtype=torch.bool)
    pos[:, :B] = torch.eye(B, dtype=torch.bool)
    masked = logits.masked_fill(same_fold & ~pos, float("-inf"))
    target = torch.arange(B)
    return 0.5 * (nn.functional.cross_entropy(masked, target)
                  + nn.functional.cross_entropy(masked[:, :B].T, target))


__all__ = ["HomologyScore", "ScopPairs", "homology_logits", "homology_loss", "load_scop_pairs",
           "sample_batch"]
