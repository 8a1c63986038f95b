"""Database neighbour lists: each database sequence's own learned-search hits.

An intermediate sequence links a query to remote relatives it cannot see directly (Park,
Teichmann, Hubbard & Chothia, JMB 1997): when the query finds ``n`` and ``n`` finds ``t``, the
pair (q, t) is as credible as the weaker of the two links. ``build_neighbours`` runs the learned
search of every database sequence against its own database once (``homalign makedb
--neighbours``) and keeps, per sequence, its hits with E ≤ ``evalue`` (at most
``max_neighbours``), as CSR arrays:

``neighbours.json``        the build's settings, the ranking weights' fingerprint, the database's
                           size;
``neighbours_indptr.npy``  int64 (n + 1): sequence i's neighbours are ``[indptr[i], indptr[i+1])``;
``neighbours_index.npy``   int32 database index of each neighbour (the self hit left out);
``neighbours_evalue.npy``  float64 E-value of each link.

The build runs in chunks of sequences, each written when done, so a killed build resumes where it
stopped. :func:`homalign.search.engine.search` uses the lists when the database has them
(:func:`lifted_evalues`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from homalign.errors import InputError

NEIGHBOURS_JSON = "neighbours.json"
FORMAT = "homalign-learned-neighbours"
VERSION = 1
#: a link is kept when its (calibrated) E-value is at most this
NEIGHBOUR_EVALUE = 1e-2
MAX_NEIGHBOURS = 50
CHUNK = 256


@dataclass(frozen=True)
class Neighbours:
    """CSR neighbour lists of one database (see the module docstring)."""

    indptr: np.ndarray
    index: np.ndarray
    evalue: np.ndarray
    fingerprint: str

    def of(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(database indices, E-values) of sequence ``i``'s neighbours."""
        lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
        return self.index[lo:hi], self.evalue[lo:hi]


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


def load_neighbours(directory: str | Path, db: Any, fingerprint: str) -> Neighbours | None:
    """The neighbour lists of a database directory, or None when it has none. Lists of another
    database or made with other ranking weights are refused, naming both."""
    directory = Path(directory)
    meta_path = directory / NEIGHBOURS_JSON
    if not meta_path.is_file():
        return None
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{meta_path}: unreadable neighbour lists ({exc}); rebuild with "
                         "homalign makedb --neighbours") from exc
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise InputError(f"{meta_path}: not homalign neighbour lists of version {VERSION}")
    if meta.get("fingerprint") != fingerprint:
        raise InputError(f"{meta_path}: neighbour lists made with ranking weights "
                         f"{meta.get('fingerprint')}, these are {fingerprint}; rebuild with "
                         "homalign makedb --neighbours")
    if meta.get("sequences") != len(db) or meta.get("residues") != int(db.total_length):
        raise InputError(f"{meta_path}: neighbour lists of another database "
                         f"({meta.get('sequences')} sequences, this one has {len(db)})")
    arrays = []
    for name in ("indptr", "index", "evalue"):
        path = directory / f"neighbours_{name}.npy"
        try:
            arrays.append(np.load(path, allow_pickle=False))
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: unreadable ({exc}); rebuild with homalign makedb "
                             "--neighbours") from exc
    indptr, index, evals = arrays
    if (len(indptr) != len(db) + 1 or indptr[-1] != len(index) or len(evals) != len(index)
            or (len(index) and (index.min() < 0 or index.max() >= len(db)))):
        raise InputError(f"{directory}: neighbour arrays do not fit the database")
    return Neighbours(indptr, index, evals, fingerprint)


def neighbours_of(db: Any, fingerprint: str) -> Neighbours | None:
    """The neighbour lists of a makedb directory database (cached on ``db``), or None."""
    key = ("learned-neighbours", fingerprint)
    if key not in db.cache:
        source = getattr(db, "source", None)
        db.cache[key] = (load_neighbours(source, db, fingerprint)
                         if source is not None and Path(source).is_dir() else None)
    return db.cache[key]


def lifted_evalues(neighbours: Neighbours, hits: np.ndarray, hit_evalues: np.ndarray,
                   link_evalue: float) -> tuple[np.ndarray, np.ndarray]:
    """Targets reached through the query's hits ``hits`` with E ≤ ``link_evalue``: (targets,
    E-values), each target's value the best over its paths of ``max(E(q, n), E(n, t))``."""
    keep = hit_evalues <= link_evalue
    targets, values = [], []
    for n, e_qn in zip(hits[keep], hit_evalues[keep], strict=True):
        idx, e_nt = neighbours.of(int(n))
        targets.append(idx.astype(np.int64))
        values.append(np.maximum(e_nt, e_qn))
    t = np.concatenate(targets) if targets else np.zeros(0, dtype=np.int64)
    v = np.concatenate(values) if values else np.zeros(0)
    if len(t) == 0:
        return t, v
    order = np.lexsort((v, t))
    t, v = t[order], v[order]
    first = np.concatenate(([True], t[1:] != t[:-1]))
    return t[first], v[first]
