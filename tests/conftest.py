"""Test-suite setup: the shared reference data beside the checkout, unless ``$HOMALIGN_DATA``
already names it (the package itself has no default location; see homalign.paths)."""

from __future__ import annotations

import os
from pathlib import Path

_BESIDE = Path(__file__).resolve().parents[1].parent / "shared" / "data"
if "HOMALIGN_DATA" not in os.environ and _BESIDE.is_dir():
    os.environ["HOMALIGN_DATA"] = str(_BESIDE)
