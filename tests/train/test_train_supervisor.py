"""Supervisor: recovery, determinism, services, stopping, summaries, readiness."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import torch
from train_helpers import make_toy, run_until

from homalign.train.checkpoint import CheckpointStore
from homalign.train.session_manager import NotReadyError
from homalign.train.summary import event_files, read_scalars


class Boom(RuntimeError):
    pass


def _calls(sv: object, name: str) -> int:
    return sum(getattr(t, "calls", 0) for t in sv.services if t.name == name)  # type: ignore[attr-defined]


def _wait_for(condition: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.005)


def _equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_recovers_from_newest_checkpoint(tmp_path: Path) -> None:
    toy = make_toy()
    sv = toy.supervisor(tmp_path, save_model_steps=10)
    assert run_until(sv, toy, 25) == 25
    assert sv.saved_steps == [10, 20, 25]  # 25: the final checkpoint
    saved = toy.params()

    toy2 = make_toy(seed=1)  # different initial weights: must be overwritten
    sv2 = toy2.supervisor(tmp_path, save_model_steps=10)
    with sv2.managed_session() as session:
        assert session.global_step == 25
        assert sv2.restored_from is not None and sv2.restored_from.step == 25
        assert _equal(toy2.params(), saved)
        assert toy2.scheduler.last_epoch == toy.scheduler.last_epoch == 25
        assert toy2.loader.state_dict() == toy.loader.state_dict()
        assert toy2.optimizer.state_dict()["state"][0]["step"] == 25


def test_init_fn_runs_only_without_checkpoint(tmp_path: Path) -> None:
    calls: list[str] = []

    def ready(session: object) -> list[str]:
        calls.append("ready")
        return []

    toy = make_toy()
    sv = toy.supervisor(tmp_path, init_fn=lambda s: calls.append("init"),
                        local_init_fn=lambda s: calls.append("local"), ready_fn=ready)
    run_until(sv, toy, 3)
    assert calls == ["ready", "local", "init", "ready"]
    calls.clear()
    toy = make_toy()
    sv = toy.supervisor(tmp_path, init_fn=lambda s: calls.append("init"),
                        local_init_fn=lambda s: calls.append("local"), ready_fn=ready)
    run_until(sv, toy, 4)
    assert calls == ["ready", "local", "ready"]
    assert sv.restored_from is not None and sv.restored_from.step == 3


@pytest.mark.parametrize("interruption", ["crash", "clean_stop"])
def test_interrupted_run_is_bitwise_equal(tmp_path: Path, interruption: str) -> None:
    """Dropout, Adam, an LR schedule and shuffled data: resume reproduces every bit and sample."""
    ref = make_toy()
    run_until(ref.supervisor(tmp_path / "ref", save_model_steps=10), ref, 40)

    toy = make_toy()
    sv = toy.supervisor(tmp_path / "run", save_model_steps=10)
    if interruption == "crash":
        def crash(step: int) -> None:
            if step == 27:
                raise Boom("simulated crash mid-step")

        with pytest.raises(Boom):
            run_until(sv, toy, 40, on_step=crash)
        assert sv.saved_steps == [10, 20], "no final checkpoint after an interrupted step"
    else:
        assert run_until(sv, toy, 27) == 27
        assert sv.saved_steps == [10, 20, 27]
    seen_before = list(toy.dataset.seen)

    torch.manual_seed(1234)  # the restore must bring back the RNG state
    resumed = make_toy(seed=5)
    sv2 = resumed.supervisor(tmp_path / "run", save_model_steps=10)
    assert run_until(sv2, resumed, 40) == 40
    assert _equal(resumed.params(), ref.params())
    restored_at = sv2.restored_from.step  # type: ignore[union-attr]
    expected = ref.dataset.seen[: restored_at * 8] + ref.dataset.seen[restored_at * 8 :]
    assert seen_before[: restored_at * 8] == expected[: restored_at * 8]
    assert resumed.dataset.seen == ref.dataset.seen[restored_at * 8 :], "data repeated or skipped"


def test_service_exception_stops_training_within_one_step(tmp_path: Path) -> None:
    toy = make_toy()
    sv = toy.supervisor(tmp_path, save_model_secs=0.05, save_summaries_secs=0.05)
    raised_at: list[int] = []

    def failing_service() -> None:
        if sv.global_step >= 20:
            raised_at.append(sv.global_step)
            raise Boom("service failed")

    sv.loop(0.01, failing_service)
    stopped_at: list[int] = []
    real_request_stop = sv.coord.request_stop

    def request_stop(exception: BaseException | None = None) -> None:
        real_request_stop(exception)
        if exception is not None:
            stopped_at.append(sv.global_step)  # read after the stop condition is set

    sv.coord.request_stop = request_stop  # type: ignore[method-assign]

    def slow(step: int) -> None:
        time.sleep(0.003)

    with pytest.raises(Boom, match="service failed"):
        run_until(sv, toy, 10_000, on_step=slow)
    final = sv.global_step
    assert raised_at and raised_at[0] >= 20 and stopped_at
    assert final - stopped_at[0] <= 1, "the loop ran more than one step after the stop"
    assert not any(t.is_alive() for t in sv.services), "a service outlived the session"
    assert {t.name for t in sv.services} >= {"checkpoint", "summaries", "step-counter"}
    assert CheckpointStore(tmp_path).load_latest().info.step == final  # type: ignore[union-attr]


def test_loop_exception_reaches_caller_and_saves_when_sound(tmp_path: Path) -> None:
    toy = make_toy()
    sv = toy.supervisor(tmp_path)
    with pytest.raises(Boom), sv.managed_session() as session:
        for batch in toy.loader:
            with session.step():
                toy.train_step(batch)
            if session.global_step == 6:
                raise Boom("between steps: state is sound")
    assert sv.saved_steps == [6]


def test_no_final_checkpoint_with_non_finite_parameters(tmp_path: Path) -> None:
    toy = make_toy()
    sv = toy.supervisor(tmp_path)
    with sv.managed_session() as session:
        with session.step():
            toy.train_step(next(iter(toy.loader)))
        with torch.no_grad():
            toy.model.net[0].weight[0, 0] = float("nan")
    assert sv.saved_steps == []


def test_time_based_checkpoints_and_summaries(tmp_path: Path) -> None:
    toy = make_toy()
    sv = toy.supervisor(tmp_path, save_model_secs=0.05, save_summaries_secs=0.05, keep_max=2)

    def slow(step: int) -> None:
        time.sleep(0.004)
        if step == 50:  # make sure a timer checkpoint and a summary happened before the end
            _wait_for(lambda: len(sv.saved_steps) >= 1 and _calls(sv, "summaries") >= 1)

    run_until(sv, toy, 60, on_step=slow)
    assert len(sv.saved_steps) >= 2 and sv.saved_steps[-1] == 60  # timer save(s) + final
    assert len(CheckpointStore(tmp_path).kept()) == 2
    scalars = read_scalars(tmp_path)
    assert {"loss", "global_step/sec", "model/param_norm", "lr/group0"} <= set(scalars)
    steps = [s for s, _ in scalars["loss"]]
    assert steps == sorted(steps) and 0 < steps[0] <= 60


def test_summary_service_off_loop_writes_its_own(tmp_path: Path) -> None:
    toy = make_toy()
    sv = toy.supervisor(tmp_path, save_summaries_secs=0)
    with sv.managed_session() as session:
        for batch in toy.loader:
            if session.global_step >= 12:
                break
            with session.step():
                loss = toy.train_step(batch)
            if session.global_step % 4 == 0:
                sv.summary_computed(session.global_step, {"my/loss": loss,
                                                          "my/weights": toy.model.net[0].weight})
        names = {t.name for t in sv.services}
    assert "summaries" not in names and "step-counter" not in names and "checkpoint" in names
    import tbparse

    reader = tbparse.SummaryReader(str(tmp_path))
    scalars = reader.scalars
    assert set(scalars["tag"]) == {"my/loss"}
    assert list(scalars["step"]) == [4, 8, 12]
    assert set(reader.histograms["tag"]) == {"my/weights"}


def test_summary_fn_none_keeps_step_counter(tmp_path: Path) -> None:
    toy = make_toy()
    sv = toy.supervisor(tmp_path, save_summaries_secs=0.02, summary_fn=None)

    def slow(step: int) -> None:
        time.sleep(0.003)
        if step == 30:  # make sure the step counter has ticked (a loaded machine may starve it)
            _wait_for(lambda: _calls(sv, "step-counter") >= 1)

    run_until(sv, toy, 40, on_step=slow)
    assert set(read_scalars(tmp_path)) == {"global_step/sec"}


def test_restart_opens_new_event_file_and_continues_at_restored_step(tmp_path: Path) -> None:
    toy = make_toy()
    sv = toy.supervisor(tmp_path, save_model_steps=10, save_summaries_secs=0)

    def crash(step: int) -> None:
        sv.summary_computed(step, {"x": float(step)})
        if step == 15:
            raise Boom("killed")

    with pytest.raises(Boom):
        run_until(sv, toy, 100, on_step=crash)
    toy2 = make_toy()
    sv2 = toy2.supervisor(tmp_path, save_model_steps=10, save_summaries_secs=0)
    run_until(sv2, toy2, 20, on_step=lambda s: sv2.summary_computed(s, {"x": 100.0 + s}))
    assert len(event_files(tmp_path)) == 2
    xs = read_scalars(tmp_path)["x"]
    assert [s for s, _ in xs] == list(range(20)), "TensorBoard must show one continuous run"
    assert [v for s, v in xs if s >= 10] == [100.0 + s for s in range(10, 20)]


def test_logdir_none_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    toy = make_toy()
    sv = toy.supervisor(None, save_model_secs=0.01, save_summaries_secs=0.01)
    ticked = threading.Event()
    sv.loop(0.01, ticked.set)
    assert run_until(sv, toy, 5, on_step=lambda s: ticked.wait(10)) == 5
    assert [t.name for t in sv.services] == ["loop-set"]
    assert list(tmp_path.iterdir()) == [] and ticked.is_set()


def test_ready_fn_blocks_the_session(tmp_path: Path) -> None:
    toy = make_toy()
    sv = toy.supervisor(tmp_path, ready_fn=lambda s: ["embedding table not loaded"])
    with pytest.raises(NotReadyError, match="embedding table"), sv.managed_session():
        pytest.fail("the session must not start")


def test_shape_mismatch_in_checkpoint_is_not_ready(tmp_path: Path) -> None:
    toy = make_toy()
    run_until(toy.supervisor(tmp_path), toy, 2)
    other = make_toy()
    other.model.net[0] = torch.nn.Linear(4, 9)
    sv = other.supervisor(tmp_path)
    with pytest.raises(NotReadyError) as err, sv.managed_session():
        pass
    text = str(err.value)
    assert "shape mismatch for 'net.0.weight'" in text and "net.0.bias" in text


def test_non_finite_initial_parameters_are_not_ready(tmp_path: Path) -> None:
    toy = make_toy()
    with torch.no_grad():
        toy.model.net[0].bias[0] = float("inf")
    with pytest.raises(NotReadyError, match="non-finite values in 'net.0.bias'"):
        with toy.supervisor(tmp_path).managed_session():
            pass


def test_request_stop_from_another_thread(tmp_path: Path) -> None:
    toy = make_toy()
    sv = toy.supervisor(tmp_path)
    timer = threading.Timer(0.05, sv.request_stop)

    def step(s: int) -> None:
        if s == 0:
            timer.start()  # once training runs
        time.sleep(0.002)

    try:
        final = run_until(sv, toy, 10**9, on_step=step)
    finally:
        timer.cancel()
    assert 0 < final < 10**9 and sv.saved_steps == [final]


def test_synchronous_saves_are_on_disk_before_the_next_step(tmp_path: Path) -> None:
    toy = make_toy()
    sv = toy.supervisor(tmp_path, save_model_steps=5, async_save=False)
    store = CheckpointStore(tmp_path)
    committed: list[int | None] = []

    def check(step: int) -> None:  # runs inside the step that starts at global step `step`
        selected = store.selected()
        committed.append(None if selected is None else selected.step)

    run_until(sv, toy, 12, on_step=check)
    assert committed == [None] * 5 + [5] * 5 + [10] * 2
    assert not any(t.name == "checkpoint" and t.is_alive() for t in sv.services)


def test_step_counter_records_a_run_shorter_than_one_summary_period(tmp_path: Path) -> None:
    toy = make_toy()
    sv = toy.supervisor(tmp_path, save_summaries_secs=3600.0, summary_fn=None)
    run_until(sv, toy, 7)
    rates = read_scalars(tmp_path)["global_step/sec"]
    assert [s for s, _ in rates] == [7] and rates[0][1] > 0
