"""Reading text input line by line with exact line numbers (shared by every reader)."""

from __future__ import annotations

import os
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


def numbered_lines(path: PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` (1-based, without the line ending) of a UTF-8 text file.

    Lines are decoded one at a time so that a decoding error names its exact line. ``\\r\\n``
    line endings are accepted.
    """
    p = check_readable(path)
    try:
        handle = open(p, "rb")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=p) from None
    with handle:
        for number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"not UTF-8 text (byte {raw[exc.start]:#04x})",
                    path=p,
                    line=number,
                    column=exc.start + 1,
                ) from None
            yield number, line.rstrip("\r\n")
