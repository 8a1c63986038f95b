"""A simple, resumable training loop for the learned aligner (CPU, single process).

    python -m homalign.model.train_loop --out runs/aligner1 --steps 3000

Trains on HOMSTRAD ``train/`` families and the TM-align train pairs, holding out about 8% of the
HOMSTRAD families and TM-align folds (never dev) for validation and early stopping. Loss per pair:
CRF negative log-likelihood of the reference alignment per residue of the two sequences, plus
auxiliary secondary-structure and accessibility cross-entropies on the HOMSTRAD residues. Writes
``log.jsonl``, ``checkpoint.pt`` (resumed automatically) and ``best.safetensors``/``best.json``
(highest validation F1 with posterior decoding) under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

from homalign.dp.soft import path_score
from homalign.evaluate.metrics import score_pair
from homalign.model.aligner import AlignerModel
from homalign.model.config import AlignerConfig
from homalign.model.contrastive import (
    HomologyScore,
    ScopPairs,
    homology_logits,
    homology_loss,
    load_scop_pairs,
    sample_batch,
)
from homalign.model.crf import crf_log_partition_batch, crf_posterior_batch
from homalign.model.data import (
    Batch,
    TrainPair,
    batches,
    compose_pairs,
    load_homstrad,
    load_tmalign,
    split_by_group,
)
from homalign.model.decode import mea_align
from homalign.model.encoder import template_tokens
from homalign.model.loss import (
    alignment_nll,
    cost_augmented,
    expected_f1_loss,
    marginal_loss,
    masked_cross_entropy,
)
from homalign.model.weights import atomic_torch_save, save_model
from homalign.paths import shared_data_root

DATA = shared_data_root()


def target_tokens(model: AlignerModel, batch: Batch) -> torch.Tensor | None:
    """The target's template tokens (its ``.tem`` labels) for a template-mode model, else None."""
    return template_tokens(batch.t_ss, batch.t_acc) if model.cfg.template else None


def pair_tokens(model: AlignerModel, pair: TrainPair) -> np.ndarray | None:
    """:func:`target_tokens` of one whole pair."""
    if not model.cfg.template:
        return None
    return template_tokens(torch.as_tensor(pair.t_ss), torch.as_tensor(pair.t_acc)).numpy()


def _posteriors(S: torch.Tensor, gaps, lq, lt, mode: str) -> torch.Tensor:
    """Match posteriors (B, Lq, Lt) of detached scores (no graph kept)."""
    from dataclasses import fields

    Sd = S.detach().requires_grad_(True)
    gd = type(gaps)(**{f.name: getattr(gaps, f.name).detach() for f in fields(gaps)})
    (P,) = torch.autograd.grad(crf_log_partition_batch(Sd, gd, lq, lt, mode).sum(), Sd)
    return P


