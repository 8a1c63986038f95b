"""Whole-pair evaluation of the learned aligner: what ``homalign train``'s ``[eval]`` runs.

Each evaluation pair is aligned whole (no cropping) exactly as the ``learned`` method aligns it:
the model's scores, exact posteriors of the config's ``decode_mode``
(:func:`homalign.model.decode.posterior_matrix`) and maximum-expected-accuracy decoding at
``mea_threshold`` (:func:`homalign.model.decode.mea_align`). The prediction is scored against the
structure-based reference with :func:`homalign.evaluate.metrics.score_pair` (the benchmark's
S_dev, S_mod, balanced, F1; twilight = reference identity < 30%). ``nll`` is the exact per-residue
negative log-likelihood of the reference alignment under the training path model (``mode``):
``(log Z - path score) / (Lq + Lt)``, with log Z from the DP engine's forward pass.

Evaluation data (``eval_data`` of the task): ``"held-out"`` (the train families/folds that
:func:`homalign.model.data.split_by_group` holds out), ``"dev"`` (the HOMSTRAD dev families bundled
with the package) or a directory of HOMSTRAD-style families (``<FAMILY>/<FAMILY>.ali``), e.g. a
user's own alignments. Pairs without any reference pair are skipped (no likelihood to score).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from homalign.dp import GapCosts
from homalign.dp.posterior import forward_backward, log_partition
from homalign.dp.soft import path_score
from homalign.evaluate.alignment_benchmark import select_pairs
from homalign.evaluate.metrics import PairMetrics, score_pair, summarise
from homalign.model.aligner import AlignerModel
from homalign.model.data import TrainPair
from homalign.model.decode import mea_align, posterior_matrix

HELD_OUT = "held-out"
DEV = "dev"


@dataclass(frozen=True)
class EvalPair:
    """Two encoded sequences and their reference alignment (int32 (k >= 1, 2) residue pairs)."""

    name: str
    q: np.ndarray
    t: np.ndarray
    pairs: np.ndarray
    identity: float


def from_train_pairs(pairs: Sequence[TrainPair]) -> list[EvalPair]:
    """Evaluation pairs from (whole, uncropped) training pairs."""
    return [EvalPair(p.name, p.q, p.t, p.pairs, p.identity) for p in pairs if len(p.pairs)]


def from_directory(directory: str | Path) -> list[EvalPair]:
    """Every member pair of every family under ``directory`` (InputError if there is none)."""
    from homalign.evaluate.reference import load_reference_pairs

    return [EvalPair(f"{r.family}:{r.query.id}-{r.target.id}", r.query.codes, r.target.codes,
                     r.pairs, r.identity)
            for r in load_reference_pairs(directory) if len(r.pairs)]


def resolve_eval_pairs(spec: str, held_out: Sequence[TrainPair], max_pairs: int | None
                       ) -> list[EvalPair]:
    """The evaluation pairs ``spec`` names (``"held-out"``, ``"dev"`` or a directory), at most
    ``max_pairs`` of them, evenly spaced over the sorted list."""
    if spec == HELD_OUT:
        pairs = from_train_pairs(held_out)
    elif spec == DEV:
        from homalign.evaluate import bundled_homstrad_dev

        pairs = from_directory(bundled_homstrad_dev())
    else:
        pairs = from_directory(spec)
    return select_pairs(pairs, max_pairs)


def _pair_scores(model: AlignerModel, p: EvalPair) -> tuple[np.ndarray, GapCosts, float]:
    """(S, GapCosts, reference path score) of one whole pair under ``model`` (no gradient)."""
    q = torch.as_tensor(p.q.astype(np.int64))[None]
    t = torch.as_tensor(p.t.astype(np.int64))[None]
    with torch.no_grad():
        S, gaps, _, _ = model(q, t)
        ref = float(path_score(S, gaps, 0, p.pairs, len(p.q), len(p.t), model.cfg.mode))
    S_np = np.ascontiguousarray(S[0].numpy(), dtype=np.float32)
    return S_np, GapCosts(**gaps.to_numpy(0, len(p.q), len(p.t))), ref


def evaluate_pairs(model: AlignerModel, pairs: Sequence[EvalPair]) -> dict[str, float]:
    """Mean scores of MEA-decoded whole pairs: f1, balanced, s_dev, s_mod (and ``_twilight``
    variants, NaN without twilight pairs), nll and the number of pairs. ``model`` is put in eval
    mode (and restored)."""
    if not pairs:
        raise ValueError("no evaluation pairs")
    cfg = model.cfg
    was_training = model.training
    model.eval()
    rows: list[PairMetrics] = []
    nlls: list[float] = []
    try:
        for p in pairs:
            S, gaps, ref_score = _pair_scores(model, p)
            lq, lt = S.shape
            if cfg.decode_mode == cfg.mode:
                P, log_z = forward_backward(S, gaps, cfg.mode)
            else:
                P = posterior_matrix(S, gaps, cfg.decode_mode)
                log_z = log_partition(S, gaps, cfg.mode)
            nlls.append((log_z - ref_score) / (lq + lt))
            pred = mea_align(P, cfg.mea_threshold).pairs
            rows.append(score_pair(pred, p.pairs, lq, lt, ref_identity=p.identity))
    finally:
        model.train(was_training)
    s = summarise(rows)
    return {"f1": s["F1"], "balanced": s["balanced"], "s_dev": s["S_dev"], "s_mod": s["S_mod"],
            "f1_twilight": s["twilight_F1"], "balanced_twilight": s["twilight_balanced"],
            "nll": float(np.mean(nlls)), "pairs": float(len(rows)),
            "twilight_pairs": float(s["twilight_pairs"])}


def make_evaluate(pairs: Sequence[EvalPair]) -> Callable[[torch.nn.Module], dict[str, float]]:
    """``evaluate(model) -> metrics`` over fixed ``pairs`` (a TrainTask's ``evaluate``)."""
    pairs = list(pairs)

    def evaluate(model: torch.nn.Module) -> dict[str, float]:
        net = getattr(model, "module", model)
        return evaluate_pairs(net, pairs)

    return evaluate


__all__ = ["DEV", "HELD_OUT", "EvalPair", "evaluate_pairs", "from_directory",
           "from_train_pairs", "make_evaluate", "resolve_eval_pairs"]
