"""Crash-safe file writes: temp file in the same directory, fsync, ``os.replace``, fsync the dir.

After :func:`write_atomic` returns, the file holds either its old content or the complete new one,
even if the process is killed (SIGKILL) or the machine loses power at any moment.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """fsync a directory so that renames inside it are durable (a no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes, *, sync_dir: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (temp file, fsync, rename, fsync the directory)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync_dir:
        fsync_dir(path.parent)


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
