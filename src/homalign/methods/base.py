"""What a method is: how to represent two proteins, how to score them, and which DP aligns them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from homalign.alignment import Alignment
from homalign.sequence import Sequence


@dataclass(frozen=True)
class PairScores:
    """The score step's output: S[i, j] plus position-specific gaps and the DP mode to use."""

    S: np.ndarray
    gaps: Any  # homalign.dp.GapCosts
    mode: str = "local"
    kind: str = "viterbi"  # the pair's score: best path ("viterbi") or log-partition ("forward")


def score_values(scores: list[PairScores]) -> np.ndarray:
    """float64 score of each pair: its best-path score (batched, score-only DP) or, for
    ``kind="forward"``, the log-partition over all its alignments (HMMER3's forward score)."""
    from homalign.dp import align_batch
    from homalign.dp.posterior import log_partition

    out = np.empty(len(scores), dtype=np.float64)
    groups: dict[tuple[str, str], list[int]] = {}
    for n, ps in enumerate(scores):
        if ps.kind not in ("viterbi", "forward"):
            raise ValueError(f"unknown score kind {ps.kind!r}; expected 'viterbi' or 'forward'")
        groups.setdefault((ps.kind, ps.mode), []).append(n)
    for (kind, mode), idx in groups.items():
        if kind == "forward":
            for n in idx:
                out[n] = log_partition(scores[n].S, scores[n].gaps, mode=mode)
            continue
        res = align_batch([scores[n].S for n in idx], [scores[n].gaps for n in idx], mode=mode,
                          score_only=True)
        for n, r in zip(idx, res, strict=True):
            out[n] = float(r) if np.isscalar(r) else float(r.score)
    return out


@dataclass(frozen=True)
class Method:
    """A registry entry.

    ``align(query, target, **options)`` is always present. Methods built on the shared DP also give
    ``prepare`` (sequence → reusable representation, built once per protein) and ``score``
    (two representations → PairScores), which ``homalign.search`` uses to score one query against
    many targets without rebuilding the query. Peers (external programs) only give ``align``.
    ``available()`` returns None when the method can run here, else the reason it cannot.
    ``align_prepared(query, target, qrep, trep, **options)`` (optional) is ``align`` given the two
    prepared representations; ``search`` traces its hits back with it when present (the learned
    method: the MEA alignment that ``align`` gives, not the best path of the ranking scores).
    ``fingerprint()`` (optional) identifies the method's scoring beyond its options — e.g. a hash of
    learned weights — so caches keyed on the method (E-value calibration) notice a new model.
    ``null_params()`` (optional) returns the method's own null-score law (a
    :class:`homalign.stats.EVDParams`, e.g. fitted on real unrelated proteins when learned
    weights were made and shipped with them) or None; ``search`` then uses it instead of a
    :func:`homalign.stats.calibrate` fit on i.i.d. sequences. ``ranking()`` (optional) returns
    the method's ranking score in closed form (:class:`homalign.model.ranking.RankingModel`), or
    None; ``search`` then scores all candidates of a query in batched, compiled passes over the
    database's stored target embeddings instead of calling ``score`` per pair (same scores).
    """

    name: str
    kind: str  # "sequence" | "profile" | "hmm" | "learned" | "peer"
    description: str
    align: Callable[..., Alignment]
    prepare: Callable[..., Any] | None = None
    score: Callable[..., PairScores] | None = None
    available: Callable[[], str | None] = field(default=lambda: None)
    defaults: dict = field(default_factory=dict)
    fingerprint: Callable[[], str] | None = None  # changes when the method's scores change
    align_prepared: Callable[..., Alignment] | None = None
    null_params: Callable[[], Any] | None = None  # -> homalign.stats.EVDParams | None
    ranking: Callable[[], Any] | None = None  # -> homalign.model.ranking.RankingModel | None


def dp_method(
    name: str,
    kind: str,
    description: str,
    prepare: Callable[..., Any],
    score: Callable[..., PairScores],
    defaults: dict | None = None,
) -> Method:
    """Build a Method whose alignment is: prepare both → score → exact DP → Alignment."""
    defaults = dict(defaults or {})

    def align(query: Sequence, target: Sequence, **options: Any) -> Alignment:
        from homalign.dp import align as dp_align

        opts = {**defaults, **options}
        ps = score(prepare(query, **opts), prepare(target, **opts), **opts)
        res = dp_align(ps.S, ps.gaps, mode=ps.mode)
        return Alignment(
            query_id=query.id, target_id=target.id, query=query.residues, target=target.residues,
            pairs=res.pairs, score=float(res.score), method=name,
        )

    return Method(name, kind, description, align, prepare, score, defaults=defaults)
