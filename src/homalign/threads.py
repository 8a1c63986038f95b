"""One thread count for everything that computes: numba kernels, torch, the BLAS below numpy and
the learned encoder's rows (:func:`get_threads`).

``homalign search/makedb --threads N`` (``-j N``) call :func:`set_threads` once; the default is
every core this process may run on. Setting all three together keeps them from oversubscribing
the cores (numba's ``prange`` and torch's intra-op pool each start a pool of their own). Results
never depend on the count: the kernels parallelise over targets, each target's arithmetic is
sequential.

:func:`set_threads` also turns off numpy's huge-page advice for new arrays
(:func:`no_huge_pages`), unless ``NUMPY_MADVISE_HUGEPAGE`` says otherwise: a search allocates
tens of MB of short-lived arrays a query, and the kernel zeroed each touched 2 MB page anew
(a sixth of a learned search's time on the development VM).
"""

from __future__ import annotations

import contextlib
import os
import sys


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def set_threads(n: int | None = None) -> int:
    """Use ``n`` threads (None: :func:`available_cores`) in numba, torch, BLAS and the encoder's
    rows (:func:`get_threads`); returns n."""
    import numba

    global _THREADS
    n = available_cores() if n is None else int(n)
    if n < 1:
        raise ValueError(f"threads must be at least 1, got {n}")
    _THREADS = n
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
    no_huge_pages()
    return n


def get_threads() -> int:
    """The thread count :func:`set_threads` set last; before any call, numba's (every core
    unless ``NUMBA_NUM_THREADS`` says otherwise). Work split over Python threads (the learned
    encoder's rows) uses it, so ``--threads 2`` means two threads there too."""
    if _THREADS is not None:
        return _THREADS
    import numba

    return int(numba.get_num_threads())


def no_huge_pages() -> bool:
    """Stop numpy advising huge pages for new arrays (``madvise(MADV_HUGEPAGE)`` on those of
    4 MB and more), unless ``NUMPY_MADVISE_HUGEPAGE`` is set; returns whether advice is off.
    Results do not change; fresh memory comes in 4 KB pages, zeroed as touched."""
    if os.environ.get("NUMPY_MADVISE_HUGEPAGE") is not None:
        return os.environ["NUMPY_MADVISE_HUGEPAGE"] == "0"
    import numpy as np

    core = getattr(np, "_core", None) or getattr(np, "core", None)
    switch = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if switch is None:  # a numpy without the switch advises nothing itself
        return True
    switch(False)
    return True


_CONTROLLER = None
_THREADS: int | None = None


def one_blas_thread():  # noqa: ANN201
    """A context running numpy's BLAS on one thread, so that a product's rounding never depends
    on the thread count (a product split across threads may sum in another order). After
    ``set_threads(1)`` BLAS already runs on one thread: the context is then a no-op (changing
    the limit costs ~60 us, a fifth of a small product)."""
    global _CONTROLLER
    from threadpoolctl import ThreadpoolController

    if _THREADS == 1:
        return contextlib.nullcontext()
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


__all__ = ["available_cores", "get_threads", "no_huge_pages", "one_blas_thread", "set_threads"]
