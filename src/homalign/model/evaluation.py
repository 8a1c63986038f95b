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

Choosing the decoding (mode and MEA threshold) of a trained model, on held-out train pairs::

    python -m homalign.model.evaluation STEM [--pairs 300] [--max-pairs-per-family 400]

prints the mean F1 (all, twilight) of every posterior mode x threshold (:func:`tune_decoding`).
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
    """Two encoded sequences and their reference alignment (int32 (k >= 1, 2) residue pairs);
    ``t_tokens``: the target's template tokens (its ``.tem`` labels), read by template-mode
    models."""

    name: str
    q: np.ndarray
    t: np.ndarray
    pairs: np.ndarray
    identity: float
    t_tokens: np.ndarray | None = None


def from_train_pairs(pairs: Sequence[TrainPair]) -> list[EvalPair]:
    """Evaluation pairs from (whole, uncropped) training pairs (with the target's template
    tokens)."""
    from homalign.model.encoder_kernel import template_tokens

    return [EvalPair(p.name, p.q, p.t, p.pairs, p.identity,
                     template_tokens(torch.as_tensor(p.t_ss), torch.as_tensor(p.t_acc)).numpy())
            for p in pairs if len(p.pairs)]


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
    tokens = None
    if model.cfg.template and p.t_tokens is not None:
        tokens = torch.as_tensor(p.t_tokens.astype(np.int64))[None]
    with torch.no_grad():
        S, gaps, _, _ = model(q, t, tokens)
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


MODES = ("global", "semiglobal", "local")
THRESHOLDS = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)


def tune_decoding(model: AlignerModel, pairs: Sequence[EvalPair], modes: Sequence[str] = MODES,
                  thresholds: Sequence[float] = THRESHOLDS) -> dict[str, dict[str, float]]:
    """Mean F1 (all, twilight = identity < 30%) on whole pairs for each posterior mode and MEA
    threshold, keyed ``"<mode>@<threshold>"`` (sequence-only models)."""
    model.eval()
    tw = np.array([p.identity < 0.3 for p in pairs])
    out: dict[str, dict[str, float]] = {}
    for mode in modes:
        f1 = np.zeros((len(thresholds), len(pairs)))
        for k, p in enumerate(pairs):
            S, gaps = model.score_pair(p.q, p.t)
            P = posterior_matrix(S, gaps, mode)
            for a, th in enumerate(thresholds):
                f1[a, k] = score_pair(mea_align(P, th).pairs, p.pairs, len(p.q), len(p.t)).F1
        for a, th in enumerate(thresholds):
            out[f"{mode}@{th}"] = {"f1": float(f1[a].mean()),
                                   "f1_twilight": float(f1[a, tw].mean()) if tw.any()
                                   else float("nan")}
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m homalign.model.evaluation STEM``: the decoding grid on held-out train pairs."""
    import argparse
    import json

    from homalign.model.data import load_homstrad, load_tmalign, split_by_group
    from homalign.model.weights import load_model
    from homalign.paths import shared_data_root

    data_root = shared_data_root()
    ap = argparse.ArgumentParser(prog="python -m homalign.model.evaluation",
                                 description="F1 of held-out train pairs for each posterior mode "
                                             "and MEA threshold with the model STEM.")
    ap.add_argument("stem", help="model (.safetensors + .json)")
    ap.add_argument("--pairs", type=int, default=300, help="held-out pairs (evenly spaced)")
    ap.add_argument("--homstrad", default=str(data_root / "homstrad" / "train"))
    ap.add_argument("--tmalign", default=str(data_root / "scope" / "tmalign-pairs.train.tsv"))
    ap.add_argument("--max-pairs-per-family", type=int, default=40)
    args = ap.parse_args(argv)
    data = load_homstrad(args.homstrad, args.max_pairs_per_family)
    if args.tmalign:
        data += load_tmalign(args.tmalign)
    _, held_out = split_by_group(data)
    pairs = resolve_eval_pairs(HELD_OUT, held_out, args.pairs or None)
    model, _ = load_model(args.stem)
    for key, value in tune_decoding(model, pairs).items():  # type: ignore[arg-type]
        print(key, json.dumps(value))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())


__all__ = ["DEV", "HELD_OUT", "EvalPair", "evaluate_pairs", "from_directory",
           "from_train_pairs", "make_evaluate", "resolve_eval_pairs", "tune_decoding"]
