"""Where the reference data lives.

The project's shared data (HOMSTRAD, SCOPe, TM-align pairs) sits in ``shared/data`` beside the
checkout. ``$HOMALIGN_DATA`` overrides; otherwise the first existing of ``<checkout>/../shared/data``
and ``/work/shared/data`` is used. The bundled copy of the HOMSTRAD dev split (package data) needs
none of this: see ``homalign.evaluate.bundled_homstrad_dev``.
"""

from __future__ import annotations

import os
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[2]


def shared_data_root() -> Path:
    """The directory holding ``homstrad/``, ``scope/`` and ``tmalign/``."""
    env = os.environ.get("HOMALIGN_DATA")
    if env:
        return Path(env)
    for candidate in (_CHECKOUT.parent / "shared" / "data", Path("/work/shared/data")):
        if candidate.is_dir():
            return candidate
    return _CHECKOUT.parent / "shared" / "data"
