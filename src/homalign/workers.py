"""Worker processes that end with their parent.

A ``multiprocessing`` pool's workers outlive a parent killed by SIGKILL or SIGTERM (neither runs
the pool's clean-up): they go on computing and writing files nobody waits for. A worker started
with :func:`init_worker` as its pool's initializer exits as soon as its parent is gone: on Linux
the kernel sends it SIGKILL (``PR_SET_PDEATHSIG``), everywhere a daemon thread polls the parent
id twice a second as a fallback.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any

POLL_SECONDS = 0.5
_state: dict[str, Any] = {}


def _set_pdeathsig() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1  # noqa: N806 - the kernel's name
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # no libc prctl: the polling thread remains
        pass


def _watch(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(1)
        time.sleep(POLL_SECONDS)


def init_worker(parent_pid: int, shared: Any = None) -> None:
    """Pool initializer: die with ``parent_pid``; keep ``shared`` (e.g. a progress queue, which
    only initializer arguments can carry) for :func:`shared`."""
    _set_pdeathsig()
    if os.getppid() != parent_pid:  # the parent died before the guard was armed
        os._exit(1)
    threading.Thread(target=_watch, args=(parent_pid,), name="parent-watch", daemon=True).start()
    _state["shared"] = shared


def shared() -> Any:
    """The ``shared`` object this worker's :func:`init_worker` received."""
    return _state.get("shared")
