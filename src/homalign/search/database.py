"""A searchable protein database: sequences packed into one code array.

Two forms:

* in memory, :meth:`SequenceDB.from_fasta` / :meth:`SequenceDB.from_sequences`;
* on disk, a directory written by :func:`makedb` and opened with :meth:`SequenceDB.load`:

  ``manifest.json``  format name and version, k, counts and the SHA-256 of every other file;
  ``headers.json``   ids and descriptions;
  ``codes.npy``      uint8 residue codes of all sequences, concatenated (``homalign.alphabet``);
  ``offsets.npy``    int64 (n + 1) start of each sequence in ``codes``;
  the learned search's target embeddings (:mod:`homalign.search.embeddings`) and, with
  ``--neighbours``, its neighbour lists (:mod:`homalign.search.neighbours`).

The prefilter scans the packed codes (:func:`homalign.search.prefilter.prefilter_scores`, as
BLAST does), so no k-mer index is stored; :meth:`SequenceDB.kmer_index` builds one in memory on
request, for the index walk (the homologue search's).

``makedb`` streams its input: it reads the FASTA a record at a time and appends each record's codes
to ``codes.npy`` as it goes (through a buffer of :data:`WRITE_CHUNK` bytes), holding only ids,
descriptions and lengths in memory, so a database larger than memory can be built; the files are
byte for byte those of :meth:`SequenceDB.from_fasta`'s arrays saved with ``numpy.save``. The
learned embeddings are then computed from a memory map of ``codes.npy``, a chunk at a time.

``makedb`` writes into a hidden temporary directory next to the destination and renames it into
place, so a crash never leaves a half-written database (and a later run deletes what a killed one
left); ``load`` refuses a directory of another format version or whose files do not match the
manifest's hashes (cut short or damaged).
"""

from __future__ import annotations

import io
import json
import os
import threading
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from homalign.alphabet import ALPHABET, N_CODES
from homalign.errors import InputError
from homalign.io.atomic import atomic_directory
from homalign.io.digest import file_sha256
from homalign.io.text import check_readable
from homalign.search.prefilter import KmerIndex, build_kmer_index
from homalign.sequence import Sequence

DB_FORMAT = "homalign-seqdb"
DB_FORMAT_VERSION = 2  # 2: no stored k-mer index
MANIFEST = "manifest.json"
_ARRAYS = ("codes", "offsets")
_LETTERS = np.frombuffer(ALPHABET.encode("ascii"), dtype=np.uint8)
#: Bytes of residue codes ``makedb`` gathers before appending them to ``codes.npy`` (64 MiB): the
#: most of a database's residues it holds in memory at once (a longer sequence is written alone).
WRITE_CHUNK = 64 << 20
#: one k-mer index built at a time (threads searching one database share it)
_INDEX_LOCK = threading.Lock()

#: Entries of ``headers.json``'s lists encoded at a time.
_HEADER_BATCH = 65536


def _check_manifest(manifest: dict, path: Path) -> None:
    """InputError naming the first field of a makedb manifest that is missing or of the wrong
    type (a hand-edited or damaged file), so that reading it cannot fail later."""
    def bad(key: str, what: str) -> InputError:
        return InputError(f"damaged manifest: {key} must be {what}", path=path)

    for key in ("k", "n_sequences", "n_residues"):
        value = manifest.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise bad(key, "a non-negative integer")
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise bad("files", "an object")
    for name, entry in files.items():
        if (not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str)
                or not isinstance(entry.get("size"), int)):
            raise bad(f"files/{name}", "an object with a sha256 string and an integer size")


