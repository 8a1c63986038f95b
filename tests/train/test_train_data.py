"""Resumable sampler/loader, and a background data pipeline registered as a service."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import Dataset
from train_helpers import IndexedDataset, make_toy, run_until

from homalign.train.data import ResumableLoader, ResumableSampler
from homalign.train.services import BackgroundIterator, Coordinator
from homalign.train.supervisor import Supervisor
from homalign.train.toy import ToyRegression, mse_loss, toy_dataset


def test_sampler_shards_cover_each_epoch_once() -> None:
    shards = [ResumableSampler(10, seed=4, rank=r, world_size=3) for r in range(3)]
    got = [s.shard(0) for s in shards]
    assert all(len(g) == 4 for g in got)  # padded: 12 = 3 ranks x 4
    flat = [i for g in got for i in g]
    assert set(flat) == set(range(10)) and len(flat) == 12
    assert got[0] != ResumableSampler(10, seed=4, rank=0, world_size=3).shard(1)
    s = shards[1]
    s.set_epoch(0, start=2)
    assert list(s) == got[1][2:] and len(s) == 2
    with pytest.raises(ValueError):
        ResumableSampler(5, rank=2, world_size=2)


def test_loader_resumes_exactly_across_epochs() -> None:
    ds = toy_dataset(20, 2)
    ref = ResumableLoader(ds, 3, seed=1)
    ref_batches = [b[1].tolist() for _, b in zip(range(17), ref, strict=False)]
    first = ResumableLoader(ds, 3, seed=1)
    it = iter(first)
    head = [next(it)[1].tolist() for _ in range(8)]  # epoch 0 has 6 batches (drop_last)
    first.commit()
    state = first.state_dict()
    assert state["epoch"] == 1 and state["batch_in_epoch"] == 2
    resumed = ResumableLoader(ds, 3, seed=1)
    resumed.load_state_dict(state)
    tail = [b[1].tolist() for _, b in zip(range(9), resumed, strict=False)]
    assert head + tail == ref_batches
    with pytest.raises(ValueError, match="batch_size"):
        ResumableLoader(ds, 4, seed=1).load_state_dict(state)


class _Reorders(Dataset):
    """Items ``(epoch, k)``; epoch e has e + 2 of them, in an order the dataset picks itself."""

    def __init__(self) -> None:
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self.items = [(epoch, k) for k in reversed(range(epoch + 2))]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, k: int) -> Any:
        return torch.tensor(self.items[k])


def test_a_dataset_that_orders_and_sizes_itself_per_epoch_is_read_in_its_order() -> None:
    def items(loader: ResumableLoader, n: int) -> list[list[int]]:
        return [b[0].tolist() for _, b in zip(range(n), loader, strict=False)]

    ref = items(ResumableLoader(_Reorders(), 1, shuffle=False), 9)
    assert ref == [[0, 1], [0, 0], [1, 2], [1, 1], [1, 0], [2, 3], [2, 2], [2, 1], [2, 0]]
    first = ResumableLoader(_Reorders(), 1, shuffle=False)
    head = items(first, 3)
    first.commit()
    resumed = ResumableLoader(_Reorders(), 1, shuffle=False)
    resumed.load_state_dict(first.state_dict())  # epoch 1, one batch in
    assert head + items(resumed, 6) == ref


def test_uncommitted_batch_is_not_skipped() -> None:
    loader = ResumableLoader(toy_dataset(12, 2), 2, seed=0)
    it = iter(loader)
    next(it)
    loader.commit()
    next(it)  # fetched, but the step using it never finished
    assert loader.state_dict()["batch_in_epoch"] == 1 and loader.samples_seen == 2


def test_prefetch_does_not_move_the_data_position(tmp_path: Path) -> None:
    """Same parameters and sample order with a background pipeline as without one."""
    plain = make_toy(dropout=0.0)
    run_until(plain.supervisor(tmp_path / "a"), plain, 20)
    pre = make_toy(dropout=0.0)
    pre.loader.prefetch = 3
    sv = pre.supervisor(tmp_path / "b")
    sv.add_pipeline(pre.loader)
    run_until(sv, pre, 20)
    assert all(torch.equal(a, b) for a, b in zip(plain.params().values(), pre.params().values(),
                                                 strict=True))
    assert pre.loader.state_dict() == plain.loader.state_dict()
    # the pipeline read ahead, but a resume starts right after the last trained batch
    resumed = make_toy(dropout=0.0)
    resumed.loader.prefetch = 3
    sv = resumed.supervisor(tmp_path / "b")
    run_until(sv, resumed, 21)
    assert resumed.dataset.seen[:8] == plain.dataset.seen[160:168]


class Exploding(Dataset):
    def __init__(self, n: int, bad: int) -> None:
        self.base = toy_dataset(n, 4)
        self.bad = bad

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, i: int) -> Any:
        if i == self.bad:
            raise OSError(f"cannot read sample {i}")
        return self.base[i]


def test_pipeline_failure_stops_training_and_reaches_caller(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = ToyRegression(4, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = ResumableLoader(IndexedDataset(Exploding(64, bad=37)), 4, shuffle=False, prefetch=2)
    sv = Supervisor(tmp_path, model=model, optimizer=opt, data=loader, save_model_secs=0,
                    save_summaries_secs=0)
    sv.add_pipeline(loader)
    with pytest.raises(OSError, match="sample 37"), sv.managed_session() as session:
        for batch in loader:
            if sv.should_stop():
                break
            with session.step():
                loss = mse_loss(model, batch)
                opt.zero_grad()
                loss.backward()
                opt.step()
    # batch 9 holds sample 37; the pipeline reads up to 2 (+1 in flight) batches ahead and its
    # failure stops training at once, so the loop ends a few steps before batch 9
    assert 6 <= sv.global_step <= 9
    assert sv.saved_steps == [sv.global_step], "state is sound: final checkpoint at the last step"


def test_background_iterator_close_and_errors() -> None:
    coord = Coordinator()
    it = BackgroundIterator(iter(range(1000)), depth=2, coordinator=coord)
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    it.close()

    def gen() -> Any:
        yield 1
        raise KeyError("boom")

    bad = BackgroundIterator(gen(), depth=1, coordinator=coord)
    assert next(bad) == 1
    with pytest.raises(KeyError):
        next(bad)
    assert coord.should_stop() and isinstance(coord.exception, KeyError)
