"""Crash-safe file writes for checkpoints: bytes in, via :func:`homalign.io.atomic.atomic_write`.

After :func:`write_atomic` returns, the file holds either its old content or the complete new one,
even if the process is killed (SIGKILL) or the machine loses power at any moment.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from homalign.io.atomic import _fsync_directory, atomic_write


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """fsync a directory so that renames inside it are durable (a no-op where unsupported)."""
    _fsync_directory(Path(directory))


def write_atomic(path: str | os.PathLike[str], data: bytes, *, sync_dir: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (temp file, fsync, rename, fsync the directory)."""
    with atomic_write(path, "wb", sync_dir=sync_dir) as fh:
        fh.write(data)


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def remove_stale_temp_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Delete ``.*.tmp`` files left by writes that were killed half-way; returns what was removed."""
    removed = []
    for p in Path(directory).glob(".*.tmp"):
        with contextlib.suppress(OSError):
            p.unlink()
            removed.append(p)
    return removed
