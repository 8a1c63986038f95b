"""Atomic file writes: a reader never sees a half-written file; and the clean-up of what killed
writers left (:func:`remove_stale_temp_files`, :func:`remove_abandoned_dirs`).

The project's one atomic-write helper. Every writer in :mod:`homalign.io` goes through
:func:`atomic_write`; other layers reuse it, in binary mode through :func:`atomic_write_bytes`
(model weights, the training runtime's checkpoints, exports and records, caches). It imports
nothing of homalign, so that :mod:`homalign.train`, which stays independent of the aligner, may
use it.

After :func:`atomic_write_bytes` returns, the file holds either its old content or the complete
new one, even if the process is killed (SIGKILL) or the machine loses power at any moment.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

_MODES = {"w", "wt", "wb"}


def _default_permissions() -> int:
    """Permissions a plain ``open(path, "w")`` would give a new file (0o666 minus the umask)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)  # no way to read the umask without setting it elsewhere
    os.umask(umask)
    return 0o666 & ~umask


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make the rename durable (best effort: not every platform can open a directory)."""
    try:
        fd = os.open(Path(directory), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str], mode: str = "w", *, encoding: str = "utf-8", sync_dir: bool = True
) -> Iterator[IO[Any]]:
    """Open ``path`` for writing so that it appears complete or not at all.

    Writes go to a temporary file in the same directory (same file system, so the final
    :func:`os.replace` is atomic); on a normal exit of the ``with`` body the data is flushed,
    fsynced and renamed over ``path``. If the body raises, the temporary file is removed, ``path``
    is left as it was (absent, or its old content), and the exception propagates.

    A symbolic link is followed: the file it names is replaced, the link stays. A path that is
    not a regular file (``/dev/null``, ``/dev/stdout``, a named pipe) cannot be replaced and is
    written in place, as a shell's ``>`` would.

    Args:
        path: the destination file; its directory must exist.
        mode: ``"w"``/``"wt"`` (text, ``encoding``, ``\\n`` newlines) or ``"wb"`` (binary).
        encoding: text encoding (ignored in binary mode).
        sync_dir: fsync the directory after the rename (a caller renaming several files into one
            directory may do it once itself).

    Yields:
        The open file object.
    """
    if mode not in _MODES:
        raise ValueError(f"atomic_write mode must be one of {sorted(_MODES)}, not {mode!r}")
    target = Path(path)
    try:
        st = os.stat(target)  # follows links
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{target}: is a directory")
    if st is not None and not stat.S_ISREG(st.st_mode):  # a device, pipe or socket
        with (open(target, "wb") if "b" in mode
              else open(target, "w", encoding=encoding, newline="\n")) as handle:
            yield handle
        return
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    directory = target.parent
    if target.exists():
        permissions = target.stat().st_mode & 0o7777
    else:
        permissions = _default_permissions()
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:  # name the file asked for, not the temporary one
        if not directory.is_dir():
            raise FileNotFoundError(f"{target}: no such directory: {directory}") from None
        raise type(exc)(f"{target}: cannot write: {exc.strerror}") from None
    tmp = Path(tmp_name)
    try:
        if "b" in mode:
            handle: IO[Any] = os.fdopen(fd, "wb")
        else:
            handle = os.fdopen(fd, "w", encoding=encoding, newline="\n")
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    try:
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, permissions)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if sync_dir:
        fsync_directory(directory)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, sync_dir: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (temp file, fsync, rename, fsync the directory); the
    directory is created first when missing."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "wb", sync_dir=sync_dir) as fh:
        fh.write(data)


def remove_stale_temp_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Delete the ``.*.tmp`` files that writes killed half-way left in ``directory``; returns what
    was removed."""
    removed = []
    for p in Path(directory).glob(".*.tmp"):
        with contextlib.suppress(OSError):
            p.unlink()
            removed.append(p)
    return removed


def remove_abandoned_dirs(dirs: Iterable[Path], unmarked_age: float = 0.0) -> list[Path]:
    """Delete the working directories among ``dirs`` whose process is gone: each holds its
    process id in ``.pid``; one without (or with an unreadable) ``.pid`` counts as abandoned
    ``unmarked_age`` seconds after it last changed (its maker may be between creating it and
    marking it). A directory whose process is alive, or belongs to another user, stays.
    Returns what was removed."""
    import shutil
    import time

    removed = []
    for d in dirs:
        try:
            pid = int((d / ".pid").read_text())
        except (OSError, ValueError):
            try:
                if time.time() - d.stat().st_mtime < unmarked_age:
                    continue
            except OSError:
                continue
        else:
            try:
                os.kill(pid, 0)
                continue  # still running
            except ProcessLookupError:
                pass
            except OSError:  # another user's process: alive
                continue
        shutil.rmtree(d, ignore_errors=True)
        if not d.exists():
            removed.append(d)
    return removed


@contextlib.contextmanager
def atomic_directory(final: str | os.PathLike[str]) -> Iterator[Path]:
    """Build a directory that appears at ``final`` complete or not at all.

    Yields a new temporary directory beside ``final`` (``.<name>.tmp-*``, marked with this
    process's id); when the body returns it is renamed to ``final``, a directory already there
    being moved aside first and deleted after. If the body raises, the temporary directory is
    deleted and ``final`` is left as it was. Directories that killed builds left beside
    ``final`` are removed first (:func:`remove_abandoned_dirs`)."""
    import shutil

    final = Path(final)
    parent = final.parent if str(final.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned_dirs([*parent.glob(f".{final.name}.tmp-*"),
                           *parent.glob(f".{final.name}.old-*")])
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=parent))
    (tmp / ".pid").write_text(str(os.getpid()))
    try:
        yield tmp
        (tmp / ".pid").unlink()
        os.chmod(tmp, 0o755)
        if final.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{final.name}.old-", dir=parent))
            os.replace(final, trash / final.name)
            os.replace(tmp, final)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


__all__ = ["atomic_directory", "atomic_write", "atomic_write_bytes", "fsync_directory",
           "remove_abandoned_dirs", "remove_stale_temp_files"]
