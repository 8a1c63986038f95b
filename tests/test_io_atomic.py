"""atomic_write: complete file or nothing, text and binary."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from homalign.io.atomic import atomic_write


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_text_write_creates_file(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    with atomic_write(target) as fh:
        fh.write("hello\n")
        assert not target.exists()  # nothing visible before the body ends
    assert target.read_text() == "hello\n"
    assert _leftovers(tmp_path) == ["out.txt"]


def test_binary_write(tmp_path: Path) -> None:
    target = tmp_path / "blob.bin"
    payload = bytes(range(256)) * 3
    with atomic_write(target, "wb") as fh:
        fh.write(payload)
    assert target.read_bytes() == payload


def test_exception_leaves_no_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_write(target) as fh:
            fh.write("partial")
            raise RuntimeError("boom")
    assert _leftovers(tmp_path) == []


def test_exception_keeps_old_content(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(KeyError):
        with atomic_write(target, "wb") as fh:
            fh.write(b"new but unfinished")
            raise KeyError("x")
    assert target.read_bytes() == b"old"
    assert _leftovers(tmp_path) == ["out.bin"]


def test_replace_keeps_permissions(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    os.chmod(target, 0o640)
    with atomic_write(target) as fh:
        fh.write("new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_new_file_gets_umask_permissions(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        with atomic_write(tmp_path / "f.txt") as fh:
            fh.write("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f.txt").stat().st_mode) == 0o640


def test_text_mode_writes_unix_newlines(tmp_path: Path) -> None:
    target = tmp_path / "nl.txt"
    with atomic_write(target, "wt") as fh:
        fh.write("a\nb\n")
    assert target.read_bytes() == b"a\nb\n"


def test_bad_mode_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mode"):
        with atomic_write(tmp_path / "x", "a"):
            pass
    assert _leftovers(tmp_path) == []


def test_missing_directory_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        with atomic_write(tmp_path / "nope" / "x.txt"):
            pass


def test_a_symlink_is_followed_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real.name)
    with atomic_write(link) as fh:
        fh.write("new")
    assert link.is_symlink() and real.read_text() == "new"
    dangling = tmp_path / "dangling"
    dangling.symlink_to("made.txt")
    with atomic_write(dangling) as fh:
        fh.write("made")
    assert dangling.is_symlink() and (tmp_path / "made.txt").read_text() == "made"
    assert _leftovers(tmp_path) == ["dangling", "link.txt", "made.txt", "real.txt"]


def test_a_device_or_named_pipe_is_written_in_place_not_replaced(tmp_path: Path) -> None:
    import threading

    before = os.stat("/dev/null")
    with atomic_write("/dev/null") as fh:
        fh.write("discarded")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    with atomic_write(fifo, "wb") as fh:
        fh.write(b"through the pipe")
    reader.join(timeout=10)
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and _leftovers(tmp_path) == ["pipe"]


def test_an_unwritable_destination_is_named_not_its_temporary_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"out\.txt: no such directory: .*nodir$") as err:
        with atomic_write(tmp_path / "nodir" / "out.txt") as fh:
            fh.write("x")
    assert ".tmp" not in str(err.value)


def test_atomic_directory_appears_whole_replaces_and_cleans_up(tmp_path: Path) -> None:
    from homalign.io.atomic import atomic_directory

    final = tmp_path / "store"
    with atomic_directory(final) as tmp:
        (tmp / "a.txt").write_text("one")
        assert not final.exists() and (tmp / ".pid").read_text() == str(os.getpid())
    assert _leftovers(final) == ["a.txt"] and oct(final.stat().st_mode & 0o777) == "0o755"
    with pytest.raises(RuntimeError, match="half"):
        with atomic_directory(final) as tmp:
            (tmp / "a.txt").write_text("two")
            raise RuntimeError("half way")
    assert (final / "a.txt").read_text() == "one" and _leftovers(tmp_path) == ["store"]
    dead = tmp_path / ".store.tmp-killed"  # a killed build's: its process is gone
    dead.mkdir()
    (dead / ".pid").write_text("999999999")
    with atomic_directory(final) as tmp:
        (tmp / "b.txt").write_text("new")
    assert _leftovers(tmp_path) == ["store"] and _leftovers(final) == ["b.txt"]
