"""Alignment modes and the integer codes the compiled kernels use.

An alignment is a path of columns (M = pair, I = query residue vs gap, D = target residue vs gap)
from a *start cell* to an *end cell* of the (Lq + 1) x (Lt + 1) prefix grid; every gap column on
the path is charged, residues outside the path are unaligned and free. The modes differ in the
cells allowed:

* ``local``: the empty alignment (score 0), or a path that begins and ends with an M column,
  anywhere in the grid (Smith-Waterman).
* ``global``: from (0, 0) to (Lq, Lt) (Needleman-Wunsch, end gaps charged).
* ``glocal``: from (0, j) to (Lq, j') - the whole query, any target window (target ends free).
* ``semiglobal``: from the top row or left column to the bottom row or right column (overlap
  alignment: end gaps free on both sequences). The corner cells (0, Lt) and (Lq, 0) are both a
  start and an end cell, so the empty alignment (score 0) is one of them.
"""

from __future__ import annotations

__all__ = ["MODES", "LOCAL", "GLOBAL", "GLOCAL", "SEMIGLOBAL", "mode_code"]

LOCAL = 0
GLOBAL = 1
GLOCAL = 2
SEMIGLOBAL = 3

MODES: dict[str, int] = {
    "local": LOCAL,
    "global": GLOBAL,
    "glocal": GLOCAL,
    "semiglobal": SEMIGLOBAL,
}


def mode_code(mode: str) -> int:
    """The kernel code of ``mode``; raise ValueError for an unknown mode."""
    try:
        return MODES[mode]
    except (KeyError, TypeError):
        raise ValueError(f"unknown alignment mode {mode!r}; expected one of {list(MODES)}") from None
