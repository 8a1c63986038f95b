"""Continuous evaluation in ``homalign train``: the [eval] table, the evaluator, best-model export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import safetensors.torch
import torch
from torch import nn

from homalign.errors import InputError
from homalign.train import config as cfg
from homalign.train.checkpoint import CheckpointStore
from homalign.train.evaluation import ContinuousEvaluator
from homalign.train.launch import train_from_config
from homalign.train.summary import read_scalars
from homalign.train.task import TrainTask
from homalign.train.toy import mse_loss, toy_dataset, toy_task

TOY_EVAL = "toy-regression-with-eval"


def _toy_with_eval(**kwargs: int) -> TrainTask:
    """The toy task plus a whole-model evaluation (MSE on a fixed held-out set)."""
    task = toy_task(**kwargs)
    held_out = toy_dataset(64, seed=7)
    x, y = held_out.tensors
    task.evaluate = lambda model: {"mse": float(mse_loss(model, (x, y))),
                                   "mean_pred": float(model(x).mean())}
    return task


cfg.register_model(TOY_EVAL, _toy_with_eval, replace=True)


def _config(eval_table: str, steps: int = 6, model: str = TOY_EVAL) -> cfg.TrainConfig:
    from homalign.train.config import tomllib

    text = (f'model = "{model}"\nseed = 0\n[model_args]\nhidden = 8\n'
            f"[train]\nsteps = {steps}\nbatch_size = 16\nlr = 0.05\nsave_model_steps = 2\n"
            f"save_summaries_secs = 0.0\nlog_every_steps = 0\n{eval_table}")
    return cfg.parse_config(tomllib.loads(text), "test.toml")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[eval]\nmetrik = "f1"\n', "unknown key"),
        ('[eval]\nmode = "best"\n', "mode"),
        ("[eval]\nthrottle_secs = 0\n", "throttle_secs"),
        ('[eval]\nfinal = "yes"\n', "wrong type"),
    ],
)
def test_bad_eval_tables_are_input_errors(table: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        _config(table)


def test_eval_table_is_optional_and_parsed() -> None:
    assert _config("").eval is None
    e = _config('[eval]\nmetric = "mse"\nthrottle_secs = 2\n').eval
    assert e == cfg.EvalSettings(metric="mse", mode="min", throttle_secs=2.0, final=True)


def test_eval_without_an_evaluate_function_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no evaluate"):
        train_from_config(_config("[eval]\n", model="toy-regression"), tmp_path / "run",
                          echo=None)


def test_training_evaluates_and_exports_the_best_checkpoint(tmp_path: Path) -> None:
    run = tmp_path / "run"
    conf = _config('[eval]\nmetric = "mse"\nmode = "min"\nthrottle_secs = 0.01\n', steps=6)
    report = train_from_config(conf, run, echo=None)
    records = json.loads((run / "eval" / "evaluations.json").read_text())
    assert records and records[-1]["step"] == 6 and report.evaluations == len(records)
    steps = [r["step"] for r in records]
    assert steps == sorted(set(steps)) and set(steps) <= {2, 4, 6}
    # the event files of eval/ hold the same values at the same steps
    scalars = read_scalars(run / "eval")
    assert [s for s, _ in scalars["mse"]] == steps
    assert [v for _, v in scalars["mse"]] == pytest.approx([r["metrics"]["mse"] for r in records])
    # the export is the checkpoint with the lowest mse, bit for bit
    meta = json.loads((run / "export" / "best.json").read_text())
    best = min(records, key=lambda r: r["metrics"]["mse"])
    assert meta["eval_metric"] == "mse" and meta["eval_value"] == pytest.approx(
        best["metrics"]["mse"])
    assert meta["step"] == best["step"] and meta["model"] == "toy-regression"
    assert report.best == pytest.approx(best["metrics"]["mse"])
    exported = safetensors.torch.load_file(run / "export" / "best.safetensors")
    ckpt = CheckpointStore(run).load(CheckpointStore(run).info_for_step(best["step"]))
    assert ckpt.content_hash == meta["checkpoint_sha256"]
    assert exported.keys() == {k[len("model/"):] for k in ckpt.tensors if k.startswith("model/")}
    for name, tensor in exported.items():
        assert torch.equal(tensor, ckpt.tensors["model/" + name])


class _Scripted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(1))


def _save(store: CheckpointStore, step: int, value: float) -> None:
    store.save(step, {"model/w": torch.tensor([value])}, {})


def test_best_so_far_survives_a_restart_and_is_never_replaced_by_a_worse_model(
        tmp_path: Path) -> None:
    """f1 = the checkpoint's weight: 0.5 (export), 0.7 (export), 0.6 (kept 0.7); a new
    evaluator (restart) keeps 0.7 against 0.65 and exports 0.8."""
    store = CheckpointStore(tmp_path)
    settings = cfg.EvalSettings(metric="f1", mode="max")

    def evaluator() -> ContinuousEvaluator:
        return ContinuousEvaluator(tmp_path, _Scripted(), lambda m: {"f1": float(m.w[0])},
                                   settings)

    ev = evaluator()
    exported = []
    for step, value in ((1, 0.5), (2, 0.7), (3, 0.6)):
        _save(store, step, value)
        exported.append(ev.poll()["exported"])
        assert ev.poll() is None  # the same checkpoint is never evaluated twice
    assert exported == [True, True, False]
    weights = (tmp_path / "export" / "best.safetensors").read_bytes()
    ev.close()

    ev = evaluator()
    assert ev.poll() is None and ev.best_value() == pytest.approx(0.7)
    _save(store, 4, 0.65)
    assert ev.poll()["exported"] is False
    assert (tmp_path / "export" / "best.safetensors").read_bytes() == weights
    _save(store, 5, 0.8)
    assert ev.poll()["exported"] is True
    assert safetensors.torch.load_file(tmp_path / "export" / "best.safetensors")["w"].item() == (
        pytest.approx(0.8))
    assert [r["step"] for r in ev.records()] == [1, 2, 3, 4, 5]
    ev.close()


def test_a_missing_metric_or_a_nan_is_handled(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    _save(store, 1, 0.5)
    ev = ContinuousEvaluator(tmp_path, _Scripted(), lambda m: {"f1": float("nan")},
                             cfg.EvalSettings(metric="f1", mode="max"))
    assert ev.poll()["exported"] is False  # NaN never becomes the best
    assert not (tmp_path / "export").exists()
    _save(store, 2, 0.5)
    ev2 = ContinuousEvaluator(tmp_path, _Scripted(), lambda m: {"other": 1.0},
                              cfg.EvalSettings(metric="f1", mode="max"))
    with pytest.raises(KeyError, match="f1"):
        ev2.poll()
