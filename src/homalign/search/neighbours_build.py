"""Build a database's neighbour lists (``homalign makedb --neighbours``): the learned search of
every database sequence against its own database, its hits with E ≤ ``evalue`` (at most
``max_neighbours``), in the format of :mod:`homalign.search.neighbours`.

The build runs in chunks of sequences, each written when done, so a killed build resumes where it
stopped. It runs the search engine, which reads the lists, so it is a module of its own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from homalign.errors import InputError
from homalign.search.neighbours import (
    FORMAT,
    NEIGHBOURS_JSON,
    VERSION,
    Neighbours,
    evalue_scale,
)

#: a link is kept when its (calibrated) E-value is at most this
NEIGHBOUR_EVALUE = 0.1
MAX_NEIGHBOURS = 50
CHUNK = 256  # sequences per resumable chunk


def _chunk_path(work: Path, lo: int) -> Path:
    return work / f"chunk-{lo:09d}.npz"


def build_neighbours(db: Any, directory: str | Path, *, fingerprint: str,
                     evalue: float = NEIGHBOUR_EVALUE, max_neighbours: int = MAX_NEIGHBOURS,
                     progress: bool = False, **search_options: Any) -> Neighbours:
    """Search every sequence of ``db`` against ``db`` with the learned method and write the
    neighbour lists into ``directory``; resumes a killed build (chunks under
    ``directory/.neighbours.partial``) when its settings are the same."""
    from tqdm import tqdm

    from homalign.io.atomic import atomic_write, atomic_write_bytes
    from homalign.search.engine import search

    directory = Path(directory)
    work = directory / ".neighbours.partial"
    settings = {"format": FORMAT, "version": VERSION, "fingerprint": fingerprint,
                "evalue_scale": evalue_scale(),
                "evalue": float(evalue), "max_neighbours": int(max_neighbours),
                "sequences": len(db), "residues": int(db.total_length),
                "search_options": {k: str(v) for k, v in sorted(search_options.items())}}
    work.mkdir(parents=True, exist_ok=True)
    marker = work / "settings.json"
    if marker.is_file() and json.loads(marker.read_text()) != settings:
        for p in work.glob("chunk-*.npz"):
            p.unlink()
    with atomic_write(marker) as fh:
        json.dump(settings, fh, sort_keys=True)
    n = len(db)
    with tqdm(total=n, desc="neighbours", unit="seq", disable=not progress,
              dynamic_ncols=True) as bar:
        for lo in range(0, n, CHUNK):
            hi = min(n, lo + CHUNK)
            path = _chunk_path(work, lo)
            if not path.is_file():
                counts, index, evals = [], [], []
                for i in range(lo, hi):
                    hits = search(db.sequence(i), db, "learned", evalue=evalue,
                                  max_hits=max_neighbours + 1, traceback=False,
                                  neighbours=False, **search_options)
                    hits = [h for h in hits if h.target_index != i][:max_neighbours]
                    counts.append(len(hits))
                    index.extend(h.target_index for h in hits)
                    evals.extend(h.evalue for h in hits)
                import io

                buf = io.BytesIO()
                np.savez(buf, counts=np.asarray(counts, dtype=np.int64),
                         index=np.asarray(index, dtype=np.int32),
                         evalue=np.asarray(evals, dtype=np.float64))
                atomic_write_bytes(path, buf.getvalue())
            bar.update(hi - lo)
    counts, index, evals = [], [], []
    for lo in range(0, n, CHUNK):
        with np.load(_chunk_path(work, lo), allow_pickle=False) as z:
            counts.append(z["counts"])
            index.append(z["index"])
            evals.append(z["evalue"])
    indptr = np.concatenate(([0], np.cumsum(np.concatenate(counts)))).astype(np.int64)
    out = Neighbours(indptr, np.concatenate(index).astype(np.int32),
                     np.concatenate(evals).astype(np.float64), fingerprint)
    for name, arr in (("indptr", out.indptr), ("index", out.index), ("evalue", out.evalue)):
        with atomic_write(directory / f"neighbours_{name}.npy", mode="wb") as fh:
            np.save(fh, arr, allow_pickle=False)
    with atomic_write(directory / NEIGHBOURS_JSON) as fh:
        json.dump({**settings, "links": int(len(out.index))}, fh, indent=1, sort_keys=True)
    for p in work.iterdir():
        p.unlink()
    os.rmdir(work)
    return out


def add_neighbours(dbdir: str | Path, progress: bool = False) -> Neighbours:
    """Build (or finish a killed build of) the neighbour lists of a makedb directory under the
    bundled ranking weights."""
    from homalign.methods.learned import ranking_model
    from homalign.search.database import SequenceDB

    ranking = ranking_model()
    if ranking is None:
        raise InputError("the bundled learned weights have no batched ranking; neighbour lists "
                         "need one", path=dbdir)
    db = SequenceDB.load(dbdir, verify=False)
    return build_neighbours(db, dbdir, fingerprint=ranking.fingerprint, progress=progress)


__all__ = ["CHUNK", "MAX_NEIGHBOURS", "NEIGHBOUR_EVALUE", "add_neighbours", "build_neighbours"]