@dataclass
class SequenceDB:
    """Protein sequences packed for search.

    ``codes`` holds every sequence's residue codes back to back; sequence ``i`` is
    ``codes[offsets[i]:offsets[i + 1]]``. ``ids`` are unique.
    """

    ids: list[str]
    descriptions: list[str]
    codes: np.ndarray
    offsets: np.ndarray
    source: str | None = None
    k: int = 3
    _id_to_index: dict[str, int] | None = field(default=None, repr=False)
    #: per-process derived data (e.g. learned embeddings computed in memory), keyed by what made it
    cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.codes = np.ascontiguousarray(self.codes, dtype=np.uint8)
        self.offsets = np.ascontiguousarray(self.offsets, dtype=np.int64)
        if len(self.ids) == 0:
            raise InputError("the database has no sequences", path=self.source)
        if len(self.offsets) != len(self.ids) + 1 or len(self.descriptions) != len(self.ids):
            raise InputError("database arrays disagree on the number of sequences",
                             path=self.source)
        if self.offsets[0] != 0 or self.offsets[-1] != len(self.codes) or (
                np.diff(self.offsets) <= 0).any():
            raise InputError("database offsets are inconsistent", path=self.source)
        if len(self.codes) and int(self.codes.max()) >= N_CODES:
            raise InputError("database holds invalid residue codes", path=self.source)
        seen: dict[str, int] = {}
        for i, sid in enumerate(self.ids):
            if sid in seen:
                raise InputError(f"duplicate sequence id (records {seen[sid] + 1} and {i + 1})",
                                 path=self.source, record=sid)
            seen[sid] = i
        self._id_to_index = seen

    def __getstate__(self) -> dict:
        """Pickled (e.g. into Ray's object store) without the per-process caches."""
        state = dict(self.__dict__)
        state["cache"] = {}
        return state

    # --- construction ---------------------------------------------------------------------
    @classmethod
    def from_sequences(cls, sequences: Iterable[Sequence], source: str | None = None,
                       k: int = 3) -> SequenceDB:
        """Pack already validated sequences."""
        seqs = list(sequences)
        if not seqs:
            raise InputError("the database has no sequences", path=source)
        lengths = np.array([len(s) for s in seqs], dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        codes = np.concatenate([s.codes for s in seqs]).astype(np.uint8)
        return cls([s.id for s in seqs], [s.description for s in seqs], codes, offsets,
                   source=source, k=k)

    @classmethod
    def from_fasta(cls, path: str | Path, k: int = 3) -> SequenceDB:
        """Read a FASTA file (ids must be unique, at least one record)."""
        from homalign.sequence import read_sequences

        path = Path(path)
        if not path.exists():
            raise InputError("no such file", path=path)
        seqs = read_sequences(path)
        if not seqs:
            raise InputError("the database FASTA file has no records", path=path)
        return cls.from_sequences(seqs, source=str(path), k=k)

    @classmethod
    def load(cls, dbdir: str | Path, verify: bool = True) -> SequenceDB:
        """Open a :func:`makedb` directory; ``verify`` checks every file's SHA-256."""
        dbdir = Path(dbdir)
        if not dbdir.is_dir():
            raise InputError("not a database directory", path=dbdir)
        manifest_path = dbdir / MANIFEST
        if not manifest_path.exists():
            raise InputError("not a homalign database (no manifest.json)", path=dbdir)
        try:
            manifest = json.loads(manifest_path.read_text())
        except ValueError as exc:
            raise InputError(f"damaged manifest: {exc}", path=manifest_path) from None
        if not isinstance(manifest, dict):
            raise InputError("damaged manifest: not a JSON object", path=manifest_path)
        if manifest.get("format") != DB_FORMAT:
            raise InputError(f"not a homalign database (format {manifest.get('format')!r})",
                             path=manifest_path)
        version = manifest.get("version")
        if version != DB_FORMAT_VERSION:
            raise InputError(
                f"database format version {version} is not supported (this homalign reads "
                f"version {DB_FORMAT_VERSION}); rebuild it with `homalign makedb`",
                path=manifest_path)
        _check_manifest(manifest, manifest_path)
        files = manifest["files"]
        for name in ("headers.json", *(f"{a}.npy" for a in _ARRAYS)):
            p = dbdir / name
            if name not in files:
                raise InputError(f"manifest does not list {name}", path=manifest_path)
            if not p.exists():
                raise InputError(f"database is incomplete: {name} is missing", path=dbdir)
            if p.stat().st_size != files[name]["size"]:
                raise InputError(f"database is cut short or damaged: {name} has "
                                 f"{p.stat().st_size} bytes, manifest says {files[name]['size']}",
                                 path=dbdir)
            if verify and file_sha256(p) != files[name]["sha256"]:
                raise InputError(f"database is damaged: {name} does not match its hash",
                                 path=dbdir)
        try:
            headers = json.loads((dbdir / "headers.json").read_text())
            arrays = {a: np.load(dbdir / f"{a}.npy", allow_pickle=False) for a in _ARRAYS}
            ids, descriptions = headers["ids"], headers["descriptions"]
        except (ValueError, OSError, KeyError, TypeError) as exc:
            raise InputError(f"database is damaged: {exc!r}", path=dbdir) from None
        db = cls(ids, descriptions, arrays["codes"], arrays["offsets"],
                 source=str(dbdir), k=int(manifest["k"]))
        if len(db) != int(manifest["n_sequences"]) or db.total_length != int(
                manifest["n_residues"]):
            raise InputError("database does not match its manifest", path=dbdir)
        return db

    # --- access -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ids)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def total_length(self) -> int:
        """Number of residues in the database."""
        return int(self.offsets[-1])

    @property
    def id_to_index(self) -> dict[str, int]:
        """Sequence id → its index in the database."""
        return self._id_to_index or {}

    def index_of(self, seq_id: str) -> int:
        assert self._id_to_index is not None
        try:
            return self._id_to_index[seq_id]
        except KeyError:
            raise KeyError(f"no sequence {seq_id!r} in the database") from None

    def codes_of(self, i: int) -> np.ndarray:
        return self.codes[self.offsets[i]:self.offsets[i + 1]]

    def residues(self, i: int) -> str:
        """Sequence ``i`` as an upper-case residue string (vectorised decode)."""
        return _LETTERS[self.codes_of(i)].tobytes().decode("ascii")

    def sequence(self, i: int) -> Sequence:
        """Sequence ``i`` as a :class:`homalign.sequence.Sequence`."""
        return Sequence(self.ids[i], self.residues(i), self.descriptions[i], source=self.source)

    def __iter__(self):
        return (self.sequence(i) for i in range(len(self)))

    def has_kmer_index(self, k: int) -> bool:
        """Whether this process has built the k-mer index already."""
        return ("kmer_index", int(k)) in self.cache

    def kmer_index(self, k: int) -> KmerIndex:
        """The postings of every k-mer, built on first use and kept for the process (in
        :attr:`cache`, so never pickled): 8 bytes a residue, ~0.3 s for 9 million."""
        key = ("kmer_index", int(k))
        with _INDEX_LOCK:
            if key not in self.cache:
                self.cache[key] = build_kmer_index(self.codes, self.offsets, int(k))
            return self.cache[key]

    def subset(self, indices: Iterable[int]) -> SequenceDB:
        """A new database of the given sequences (in that order), without an index."""
        idx = [int(i) for i in indices]
        if not idx:
            raise InputError("the database subset has no sequences", path=self.source)
        lengths = self.lengths[idx]
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        codes = np.concatenate([self.codes_of(i) for i in idx])
        return SequenceDB([self.ids[i] for i in idx], [self.descriptions[i] for i in idx],
                          codes, offsets, source=self.source, k=self.k)


def _write_file(path: Path, data: bytes | None = None, array: np.ndarray | None = None) -> None:
    with open(path, "wb") as fh:
        if array is not None:
            np.save(fh, array, allow_pickle=False)
        else:
            assert data is not None
            fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _npy_header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    """The header ``numpy.save`` writes for a C-ordered array of ``dtype`` and ``shape``."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
              "shape": shape})
    return buf.getvalue()


def _write_codes(fasta: Path, path: Path) -> tuple[list[str], list[str], np.ndarray]:
    """Stream the records of ``fasta`` into the ``.npy`` file ``path``: their residue codes back
    to back, uint8, as :meth:`SequenceDB.from_fasta` packs them; returns the ids, descriptions
    and offsets (int64, n + 1).

    Records are validated as :func:`homalign.sequence.read_sequences` does (the same errors, naming
    file, line or record and column); codes are buffered :data:`WRITE_CHUNK` bytes at a time and
    the header, which holds the length, is written last over space kept for it.
    """
    from homalign.sequence import iter_sequences

    ids: list[str] = []
    descriptions: list[str] = []
    lengths = array("q")
    dtype = np.dtype(np.uint8)
    reserved = len(_npy_header(dtype, (np.iinfo(np.int64).max,)))
    # no larger than the file: a small FASTA does not get a 64 MiB buffer
    buf = np.empty(max(1, min(WRITE_CHUNK, fasta.stat().st_size)), dtype=dtype)
    fill = 0
    with open(path, "wb") as fh:
        fh.write(bytes(reserved))
        for seq in iter_sequences(fasta):
            codes = seq.codes
            n = len(codes)
            if fill + n > len(buf):
                fh.write(buf[:fill].data)
                fill = 0
            if n > len(buf):
                fh.write(np.ascontiguousarray(codes, dtype=dtype).data)
            else:
                buf[fill:fill + n] = codes
                fill += n
            ids.append(seq.id)
            descriptions.append(seq.description)
            lengths.append(n)
        fh.write(buf[:fill].data)
        del buf
        if not ids:
            raise InputError("the database FASTA file has no records", path=fasta)
        offsets = np.concatenate(([0], np.cumsum(np.frombuffer(lengths, dtype=np.int64))))
        header = _npy_header(dtype, (int(offsets[-1]),))
        if len(header) != reserved:  # numpy pads every 1-d header to one length
            raise RuntimeError(f"numpy wrote a {len(header)}-byte .npy header, not {reserved}")
        fh.seek(0)
        fh.write(header)
        fh.flush()
        os.fsync(fh.fileno())
    return ids, descriptions, offsets


def _write_headers(path: Path, ids: list[str], descriptions: list[str]) -> None:
    """``headers.json``: ``json.dumps({"ids": ids, "descriptions": descriptions})``, encoded
    :data:`_HEADER_BATCH` entries at a time (never the whole text in memory)."""
    with open(path, "wb") as fh:
        for opening, values in ((b'{"ids": [', ids), (b'], "descriptions": [', descriptions)):
            fh.write(opening)
            for lo in range(0, len(values), _HEADER_BATCH):
                if lo:
                    fh.write(b", ")
                fh.write(json.dumps(values[lo:lo + _HEADER_BATCH])[1:-1].encode())
        fh.write(b"]}")
        fh.flush()
        os.fsync(fh.fileno())


def makedb(fasta: str | Path, outdir: str | Path, k: int = 3, overwrite: bool = False,
           learned: bool = True, embedding_dtype: str = "float16",
           progress: bool = False) -> Path:
    """Write a database directory for ``fasta`` at ``outdir``; returns ``outdir``.

    ``fasta`` is read once, a record at a time (see the module's description): its residues are
    never all in memory. ``learned`` also stores the learned search's per-residue target embeddings
    (:mod:`homalign.search.embeddings`, ``embedding_dtype``), computed in batches.

    Everything is written into a temporary directory beside ``outdir`` and renamed into place at
    the end, so ``outdir`` is either complete or absent. An existing ``outdir`` is an error unless
    ``overwrite`` (then it is replaced only after the new one is complete).
    """
    fasta = Path(fasta)
    check_readable(fasta)
    return _build(outdir, lambda tmp: _write_codes(fasta, tmp / "codes.npy"), fasta, k=k,
                  overwrite=overwrite, learned=learned, embedding_dtype=embedding_dtype,
                  progress=progress)


def save_database(db: SequenceDB, outdir: str | Path, overwrite: bool = False,
                  learned: bool = True, embedding_dtype: str = "float16",
                  progress: bool = False) -> Path:
    """Write the database ``db`` (e.g. read from a FASTA file) as a :func:`makedb` directory at
    ``outdir``, from the records in memory: the files ``makedb`` writes for the same records,
    the learned embeddings taken from ``db`` when a search has already computed them. The
    manifest names ``db.source`` without a hash of it (``db`` need not hold all of that file).
    """
    def records(tmp: Path) -> tuple[list[str], list[str], np.ndarray]:
        _write_file(tmp / "codes.npy", array=db.codes)
        return list(db.ids), list(db.descriptions), db.offsets

    return _build(outdir, records, None, k=db.k, overwrite=overwrite, learned=learned,
                  embedding_dtype=embedding_dtype, progress=progress, records_of=db)


def _build(outdir: str | Path,
           write_records: Callable[[Path], tuple[list[str], list[str], np.ndarray]],
           fasta: Path | None, *, k: int,
           overwrite: bool, learned: bool, embedding_dtype: str, progress: bool,
           records_of: SequenceDB | None = None) -> Path:
    """:func:`makedb`'s directory at ``outdir``: ``write_records(tmp)`` writes ``codes.npy`` into
    the temporary directory and returns (ids, descriptions, offsets); ``fasta``: the source to
    name and hash (None: ``records_of.source``, unhashed)."""
    from homalign.version import __version__

    outdir = Path(outdir)
    if outdir.exists() and not overwrite:
        raise InputError("output exists (pass overwrite / --force to replace it)", path=outdir)
    if outdir.exists() and not outdir.is_dir():
        raise InputError("refusing to replace a file with a database directory", path=outdir)
    if outdir.exists() and not (outdir / MANIFEST).exists():
        raise InputError("refusing to replace a directory that is not a homalign database",
                         path=outdir)
    with atomic_directory(outdir) as tmp:
        ids, descriptions, offsets = write_records(tmp)
        _write_headers(tmp / "headers.json", ids, descriptions)
        _write_file(tmp / "offsets.npy", array=offsets)
        files = {}
        for name in ("headers.json", *(f"{a}.npy" for a in _ARRAYS)):
            p = tmp / name
            files[name] = {"sha256": file_sha256(p), "size": p.stat().st_size}
        source = (str(fasta.resolve()) if fasta is not None
                  else records_of.source if records_of is not None else None)
        manifest = {
            "format": DB_FORMAT, "version": DB_FORMAT_VERSION, "homalign": __version__,
            "k": k, "n_sequences": len(ids), "n_residues": int(offsets[-1]),
            "source": source,
            "source_sha256": file_sha256(fasta) if fasta is not None else None, "files": files,
        }
        if learned:
            from homalign.methods.learned import ranking_model
            from homalign.search.embeddings import write_store

            ranking = ranking_model()
            if ranking is not None:
                if records_of is not None:
                    db = records_of
                else:  # the codes just written, memory-mapped (a chunk of sequences at a time)
                    codes = np.load(tmp / "codes.npy", mmap_mode="r", allow_pickle=False)
                    db = SequenceDB(ids, descriptions, codes, offsets, source=source, k=k)
                manifest["learned"] = write_store(db, ranking, tmp, embedding_dtype, progress)
                del db
        _write_file(tmp / MANIFEST, data=json.dumps(manifest, indent=1).encode())
    return outdir


def same_source(dbdir: str | Path, fasta: str | Path) -> bool:
    """Whether ``dbdir`` is a complete database built from the same bytes as ``fasta``."""
    manifest = Path(dbdir) / MANIFEST
    if not manifest.is_file() or not Path(fasta).is_file():
        return False
    try:
        meta = json.loads(manifest.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return meta.get("source_sha256") == file_sha256(Path(fasta))


def open_database(path: str | Path) -> SequenceDB:
    """A makedb directory or a FASTA file, whichever ``path`` is."""
    path = Path(path)
    if path.is_dir():
        return SequenceDB.load(path)
    return SequenceDB.from_fasta(path)


#: databases :func:`cached_database` keeps open, the most recently used last
_OPEN: dict[tuple[str, tuple[int, int, int]], SequenceDB] = {}
_OPEN_MAX = 4
_OPEN_LOCK = threading.Lock()


def cached_database(path: str | Path) -> SequenceDB:
    """:func:`open_database` of ``path``, opened once per process while its files stay the
    same (a makedb directory's manifest, or the FASTA file: inode, size and modification time),
    so that searches given a path one query at a time share one memory map, its int8 layout and
    its stored embeddings (re-opened per call, a learned search lost ~15 ms a query). The last
    :data:`_OPEN_MAX` are kept; a rebuilt database is opened anew."""
    p = Path(path).resolve()
    try:
        st = (p / MANIFEST if p.is_dir() else p).stat()
    except OSError:
        return open_database(path)  # its own error, naming the path
    key = (str(p), (st.st_ino, st.st_size, st.st_mtime_ns))
    with _OPEN_LOCK:
        db = _OPEN.pop(key, None)
        if db is not None:
            _OPEN[key] = db
            return db
    db = open_database(path)
    with _OPEN_LOCK:
        _OPEN[key] = db
        while len(_OPEN) > _OPEN_MAX:
            del _OPEN[next(iter(_OPEN))]
    return db