def batch_loss(model: AlignerModel, batch: Batch, aux_weight: float, dp: str = "crf",
               teacher: AlignerModel | None = None, distill_weight: float = 0.0,
               margin: tuple[float, float] = (0.0, 0.0), marginal_weight: float = 0.0,
               f1_weight: float = 0.0) -> tuple[torch.Tensor, dict]:
    """Mean per-residue alignment NLL of the batch plus the auxiliary losses (and, with a
    ``teacher``, ``distill_weight`` x a distillation term whose gradient with respect to S is the
    student's minus the teacher's match posteriors, per residue).

    ``margin = (false_pair, missed_pair)`` > 0 makes the alignment term the softmax-margin loss
    (:func:`homalign.model.loss.cost_augmented`): the likelihood of cost-augmented scores, so the
    reference must win over every other path by its Hamming cost in nats.
    ``marginal_weight`` > 0 adds that weight x the per-residue cross-entropy of the posterior
    marginals that MEA decoding reads (:func:`homalign.model.loss.marginal_loss`; its gradient
    costs two more CRF passes per pair). ``f1_weight`` > 0 adds that weight x ``1 -`` the
    expected-count F1 of the same posteriors (:func:`homalign.model.loss.expected_f1_loss`)."""
    S, gaps, e_q, e_t = model(batch.q, batch.t, target_tokens(model, batch))
    S_loss = cost_augmented(S, batch.pairs, batch.lq, batch.lt, *margin)
    nll = alignment_nll(S_loss, gaps, batch.lq, batch.lt, batch.pairs, model.cfg.mode, dp)
    norm = (batch.lq + batch.lt).to(nll.dtype)
    per_res = (nll / norm).mean()
    marg = torch.zeros(())
    soft_f1 = torch.zeros(())
    if marginal_weight > 0 or f1_weight > 0:
        P = crf_posterior_batch(S, gaps, batch.lq, batch.lt, model.cfg.decode_mode)
        if marginal_weight > 0:
            marg = marginal_loss(P, batch.pairs).mean()
        if f1_weight > 0:
            soft_f1 = expected_f1_loss(P, batch.pairs).mean()
    distill = torch.zeros(())
    if teacher is not None and distill_weight > 0:
        with torch.no_grad():
            S_t, g_t, _, _ = teacher(batch.q, batch.t, target_tokens(teacher, batch))
        diff = (_posteriors(S, gaps, batch.lq, batch.lt, model.cfg.mode)
                - _posteriors(S_t, g_t, batch.lq, batch.lt, model.cfg.mode))
        distill = ((diff * S).sum(dim=(1, 2)) / norm).mean()
    aux = torch.zeros(())
    if aux_weight > 0:
        aux = (masked_cross_entropy(model.ss_logits(e_q), batch.q_ss)
               + masked_cross_entropy(model.ss_logits(e_t), batch.t_ss)
               + masked_cross_entropy(model.acc_logits(e_q), batch.q_acc)
               + masked_cross_entropy(model.acc_logits(e_t), batch.t_acc)) / 4
    return (per_res + aux_weight * aux + distill_weight * distill + marginal_weight * marg
            + f1_weight * soft_f1,
            {"nll": float(per_res.detach()), "aux": float(aux.detach()),
             "marginal": float(marg.detach()), "soft_f1_loss": float(soft_f1.detach())})


def evaluate(model: AlignerModel, pairs: list[TrainPair], window: int, max_cells: int,
             threshold: float) -> dict:
    """Validation NLL per residue and mean F1 of MEA-decoded posteriors (twilight: < 30% id)."""
    model.eval()
    rng = np.random.default_rng(0)
    nlls, f1s, ids, fold_novel = [], [], [], []
    source = {p.name: p.source for p in pairs}
    for batch in batches(pairs, window, max_cells, rng, shuffle=False):
        with torch.no_grad():
            S, gaps, _, _ = model(batch.q, batch.t, target_tokens(model, batch))
        S = S.detach().requires_grad_(True)
        P = None
        if model.cfg.decode_mode != model.cfg.mode:
            lz = crf_log_partition_batch(S, gaps, batch.lq, batch.lt, model.cfg.decode_mode)
            (P,) = torch.autograd.grad(lz.sum(), S)
        logz = crf_log_partition_batch(S, gaps, batch.lq, batch.lt, model.cfg.mode)
        if P is None:
            (P,) = torch.autograd.grad(logz.sum(), S)
        with torch.no_grad():
            for b, ref in enumerate(batch.pairs):
                lq, lt = int(batch.lq[b]), int(batch.lt[b])
                ps = path_score(S.detach(), gaps, b, ref, lq, lt, model.cfg.mode)
                nlls.append(float(logz[b] - ps) / (lq + lt))
                Pb = np.ascontiguousarray(P[b, :lq, :lt].numpy(), dtype=np.float32)
                f1s.append(score_pair(mea_align(Pb, threshold).pairs, ref, lq, lt).F1)
                q, t = batch.q[b, :lq].numpy(), batch.t[b, :lt].numpy()
                ids.append(float((q[ref[:, 0]] == t[ref[:, 1]]).mean()))
                fold_novel.append(source.get(batch.names[b]) == "tmalign")
    model.train()
    f1 = np.array(f1s)
    tw = np.array(ids) < 0.3
    tm = np.array(fold_novel, dtype=bool)
    return {"val_nll": float(np.mean(nlls)), "val_f1": float(f1.mean()),
            "val_f1_twilight": float(f1[tw].mean()) if tw.any() else math.nan,
            "val_f1_tmalign": float(f1[tm].mean()) if tm.any() else math.nan,
            "val_pairs": len(f1s)}


