"""One thread count for everything that computes: numba kernels, torch and the BLAS below numpy.

``homalign search/makedb --threads N`` (``-j N``) call :func:`set_threads` once; the default is
every core this process may run on. Setting all three together keeps them from oversubscribing
the cores (numba's ``prange`` and torch's intra-op pool each start a pool of their own). Results
never depend on the count: the kernels parallelise over targets, each target's arithmetic is
sequential.
"""

from __future__ import annotations

import os
import sys


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def set_threads(n: int | None = None) -> int:
    """Use ``n`` threads (None: :func:`available_cores`) in numba, torch and BLAS; returns n."""
    import numba

    n = available_cores() if n is None else int(n)
    if n < 1:
        raise ValueError(f"threads must be at least 1, got {n}")
    n_numba = min(n, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(n_numba)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(n)
    # else torch, when a learned method imports it, starts with OMP_NUM_THREADS (set below):
    # methods that never use it do not pay its import (a second at every start)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except ImportError:
        pass
    os.environ["OMP_NUM_THREADS"] = str(n)  # child processes (peers) and a later torch follow
    return n


_CONTROLLER = None


def one_blas_thread():  # noqa: ANN201
    """A context running numpy's BLAS on one thread, so that a product's rounding never depends
    on the thread count (a product split across threads may sum in another order)."""
    global _CONTROLLER
    from threadpoolctl import ThreadpoolController

    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


__all__ = ["available_cores", "one_blas_thread", "set_threads"]
