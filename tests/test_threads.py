"""homalign.threads: one thread count for numba, torch and BLAS, without importing torch."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_set_threads_leaves_torch_unimported_and_a_later_torch_follows() -> None:
    out = _run("import sys, numba; from homalign.threads import set_threads; set_threads(1); "
               "print('torch' in sys.modules, numba.get_num_threads()); "
               "import torch; print(torch.get_num_threads())")
    assert out.split() == ["False", "1", "1"]


def test_set_threads_sets_an_already_imported_torch() -> None:
    out = _run("import torch; from homalign.threads import set_threads; set_threads(1); "
               "print(torch.get_num_threads())")
    assert out == "1"


def test_set_threads_refuses_zero() -> None:
    import pytest

    from homalign.threads import set_threads

    with pytest.raises(ValueError, match="at least 1"):
        set_threads(0)


def _advice_after_set_threads(env: dict[str, str]) -> str:
    """numpy's huge-page advice after set_threads(1) in a fresh process (the switch returns
    the previous setting)."""
    import os

    code = ("from numpy._core import multiarray as m; from homalign.threads import set_threads; "
            "set_threads(1); print(m._set_madvise_hugepage(True))")
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                          text=True, env={**os.environ, **env}).stdout.strip()


def test_set_threads_turns_off_numpy_huge_page_advice_unless_the_user_set_it() -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    code = ("import os; from numpy._core import multiarray as m; "
            "from homalign.threads import set_threads; before = m._set_madvise_hugepage(True); "
            "set_threads(1); print(before, m._set_madvise_hugepage(True))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=env).stdout.split()
    assert out == ["True", "False"]  # numpy's default on Linux, then off
    assert _advice_after_set_threads({"NUMPY_MADVISE_HUGEPAGE": "1"}) == "True"
    assert _advice_after_set_threads({"NUMPY_MADVISE_HUGEPAGE": "0"}) == "False"


def test_the_search_api_turns_the_advice_off_too() -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    code = ("from numpy._core import multiarray as m; import homalign; "
            "from homalign.search import SequenceDB; from homalign.sequence import Sequence; "
            "before = m._set_madvise_hugepage(True); "
            "db = SequenceDB.from_sequences([Sequence('t1', 'MKTAYIAKQRQISFVKSHFSRQ'), "
            "Sequence('t2', 'GSHMLEDPVDAFQ')]); "
            "hits = homalign.search('MKTAYIAKQRQISFVKSHFSRQ', db, 'sw'); "
            "print(before, m._set_madvise_hugepage(True), hits[0].target_id)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=env).stdout.split()
    assert out == ["True", "False", "t1"]


def test_one_blas_thread_is_free_after_set_threads_one_and_limits_otherwise() -> None:
    """After set_threads(1) BLAS already runs on one thread and the context changes nothing;
    after set_threads(2) it lowers BLAS to one thread inside and restores two after."""
    out = _run("import contextlib; from threadpoolctl import threadpool_info; "
               "from homalign.threads import one_blas_thread, set_threads\n"
               "def blas(): return [i['num_threads'] for i in threadpool_info() "
               "if i['user_api'] == 'blas']\n"
               "set_threads(1); c = one_blas_thread(); "
               "print(isinstance(c, contextlib.nullcontext), blas())\n"
               "set_threads(2)\n"
               "with one_blas_thread(): inside = blas()\n"
               "print(inside, blas())")
    first, second = out.splitlines()
    assert first.startswith("True [1")
    assert second.startswith("[1") and "2" in second.split("]")[1]
