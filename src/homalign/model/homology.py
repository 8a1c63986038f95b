"""Homology head: a calibrated probability that two proteins are homologous, from a ranking score.

The ranking score's null law (``meta["null"]``, :func:`fit_null`) turns a score ``S`` of an
``m`` x ``n`` comparison into a standard Gumbel variable ``z = (S - μ(m, n)) / β(m, n)`` for
unrelated proteins of any lengths (:func:`homalign.stats.standardized_scores`). The head is a
logistic regression on it, ``p = sigmoid(a z + c)``, fitted (by Newton's method) on labelled
pairs: SCOPe same-superfamily pairs (homologous) against pairs from different folds (unrelated);
``p`` is thus the same function of the evidence at every length.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np


def fit_homology_head(z: np.ndarray, label: np.ndarray, l2: float = 1e-3,
                      iterations: int = 50) -> dict:
    """Logistic regression of ``label`` on the standardised scores ``z`` by Newton-Raphson;
    returns ``{"a", "c"}`` (JSON-ready)."""
    x = np.asarray(z, dtype=np.float64)
    y = np.asarray(label, dtype=np.float64)
    if not ((y == 0) | (y == 1)).all() or y.min() == y.max():
        raise ValueError("labels must be 0/1 with both classes present")
    mu, sd = float(x.mean()), float(x.std()) + 1e-9
    Z = np.stack([(x - mu) / sd, np.ones_like(x)], axis=1)
    w = np.zeros(2)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(Z @ w)))
        grad = Z.T @ (p - y) + l2 * w
        H = (Z * (p * (1 - p))[:, None]).T @ Z + l2 * np.eye(2)
        step = np.linalg.solve(H, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return {"a": float(w[0] / sd), "c": float(w[1] - w[0] * mu / sd)}


def ranking_scores(model, meta: dict, codes_q: np.ndarray, e_q, codes_t: np.ndarray, e_t,
                   scores=None):
    """PairScores for ranking a target against a query with a loaded model.

    With a trained homology adapter (``meta["homology_score"]``, see
    :mod:`homalign.model.contrastive`): the local *forward* score of ``S_h``; otherwise the best
    local path of the aligner's own ``S``.
    """
    from homalign.score.pair_scores import PairScores

    if meta.get("homology_score"):
        S_h, gaps = model.homology_embedded(codes_q, e_q, codes_t, e_t, scores)
        return PairScores(S_h, gaps, "local", "forward")
    if scores is None:
        scores = model.score_embedded(codes_q, e_q, codes_t, e_t)
    S, gaps = scores
    return PairScores(S, gaps, "local", "viterbi")


def ranking_score(model, meta: dict, codes_q: np.ndarray, e_q, codes_t: np.ndarray,
                  e_t, scores=None) -> float:
    """The score of :func:`ranking_scores` (what the homology head's probability is fitted on)."""
    from homalign.score.pair_scores import score_values

    return float(score_values([ranking_scores(model, meta, codes_q, e_q, codes_t, e_t,
                                              scores)])[0])


def null_law(meta: dict, key: str = "null") -> Any:
    """A law a weight set carries, as :class:`homalign.stats.EVDParams`, or None:
    ``meta["null"]``, the ranking score's law on domain pairs (the ranking key, :func:`fit_null`),
    or ``meta["chance"]``, its law over all lengths (:func:`fit_chance`)."""
    from homalign.stats import EVDParams

    law = meta.get(key)
    return EVDParams(**law["params"]) if law else None


def standardized_score(meta: dict, score: float, lq: int, lt: int) -> float:
    """``z`` of a ranking score under the weights' null law over all lengths (``"chance"``)."""
    from homalign.stats import standardized_scores

    law = null_law(meta, "chance")
    if law is None:
        raise ValueError("these weights carry no null law over all lengths: fit one first "
                         "(python -m homalign.model.homology --chance-pairs N)")
    return float(standardized_scores(score, law, lq, lt))


def homology_probability(head: dict, z: float) -> float:
    """``sigmoid(a z + c)`` of a standardised score ``z`` (:func:`standardized_score`)."""
    x = head["a"] * z + head["c"]
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


__all__ = ["chance_fit_groups", "chance_fit_scores", "fit_chance", "fit_homology_head",
           "fit_null", "homology_probability", "null_fit_pairs", "null_law", "ranking_score",
           "ranking_scores", "standardized_score"]


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
    multi = [v for v in by_sf.values() if len({sccs[k] for k in v}) > 1]
    if not multi or len(set(fold.tolist())) < 2:
        raise ValueError(f"{fasta}: no superfamily with two families, or fewer than two folds, "
                         "to draw labelled pairs from")
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


def _null_pool(fasta: str | Path, exclude: set[str]) -> tuple[list[Any], dict[str, str]]:
    """The SCOPe domains the null-law fits draw from, in file order, and every domain's fold:
    the folds of the ``exclude`` domains (the dev queries) and the held-out tuning folds
    (:func:`homalign.scop.is_heldout_fold`) are left out, so neither the dev report nor the
    train-fold tuning queries see a fit."""
    from homalign.scop import is_heldout_fold, labels_from_fasta
    from homalign.sequence import read_sequences

    fold_of = {i: lab.fold for i, lab in labels_from_fasta(fasta).items()}
    banned = {fold_of[i] for i in exclude if i in fold_of}
    pool = [s for s in read_sequences(fasta)
            if fold_of[s.id] not in banned and not is_heldout_fold(fold_of[s.id])]
    if len({fold_of[s.id] for s in pool}) < 2:
        raise ValueError(f"{fasta}: fewer than two folds left to draw unrelated pairs from")
    return pool, fold_of


def null_fit_pairs(fasta: str | Path, exclude: set[str], n_pairs: int, seed: int = 0
                   ) -> list[tuple[object, object]]:
    """``n_pairs`` cross-fold pairs of SCOPe domains — real unrelated proteins — for fitting the
    ranking score's null law (the domains of :func:`_null_pool`)."""
    from homalign.stats import unrelated_pairs

    pool, fold_of = _null_pool(fasta, exclude)
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


def chance_fit_groups(fasta: str | Path, exclude: set[str], n_pairs: int, seed: int = 0,
                      targets_per_query: int = 40, max_domains: int = 10
                      ) -> list[tuple[Any, list[Any]]]:
    """Unrelated pairs of real-protein lengths for fitting the ranking score's null law over all
    lengths (:func:`fit_chance`): ``n_pairs`` pairs as (query, its targets) groups of up to
    ``targets_per_query``.

    Each sequence is one SCOPe domain (half of them) or 2 to ``max_domains`` domains of distinct
    folds joined end to end: real domains at the lengths of real proteins, single domains and
    multi-domain chains alike; a query shares no fold with its targets (the domains of
    :func:`_null_pool`)."""
    from homalign.sequence import Sequence

    pool, fold_of = _null_pool(fasta, exclude)
    by_fold: dict[str, list[Any]] = {}
    for s in pool:
        by_fold.setdefault(fold_of[s.id], []).append(s)
    folds = sorted(by_fold)
    most = max(1, min(max_domains, len(folds) // 2))  # a query's and a target's folds all differ
    rng = np.random.default_rng(seed)

    def chain(avoid: set[str]) -> tuple[Any, set[str]]:
        free = [f for f in folds if f not in avoid]
        size = 1 if most == 1 or rng.random() < 0.5 else int(rng.integers(2, most + 1))
        picked = rng.choice(len(free), size=min(size, len(free)), replace=False)
        parts = [by_fold[free[k]][int(rng.integers(len(by_fold[free[k]])))] for k in picked]
        name = "+".join(p.id for p in parts)
        return Sequence(name, "".join(p.residues for p in parts)), {free[k] for k in picked}

    groups: list[tuple[Any, list[Any]]] = []
    left = n_pairs
    while left > 0:
        query, used = chain(set())
        targets = [chain(used)[0] for _ in range(min(targets_per_query, left))]
        groups.append((query, targets))
        left -= len(targets)
    return groups


def chance_fit_scores(ranking: Any, groups: list[tuple[Any, list[Any]]],
                      max_cells: int = 8_000_000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scores, query lengths, target lengths) of :func:`chance_fit_groups`' groups, each query
    against its targets in batched passes of at most ``max_cells`` cells
    (:class:`homalign.model.ranking.RankingModel`, the search's own scoring)."""
    scores, lq, lt = [], [], []
    for query, targets in groups:
        embs = ranking.embed_many([query.codes, *[t.codes for t in targets]])
        rep = ranking.query(query.codes, embedding=embs[0])
        start = 0
        while start < len(targets):
            stop, cells = start, 0
            while stop < len(targets) and (stop == start or cells + len(query) * len(
                    targets[stop]) <= max_cells):
                cells += len(query) * len(targets[stop])
                stop += 1
            part = targets[start:stop]
            scores.append(ranking.scores(
                rep, np.concatenate([t.codes for t in part]),
                np.concatenate(embs[1 + start:1 + stop]),
                np.array([len(t) for t in part])))
            start = stop
        lq += [len(query)] * len(targets)
        lt += [len(t) for t in targets]
    return (np.concatenate(scores), np.asarray(lq, dtype=np.float64),
            np.asarray(lt, dtype=np.float64))


def fit_chance(score: np.ndarray, lq: np.ndarray, lt: np.ndarray, what: str) -> dict:
    """The null law of the ranking score over all lengths, as stored in the weights'
    ``meta["chance"]``: a Gumbel law whose location and spread depend on both lengths
    (:func:`homalign.stats.fit_gumbel_regression`, fitted on its upper fifth), because the
    learned forward score of unrelated real proteins grows with their lengths, linearly for
    long ones, past what ``meta["null"]`` (domain pairs) describes (docs/learned.md). Each pair
    counts in both orders (the score is symmetric)."""
    from homalign.stats import fit_gumbel_regression

    params = fit_gumbel_regression(np.r_[score, score], np.r_[lq, lt], np.r_[lt, lq],
                                   source=f"Gumbel location-scale regression, {what}")
    return {"params": params.to_json(), "pairs": int(len(score))}


def main(argv: list[str] | None = None) -> int:
    """Fit the null laws and the head of a saved ranking weight set (one with a homology adapter)
    and store them in its JSON metadata.

    ``python -m homalign.model.homology --weights runs/NAME/best --null-pairs N
    --chance-pairs M [--pairs 300]``: the ranking key's null law on N cross-fold domain pairs
    (:func:`null_fit_pairs`, :func:`fit_null`), the score's null law over all lengths on M
    unrelated chains of domains (:func:`chance_fit_groups`, :func:`fit_chance`), then the head on
    ``--pairs`` SCOPe train-fold pairs per class (dev folds excluded): a logistic fit on one half,
    calibration reported on the other half, the shipped head fitted on all. ``--no-head`` fits
    the laws alone. Scores come from the search's batched form of the weights
    (:class:`homalign.model.ranking.RankingModel`); no torch.
    """
    import argparse
    import json
    import time

    from safetensors.numpy import load as np_load

    from homalign.io.atomic import atomic_write_bytes
    from homalign.model.ranking import RankingModel
    from homalign.paths import shared_data_root

    ap = argparse.ArgumentParser(description="fit the ranking weights' null laws and homology "
                                             "head")
    ap.add_argument("--weights", required=True, help="STEM of STEM.safetensors / STEM.json")
    ap.add_argument("--pairs", type=int, default=1000, help="head: pairs per class")
    scope = shared_data_root() / "scope"
    ap.add_argument("--fasta", default=str(scope / "astral-2.07-40.trainval.fa"),
                    help="SCOPe trainval domains (default: $HOMALIGN_DATA/scope/...)")
    ap.add_argument("--exclude", default=str(scope / "dev-queries.txt"),
                    help="ids whose folds the fits leave out (default: the dev queries)")
    ap.add_argument("--null-pairs", type=int, default=0,
                    help="fit the ranking key's null law on this many cross-fold domain pairs")
    ap.add_argument("--chance-pairs", type=int, default=0,
                    help="fit the score's null law over all lengths on this many pairs of "
                         "chains of domains")
    ap.add_argument("--no-head", action="store_true", help="keep the stored homology head")
    args = ap.parse_args(argv)
    if args.no_head and not (args.null_pairs or args.chance_pairs):
        ap.error("--no-head without --null-pairs or --chance-pairs fits nothing")
    stem = Path(args.weights)
    raw = stem.with_suffix(".safetensors").read_bytes()
    meta = json.loads(stem.with_suffix(".json").read_text())
    try:
        ranking = RankingModel.from_state(np_load(raw), meta, raw)
    except ValueError as err:
        ap.error(f"{args.weights}: {err}")
    exclude = set(Path(args.exclude).read_text().split())
    t0 = time.time()
    report: dict = {}
    cache: dict[str, np.ndarray] = {}
    if args.null_pairs:
        pairs = null_fit_pairs(args.fasta, exclude, args.null_pairs)
        S = np.array([_pair_score(ranking, cache, a, b) for a, b in pairs])
        meta["null"] = fit_null(S, np.array([len(a) for a, _ in pairs], dtype=np.float64),
                                np.array([len(b) for _, b in pairs], dtype=np.float64),
                                what=f"{len(pairs)} cross-fold SCOPe train-fold pairs "
                                     f"({Path(args.fasta).name}), local forward score of the "
                                     "homology adapter")
        report["null"] = meta["null"]
    if args.chance_pairs:
        S, lq, lt = chance_fit_scores(ranking, chance_fit_groups(args.fasta, exclude,
                                                                 args.chance_pairs))
        meta["chance"] = fit_chance(S, lq, lt, what=(
            f"{len(S)} unrelated pairs of chains of 1-10 SCOPe train-fold domains of distinct "
            f"folds ({Path(args.fasta).name}), local forward score of the homology adapter"))
        report["chance"] = meta["chance"]
    if not args.no_head:
        if null_law(meta, "chance") is None:
            ap.error("the head is fitted on standardised scores: give --chance-pairs N")
        data = sample_scop_pairs(args.fasta, exclude, args.pairs)
        meta["homology"] = _fit_head(meta, [_pair_score(ranking, cache, a, b) for a, b, _ in data],
                                     data)
        report.update(meta["homology"])
    atomic_write_bytes(stem.with_suffix(".json"), (json.dumps(meta, indent=2) + "\n").encode())
    print(json.dumps({**report, "seconds": time.time() - t0}))
    return 0


def _pair_score(ranking: Any, cache: dict[str, np.ndarray], a: Any, b: Any) -> float:
    """The ranking score of one pair (the embeddings kept in ``cache`` by sequence id)."""
    for seq in (a, b):
        if seq.id not in cache:
            cache[seq.id] = ranking.embed_many([seq.codes])[0]
    rep = ranking.query(a.codes, embedding=cache[a.id])
    return float(ranking.scores(rep, b.codes, cache[b.id], np.array([len(b)]))[0])


def _fit_head(meta: dict, scores: list[float], data: list[tuple[Any, Any, int]]) -> dict:
    """The head on labelled pairs (their ranking ``scores``): fitted on a random half and scored
    on the other (Brier, expected calibration error, AUC), then refitted on all of them."""
    z = [standardized_score(meta, s, len(a), len(b))
         for s, (a, b, _) in zip(scores, data, strict=True)]
    y = [label for _, _, label in data]
    z_a, y_a = np.asarray(z), np.asarray(y, dtype=np.float64)
    half = np.random.default_rng(1).random(len(y_a)) < 0.5
    head = fit_homology_head(z_a[half], y_a[half])
    p = np.array([homology_probability(head, x) for x in z_a[~half]])
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
    head = fit_homology_head(z_a, y_a)
    head.update({"fitted_on": f"{len(y_a)} SCOPe train-fold pairs (same superfamily, other family"
                              " vs different folds), the null law's standardised local forward "
                              "score of the homology adapter",
                 "heldout_brier": brier, "heldout_ece": ece, "heldout_auc": auc})
    return head


if __name__ == "__main__":
    raise SystemExit(main())
