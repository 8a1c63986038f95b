"""Faults a QA pass found in the training runtime: each test fails without its fix."""

from __future__ import annotations

import base64
import contextlib
import math
import os
import signal
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from train_helpers import make_toy, signal_at_step

from homalign.cli import main
from homalign.errors import InputError
from homalign.train import codec
from homalign.train import config as cfg
from homalign.train.checkpoint import CheckpointStore
from homalign.train.evaluation import default_export
from homalign.train.launch import config_changes, train_from_config
from homalign.train.monitored_session import MonitoredTrainingSession
from homalign.train.session_manager import NotReadyError
from homalign.train.toy import toy_task
from homalign.train.warm_start import load_weights

TOY = Path(__file__).resolve().parents[2] / "configs" / "toy.toml"


def _processes_mentioning(text: str) -> list[int]:
    """Ids of live processes (not zombies) whose command line contains ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            zombie = ") Z " in (entry / "stat").read_text()
        except OSError:
            continue
        if text in cmdline and not zombie:
            found.append(int(entry.name))
    return found


def test_sigterm_stops_every_torchrun_worker_gracefully(tmp_path: Path) -> None:
    """SIGTERM to ``homalign train --nproc 2``: torchrun forwards it, every worker ends after its
    step, rank 0 writes the final checkpoint, and no worker is left behind."""
    config = tmp_path / "c.toml"
    config.write_text('model = "toy-regression"\n[train]\nsteps = 1000000\nbatch_size = 4\n'
                      "save_model_secs = 600.0\nsave_summaries_secs = 0.0\nlog_every_steps = 5\n")
    logdir = tmp_path / "run"
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", PYTHONUNBUFFERED="1")
    argv = [sys.executable, "-m", "homalign", "train", "--config", str(config), "--logdir",
            str(logdir), "--nproc", "2", "-j", "2"]
    try:
        proc, out = signal_at_step(argv, signal.SIGTERM, env=env, start_new_session=True)
        assert proc.returncode == 128 + signal.SIGTERM, out[-3000:]
        stopped = [ln for ln in out.splitlines() if ln.startswith("stopped by SIGTERM")]
        assert stopped, out[-3000:]
        final = int(stopped[0].rsplit(" ", 1)[1])
        assert CheckpointStore(logdir).load_latest().info.step == final  # type: ignore[union-attr]
        assert _processes_mentioning(str(logdir)) == []
    finally:  # without the fix the workers live on: end them
        for pid in _processes_mentioning(str(logdir)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            proc.wait()
        for pid in _processes_mentioning(str(logdir)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _toy_config(**train: Any) -> cfg.TrainConfig:
    settings = {"steps": 10, "batch_size": 16, "lr": 0.01, "save_model_secs": 0.0,
                "save_model_steps": 5, "save_summaries_secs": 0.0, "log_every_steps": 0}
    settings.update(train)
    return cfg.parse_config({"model": "toy-regression", "model_args": {"hidden": 8},
                             "train": settings})


def _files(logdir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in logdir.iterdir() if p.name.startswith("model.ckpt")
            or p.name == "checkpoint"}


def test_diverged_parameters_are_never_checkpointed(tmp_path: Path) -> None:
    """Step checkpoints of a NaN state are skipped: the sound ones stay (and are not pruned)."""
    toy = make_toy()
    sv = toy.supervisor(tmp_path, save_model_steps=2, keep_max=2)
    with sv.managed_session() as session:
        for batch in toy.loader:
            if session.global_step >= 8:
                break
            with session.step():
                toy.train_step(batch)
            if session.global_step == 4:
                with torch.no_grad():
                    toy.model.net[0].weight.fill_(float("nan"))
    store = CheckpointStore(tmp_path)
    assert [c.step for c in store.kept()] == [2, 4]
    assert store.load_latest().info.step == 4  # type: ignore[union-attr]
    # the hooks' saver too
    toy2 = make_toy()
    with MonitoredTrainingSession(tmp_path / "m", model=toy2.model, optimizer=toy2.optimizer,
                                  data=toy2.loader, save_checkpoint_steps=2) as mon:
        with torch.no_grad():
            toy2.model.net[0].bias.fill_(float("inf"))
        assert mon.save_checkpoint() is None
    assert CheckpointStore(tmp_path / "m").kept() == []


def test_every_checkpoint_corrupt_is_an_error_not_a_fresh_start(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = tmp_path / "run"
    train_from_config(_toy_config(), logdir, echo=None)
    for info in CheckpointStore(logdir).kept():
        data = bytearray(info.files()[0].read_bytes())
        data[-1] ^= 0xFF
        info.files()[0].write_bytes(bytes(data))
    before = _files(logdir)
    with pytest.raises(InputError, match="no checkpoint could be read") as err:
        train_from_config(_toy_config(steps=20), logdir, echo=None)
    assert str(logdir) in str(err.value)
    assert main(["train", "--config", str(TOY), "--logdir", str(logdir), "--steps", "20"]) == 2
    assert "no checkpoint could be read" in capsys.readouterr().err
    assert _files(logdir) == before


def test_malformed_payload_with_matching_hashes_is_corrupt(tmp_path: Path) -> None:
    """A foreign but hash-consistent payload (an array whose data do not fit its shape) makes
    the checkpoint corrupt: the previous one is used."""
    store = CheckpointStore(tmp_path)
    store.save(1, {"w": torch.ones(2)}, {"global_step": 1})
    bad = {"__ndarray__": {"dtype": "<f8", "shape": [3],
                           "data": base64.b64encode(np.zeros(2).tobytes()).decode()}}
    store.save(2, {"w": torch.ones(2)}, {"global_step": 2, "rng": bad})
    assert store.load_latest().info.step == 1  # type: ignore[union-attr]
    assert any("model.ckpt-2" in p for p in store.problems)


def test_fallback_never_restores_the_abandoned_branch(tmp_path: Path) -> None:
    """After training on from a checkpoint selected by hand, a corrupt newest checkpoint falls
    back to an older one, not to the newer checkpoints of the branch that was left."""
    store = CheckpointStore(tmp_path)
    for step in (10, 20, 30):
        store.save(step, {"w": torch.full((1,), float(step))}, {"global_step": step})
    text = store.metadata_path.read_text()
    store.metadata_path.write_text(text.replace('path: "model.ckpt-30"', 'path: "model.ckpt-20"', 1))
    store.save(25, {"w": torch.full((1,), 25.0)}, {"global_step": 25})
    store.info_for_step(25).files()[0].write_bytes(b"broken")
    assert store.load_latest().info.step == 20  # type: ignore[union-attr]


def _lr(logdir: Path, step: int) -> float:
    ckpt = CheckpointStore(logdir).load(f"model.ckpt-{step}")
    return float(codec.decode(ckpt.state["optimizer"], ckpt.tensors)["param_groups"][0]["lr"])


def test_resumed_cosine_follows_the_current_steps(tmp_path: Path) -> None:
    logdir = tmp_path / "run"
    train_from_config(_toy_config(scheduler="cosine"), logdir, echo=None)
    assert _lr(logdir, 10) == pytest.approx(0.0, abs=1e-12)
    train_from_config(_toy_config(scheduler="cosine", steps=20), logdir, echo=None)
    # the curve of a 20-step run from step 10 on: at 15, 0.01 * 0.5 * (1 + cos(0.75 pi))
    assert _lr(logdir, 15) == pytest.approx(0.005 * (1 + math.cos(0.75 * math.pi)), rel=1e-6)
    assert _lr(logdir, 20) == pytest.approx(0.0, abs=1e-12)


def test_resume_with_other_optimizer_settings_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = tmp_path / "run"
    train_from_config(_toy_config(), logdir, echo=None)
    before = _files(logdir)
    with pytest.raises(NotReadyError, match=r"lr = 0.02, but the checkpoint was trained with 0.01"):
        train_from_config(_toy_config(lr=0.02, steps=20), logdir, echo=None)
    with pytest.raises(NotReadyError, match=r"weight_decay = 0.1, but .* with 0.0"):
        train_from_config(_toy_config(weight_decay=0.1, steps=20), logdir, echo=None)
    assert _files(logdir) == before
    # the same settings resume; with a schedule the rate moves, the base rate is compared
    train_from_config(_toy_config(steps=15), logdir, echo=None)
    cosine = tmp_path / "cos"
    train_from_config(_toy_config(scheduler="cosine"), cosine, echo=None)
    train_from_config(_toy_config(scheduler="cosine", steps=15), cosine, echo=None)
    with pytest.raises(NotReadyError, match=r"\[train\] lr = 0.5, but"):
        train_from_config(_toy_config(scheduler="cosine", steps=20, lr=0.5), cosine, echo=None)


def test_warm_start_from_a_relative_checkpoint_prefix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    train_from_config(_toy_config(), tmp_path / "runs" / "a", echo=None)
    monkeypatch.chdir(tmp_path)
    weights = load_weights("runs/a/model.ckpt-5")
    assert "net.0.weight" in weights


@pytest.mark.parametrize(("data", "message"), [
    ({"train": 5}, r"\[train\] must be a table"),
    ({"model_args": [1]}, r"\[model_args\] must be a table"),
    ({"seed": 99999999999999999999}, "seed = 99999999999999999999 must be"),
])
def test_bad_config_values_are_input_errors(data: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        cfg.parse_config({"model": "toy-regression", **data}, "c.toml")


def test_warm_start_prints_the_config_changes_of_a_default_export(tmp_path: Path) -> None:
    task = toy_task(hidden=8)
    stem = tmp_path / "best"
    default_export(task.model, stem, {**task.config, "step": 5, "metric": "loss"})
    other = toy_task(hidden=16, layers=2)
    assert config_changes(str(stem.with_suffix(".safetensors")), other.config) == [
        "model_args.hidden: 8 -> 16", "model_args.layers: 1 -> 2"]
    assert config_changes(str(stem.with_suffix(".safetensors")), task.config) == []


def test_toy_eval_set_is_drawn_from_the_training_function() -> None:
    task = toy_task(n_samples=256, n_eval=64, data_seed=0)
    g = torch.Generator().manual_seed(0)  # the draw of toy_dataset(256, 8, seed=0)
    torch.randn(256, 8, generator=g)
    w = torch.randn(8, generator=g) / 8**0.5
    for ds in (task.train_dataset, task.eval_dataset):
        x, y = ds.tensors  # type: ignore[attr-defined]
        assert float((y - torch.sin(x @ w)).abs().max()) < 0.3  # noise 0.05
    assert not torch.equal(task.eval_dataset.tensors[0][:64],  # type: ignore[attr-defined]
                           task.train_dataset.tensors[0][:64])  # type: ignore[attr-defined]


def test_resume_with_another_nproc_is_one_line_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = tmp_path / "run"
    train_from_config(_toy_config(), logdir, echo=None)
    assert main(["train", "--config", str(TOY), "--logdir", str(logdir), "--nproc", "2",
                 "--steps", "20"]) == 2
    err = capsys.readouterr().err
    assert "written by a run of 1 process(es), not 2: resume it with --nproc 1" in err
    assert len(err.strip().splitlines()) == 1
