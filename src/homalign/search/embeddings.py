"""Per-residue embeddings of a database's sequences under the learned ranking weights.

The learned search scores a query against a target from the target's per-residue embeddings
(:mod:`homalign.model.ranking`); they depend on the target and the weights only, so
``homalign makedb`` computes them once, in batches, and stores them in the database directory:

``learned.json``          the weights' fingerprint, dimension, dtype, size and SHA-256;
``learned_residues.npy``  (n_residues, dim) embeddings packed like ``codes.npy``, float16 by
                          default (scores differ from float32 by < 1e-4 relative, measured in
                          docs/decisions.md), memory-mapped when read.

A database directory without them (or a FASTA file) gets them computed in memory on first use,
once per process, in float16 as ``makedb`` stores them, so a FASTA file and its database
directory rank with the same numbers. A store made with other weights is refused with both fingerprints named.
The embeddings are large (2 bytes x 32 a residue: 138 MB for SCOPe's 2.2M residues), so
``load`` checks their size against ``learned.json`` and leaves the hash to ``verify``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from homalign.errors import InputError

STORE_JSON = "learned.json"
STORE_ARRAY = "learned_residues.npy"
STORE_FORMAT = "homalign-learned-embeddings"
STORE_VERSION = 1
DTYPES = ("float16", "float32")
#: sequences a ``makedb`` embedding chunk holds (one chunk is written while the next is embedded)
FILL_SEQUENCES = 1024


@dataclass
class EmbeddingStore:
    """Embeddings (n_residues, dim) of one database, packed like its ``codes``."""

    fingerprint: str
    residues: np.ndarray  # float16 / float32, possibly a read-only memmap

    def gather(self, db: Any, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(codes, embeddings, lengths) of ``targets`` packed back to back."""
        targets = np.asarray(targets, dtype=np.int64)
        starts = db.offsets[targets]
        lengths = db.offsets[targets + 1] - starts
        idx = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        idx += np.arange(int(lengths.sum()), dtype=np.int64)
        return db.codes[idx], np.take(np.asarray(self.residues), idx, axis=0), lengths


def compute_embeddings(db: Any, ranking: Any, dtype: str = "float16", progress: bool = False,
                       chunk_sequences: int = 4096) -> np.ndarray:
    """(n_residues, dim) embeddings of every sequence of ``db`` under ``ranking``
    (a :class:`homalign.model.ranking.RankingModel`), in batched encoder calls."""
    out = np.empty((db.total_length, ranking.dim), dtype=np.dtype(dtype))
    _fill(out, db, ranking, progress, chunk_sequences)
    return out


def _fill(out: np.ndarray, db: Any, ranking: Any, progress: bool, chunk_sequences: int) -> None:
    from tqdm import tqdm

    n = len(db)
    with tqdm(total=db.total_length, desc="embed", unit="res", unit_scale=True,
              disable=not progress, dynamic_ncols=True) as bar:
        for lo in range(0, n, chunk_sequences):
            hi = min(n, lo + chunk_sequences)
            embs = ranking.embed_many([db.codes_of(i) for i in range(lo, hi)])
            out[db.offsets[lo]:db.offsets[hi]] = np.concatenate(embs)
            bar.update(int(db.offsets[hi] - db.offsets[lo]))


def _fill_file(path: Path, header: int, db: Any, ranking: Any, dtype: np.dtype, progress: bool,
               chunk_sequences: int) -> None:
    """:func:`_fill` into the array of the ``.npy`` file ``path``, each chunk mapped only while it
    is written (a large database's embeddings never sit in memory at once). A chunk is converted
    and written on a second thread while the next one is embedded (at most two in memory)."""
    from concurrent.futures import ThreadPoolExecutor

    from tqdm import tqdm

    n, dim = len(db), int(ranking.dim)

    def write(a: int, b: int, embs: list[np.ndarray]) -> None:
        part = np.memmap(path, dtype=dtype, mode="r+", shape=(b - a, dim),
                         offset=header + a * dim * dtype.itemsize)
        lo = 0
        for e in embs:  # numpy's cast drops the GIL: the encoder's threads go on meanwhile
            part[lo:lo + len(e)] = e
            lo += len(e)
        part.flush()
        del part

    with tqdm(total=db.total_length, desc="embed", unit="res", unit_scale=True,
              disable=not progress, dynamic_ncols=True) as bar, ThreadPoolExecutor(1) as writer:
        pending = None
        for lo in range(0, n, chunk_sequences):
            hi = min(n, lo + chunk_sequences)
            a, b = int(db.offsets[lo]), int(db.offsets[hi])
            embs = ranking.embed_many([db.codes_of(i) for i in range(lo, hi)])
            if pending is not None:
                pending.result()
            pending = writer.submit(write, a, b, embs)
            bar.update(b - a)
        if pending is not None:
            pending.result()


