"""MonitoredSession and the built-in hooks."""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import pytest
import torch
from train_helpers import Toy, make_toy

from homalign.train.checkpoint import CheckpointStore
from homalign.train.hooks import (
    CheckpointSaverHook,
    LoggingHook,
    NanLossDuringTrainingError,
    NanLossHook,
    ProgressBarHook,
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
    StopAtStepHook,
)
from homalign.train.monitored_session import MonitoredSession, MonitoredTrainingSession
from homalign.train.summary import read_scalars


def _train(mon: MonitoredSession, toy: Toy, limit: int = 1000) -> int:
    for batch in toy.loader:
        if mon.should_stop() or limit == 0:
            break
        limit -= 1
        mon.run(lambda b: {"loss": toy.train_step(b)}, batch)
    return mon.global_step


def _session(toy: Toy, **kwargs: Any) -> MonitoredSession:
    return MonitoredSession(model=toy.model, optimizer=toy.optimizer, scheduler=toy.scheduler,
                            data=toy.loader, **kwargs)


class Recorder(SessionRunHook):
    """Records the protocol calls and requests a value computed after the step."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.norms: list[float] = []

    def begin(self) -> None:
        self.calls.append("begin")

    def after_create_session(self, session: Any, coord: Any) -> None:
        self.calls.append(f"create@{session.global_step}")
        self.model = session.model

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        self.calls.append("before")
        norm = lambda: float(self.model.net[0].weight.detach().norm())  # noqa: E731
        return SessionRunArgs({"loss": "loss", "norm": norm})

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        self.calls.append(f"after@{run_values.step}")
        assert set(run_values.results) == {"loss", "norm"}
        self.norms.append(run_values.results["norm"])

    def end(self, session: Any) -> None:
        self.calls.append("end")


def test_hook_protocol_order_and_extra_values() -> None:
    toy = make_toy()
    rec = Recorder()
    with _session(toy, hooks=[rec, StopAtStepHook(last_step=2)]) as mon:
        assert _train(mon, toy) == 2
    assert rec.calls == ["begin", "create@0", "before", "after@1", "before", "after@2", "end"]
    assert rec.norms[-1] == pytest.approx(float(toy.model.net[0].weight.detach().norm()))
    assert rec.norms[0] != rec.norms[1]


def test_end_is_not_called_on_exception() -> None:
    toy = make_toy()
    rec = Recorder()
    with pytest.raises(ZeroDivisionError), _session(toy, hooks=[rec]) as mon:
        mon.run(lambda: {"loss": torch.tensor(1.0)})
        raise ZeroDivisionError
    assert "end" not in rec.calls


def test_missing_fetch_is_reported() -> None:
    toy = make_toy()
    with pytest.raises(KeyError, match="requested 'loss'"), _session(toy, hooks=[NanLossHook()]) as mon:
        mon.run(lambda: {"other": 1.0})


@pytest.mark.parametrize("fail", [True, False])
def test_nan_loss_hook(fail: bool) -> None:
    toy = make_toy()
    losses = iter([1.0, 0.5, float("nan"), 0.1])
    with _session(toy, hooks=[NanLossHook(fail_on_nan_loss=fail)]) as mon:
        if fail:
            with pytest.raises(NanLossDuringTrainingError, match="step 3"):
                for _ in range(4):
                    mon.run(lambda: torch.tensor(next(losses)))
        else:
            while not mon.should_stop():
                mon.run(lambda: torch.tensor(next(losses)))
            assert mon.global_step == 3


def test_stop_at_step_counts_from_restored_step(tmp_path: Path) -> None:
    toy = make_toy()
    with _session(toy, checkpoint_dir=tmp_path,
                  hooks=[StopAtStepHook(num_steps=4), CheckpointSaverHook(save_steps=100)]) as mon:
        assert _train(mon, toy) == 4
    toy2 = make_toy()
    with _session(toy2, checkpoint_dir=tmp_path, hooks=[StopAtStepHook(num_steps=3)]) as mon:
        assert mon.restored_from is not None and mon.global_step == 4
        assert _train(mon, toy2) == 7
    toy3 = make_toy()
    with _session(toy3, checkpoint_dir=tmp_path, hooks=[StopAtStepHook(last_step=4)]) as mon:
        assert mon.should_stop(), "already past last_step: stop at once"


def test_logging_hook_every_n_steps(caplog: pytest.LogCaptureFixture) -> None:
    toy = make_toy()
    hook = LoggingHook(["loss"], every_n_steps=3, at_end=True)
    with caplog.at_level(logging.INFO, logger="homalign.train.hooks"):
        with _session(toy, hooks=[hook, StopAtStepHook(last_step=8)]) as mon:
            _train(mon, toy)
    steps = [int(line.split(":")[0].split()[1]) for line in hook.lines]
    assert steps == [1, 4, 7, 8]
    assert all("loss = " in line for line in hook.lines)
    assert len([r for r in caplog.records if "loss = " in r.getMessage()]) == 4


def test_logging_hook_every_n_secs() -> None:
    toy = make_toy()
    hook = LoggingHook(["loss"], every_n_secs=3600)
    with _session(toy, hooks=[hook, StopAtStepHook(last_step=5)]) as mon:
        _train(mon, toy)
    assert len(hook.lines) == 1, "only the first step is due within an hour"


def test_monitored_training_session_checkpoints_and_summaries(tmp_path: Path) -> None:
    toy = make_toy()
    with MonitoredTrainingSession(
        tmp_path, model=toy.model, optimizer=toy.optimizer, scheduler=toy.scheduler,
        data=toy.loader, hooks=[StopAtStepHook(last_step=12)], save_checkpoint_steps=5,
        save_summaries_steps=2, log_step_count_steps=3,
    ) as mon:
        _train(mon, toy)
    store = CheckpointStore(tmp_path)
    assert [c.step for c in store.kept()] == [5, 10, 12]
    scalars = read_scalars(tmp_path)
    assert [s for s, _ in scalars["loss"]] == [1, 3, 5, 7, 9, 11]
    assert [s for s, _ in scalars["global_step/sec"]] == [3, 6, 9, 12]

    toy2 = make_toy(seed=9)
    with MonitoredTrainingSession(tmp_path, model=toy2.model, optimizer=toy2.optimizer,
                                  scheduler=toy2.scheduler, data=toy2.loader,
                                  hooks=[StopAtStepHook(num_steps=1)]) as mon:
        assert mon.global_step == 12
        assert all(torch.equal(a, b) for a, b in zip(toy.model.state_dict().values(),
                                                      toy2.model.state_dict().values(), strict=True))


def test_progress_bar_hook() -> None:
    toy = make_toy()
    out = io.StringIO()
    bar = ProgressBarHook(total=6, file=out, mininterval=0, disable=False)
    with _session(toy, hooks=[bar, StopAtStepHook(last_step=6)]) as mon:
        _train(mon, toy)
    text = out.getvalue()
    assert "6/6" in text and "loss=" in text
