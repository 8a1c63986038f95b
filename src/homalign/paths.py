"""Where the shared reference data lives (``$HOMALIGN_DATA``) and where caches go
(``$HOMALIGN_CACHE``).

The project's shared data (HOMSTRAD, SCOPe, TM-align pairs) is wherever ``$HOMALIGN_DATA`` says;
code that reads it also takes the location as an argument. There is no built-in default: unset,
:func:`shared_data_root` is the placeholder path ``$HOMALIGN_DATA``, so the first read fails with
an error that names the variable. The test suite sets it to ``shared/data`` beside the checkout
when that exists (``tests/conftest.py``, ``scripts/test.sh``). The bundled copy of the HOMSTRAD
dev split (package data) needs none of this: see ``homalign.evaluate.bundled_homstrad_dev``.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "HOMALIGN_DATA"
CACHE_ENV = "HOMALIGN_CACHE"


def shared_data_root() -> Path:
    """``$HOMALIGN_DATA`` (the directory holding ``homstrad/``, ``scope/`` and ``tmalign/``), or
    the placeholder ``Path("$HOMALIGN_DATA")`` when it is unset."""
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else Path("$" + DATA_ENV)


def cache_root() -> Path:
    """``$HOMALIGN_CACHE``, else ``~/.cache/homalign``: the root of the on-disk caches (E-value
    fits under ``evd/``, iterative-search MSAs under ``msa/``)."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "homalign"


__all__ = ["CACHE_ENV", "DATA_ENV", "cache_root", "shared_data_root"]
