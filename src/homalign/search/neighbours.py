"""Database neighbour lists: each database sequence's own learned-search hits (the stored lists).

An intermediate sequence links a query to remote relatives it cannot see directly (Park,
Teichmann, Hubbard & Chothia, JMB 1997): when the query finds ``n`` and ``n`` finds ``t``, the
pair (q, t) is as credible as the weaker of the two links. The lists are CSR arrays in the
database directory (:mod:`homalign.search.neighbours_build` writes them, ``homalign makedb
--neighbours``):

``neighbours.json``        the build's settings, the ranking weights' fingerprint, the E-value
                           scale of the links (:func:`evalue_scale`), the database's size;
``neighbours_indptr.npy``  int64 (n + 1): sequence i's neighbours are ``[indptr[i], indptr[i+1])``;
``neighbours_index.npy``   int32 database index of each neighbour (the self hit left out);
``neighbours_evalue.npy``  float64 E-value of each link.

:func:`homalign.search.engine.search` uses the lists when the database has them
(:func:`neighbours_of`, :func:`lifted_evalues`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from homalign.errors import InputError

NEIGHBOURS_JSON = "neighbours.json"
FORMAT = "homalign-learned-neighbours"
VERSION = 1


def evalue_scale() -> str:
    """A fingerprint of what turns a learned score into a reported E-value: the ranking's null
    laws (beside its weights, so not in the weights' fingerprint) and its tail calibrations.
    Links stored under another scale would be compared with the query's E-values wrongly."""
    import hashlib

    from homalign.methods import get_method
    from homalign.search.tail_calibration import calibration_for

    m = get_method("learned")
    laws = [f() if f is not None else None for f in (m.null_params, m.chance_params)]
    cals = [None if c is None else (c.A, c.b, c.truncation, c.truncation_db, c.candidates)
            for c in map(calibration_for, ("learned", "learned+profile"))]  # numbers, no prose
    return hashlib.sha256(repr((laws, cals)).encode()).hexdigest()[:16]


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
    if meta.get("evalue_scale") != evalue_scale():
        raise InputError(f"{meta_path}: neighbour lists whose E-values are of another scale "
                         f"({meta.get('evalue_scale') or 'unstamped, an older homalign'}; this "
                         f"homalign's is {evalue_scale()}); rebuild with homalign makedb "
                         "--neighbours")
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
                   link_evalue: float, penalty: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Targets reached through the query's hits ``hits`` with E ≤ ``link_evalue``: (targets,
    E-values), each target's value the best over its paths of
    ``penalty · max(E(q, n), E(n, t))`` (``penalty`` prices the many paths a query has)."""
    keep = hit_evalues <= link_evalue
    targets, values = [], []
    for n, e_qn in zip(hits[keep], hit_evalues[keep], strict=True):
        idx, e_nt = neighbours.of(int(n))
        targets.append(idx.astype(np.int64))
        values.append(penalty * np.maximum(e_nt, e_qn))
    t = np.concatenate(targets) if targets else np.zeros(0, dtype=np.int64)
    v = np.concatenate(values) if values else np.zeros(0)
    if len(t) == 0:
        return t, v
    order = np.lexsort((v, t))
    t, v = t[order], v[order]
    first = np.concatenate(([True], t[1:] != t[:-1]))
    return t[first], v[first]
