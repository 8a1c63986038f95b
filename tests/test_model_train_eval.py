"""`homalign train` with an [eval] table: the learned aligner is evaluated on whole pairs of an
evaluation directory while it trains, and the best model is exported in the bundled format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from homalign.cli import main
from homalign.errors import InputError
from homalign.evaluate import bundled_homstrad_dev, load_reference_pairs, score_pair
from homalign.model.evaluation import evaluate_pairs, from_directory, resolve_eval_pairs
from homalign.model.weights import load_model
from homalign.train.checkpoint import CheckpointStore
from homalign.train.config import load_config
from homalign.train.launch import train_from_config
from homalign.train.summary import read_scalars

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "aligner.toml"
TRAIN_FAMILIES = ("ALAD", "B")
EVAL_FAMILIES = ("utg", "GA", "P")  # small: 1 + 1 + 3 member pairs


def _copy(families: tuple[str, ...], dest: Path) -> Path:
    for fam in families:
        shutil.copytree(bundled_homstrad_dev() / fam, dest / fam)
    return dest


@pytest.fixture
def tiny_config(tmp_path: Path) -> Path:
    train = _copy(TRAIN_FAMILIES, tmp_path / "train")
    dev = _copy(EVAL_FAMILIES, tmp_path / "dev")
    lines = ['model = "homalign.model.task:learned-aligner"', "seed = 0", "[model_args]",
             f'homstrad = "{train}"', 'tmalign = ""', "window = 64", "val_fraction = 0.0",
             f'eval_data = "{dev}"', "eval_pairs = 4", "[model_args.config]", "dim = 8",
             "[train]", "steps = 4", "batch_size = 2", "lr = 0.01", "save_model_steps = 2",
             "log_every_steps = 0", "save_summaries_secs = 0.0",
             "[eval]", 'metric = "f1"', 'mode = "max"', "throttle_secs = 0.05"]
    path = tmp_path / "tiny.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_shipped_configs_select_on_held_out_train_pairs_and_export_by_f1() -> None:
    for path in sorted(CONFIG.parent.glob("*.toml")):
        c = load_config(path)
        if c.model != "homalign.model.task:learned-aligner":
            continue
        assert c.eval is not None, path
        if c.model_args.get("objective", "alignment") == "alignment":
            assert (c.eval.metric, c.eval.mode) == ("f1", "max"), path
            assert c.model_args["eval_data"] == "held-out" and c.model_args["eval_pairs"] > 0
    pairs = resolve_eval_pairs("dev", [], 10)
    assert len(pairs) == 10 and len({p.name.split(":")[0] for p in pairs}) > 5


def test_selection_on_dev_is_refused() -> None:
    from homalign.model.task import make_aligner_task

    for spec in ("dev", str(bundled_homstrad_dev())):
        with pytest.raises(InputError, match="not allowed"):
            make_aligner_task(homstrad=str(bundled_homstrad_dev()), tmalign="", eval_data=spec)


def test_an_eval_directory_without_families_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="family alignments"):
        from_directory(tmp_path)
    with pytest.raises(InputError):
        resolve_eval_pairs(str(tmp_path / "missing"), [], 5)


def test_eval_pairs_are_capped_evenly_and_metrics_match_the_benchmark_scorer() -> None:
    every = resolve_eval_pairs("dev", [], None)
    assert len(every) == len(load_reference_pairs(bundled_homstrad_dev()))
    model, _ = load_model(Path(__file__).resolve().parents[1] / "src/homalign/weights/learned")
    few = resolve_eval_pairs("dev", [], 3)
    res = evaluate_pairs(model, few)
    assert res["pairs"] == 3 and 0 < res["f1"] <= 1 and res["nll"] > 0
    # the same F1 from the learned method's code path, scored by the benchmark scorer
    from homalign.sequence import Sequence

    f1s = []
    for p in few:
        q = Sequence("q", _letters(p.q))
        t = Sequence("t", _letters(p.t))
        aln = _learned_align(model, q, t)
        f1s.append(score_pair(aln.pairs, p.pairs, len(q), len(t)).F1)
    assert res["f1"] == pytest.approx(float(np.mean(f1s)), abs=1e-12)


def _letters(codes: np.ndarray) -> str:
    from homalign.alphabet import decode

    return decode(codes)


def _learned_align(model, q, t):
    """Align with the registered ``learned`` method, its model swapped for ``model``."""
    import homalign.methods.learned as learned
    from homalign.methods import get_method

    saved = learned._model
    learned._model = lambda name=learned.ALIGN_WEIGHTS: (model, {"config": model.cfg.to_dict()})
    try:
        return get_method("learned").align(q, t)
    finally:
        learned._model = saved


def test_homalign_train_evaluates_and_exports_bundle_ready_weights(tiny_config: Path) -> None:
    run = tiny_config.parent / "run"
    assert main(["train", "--config", str(tiny_config), "--logdir", str(run)]) == 0
    records = json.loads((run / "eval" / "evaluations.json").read_text())
    assert records and records[-1]["step"] == 4
    for r in records:
        assert {"f1", "balanced", "f1_twilight", "nll", "s_dev", "s_mod"} <= set(r["metrics"])
        assert r["metrics"]["pairs"] == 4
    scalars = read_scalars(run / "eval")
    assert [s for s, _ in scalars["f1"]] == [r["step"] for r in records]
    assert [v for _, v in scalars["balanced"]] == pytest.approx(
        [r["metrics"]["balanced"] for r in records])

    best = max(records, key=lambda r: r["metrics"]["f1"])
    model, meta = load_model(run / "export" / "best")
    assert meta["eval_metric"] == "f1" and meta["step"] == best["step"]
    assert meta["eval_value"] == pytest.approx(best["metrics"]["f1"])
    assert meta["config"]["dim"] == 8 and meta["model"] == "learned-aligner"
    # the export holds the evaluated checkpoint's weights
    store = CheckpointStore(run)
    ckpt = store.load(store.info_for_step(best["step"]))
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, ckpt.tensors["model/" + name].reshape(tensor.shape)), name
    # and it aligns the evaluation pairs through the learned method with the recorded F1
    dev = tiny_config.parent / "dev"
    pairs = resolve_eval_pairs(str(dev), [], 4)
    f1s = []
    for p in pairs:
        from homalign.sequence import Sequence

        q, t = Sequence("q", _letters(p.q)), Sequence("t", _letters(p.t))
        aln = _learned_align(model, q, t)
        assert aln.method == "learned" and len(aln.pairs) > 0
        f1s.append(score_pair(aln.pairs, p.pairs, len(q), len(t)).F1)
    assert float(np.mean(f1s)) == pytest.approx(meta["eval_value"], abs=1e-12)


def test_a_resumed_run_keeps_the_best_so_far(tiny_config: Path) -> None:
    """Interrupted at step 2, resumed to 4: step 2 is not evaluated again, and a later, worse
    checkpoint does not replace the export (the best-so-far is read back from best.json)."""
    run = tiny_config.parent / "run"
    config = load_config(tiny_config)
    first = train_from_config(config, run, steps=2, echo=None)
    assert first.final_step == 2 and first.evaluations == 1
    best_json = run / "export" / "best.json"
    meta = json.loads(best_json.read_text())
    assert meta["step"] == 2
    # pretend the interrupted run had found a model no later checkpoint can beat
    meta["eval_value"] = 1.0
    best_json.write_text(json.dumps(meta))
    weights = (run / "export" / "best.safetensors").read_bytes()

    second = train_from_config(config, run, echo=None)
    assert second.restored_step == 2 and second.final_step == 4
    records = json.loads((run / "eval" / "evaluations.json").read_text())
    steps = [r["step"] for r in records]
    assert steps[0] == 2 and steps[-1] == 4 and len(steps) == len(set(steps))
    assert not any(r["exported"] for r in records[1:])
    assert (run / "export" / "best.safetensors").read_bytes() == weights
    assert json.loads(best_json.read_text())["eval_value"] == 1.0 and second.best == 1.0


def test_under_torchrun_only_rank_0_evaluates_and_exports(tiny_config: Path) -> None:
    import os
    import subprocess
    import sys

    run, report = tiny_config.parent / "ddp", tiny_config.parent / "report"
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE",
               TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           f"--log-dir={tiny_config.parent / 'torchrun'}", "-m", "homalign.train.launch", "--config", str(tiny_config), "--logdir", str(run),
           "--report", str(report)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-5000:]
    ranks = [json.loads((tiny_config.parent / f"report.rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["param_sha256"] == ranks[1]["param_sha256"]
    assert ranks[0]["evaluations"] >= 1 and ranks[1]["evaluations"] == 0
    records = json.loads((run / "eval" / "evaluations.json").read_text())
    assert len(records) == ranks[0]["evaluations"] and records[-1]["step"] == 4
    assert len(list((run / "eval").glob("events.out.tfevents.*"))) == 1
    model, meta = load_model(run / "export" / "best")
    assert meta["eval_value"] == pytest.approx(max(r["metrics"]["f1"] for r in records))
    assert ranks[0]["best"] == pytest.approx(meta["eval_value"])
