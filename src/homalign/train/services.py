"""Threads that run beside the training loop, and the coordinator that stops them together.

* :class:`Coordinator` — one stop condition shared by the training loop and every service; the
  first exception reported by anyone is kept and re-raised to the caller.
* :class:`Service` — a thread whose exception sets the stop condition instead of vanishing.
* :class:`LoopingService` — runs ``fn`` every ``interval_secs`` (drift-free schedule) until stop.
* :class:`BackgroundIterator` — a data pipeline stage that fills a bounded queue in a thread.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

log = logging.getLogger(__name__)


class Coordinator:
    """A stop condition plus the first exception that caused it."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._exception: BaseException | None = None
        self._threads: list[threading.Thread] = []

    def request_stop(self, exception: BaseException | None = None) -> None:
        """Ask everyone to stop; the first exception passed here is kept."""
        with self._lock:
            if exception is not None and self._exception is None:
                self._exception = exception
                log.error("stopping on %s: %s", type(exception).__name__, exception)
        self._stop.set()

    def should_stop(self) -> bool:
        """Whether stop was requested."""
        return self._stop.is_set()

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Block until stop is requested or ``timeout`` passes; returns :meth:`should_stop`."""
        return self._stop.wait(timeout)

    @property
    def exception(self) -> BaseException | None:
        """The exception that stopped the run, if any."""
        return self._exception

    def raise_requested_exception(self) -> None:
        """Re-raise the kept exception, if any."""
        if self._exception is not None:
            raise self._exception

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """Report any exception of the block to the coordinator (and swallow it)."""
        try:
            yield
        except BaseException as exc:  # noqa: BLE001 - any failure must stop the run
            self.request_stop(exc)

    def register(self, thread: threading.Thread) -> None:
        """Track ``thread`` for :meth:`join`."""
        self._threads.append(thread)

    @property
    def threads(self) -> list[threading.Thread]:
        """The registered threads."""
        return list(self._threads)

    def join(self, threads: Sequence[threading.Thread] | None = None, grace_secs: float = 120.0
             ) -> list[str]:
        """Request stop and wait for the threads; returns the names of threads still alive."""
        self.request_stop()
        deadline = time.monotonic() + grace_secs
        pending = list(self._threads if threads is None else threads)
        for t in pending:
            if t.is_alive() and t is not threading.current_thread():
                t.join(max(0.0, deadline - time.monotonic()))
        stragglers = [t.name for t in pending if t.is_alive()]
        if stragglers:
            log.warning("services still running after %.1fs grace: %s", grace_secs, stragglers)
        return stragglers


class Service(threading.Thread):
    """A daemon thread whose failure stops the whole run (subclasses implement ``run_service``)."""

    def __init__(self, name: str, coordinator: Coordinator) -> None:
        super().__init__(name=name, daemon=True)
        self.coordinator = coordinator
        coordinator.register(self)

    def run(self) -> None:  # noqa: D102 - threading API
        with self.coordinator.stop_on_exception():
            self.run_service()

    def run_service(self) -> None:
        """The service body; return when ``self.coordinator.should_stop()``."""
        raise NotImplementedError


class LoopingService(Service):
    """Calls ``fn(*args)`` every ``interval_secs`` until stop (first call after one interval,
    or at once with ``run_first``). Missed ticks are skipped, not queued."""

    def __init__(
        self,
        name: str,
        coordinator: Coordinator,
        interval_secs: float,
        fn: Callable[..., Any],
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
        run_first: bool = False,
    ) -> None:
        if interval_secs <= 0:
            raise ValueError("interval_secs must be positive")
        super().__init__(name, coordinator)
        self.interval_secs = interval_secs
        self.fn = fn
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self.run_first = run_first
        self.calls = 0

    def run_service(self) -> None:  # noqa: D102
        next_at = time.monotonic() + (0.0 if self.run_first else self.interval_secs)
        while not self.coordinator.wait_for_stop(max(0.0, next_at - time.monotonic())):
            self.fn(*self.args, **self.kwargs)
            self.calls += 1
            next_at += self.interval_secs
            now = time.monotonic()
            if next_at < now:
                next_at = now + self.interval_secs


_END = object()


class BackgroundIterator:
    """Iterate ``iterable`` in a daemon thread, ``depth`` items ahead of the consumer.

    An exception in the producer is re-raised to the consumer and, with a coordinator, also stops
    the run. :meth:`close` (or the coordinator's stop) ends the producer promptly.
    """

    def __init__(self, iterable: Iterable[Any], depth: int = 2,
                 coordinator: Coordinator | None = None, name: str = "data-pipeline") -> None:
        if depth < 1:
            raise ValueError("depth must be at least 1")
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._closed = threading.Event()
        self._coordinator = coordinator
        self._source = iterable
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._produce, name=name, daemon=True)
        self._thread.start()

    def _stopped(self) -> bool:
        return self._closed.is_set() or (
            self._coordinator is not None and self._coordinator.should_stop()
        )

    def _put(self, item: Any) -> bool:
        while not self._stopped():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self) -> None:
        try:
            for item in self._source:
                if not self._put(item):
                    return
        except BaseException as exc:  # noqa: BLE001 - forwarded to the consumer
            self._failure = exc  # raised by the consumer once the items before it are used
            if self._coordinator is not None:
                self._coordinator.request_stop(exc)
            return
        self._put(_END)

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        while True:
            try:
                item = self._queue.get(timeout=0.05)
                break
            except queue.Empty:
                if self._failure is not None:
                    raise self._failure from None
                if (self._stopped() or not self._thread.is_alive()) and self._queue.empty():
                    raise StopIteration from None
        if item is _END:
            raise StopIteration
        return item

    def close(self) -> None:
        """Stop the producer and wait for it (briefly)."""
        self._closed.set()
        with contextlib.suppress(queue.Empty):
            while True:
                self._queue.get_nowait()
        self._thread.join(timeout=5.0)