def write_store(db: Any, ranking: Any, directory: Path, dtype: str = "float16",
                progress: bool = False) -> dict:
    """Write ``learned_residues.npy`` and ``learned.json`` into ``directory`` (a database being
    built); returns the JSON written."""
    from homalign.io.digest import file_sha256

    if dtype not in DTYPES:
        raise ValueError(f"embedding dtype must be one of {DTYPES}, got {dtype!r}")
    path = directory / STORE_ARRAY
    dt = np.dtype(dtype)
    shape = (int(db.total_length), int(ranking.dim))
    blank = np.lib.format.open_memmap(path, mode="w+", dtype=dt, shape=shape)
    known = getattr(db, "cache", {}).get(("learned-embeddings", ranking.fingerprint))
    if known is not None and known.residues.dtype == dt:  # a search here computed them
        blank[:] = known.residues
        blank.flush()
        del blank
    else:
        del blank  # the file exists at its full size; now fill it a chunk at a time
        header = path.stat().st_size - shape[0] * shape[1] * dt.itemsize
        _fill_file(path, header, db, ranking, dt, progress, FILL_SEQUENCES)
    meta = {"format": STORE_FORMAT, "version": STORE_VERSION,
            "weights": ranking.fingerprint, "dim": ranking.dim, "dtype": dtype,
            "n_residues": int(db.total_length), "size": path.stat().st_size,
            "sha256": file_sha256(path)}
    with open(directory / STORE_JSON, "w") as fh:
        json.dump(meta, fh, indent=1)
    return meta


def load_store(dbdir: Path, n_residues: int, verify: bool = False) -> EmbeddingStore | None:
    """The store of a database directory (memory-mapped), or None when it has none."""
    meta_path = dbdir / STORE_JSON
    if not meta_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"damaged learned-embedding manifest: {exc}", path=meta_path) from None
    if meta.get("format") != STORE_FORMAT or meta.get("version") != STORE_VERSION:
        raise InputError(f"learned embeddings of another format or version "
                         f"({meta.get('format')!r} {meta.get('version')!r}); rebuild the "
                         "database with `homalign makedb --force`", path=meta_path)
    path = dbdir / STORE_ARRAY
    if not path.exists() or path.stat().st_size != meta.get("size"):
        raise InputError("learned embeddings are missing or cut short; rebuild the database "
                         "with `homalign makedb --force`", path=path)
    if verify:
        from homalign.io.digest import file_sha256

        if file_sha256(path) != meta.get("sha256"):
            raise InputError("learned embeddings do not match their hash", path=path)
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise InputError(f"learned embeddings are damaged: {exc}", path=path) from None
    if arr.shape != (n_residues, meta.get("dim")):
        raise InputError(f"learned embeddings have shape {arr.shape}, the database "
                         f"{n_residues} residues x {meta.get('dim')}", path=path)
    return EmbeddingStore(str(meta["weights"]), arr)


def _manifest_lists_store(dbdir: Path) -> bool:
    """Whether ``makedb`` wrote learned embeddings into ``dbdir`` (its manifest's ``learned``)."""
    try:
        return bool(json.loads((dbdir / "manifest.json").read_text()).get("learned"))
    except (OSError, ValueError, AttributeError):
        return False


def store_for(db: Any, ranking: Any) -> EmbeddingStore:
    """The embeddings ``search`` scores ``db`` with under ``ranking``: the database's stored
    ones (their fingerprint must be the weights'), else computed now and kept on ``db``."""
    cache = db.cache
    key = ("learned-embeddings", ranking.fingerprint)
    if key in cache:
        return cache[key]
    store = None
    if db.source is not None and Path(db.source).is_dir():
        store = load_store(Path(db.source), db.total_length)
        if store is None and _manifest_lists_store(Path(db.source)):
            raise InputError(f"the database's learned embeddings are missing ({STORE_JSON}); "
                             "rebuild it with `homalign makedb --force`", path=db.source)
        if store is not None and store.fingerprint != ranking.fingerprint:
            raise InputError(
                f"the database's learned embeddings were made with weights {store.fingerprint}, "
                f"but this homalign ranks with weights {ranking.fingerprint}; rebuild it with "
                "`homalign makedb --force`", path=db.source)
    if store is None:
        store = EmbeddingStore(ranking.fingerprint,  # float16 as makedb stores them: the
                               compute_embeddings(db, ranking))  # same hits as its directory
    cache[key] = store
    return store


__all__ = ["EmbeddingStore", "compute_embeddings", "load_store", "store_for", "write_store"]
