"""Error types shared by every layer (a leaf module: imports nothing of homalign's)."""

from __future__ import annotations

from pathlib import Path


class HomalignError(Exception):
    """Base class of every error homalign raises on purpose."""


class InputError(HomalignError, ValueError):
    """Bad user input: names the file, the record and the position, and says why.

    The CLI prints ``str(error)`` as one line and exits non-zero.
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        record: str | None = None,
        column: int | None = None,
    ) -> None:
        self.reason = reason
        self.path = None if path is None else str(path)
        self.line = line
        self.record = record
        self.column = column
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.path is not None:
            where.append(self.path if self.line is None else f"{self.path}:{self.line}")
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.record is not None:
            where.append(f"record {self.record!r}")
        if self.column is not None:
            where.append(f"position {self.column}")
        return f"{', '.join(where)}: {self.reason}" if where else self.reason


class WorkerError(HomalignError, RuntimeError):
    """A worker process or Ray task died (killed, out of memory) before its work was done: the
    input was not at fault and neither was homalign's code, so the CLI exits with
    :data:`WORKER_STATUS`, not 2 (bad input) or 70 (a bug)."""


#: EX_OSERR (sysexits.h): the operating system stopped a worker
WORKER_STATUS = 71
