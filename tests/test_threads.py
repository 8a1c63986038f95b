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
