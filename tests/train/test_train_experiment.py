"""Experiment: train, evaluate, continuous evaluation without repeats, best-model export."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import torch

from homalign.train.checkpoint import CheckpointStore, CorruptCheckpointError
from homalign.train.data import ResumableLoader
from homalign.train.experiment import Experiment, ModelSpec
from homalign.train.export import BestExporter, load_export
from homalign.train.hooks import SessionRunArgs, SessionRunHook
from homalign.train.summary import read_scalars
from homalign.train.toy import ToyRegression, mae_metric, mse_loss, toy_dataset

CONFIG = {"model": "toy-regression", "model_args": {"in_features": 4, "hidden": 8}}


def model_fn() -> ModelSpec:
    model = ToyRegression(in_features=4, hidden=8)
    opt = torch.optim.Adam(model.parameters(), lr=2e-2)
    return ModelSpec(model, mse_loss, opt, config=CONFIG)


def train_input_fn() -> ResumableLoader:
    return ResumableLoader(toy_dataset(64, 4, seed=1), batch_size=8, seed=2)


def eval_input_fn() -> Any:
    return torch.utils.data.DataLoader(toy_dataset(32, 4, seed=9), batch_size=8)


def _experiment(model_dir: Path, **kwargs: Any) -> Experiment:
    kwargs.setdefault("train_steps", 20)
    kwargs.setdefault("save_checkpoint_steps", 5)
    kwargs.setdefault("eval_delay_secs", 0)
    kwargs.setdefault("continuous_eval_throttle_secs", 0.01)
    return Experiment(model_fn, train_input_fn, eval_input_fn, model_dir=model_dir,
                      eval_metrics={"mae": mae_metric}, eval_steps=3, seed=0, **kwargs)


def test_train_then_evaluate(tmp_path: Path) -> None:
    exp = _experiment(tmp_path)
    assert exp.train() == 20
    results = exp.evaluate()
    assert results["global_step"] == 20.0 and set(results) == {"loss", "mae", "global_step"}
    assert 0 < results["mae"] and 0 < results["loss"]
    assert [s for s, _ in read_scalars(tmp_path / "eval")["mae"]] == [20]
    first = exp.evaluate(tmp_path / "model.ckpt-5")
    assert first["global_step"] == 5.0 and first["loss"] != results["loss"]


class _Slow(SessionRunHook):
    """Gives the evaluator thread a chance between steps."""

    def __init__(self, gate: threading.Event) -> None:
        self.gate = gate

    def before_run(self, run_context: Any) -> SessionRunArgs | None:
        self.gate.wait(0.01)
        return None


def test_continuous_eval_never_evaluates_a_checkpoint_twice(tmp_path: Path) -> None:
    exp = _experiment(tmp_path, train_steps=30, train_hooks=[_Slow(threading.Event())])
    trainer = threading.Thread(target=exp.train)
    trainer.start()
    evaluator = _experiment(tmp_path, train_steps=30)
    try:
        results = evaluator.continuous_eval(timeout_secs=120)
    finally:
        exp.stop()
        trainer.join()
    steps = [r["global_step"] for r in results]
    assert steps[-1] == 30.0, "continuous_eval ends after evaluating the final checkpoint"
    assert steps == sorted(set(steps)), f"a checkpoint was evaluated twice: {steps}"
    hashes = evaluator.evaluated_hashes()
    assert len(hashes) == len(set(hashes)) == len(results)
    # a restarted evaluator, and a hand-edited selection of an evaluated checkpoint: no repeats
    again = _experiment(tmp_path, train_steps=None)
    assert again.continuous_eval(max_evals=1, timeout_secs=0.2) == []
    meta = tmp_path / "checkpoint"
    meta.write_text(meta.read_text().replace('model_checkpoint_path: "model.ckpt-30"',
                                             f'model_checkpoint_path: "model.ckpt-{int(steps[0])}"'))
    assert again.continuous_eval(max_evals=1, timeout_secs=0.2) == []


def test_train_and_evaluate_exports_best_and_keeps_training_rng(tmp_path: Path) -> None:
    exporter = BestExporter(metric="mae", mode="min")
    exp = _experiment(tmp_path / "te", export_strategies=[exporter], min_eval_frequency=10)
    final, exports = exp.train_and_evaluate()
    evaluated = [r["global_step"] for r in exp.evaluations]
    # saves every 5 steps; an evaluation needs a new checkpoint >= 10 steps after the previous
    # one (5 -> 15), and the final checkpoint is always evaluated
    assert evaluated == [5.0, 15.0, 20.0]
    assert final["global_step"] == 20.0
    best = min(exp.evaluations, key=lambda r: r["mae"])
    weights, meta = load_export(exporter.directory(tmp_path / "te"))
    assert meta["config"] == CONFIG and meta["metric_value"] == pytest.approx(best["mae"])
    assert meta["global_step"] == int(best["global_step"]) == exports[-1].global_step
    ckpt = CheckpointStore(tmp_path / "te").load(tmp_path / "te" / f"model.ckpt-{meta['global_step']}")
    assert all(torch.equal(weights[k], ckpt.tensors[f"model/{k}"]) for k in weights)
    fresh = ToyRegression(in_features=4, hidden=8)
    fresh.load_state_dict(weights)  # standalone: loads into a model built from its config

    # evaluating on the way did not change training: same parameters as a plain run
    plain = _experiment(tmp_path / "plain")
    plain.train()
    a = CheckpointStore(tmp_path / "te").load_latest()
    b = CheckpointStore(tmp_path / "plain").load_latest()
    assert a is not None and b is not None
    assert all(torch.equal(a.tensors[k], b.tensors[k]) for k in a.tensors if k.startswith("model/"))

    (exporter.directory(tmp_path / "te") / "model.safetensors").write_bytes(b"torn")
    with pytest.raises(CorruptCheckpointError):
        load_export(exporter.directory(tmp_path / "te"))


def test_exporter_keeps_only_improvements(tmp_path: Path) -> None:
    exp = _experiment(tmp_path)
    exp.train()
    exporter = BestExporter(metric="loss", mode="max")
    store = CheckpointStore(tmp_path)
    ckpt = store.load_latest()
    assert ckpt is not None
    assert exporter.maybe_export(tmp_path, {"loss": 1.0}, ckpt, CONFIG) is not None
    assert exporter.maybe_export(tmp_path, {"loss": 0.5}, ckpt, CONFIG) is None
    assert exporter.maybe_export(tmp_path, {"loss": float("nan")}, ckpt, CONFIG) is None
    assert BestExporter("loss", "max").best_value(tmp_path) == 1.0
    with pytest.raises(KeyError):
        exporter.maybe_export(tmp_path, {"mae": 1.0}, ckpt, CONFIG)


class _FakeClock:
    """Stands in for ``time`` in the experiment module and for its stop event: waiting advances
    the clock and lets a 'trainer' write a new checkpoint every ``every`` fake seconds."""

    def __init__(self, exp: Experiment, toy_steps: list[int], every: float) -> None:
        self.now = 0.0
        self.exp = exp
        self.pending = toy_steps
        self.every = every
        self.next_ckpt = 0.0
        self.waits: list[float] = []
        self.model = ToyRegression(in_features=4, hidden=8)

    def monotonic(self) -> float:
        return self.now

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(float(timeout or 0.0))
        self.advance(float(timeout or 0.0))
        return False

    def advance(self, dt: float) -> None:
        end = self.now + dt
        while self.pending and self.next_ckpt <= end:
            step = self.pending.pop(0)
            with torch.no_grad():
                self.model.net[0].weight.add_(0.01)
            tensors = {f"model/{k}": v.clone() for k, v in self.model.state_dict().items()}
            self.exp.store.save(step, tensors, {"global_step": step})
            self.next_ckpt += self.every
        self.now = end

    def is_set(self) -> bool:
        return False

    def set(self) -> None:
        pass


def test_continuous_eval_respects_the_throttle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                               ) -> None:
    """Checkpoints every 0.1 (fake) s, throttle 1 s: evaluations start >= 1 s apart, each one
    evaluates the newest checkpoint, none twice, and the one at train_steps ends the loop."""
    import homalign.train.experiment as experiment_module

    starts: list[float] = []
    exp = _experiment(tmp_path, train_steps=300, continuous_eval_throttle_secs=1.0,
                      eval_delay_secs=0.5)
    clock = _FakeClock(exp, list(range(10, 310, 10)), every=0.1)

    calls = [0]

    def timed_mae(model: Any, batch: Any) -> Any:
        if calls[0] % 3 == 0:  # first of the eval_steps=3 batches: an evaluation starts
            starts.append(clock.now)
        calls[0] += 1
        clock.advance(0.01)  # evaluating takes (fake) time too
        return mae_metric(model, batch)

    exp.eval_metrics = {"mae": timed_mae}
    exp._stop = clock  # type: ignore[assignment]
    monkeypatch.setattr(experiment_module, "time", clock)
    results = exp.continuous_eval()
    steps = [int(r["global_step"]) for r in results]
    assert steps[-1] == 300 and steps == sorted(set(steps))
    assert len(steps) < 30, "checkpoints newer than the last evaluation but not newest are skipped"
    assert clock.waits[0] == 0.5  # eval_delay_secs
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert gaps and min(gaps) >= 1.0 - 1e-9
