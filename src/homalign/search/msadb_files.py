"""An MSA database directory (:mod:`homalign.search.msadb`): its manifest (``msadb.json``: the
build settings and the identity of the sequence database it was made for), the name of each
sequence's A3M file, and the check that the directory is a complete MSA database of a given
sequence database. Both the database and its stored HMMs (:mod:`homalign.search.hmm_store`)
read it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from homalign.errors import InputError

MANIFEST = "msadb.json"
FORMAT = "homalign-msadb"
FORMAT_VERSION = 1


def msa_filename(seq_id: str) -> str:
    """``<id>.a3m``; refuses ids that cannot be a file name."""
    if not seq_id or "/" in seq_id or "\\" in seq_id or seq_id.startswith(".") or "\0" in seq_id:
        raise InputError("sequence id cannot name an MSA file", record=seq_id)
    return f"{seq_id}.a3m"


def db_identity(db: Any) -> dict[str, Any]:
    """What identifies the sequence database: its size and a hash of its ids."""
    ids = hashlib.sha256("\n".join(db.ids).encode()).hexdigest()[:16]
    return {"sequences": len(db), "residues": int(db.total_length), "ids_sha256": ids}


def settings_of(db: Any, iterations: int, inclusion_evalue: float,
                max_candidates: int) -> dict[str, Any]:
    """The manifest of an MSA database of ``db`` built with these settings."""
    return {"format": FORMAT, "version": FORMAT_VERSION, "database": db_identity(db),
            "iterations": int(iterations), "inclusion_evalue": float(inclusion_evalue),
            "max_candidates": int(max_candidates)}


def write_manifest(outdir: Path, settings: dict[str, Any]) -> None:
    """Write ``outdir``'s manifest, or check that the one there has these settings."""
    from homalign.io.atomic import atomic_write

    path = outdir / MANIFEST
    if path.exists():
        old = json.loads(path.read_text())
        if old != settings:
            diff = sorted(k for k in set(old) | set(settings) if old.get(k) != settings.get(k))
            raise InputError(f"an MSA database with other settings is here ({', '.join(diff)} "
                             "differ); use another directory", path=path)
        return
    with atomic_write(path) as fh:
        json.dump(settings, fh, indent=1)


def open_msa_db(outdir: str | os.PathLike, db: Any = None) -> Path:
    """Check that ``outdir`` is a complete MSA database (of ``db`` when given); returns it."""
    out = Path(outdir)
    path = out / MANIFEST
    if not path.exists():
        raise InputError("not an MSA database (no msadb.json; build it with homalign makemsa)",
                         path=out)
    settings = json.loads(path.read_text())
    if settings.get("format") != FORMAT:
        raise InputError(f"not an MSA database (format {settings.get('format')!r})", path=path)
    if db is not None:
        if settings["database"] != db_identity(db):
            raise InputError("the MSA database was built for another sequence database",
                             path=path)
        missing = [s for s in db.ids if not (out / msa_filename(s)).exists()]
        if missing:
            raise InputError(f"the MSA database is incomplete: {len(missing)} of {len(db)} "
                             "sequences have no MSA yet (rerun homalign makemsa to finish it)",
                             path=out, record=missing[0])
    return out


__all__ = ["FORMAT", "FORMAT_VERSION", "MANIFEST", "db_identity", "msa_filename", "open_msa_db",
           "settings_of", "write_manifest"]