def evaluate_homology(model: AlignerModel, head: HomologyScore, val: ScopPairs, batch: int,
                      n_batches: int = 12, hard: bool = False) -> dict:
    """In-batch ranking on held-out SCOPe folds: loss, top-1 accuracy, positive-vs-negative AUC
    (``hard``: with one prefilter-mined hard negative per query, keys ``hom_hard_*``)."""
    model.eval()
    rng = np.random.default_rng(7)
    losses, acc, auc = [], [], []
    with torch.no_grad():
        for _ in range(n_batches):
            q, t, lq, lt, same = sample_batch(val, batch, rng, hard=hard)
            z = homology_logits(model, head, q, t, lq, lt)
            losses.append(float(homology_loss(z, same)))
            B = len(z)
            pos = torch.zeros_like(same)
            pos[:, :B] = torch.eye(B, dtype=torch.bool)
            zm = z.masked_fill(same & ~pos, float("-inf"))
            acc.append(float((zm.argmax(1) == torch.arange(B)).float().mean()))
            diag = torch.diagonal(z[:, :B])
            neg = z[~same]
            auc.append(float((diag[:, None] > neg[None, :]).float().mean()))
    model.train()
    pre = "hom_hard_" if hard else "hom_"
    return {f"{pre}loss": float(np.mean(losses)), f"{pre}acc": float(np.mean(acc)),
            f"{pre}auc": float(np.mean(auc))}


