"""SHA-256 digests of files and bytes: what manifests record and loaders verify (the sequence
database, its embedding store, training checkpoints and exports). Imports nothing of homalign."""

from __future__ import annotations

import hashlib
import os


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


__all__ = ["file_sha256", "sha256_bytes"]
