"""Reading text input line by line with exact line numbers (shared by every reader)."""

from __future__ import annotations

import contextlib
import gzip
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

from homalign.errors import InputError

PathLike = str | os.PathLike[str]


def check_readable(path: PathLike) -> Path:
    """Return ``path`` as a :class:`Path`, or raise :class:`InputError` if it is not a file."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file", path=p)
    if p.is_dir():
        raise InputError("is a directory, not a file", path=p)
    return p


def _gzip_lines(handle, path: Path) -> Iterator[tuple[int, bytes]]:
    """``enumerate(handle, 1)`` of a gzip stream, a damaged stream an :class:`InputError`."""
    number = 0
    try:
        for number, raw in enumerate(handle, 1):  # noqa: B007 (number names the damage)
            yield number, raw
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"damaged gzip data: {exc}", path=path, line=number + 1) from None


def _split_cr(lines: Iterator[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
    """Renumber ``(number, raw)`` lines, splitting a line at every bare ``\\r`` (classic Mac
    line endings: such a file arrives as one line); ``\\r\\n`` endings stay one line."""
    number = 0
    for _, raw in lines:
        body = raw[:-1] if raw.endswith(b"\n") else raw
        if b"\r" not in body[:-1]:
            number += 1
            yield number, raw
            continue
        parts = body.split(b"\r")
        if body.endswith(b"\r"):
            parts.pop()
        for part in parts:
            number += 1
            yield number, part


def numbered_lines(path: PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` (1-based, without the line ending) of a UTF-8 text file
    (gzip-compressed when it starts with gzip's magic bytes, whatever its name: standard input
    too).

    Lines are decoded one at a time so that a decoding error names its exact line. ``\\r\\n``
    and classic Mac ``\\r`` line endings and a leading byte-order mark are accepted.
    """
    p = check_readable(path)
    try:
        plain = open(p, "rb")  # noqa: SIM115  (closed below, or by the gzip reader's stack)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=p) from None
    with contextlib.ExitStack() as stack:
        stack.enter_context(plain)
        gz = plain.peek(2)[:2] == b"\x1f\x8b"  # peeked, not read: a pipe loses nothing
        handle = stack.enter_context(gzip.GzipFile(fileobj=plain, mode="rb")) if gz else plain
        for number, raw in _split_cr(_gzip_lines(handle, p) if gz else enumerate(handle, 1)):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"not UTF-8 text (byte {raw[exc.start]:#04x})",
                    path=p,
                    line=number,
                    column=exc.start + 1,
                ) from None
            if number == 1 and line.startswith("\ufeff"):
                line = line[1:]
            yield number, line.rstrip("\r\n")


def text_lines(path: PathLike) -> list[str]:
    """The lines of a whole text file read as ASCII (other bytes become U+FFFD), gzip-compressed
    or not (by its magic bytes, as :func:`numbered_lines`), a byte-order mark dropped: the model
    and profile readers (``.hmm``, ``.hhm``, PSSM), whose files are ASCII by format."""
    p = check_readable(path)
    try:
        with open(p, "rb") as plain:
            raw = plain.read()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=p) from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"damaged gzip data: {exc}", path=p) from None
    if raw[:3] == b"\xef\xbb\xbf":
        raw = raw[3:]
    return raw.decode("ascii", errors="replace").splitlines()
