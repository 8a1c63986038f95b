"""Homology head: a calibrated probability that two proteins are homologous, from an alignment score.

Karlin-Altschul statistics say that for unrelated sequences the local score S of an m x n
comparison has ``P(score >= S) ~ K m n exp(-lambda S)``, so the natural length-normalised
statistic is ``lambda S - log(m n)``. The head is a logistic regression on exactly those two
features, ``p = sigmoid(a * S - b * log(m n) + c)``, fitted (by Newton's method) on labelled pairs:
SCOPe same-superfamily pairs (homologous) against pairs from different folds (unrelated).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np


def _features(score: np.ndarray, lq: np.ndarray, lt: np.ndarray) -> np.ndarray:
    score = np.asarray(score, dtype=np.float64)
    log_mn = np.log(np.asarray(lq, dtype=np.float64) * np.asarray(lt, dtype=np.float64))
    return np.stack([score, -log_mn, np.ones_like(score)], axis=1)


def fit_homology_head(score: np.ndarray, lq: np.ndarray, lt: np.ndarray, label: np.ndarray,
                      l2: float = 1e-3, iterations: int = 50) -> dict:
    """Logistic regression by Newton-Raphson; returns ``{"a", "b", "c"}`` (JSON-ready)."""
    X = _features(score, lq, lt)
    y = np.asarray(label, dtype=np.float64)
    if not ((y == 0) | (y == 1)).all() or y.min() == y.max():
        raise ValueError("labels must be 0/1 with both classes present")
    mu, sd = X[:, :2].mean(axis=0), X[:, :2].std(axis=0) + 1e-9
    Z = X.copy()
    Z[:, :2] = (X[:, :2] - mu) / sd
    w = np.zeros(3)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(Z @ w)))
        grad = Z.T @ (p - y) + l2 * w
        H = (Z * (p * (1 - p))[:, None]).T @ Z + l2 * np.eye(3)
        step = np.linalg.solve(H, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    a, b = w[0] / sd[0], w[1] / sd[1]
    c = w[2] - w[0] * mu[0] / sd[0] - w[1] * mu[1] / sd[1]
    return {"a": float(a), "b": float(b), "c": float(c)}


def ranking_scores(model, meta: dict, codes_q: np.ndarray, e_q, codes_t: np.ndarray, e_t,
                   scores=None, profile_q: np.ndarray | None = None):
    """PairScores for ranking a target against a query with a loaded model.

    With a trained homology adapter (``meta["homology_score"]``, see
    :mod:`homalign.model.contrastive`): the local *forward* score of ``S_h``; otherwise the best
    local path of the aligner's own ``S``. ``profile_q``: a query profile (see
    :mod:`homalign.model.query_profile`), ``e_q`` then being its embeddings.
    """
    from homalign.score.pair_scores import PairScores

    if meta.get("homology_score"):
        S_h, gaps = model.homology_embedded(codes_q, e_q, codes_t, e_t, scores, profile_q)
        return PairScores(S_h, gaps, "local", "forward")
    if scores is None:
        scores = model.score_embedded(codes_q, e_q, codes_t, e_t, profile_q)
    S, gaps = scores
    return PairScores(S, gaps, "local", "viterbi")


def ranking_score(model, meta: dict, codes_q: np.ndarray, e_q, codes_t: np.ndarray,
                  e_t, scores=None) -> float:
    """The score of :func:`ranking_scores` (what the homology head's probability is fitted on)."""
    from homalign.score.pair_scores import score_values

    return float(score_values([ranking_scores(model, meta, codes_q, e_q, codes_t, e_t,
                                              scores)])[0])


def homology_probability(head: dict, score: float, lq: int, lt: int) -> float:
    """``sigmoid(a * score - b * log(lq * lt) + c)`` for one comparison."""
    z = head["a"] * score - head["b"] * math.log(lq * lt) + head["c"]
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


__all__ = ["fit_homology_head", "fit_null", "homology_probability", "null_fit_pairs",
           "ranking_score", "ranking_scores"]


def sample_scop_pairs(fasta: str, exclude: set[str], n_each: int, seed: int = 0
                      ) -> list[tuple[object, object, int]]:
    """Labelled SCOPe pairs: same superfamily, other family (1) / different folds (0)."""
    from homalign.sequence import read_sequences

    seqs = [s for s in read_sequences(fasta) if s.id not in exclude]
    sccs = [s.description.split()[0] for s in seqs]
    sf = np.array([".".join(c.split(".")[:3]) for c in sccs])
    fold = np.array([".".join(c.split(".")[:2]) for c in sccs])
    rng = np.random.default_rng(seed)
    by_sf: dict[str, list[int]] = {}
    for k, s in enumerate(sf):
        by_sf.setdefault(s, []).append(k)
    multi = [v for v in by_sf.values() if len(v) > 1]
    pos: list[tuple[object, object, int]] = []
    while len(pos) < n_each:
        group = multi[int(rng.integers(len(multi)))]
        a, b = rng.choice(group, 2, replace=False)
        if sccs[a] != sccs[b]:
            pos.append((seqs[a], seqs[b], 1))
    neg: list[tuple[object, object, int]] = []
    while len(neg) < n_each:
        a, b = rng.integers(len(seqs), size=2)
        if fold[a] != fold[b]:
            neg.append((seqs[a], seqs[b], 0))
    return pos + neg


def null_fit_pairs(fasta: str | Path, exclude: set[str], n_pairs: int, seed: int = 0
                   ) -> list[tuple[object, object]]:
    """``n_pairs`` cross-fold pairs of SCOPe domains — real unrelated proteins — for fitting the
    ranking score's null law: the folds of the ``exclude`` domains (the dev queries) and the
    held-out tuning folds (:func:`homalign.scop.is_heldout_fold`) are left out, so
    neither the dev report nor the train-fold tuning queries see the fit."""
    from homalign.scop import is_heldout_fold, labels_from_fasta
    from homalign.sequence import read_sequences
    from homalign.stats import unrelated_pairs

    seqs = list(read_sequences(fasta))
    fold_of = {i: lab.fold for i, lab in labels_from_fasta(fasta).items()}
    banned = {fold_of[i] for i in exclude if i in fold_of}
    pool = [s for s in seqs if fold_of[s.id] not in banned and not is_heldout_fold(fold_of[s.id])]
    if len({fold_of[s.id] for s in pool}) < 2:
        raise ValueError(f"{fasta}: fewer than two folds left to draw unrelated pairs from")
    qs, ts, _ = unrelated_pairs(n_pairs, sequences=pool, labels=[fold_of[s.id] for s in pool],
                                seed=seed)
    return list(zip(qs, ts, strict=True))


def fit_null(score: np.ndarray, lq: np.ndarray, lt: np.ndarray, what: str) -> dict:
    """The null law of ranking scores of unrelated pairs, as stored in the weights'
    ``meta["null"]``: a Gumbel law with a fitted length exponent (:func:`homalign.stats.fit_gumbel`
    with ``length_exponent=True``), because the learned score of real unrelated proteins drifts
    with their lengths faster than Karlin–Altschul's ``ln(m n) / λ`` (docs/learned.md)."""
    from homalign.stats import fit_gumbel

    params = fit_gumbel(score, lq, lt, length_exponent=True,
                        source=f"ML Gumbel fit with length exponent, {what}")
    return {"params": params.to_json(), "pairs": int(len(score))}


def main(argv: list[str] | None = None) -> int:
    """Fit the head for a saved model and store it in the model's JSON metadata.

    ``python -m homalign.model.homology --weights runs/NAME/best [--pairs 1000]``: SCOPe train-fold
    pairs (dev queries excluded), learned local alignment scores, logistic fit on one half,
    calibration reported on the other half. ``--null-pairs N`` also fits the search's null law on
    N cross-fold pairs (:func:`null_fit_pairs`, :func:`fit_null`); ``--no-head`` skips the head.
    """
    import argparse
    import json
    import time

    import torch

    from homalign.io.atomic import atomic_write_bytes
    from homalign.model.weights import load_model
    from homalign.paths import shared_data_root

    ap = argparse.ArgumentParser(description="fit the learned aligner's homology head")
    ap.add_argument("--weights", required=True)
    ap.add_argument("--pairs", type=int, default=1000, help="pairs per class")
    scope = shared_data_root() / "scope"
    ap.add_argument("--fasta", default=str(scope / "astral-2.07-40.trainval.fa"),
                    help="SCOPe trainval domains (default: $HOMALIGN_DATA/scope/...)")
    ap.add_argument("--exclude", default=str(scope / "dev-queries.txt"),
                    help="ids whose folds the fits leave out (default: the dev queries)")
    ap.add_argument("--null-pairs", type=int, default=0,
                    help="also fit the search's null law on this many cross-fold pairs")
    ap.add_argument("--no-head", action="store_true", help="keep the stored homology head")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    model, meta = load_model(args.weights)
    exclude = set(Path(args.exclude).read_text().split())
    t0 = time.time()
    cache: dict[str, tuple] = {}

    def embedded(seq):
        if seq.id not in cache:
            cache[seq.id] = (seq.codes, model.embed(seq.codes))
        return cache[seq.id]

    def score_pairs(pairs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        out = np.array([ranking_score(model, meta, *embedded(a), *embedded(b)) for a, b in pairs])
        return (out, np.array([len(a) for a, _ in pairs], dtype=np.float64),
                np.array([len(b) for _, b in pairs], dtype=np.float64))

    stem = Path(args.weights)
    report: dict = {}
    if args.null_pairs:
        pairs = null_fit_pairs(args.fasta, exclude, args.null_pairs)
        kind = ("local forward score of the homology adapter" if meta.get("homology_score")
                else "local best-path score")
        meta["null"] = fit_null(*score_pairs(pairs), what=f"{len(pairs)} cross-fold SCOPe "
                                f"train-fold pairs ({Path(args.fasta).name}), {kind}")
        report["null"] = meta["null"]
    if args.no_head:
        if not args.null_pairs:
            ap.error("--no-head without --null-pairs fits nothing")
        atomic_write_bytes(stem.with_suffix(".json"),
                           (json.dumps(meta, indent=2) + "\n").encode())
        print(json.dumps({**report, "seconds": time.time() - t0}))
        return 0
    data = sample_scop_pairs(args.fasta, exclude, args.pairs)
    scores, lq, lt, y = [], [], [], []
    for a, b, label in data:
        (ca, ea), (cb, eb) = embedded(a), embedded(b)
        scores.append(ranking_score(model, meta, ca, ea, cb, eb))
        lq.append(len(a))
        lt.append(len(b))
        y.append(label)
    scores_a, lq_a, lt_a, y_a = (np.asarray(x, dtype=np.float64) for x in (scores, lq, lt, y))
    half = np.random.default_rng(1).random(len(y_a)) < 0.5
    head = fit_homology_head(scores_a[half], lq_a[half], lt_a[half], y_a[half])
    p = np.array([homology_probability(head, s, m, n) for s, m, n in
                  zip(scores_a[~half], lq_a[~half], lt_a[~half], strict=True)])
    yt = y_a[~half]
    brier = float(np.mean((p - yt) ** 2))
    bins = np.minimum((p * 10).astype(int), 9)
    ece = float(sum(abs(p[bins == k].mean() - yt[bins == k].mean()) * (bins == k).mean()
                    for k in range(10) if (bins == k).any()))
    order = np.argsort(-p)
    ranks = np.empty(len(p))
    ranks[order] = np.arange(len(p))
    n1, n0 = yt.sum(), (1 - yt).sum()
    auc = float(1 - (ranks[yt == 1].sum() - n1 * (n1 - 1) / 2) / (n1 * n0))
    # refit on all pairs for the shipped head
    head = fit_homology_head(scores_a, lq_a, lt_a, y_a)
    kind = ("local forward score of the homology adapter" if meta.get("homology_score")
            else "local best-path score")
    head.update({"fitted_on": f"{len(y_a)} SCOPe train-fold pairs (same superfamily, other family"
                              f" vs different folds), {kind}",
                 "heldout_brier": brier, "heldout_ece": ece, "heldout_auc": auc})
    meta["homology"] = head
    atomic_write_bytes(stem.with_suffix(".json"), (json.dumps(meta, indent=2) + "\n").encode())
    print(json.dumps({**head, **report, "seconds": time.time() - t0}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
