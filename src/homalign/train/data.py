"""Resumable data: a shard-aware sampler and a loader whose position is part of the checkpoint.

:class:`ResumableLoader` iterates batches epoch after epoch. Its position (epoch, batches consumed
in the epoch) is counted where the training loop receives a batch, so prefetching underneath it
never moves the position ahead; a restored loader skips exactly the consumed samples (by index,
without loading them), so a resumed run neither repeats nor skips a sample.

Shuffling uses a private generator seeded by ``seed + epoch``, and the DataLoader gets its own
generator too, so iterating data never touches torch's global RNG (which dropout and friends use).
A dataset with a ``set_epoch(epoch)`` method (torch's convention) is told the epoch before it
is read, so it can augment by epoch and stay resumable; its length is read again afterwards, so
a dataset that orders its own items (``shuffle=False``) may change its size per epoch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from homalign.train import distributed


class ResumableSampler(Sampler[int]):
    """Indices of one epoch for one rank, starting at ``start``.

    Every rank draws the same permutation (seeded by ``seed + epoch``) and takes every
    ``world_size``-th index from ``rank``; the permutation is padded by wrapping around so that all
    ranks get the same number of samples (or cut, with ``drop_last``).
    """

    def __init__(
        self,
        length: int,
        *,
        shuffle: bool = True,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        drop_last: bool = False,
    ) -> None:
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} outside world of size {world_size}")
        self.length = length
        self.shuffle = shuffle
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.drop_last = drop_last
        self.epoch = 0
        self.start = 0

    def set_epoch(self, epoch: int, start: int = 0) -> None:
        """Select the epoch and the first index (within this rank's shard) to yield."""
        self.epoch = epoch
        self.start = start

    def per_rank(self) -> int:
        """Samples per rank and epoch."""
        if self.drop_last:
            return self.length // self.world_size
        return -(-self.length // self.world_size)

    def shard(self, epoch: int) -> list[int]:
        """This rank's indices of ``epoch``, in order."""
        if self.shuffle:
            g = torch.Generator()
            g.manual_seed(self.seed + epoch)
            order = torch.randperm(self.length, generator=g).tolist()
        else:
            order = list(range(self.length))
        total = self.per_rank() * self.world_size
        if total > len(order):
            order += order[: total - len(order)]
        order = order[:total]
        return order[self.rank : total : self.world_size]

    def __iter__(self) -> Iterator[int]:
        return iter(self.shard(self.epoch)[self.start :])

    def __len__(self) -> int:
        return max(0, self.per_rank() - self.start)


class ResumableLoader:
    """Batches of a map-style dataset, epoch after epoch, with a checkpointable position.

    ``max_epochs=None`` iterates forever. ``prefetch > 0`` loads that many batches ahead in a
    background thread (see :class:`homalign.train.services.BackgroundIterator`); register the
    loader with ``Supervisor.add_pipeline(loader)`` so that a failure there stops training.
    ``rank``/``world_size`` default to the torch.distributed process group, if any.
    """

    def __init__(
        self,
        dataset: Dataset[Any],
        batch_size: int,
        *,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = True,
        rank: int | None = None,
        world_size: int | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        max_epochs: int | None = None,
        prefetch: int = 0,
    ) -> None:
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.num_workers = num_workers
        self.collate_fn = collate_fn
        self.max_epochs = max_epochs
        self.prefetch = prefetch
        self.seed = seed
        self.sampler = ResumableSampler(
            len(dataset),  # type: ignore[arg-type]
            shuffle=shuffle,
            seed=seed,
            rank=distributed.rank() if rank is None else rank,
            world_size=distributed.world_size() if world_size is None else world_size,
            drop_last=False,
        )
        self.epoch = 0
        self.batch_in_epoch = 0
        self._committed: tuple[int, int] | None = None
        self._version = 0
        self.coordinator: Any = None

    def batches_per_epoch(self) -> int:
        """Batches per epoch on this rank."""
        n = self.sampler.per_rank()
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    @property
    def samples_seen(self) -> int:
        """Samples this rank has trained on (handed out, and committed if commits are used)."""
        epoch, batch = self._committed or (self.epoch, self.batch_in_epoch)
        return (epoch * self.batches_per_epoch() + batch) * self.batch_size

    def commit(self) -> None:
        """Mark every batch handed out so far as used by a finished training step.

        Once called (the Supervisor calls it at the end of each step), :meth:`state_dict` reports
        the last committed position, so a batch fetched but never trained on (the loop stopped
        first) is not skipped on resume.
        """
        self._committed = (self.epoch, self.batch_in_epoch)

    def state_dict(self) -> dict[str, Any]:
        """The position: epoch and batches consumed in it (plus what must not change)."""
        epoch, batch = self._committed or (self.epoch, self.batch_in_epoch)
        return {
            "epoch": epoch,
            "batch_in_epoch": batch,
            "batch_size": self.batch_size,
            "seed": self.seed,
            "world_size": self.sampler.world_size,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Move to a saved position; iterators already running restart there."""
        for key in ("batch_size", "seed", "world_size"):
            mine = self.state_dict()[key]
            if key in state and state[key] != mine:
                raise ValueError(f"data position was saved with {key}={state[key]}, loader has {mine}")
        self.epoch = int(state["epoch"])
        self.batch_in_epoch = int(state["batch_in_epoch"])
        if self._committed is not None:
            self._committed = (self.epoch, self.batch_in_epoch)
        self._version += 1

    def _epoch_iter(self) -> Iterator[Any]:
        set_epoch = getattr(self.dataset, "set_epoch", None)
        if callable(set_epoch):  # e.g. a dataset that augments by epoch (torch's convention)
            set_epoch(self.epoch)
            self.sampler.length = len(self.dataset)  # type: ignore[arg-type]
        self.sampler.set_epoch(self.epoch, self.batch_in_epoch * self.batch_size)
        g = torch.Generator()
        g.manual_seed(self.seed + 7919 * self.epoch)
        loader = DataLoader(
            self.dataset,
            batch_size=self.batch_size,
            sampler=self.sampler,
            drop_last=self.drop_last,
            num_workers=self.num_workers,
            collate_fn=self.collate_fn,
            generator=g,
        )
        if self.prefetch > 0:
            from homalign.train.services import BackgroundIterator

            return iter(BackgroundIterator(loader, depth=self.prefetch, coordinator=self.coordinator))
        return iter(loader)

    def __iter__(self) -> Iterator[Any]:
        while self.max_epochs is None or self.epoch < self.max_epochs:
            version = self._version
            source = self._epoch_iter()
            try:
                for batch in source:
                    if version != self._version:
                        break  # restored meanwhile: restart at the new position
                    self.batch_in_epoch += 1
                    yield batch
                    if version != self._version:
                        break
                else:
                    self.epoch += 1
                    self.batch_in_epoch = 0
            finally:
                close = getattr(source, "close", None)
                if close is not None:
                    close()
