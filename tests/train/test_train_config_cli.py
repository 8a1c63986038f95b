"""TOML configs, the model registry, and the ``homalign train`` verb (in-process)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest
import torch
from train_helpers import signal_at_step

from homalign.cli import main
from homalign.errors import InputError
from homalign.train import config as cfg
from homalign.train.checkpoint import CheckpointStore
from homalign.train.task import TrainTask
from homalign.train.toy import ToyRegression, mse_loss, toy_dataset

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "configs" / "toy.toml"


def test_toy_config_loads_and_builds() -> None:
    c = cfg.load_config(TOY)
    assert c.model == "toy-regression" and "toy-regression" in cfg.registered_models()
    task = cfg.build_task(c)
    assert isinstance(task.model, ToyRegression) and len(task.train_dataset) == 512
    assert c.with_steps(7).train.steps == 7 and c.with_steps(None) is c


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('model = "toy-regression"\n[train]\nstepz = 3\n', "unknown key"),
        ('model = "toy-regression"\n[train]\nlr = "fast"\n', "wrong type"),
        ('model = "toy-regression"\n[train]\nasync_save = 1\n', "wrong type"),
        ('model = "toy-regression"\n[train]\nsteps = true\n', "wrong type"),
        ('model = "toy-regression"\n[train]\noptimizer = "lbfgs"\n', "optimizer"),
        ("model = \n", "invalid TOML"),
        ("[train]\nsteps = 1\n", "'model' must name"),
        ('model = "toy-regression"\n[train]\nlr = -0.01\n', r"lr = -0.01 must be a positive"),
        ('model = "toy-regression"\n[train]\nmomentum = 1.5\n', r"momentum = 1.5 must be in"),
        ('model = "toy-regression"\n[train]\nkeep_max = 0\n', "keep_max = 0 must be >= 1"),
        ('model = "toy-regression"\n[train]\nsave_model_secs = -1\n', "save_model_secs"),
        ('model = "toy-regression"\nseed = "x"\n', "seed = 'x' must be a non-negative"),
    ],
)
def test_bad_configs_are_input_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as err:
        cfg.load_config(path)
    assert str(path) in str(err.value)


def test_register_model_makes_it_available(tmp_path: Path) -> None:
    def factory(width: int = 3) -> TrainTask:
        return TrainTask(ToyRegression(2, width), toy_dataset(16, 2), mse_loss)

    cfg.register_model("test-tiny", factory, replace=True)
    with pytest.raises(ValueError, match="already registered"):
        cfg.register_model("test-tiny", lambda: factory())
    path = tmp_path / "tiny.toml"
    path.write_text('model = "test-tiny"\n[model_args]\nwidth = 5\n')
    task = cfg.build_task(cfg.load_config(path))
    assert task.model.net[0].out_features == 5
    path.write_text('model = "test-tiny"\n[model_args]\ndepth = 5\n')
    with pytest.raises(InputError, match="do not fit"):
        cfg.build_task(cfg.load_config(path))
    path.write_text('model = "nope"\n')
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        cfg.build_task(cfg.load_config(path))


def test_cli_train_runs_and_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = tmp_path / "run"
    assert main(["train", "--config", str(TOY), "--logdir", str(logdir), "--steps", "60"]) == 0
    out = capsys.readouterr().out
    assert "initialised; global step 0" in out and "done: global step 60" in out
    assert [c.step for c in CheckpointStore(logdir).kept()] == [50, 60]
    assert main(["train", "--config", str(TOY), "--logdir", str(logdir), "--steps", "70"]) == 0
    out = capsys.readouterr().out
    assert "restored from model.ckpt-60; global step 60" in out and "done: global step 70" in out
    # resuming with another optimizer, an empty logdir, a file as logdir, negative steps: a
    # clear error; the checkpoints stay as they were
    kept = [c.step for c in CheckpointStore(logdir).kept()]
    for args, said in ((["--logdir", str(logdir), "--steps", "80", "--set",
                         'train.optimizer="sgd"'], "not this run's SGD's"),
                       (["--logdir", "", "--steps", "4"], "logdir must be a directory"),
                       (["--logdir", str(TOY), "--steps", "4"], "logdir must be a directory"),
                       (["--logdir", str(logdir), "--steps", "-1"], "steps = -1 must be")):
        assert main(["train", "--config", str(TOY), *args]) == 2
        assert said in capsys.readouterr().err
    assert [c.step for c in CheckpointStore(logdir).kept()] == kept


def test_cli_train_two_workers_leaves_no_temporary_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))  # the workers' and torchrun's
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))  # this process's
    logdir = tmp_path / "run"
    assert main(["train", "--config", str(TOY), "--logdir", str(logdir), "--nproc", "2",
                 "-j", "2", "--steps", "20"]) == 0
    assert CheckpointStore(logdir).load_latest().info.step == 20  # type: ignore[union-attr]
    # torch's compile cache (``torchinductor_USER``, one a user, reused) is torch's to keep
    assert [p.name for p in tmp.iterdir() if not p.name.startswith("torchinductor_")] == []


def test_cli_torchrun_command() -> None:
    from homalign.cli.train import torchrun_command

    args = argparse.Namespace(config="c.toml", logdir="d", nproc=2, steps=5, max_restarts=1)
    cmd = torchrun_command(args, "logs")
    assert cmd[1:4] == ["-m", "torch.distributed.run", "--standalone"]
    assert "--nproc-per-node=2" in cmd and "--max-restarts=1" in cmd and "--log-dir=logs" in cmd
    assert cmd[cmd.index("-m", 2) + 1] == "homalign.train.launch" and cmd[-2:] == ["--steps", "5"]


def test_optimizer_and_scheduler_factories() -> None:
    params = [torch.nn.Parameter(torch.zeros(2))]
    s = cfg.TrainSettings(optimizer="sgd", lr=0.5, scheduler="step", scheduler_step_size=2)
    opt = cfg.make_optimizer(params, s)
    assert isinstance(opt, torch.optim.SGD) and opt.param_groups[0]["momentum"] == 0.9
    sched = cfg.make_scheduler(opt, s)
    for _ in range(2):
        opt.step()
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.25)
    assert cfg.make_scheduler(opt, cfg.TrainSettings()) is None
    # cosine-closed: lr * 0.5 * (1 + cos(pi k / steps)) at every step k, exactly
    opt = cfg.make_optimizer(params, cfg.TrainSettings(optimizer="adamw", lr=2e-3))
    sched = cfg.make_scheduler(opt, cfg.TrainSettings(lr=2e-3, steps=300,
                                                      scheduler="cosine-closed"))
    for k in range(300):
        assert opt.param_groups[0]["lr"] == 2e-3 * 0.5 * (1 + math.cos(math.pi * k / 300))
        opt.step()
        sched.step()


def test_sigterm_stops_gracefully_with_a_final_checkpoint(tmp_path: Path) -> None:
    """Preemption: SIGTERM ends the run after the current step and saves that step."""
    import os
    import signal
    import subprocess
    import sys

    config = tmp_path / "c.toml"
    config.write_text('model = "toy-regression"\n[train]\nsteps = 1000000\nbatch_size = 4\n'
                      "save_model_secs = 600.0\nsave_summaries_secs = 0.0\nlog_every_steps = 1\n")
    logdir = tmp_path / "run"
    env = dict(os.environ, HOMALIGN_TORCH_THREADS="1", OMP_WAIT_POLICY="PASSIVE",
               PYTHONUNBUFFERED="1")
    proc, out = signal_at_step([sys.executable, "-m", "homalign.train.launch", "--config",
                                str(config), "--logdir", str(logdir)], signal.SIGTERM,
                               timeout=120, env=env)
    assert proc.returncode == 0, out[-2000:]
    stopped = [ln for ln in out.splitlines() if ln.startswith("stopped by SIGTERM")]
    assert stopped, out[-2000:]
    final = int(stopped[0].rsplit(" ", 1)[1])
    assert final >= 20
    assert CheckpointStore(logdir).load_latest().info.step == final  # type: ignore[union-attr]
    # `homalign train` stopped by Ctrl-C: the same graceful stop, and an exit status that says
    # the run was cut short (128 + SIGINT), so a script can tell
    proc = subprocess.Popen(
        [sys.executable, "-m", "homalign", "train", "--config", str(config), "--logdir",
         str(tmp_path / "run2"), "-j", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("step 5 "):
            proc.send_signal(signal.SIGINT)
            break
    rest, _ = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGINT, rest[-2000:]
    assert "stopped by SIGINT" in rest