def tune_decoding(model: AlignerModel, pairs: list[TrainPair], modes: tuple[str, ...],
                  thresholds: tuple[float, ...]) -> dict[str, dict[str, float]]:
    """Mean F1 (all, twilight) on whole held-out pairs for each posterior mode and MEA threshold."""
    from homalign.model.decode import posterior_matrix

    model.eval()
    out: dict[str, dict[str, float]] = {}
    tw = np.array([p.identity < 0.3 for p in pairs])
    for mode in modes:
        f1 = np.zeros((len(thresholds), len(pairs)))
        for k, p in enumerate(pairs):
            S, gaps = model.score_pair(p.q, p.t, pair_tokens(model, p))
            P = posterior_matrix(S, gaps, mode)
            for a, th in enumerate(thresholds):
                f1[a, k] = score_pair(mea_align(P, th).pairs, p.pairs, len(p.q), len(p.t)).F1
        for a, th in enumerate(thresholds):
            out[f"{mode}@{th}"] = {"f1": float(f1[a].mean()),
                                   "f1_twilight": float(f1[a, tw].mean())}
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="run directory (log, checkpoint, best model)")
    ap.add_argument("--tune", default=None, metavar="STEM",
                    help="instead of training: F1 of held-out train pairs for each posterior mode "
                         "and MEA threshold with the model STEM (.safetensors/.json)")
    ap.add_argument("--homstrad", type=Path, default=DATA / "homstrad" / "train")
    ap.add_argument("--tmalign", type=Path, default=DATA / "scope" / "tmalign-pairs.train.tsv")
    ap.add_argument("--no-tmalign", action="store_true")
    ap.add_argument("--max-pairs-per-family", type=int, default=40)
    ap.add_argument("--max-identity", type=float, default=None, metavar="X",
                    help="train only on pairs whose reference identity is below X (validation "
                         "keeps every pair), e.g. to fine-tune on remote homologs")
    ap.add_argument("--transitive", type=int, default=0, metavar="N",
                    help="add up to N transitive TM-align pairs (A-C aligned through a domain B "
                         "of two training pairs A-B, B-C; data.compose_pairs), made from the "
                         "training side of the split only")
    ap.add_argument("--transitive-coverage", type=float, default=0.5, metavar="X",
                    help="keep a transitive pair only if it pairs >= X of the shorter sequence")
    ap.add_argument("--transitive-support", type=float, default=0.0, metavar="S",
                    help="keep a composed residue pair only if >= S of the middles vote for it")
    ap.add_argument("--transitive-middles", type=int, default=1, metavar="M",
                    help="keep a transitive pair only if >= M middle domains link it")
    ap.add_argument("--mutate", type=float, default=0.0, metavar="RATE",
                    help="augmentation: redraw each training residue with this probability from "
                         "BLOSUM62's substitution probabilities")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--window", type=int, default=256)
    ap.add_argument("--max-cells", type=int, default=400_000)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--weight-decay", type=float, default=0.05)
    ap.add_argument("--cosine", action="store_true",
                    help="cosine learning-rate decay from --lr to 0 over --steps")
    ap.add_argument("--aux-weight", type=float, default=0.2)
    ap.add_argument("--eval-every", type=int, default=150)
    ap.add_argument("--save-evals", action="store_true",
                    help="keep every evaluated model as <out>/eval-<step> (not only the best)")
    ap.add_argument("--val-pairs", type=int, default=160)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dp", choices=("crf", "soft"), default="crf",
                    help="log Z by the compiled CRF (fast) or the torch anti-diagonal soft DP")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--init", default=None, metavar="STEM",
                    help="start from a saved model (.safetensors/.json) instead of the prior")
    ap.add_argument("--init-encoder", default=None, metavar="STEM",
                    help="load a pre-trained encoder (homalign.model.pretrain's "
                         "<out>/encoder.safetensors + .json) into model.encoder")
    ap.add_argument("--homology-weight", type=float, default=0.0,
                    help="weight of the SCOPe in-batch ranking loss (homalign.model.contrastive)")
    ap.add_argument("--homology-batch", type=int, default=8)
    ap.add_argument("--homology-only", action="store_true",
                    help="train only the homology adapter (model.homology) on a fixed aligner, "
                         "e.g. --init the bundled weights; alignments stay exactly as they were")
    ap.add_argument("--hard-negatives", action="store_true",
                    help="add one prefilter-mined other-fold hard negative per query")
    ap.add_argument("--shift-init", type=float, default=0.5)
    ap.add_argument("--teacher", default=None, metavar="STEM",
                    help="distil the match posteriors of this model (e.g. a template-mode one)")
    ap.add_argument("--distill-weight", type=float, default=1.0)
    ap.add_argument("--margin", type=float, default=0.0, metavar="NATS",
                    help="softmax-margin training: a path pays NATS for each pair it aligns that "
                         "the reference does not (cost-augmented likelihood; 0 = plain CRF)")
    ap.add_argument("--margin-missed", type=float, default=None, metavar="NATS",
                    help="and this for each reference pair it leaves out (default: --margin)")
    ap.add_argument("--marginal-weight", type=float, default=0.0, metavar="W",
                    help="add W x the cross-entropy of the per-residue posterior marginals (what "
                         "MEA decoding reads) to the path likelihood; ~3x the CRF cost per step")
    ap.add_argument("--f1-weight", type=float, default=0.0, metavar="W",
                    help="add W x (1 - the expected-count F1 of the posteriors against the "
                         "reference), a differentiable F1; shares the marginal loss's posteriors")
    ap.add_argument("--scop", type=Path,
                    default=DATA / "scope" / "astral-2.07-40.trainval.fa")
    ap.add_argument("--config", type=str, default="{}",
                    help="JSON object overriding AlignerConfig fields, e.g. '{\"dim\": 48}'")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.tune:
        from homalign.model.weights import load_model

        data = load_homstrad(args.homstrad, args.max_pairs_per_family)
        if not args.no_tmalign:
            data += load_tmalign(args.tmalign)
        _, val = split_by_group(data)
        val = [val[k] for k in sorted(np.random.default_rng(1).choice(
            len(val), min(args.val_pairs, len(val)), replace=False))]
        model, _ = load_model(args.tune)
        res = tune_decoding(model, val, ("global", "semiglobal", "local"),
                            (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5))
        for key, v in res.items():
            print(key, json.dumps(v))
        return 0
    torch.manual_seed(args.seed)
    if args.out is None:
        raise SystemExit("--out is required for training")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "log.jsonl", "a")  # noqa: SIM115

    def emit(rec: dict) -> None:
        rec = {"time": time.strftime("%H:%M:%S"), **rec}
        log.write(json.dumps(rec) + "\n")
        log.flush()
        print(json.dumps(rec), flush=True)

    cfg = AlignerConfig.from_dict(json.loads(args.config))
    t0 = time.time()
    data = load_homstrad(args.homstrad, args.max_pairs_per_family)
    if not args.no_tmalign:
        data += load_tmalign(args.tmalign)
    train, val = split_by_group(data)
    if args.transitive > 0:
        train += compose_pairs([p for p in train if p.source == "tmalign"],
                               args.transitive_coverage, args.transitive, seed=args.seed,
                               support=args.transitive_support,
                               min_middles=args.transitive_middles)
    if args.max_identity is not None:
        train = [p for p in train if p.identity < args.max_identity]
    vrng = np.random.default_rng(1)
    val = [val[k] for k in sorted(vrng.choice(len(val), min(args.val_pairs, len(val)),
                                              replace=False))]
    emit({"event": "data", "train": len(train), "val": len(val), "load_s": time.time() - t0})

    model = AlignerModel(cfg)
    if args.init:
        from homalign.model.weights import load_model

        init, init_meta = load_model(args.init)
        if init_meta.get("ensemble"):
            raise SystemExit(f"--init {args.init} is an ensemble (homalign.model.ensemble); "
                             "initialise from one of its members")
        cfg = AlignerConfig.from_dict({**init_meta["config"], **json.loads(args.config)})
        model = AlignerModel(cfg)
        missing, unexpected = model.load_state_dict(init.state_dict(), strict=False)
        new_parts = ("scorer.refine.", "encoder.template.")
        if unexpected or any(not k.startswith(new_parts) for k in missing):
            raise SystemExit(f"--init {args.init}: weights do not fit the config "
                             f"(missing {missing}, unexpected {unexpected})")
    if args.init_encoder:
        from homalign.model.pretrain import load_encoder

        encoder, enc_meta = load_encoder(args.init_encoder)
        enc_cfg = enc_meta["config"]
        for key in ("dim", "kernel", "dilations"):
            if list(np.atleast_1d(enc_cfg[key])) != list(np.atleast_1d(getattr(cfg, key))):
                raise SystemExit(f"--init-encoder {args.init_encoder}: {key}={enc_cfg[key]} does "
                                 f"not match the aligner config ({getattr(cfg, key)})")
        model.encoder.load_state_dict(encoder.state_dict())
    teacher = None
    if args.teacher:
        from homalign.model.weights import load_model

        teacher, teacher_meta = load_model(args.teacher)
        if teacher_meta.get("ensemble"):
            raise SystemExit(f"--teacher {args.teacher} is an ensemble; distil from one model")
        teacher.eval()
    head: HomologyScore = model.homology
    if float(head.W.detach().abs().sum()) == 0.0:  # untrained adapter: start at the offset
        with torch.no_grad():
            head.shift.fill_(args.shift_init)
    if args.homology_only:
        if args.homology_weight <= 0:
            raise SystemExit("--homology-only needs --homology-weight > 0")
        for name, p in model.named_parameters():
            p.requires_grad_(name.startswith("homology."))
    scop_train = scop_val = None
    if args.homology_weight > 0:
        dev_ids = set((DATA / "scope" / "dev-queries.txt").read_text().split())
        scop_train, scop_val = load_scop_pairs(args.scop, dev_ids)
        emit({"event": "scop", "train_superfamilies": len(scop_train),
              "val_superfamilies": len(scop_val)})
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p for n, p in trainable if p.dim() >= 2]
    no_decay = [p for n, p in trainable if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
    state = {"step": 0, "epoch": 0, "in_epoch": 0, "best_f1": -1.0}
    ckpt = out / "checkpoint.pt"
    def evaluate_all() -> dict:
        res = {} if args.homology_only else evaluate(model, val, args.window, args.max_cells,
                                                     cfg.mea_threshold)
        if scop_val is not None:
            res.update(evaluate_homology(model, head, scop_val, args.homology_batch))
            res.update(evaluate_homology(model, head, scop_val, args.homology_batch, hard=True))
        if args.homology_only:
            model.eval()  # a fixed feature extractor: no dropout noise in the embeddings
        return res

    if args.homology_only:
        model.eval()
    if ckpt.exists():
        saved = torch.load(ckpt, weights_only=True)
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        state = saved["state"]
        emit({"event": "resume", **state})
    else:
        emit({"event": "start", "params": model.n_parameters(), "config": cfg.to_dict(),
              "args": {k: str(v) for k, v in vars(args).items()}})
        emit({"event": "eval", "step": 0, **evaluate_all()})

    def checkpoint() -> None:
        atomic_torch_save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                            "state": state}, ckpt)

    margin = (args.margin, args.margin if args.margin_missed is None else args.margin_missed)
    if min(margin) < 0:
        raise SystemExit(f"--margin and --margin-missed must be >= 0, got {margin}")
    if not args.homology_only:
        model.train()
    running: list[float] = []
    t_last = time.time()
    while state["step"] < args.steps:
        rng = np.random.default_rng([args.seed, state["epoch"]])
        for k, batch in enumerate(batches(train, args.window, args.max_cells, rng,
                                                  mutation_rate=args.mutate)):
            if k < state["in_epoch"]:
                continue
            if args.cosine:
                for group in opt.param_groups:
                    group["lr"] = args.lr * 0.5 * (1 + math.cos(math.pi * state["step"] / args.steps))
            if args.homology_only:
                loss, parts = torch.zeros(()), {"nll": math.nan, "aux": math.nan}
            else:
                loss, parts = batch_loss(model, batch, args.aux_weight, args.dp, teacher,
                                         args.distill_weight, margin, args.marginal_weight,
                                         args.f1_weight)
            if scop_train is not None:
                hrng = np.random.default_rng([args.seed, 99, state["step"]])
                q, t, lq, lt, same = sample_batch(scop_train, args.homology_batch, hrng,
                                                  hard=args.hard_negatives)
                hl = homology_loss(homology_logits(model, head, q, t, lq, lt,
                                                   adapter_only=args.homology_only), same)
                loss = loss + args.homology_weight * hl
                parts["hom"] = float(hl.detach())
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            state["step"] += 1
            state["in_epoch"] = k + 1
            running.append(parts["hom"] if args.homology_only else parts["nll"])
            if state["step"] % 25 == 0:
                emit({"event": "train", "step": state["step"], "epoch": state["epoch"],
                      "nll": float(np.mean(running)), "aux": parts["aux"],
                      "marginal": parts.get("marginal", math.nan),
                      "soft_f1_loss": parts.get("soft_f1_loss", math.nan),
                      "hom": parts.get("hom", math.nan),
                      **{f"hom_{k}": v for k, v in head.to_dict().items()},
                      "s_per_step": (time.time() - t_last) / 25,
                      "scale": float(model.scorer.log_scale.detach().exp())})
                running = []
                t_last = time.time()
            if state["step"] % args.eval_every == 0 or state["step"] >= args.steps:
                res = evaluate_all()
                emit({"event": "eval", "step": state["step"], **res})
                meta = {"step": state["step"], **res}
                if scop_val is not None:
                    meta["homology_score"] = head.to_dict()
                if scop_val is not None or args.save_evals:
                    save_model(model, out / f"eval-{state['step']:06d}", meta)
                key = -res["hom_loss"] if args.homology_only else res["val_f1"]
                if key > state["best_f1"]:
                    state["best_f1"] = key
                    save_model(model, out / "best", meta)
                checkpoint()
            if state["step"] >= args.steps:
                break
        else:
            state["epoch"] += 1
            state["in_epoch"] = 0
            checkpoint()
    emit({"event": "done", **state})
    return 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["batch_loss", "evaluate", "main"]
