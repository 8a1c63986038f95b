"""An MSA database's target HMMs, made once from its A3M files and memory-mapped.

A search against an MSA database (:mod:`homalign.search.msadb`) scores the query's MSA against
each candidate's own HMM. Built from its A3M file (read, sequence weights, counts,
pseudocounts, transitions) a target HMM costs ~1 ms, and each new process met every target
again: a few queries paid for the whole database. HH-suite keeps its database's HMMs next to its
A3Ms for the same reason. ``homalign makemsa`` therefore ends by writing them,
``OUTDIR/hmms/``, one row per residue of the database in its order:

* ``probs.npy``: float32 ``(residues, 20)`` match emissions (the ``hhm`` score reads a target's
  emissions in float32, so its scores are the same bits as from the A3M);
* ``transitions.npy``: float64 ``(residues, 7)``; ``n_eff.npy``: float64 ``(residues,)``;
* ``neff.npy``: float64 ``(sequences,)``; ``offsets.npy``: int64 ``(sequences + 1,)``;
* ``graph.json``: each sequence's MSA members (ids, the sequence itself left out), the MSA
  graph of :mod:`homalign.search.msadb`, which otherwise reads every A3M file's headers;
* ``hmms.json``: the profile options the HMMs were made with, their background, and a stamp of
  the database and its A3M files (names and sizes): a store of other options is not used, and
  a stale one (an A3M file changed or rebuilt) is refused until ``makemsa`` is rerun.

The arrays are written into a temporary directory renamed into place, so a killed build leaves
no half store (the next build removes what it left). Only the profile options of the
database round (:func:`round_options`) are stored: the database round and a plain ``hhm``
search with those options read the store (:func:`stored_targets`); other methods and options
read the A3M files.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from homalign.errors import InputError

STORE = "hmms"
FORMAT = "homalign-msadb-hmms"
FORMAT_VERSION = 1


def round_options() -> dict[str, Any]:
    """The profile options of the database round's target HMMs: the ``hhm`` method's defaults
    for pseudocounts, their admixture and their matrix."""
    from homalign.methods.profile import HHM_DEFAULTS
    from homalign.profile.sources import PROFILE_OPTIONS

    return {k: HHM_DEFAULTS[k] for k in PROFILE_OPTIONS if k in HHM_DEFAULTS}


def a3m_stamp(outdir: str | os.PathLike, ids: list[str]) -> str:
    """A hash of the names and sizes of the database's A3M files, in database order."""
    from homalign.search.msadb_files import msa_filename

    h = hashlib.sha256()
    out = Path(outdir)
    for sid in ids:
        name = msa_filename(sid)
        h.update(f"{name}\t{(out / name).stat().st_size}\n".encode())
    return h.hexdigest()[:32]


def _stamp(outdir: Path, db: Any, options: dict[str, Any]) -> dict[str, Any]:
    from homalign.search.msadb_files import MANIFEST

    settings = json.loads((outdir / MANIFEST).read_text())
    return {"format": FORMAT, "version": FORMAT_VERSION, "options": dict(options),
            "msadb": settings, "a3m": a3m_stamp(outdir, list(db.ids))}


def build_hmm_store(outdir: str | os.PathLike, db: Any, *, progress: bool = True) -> Path:
    """Write ``OUTDIR/hmms/`` from the A3M files of the complete MSA database ``outdir`` of
    ``db`` (unless a current one is there); returns its path."""
    from tqdm import tqdm

    from homalign.io import read_a3m
    from homalign.io.atomic import atomic_directory
    from homalign.profile.hmm import ProfileHMM
    from homalign.profile.profile import Profile
    from homalign.search.msadb_files import msa_filename, open_msa_db

    out = open_msa_db(outdir, db)
    options = round_options()
    stamp = _stamp(out, db, options)
    final = out / STORE
    if _current(final, stamp):
        return final
    with atomic_directory(final) as tmp:
        lengths = np.asarray(db.lengths, dtype=np.int64)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        total = int(offsets[-1])
        fmt = np.lib.format
        probs = fmt.open_memmap(tmp / "probs.npy", "w+", np.float32, (total, 20))
        trans = fmt.open_memmap(tmp / "transitions.npy", "w+", np.float64, (total, 7))
        n_eff = fmt.open_memmap(tmp / "n_eff.npy", "w+", np.float64, (total,))
        neff = np.empty(len(lengths), dtype=np.float64)
        background = None
        members: dict[str, list[str]] = {}
        for i in tqdm(range(len(lengths)), desc="HMMs", unit="seq", disable=not progress,
                      dynamic_ncols=True):
            seq = db.sequence(i)
            path = out / msa_filename(seq.id)
            msa = read_a3m(path)
            members[seq.id] = [m for m in msa.ids[1:] if m != seq.id]
            hmm = ProfileHMM.from_profile(Profile.from_msa(msa, path=str(path), **options))
            if hmm.query.residues != seq.residues:
                raise InputError("the MSA's first row is not its database sequence",
                                 path=path, record=seq.id)
            if background is None:
                background = np.array(hmm.background, dtype=np.float64)
            elif not np.array_equal(background, hmm.background):
                raise AssertionError(f"{path}: a profile background differs from the others")
            a, b = offsets[i], offsets[i + 1]
            probs[a:b] = hmm.probs
            trans[a:b] = hmm.transitions
            n_eff[a:b] = hmm.n_eff
            neff[i] = hmm.neff
        for arr in (probs, trans, n_eff):
            arr.flush()
        del probs, trans, n_eff
        np.save(tmp / "neff.npy", neff, allow_pickle=False)
        np.save(tmp / "offsets.npy", offsets, allow_pickle=False)
        (tmp / "graph.json").write_text(json.dumps({"members": members}))
        meta = {**stamp, "background": None if background is None else background.tolist()}
        (tmp / "hmms.json").write_text(json.dumps(meta, indent=1))
    return final


def _current(store: Path, stamp: dict[str, Any]) -> bool:
    try:
        meta = json.loads((store / "hmms.json").read_text())
    except (OSError, ValueError):
        return False
    return {k: meta.get(k) for k in stamp} == stamp and (store / "graph.json").exists()


def stored_graph(outdir: str | os.PathLike) -> dict[str, list[str]] | None:
    """The MSA graph's member lists (``{sequence id: its MSA's other ids}``, database order)
    kept with the HMMs of ``outdir``, or None where there are none or their A3M files changed."""
    store = Path(outdir) / STORE
    try:
        meta = json.loads((store / "hmms.json").read_text())
        members = json.loads((store / "graph.json").read_text())["members"]
        return members if a3m_stamp(outdir, list(members)) == meta.get("a3m") else None
    except (OSError, ValueError, KeyError, InputError):
        return None


class HMMStore:
    """The stored target HMMs of an MSA database (memory-mapped); :meth:`hmm` gives one as a
    :class:`homalign.profile.hmm.ProfileHMM` (``freqs`` None, as from a ``.hhm`` file)."""

    def __init__(self, store: Path, db: Any) -> None:
        self.path, self.db = store, db
        meta = json.loads((store / "hmms.json").read_text())
        self.options = meta["options"]
        self.background = np.asarray(meta["background"], dtype=np.float64)

        def load(name: str) -> np.ndarray:
            return np.load(store / name, mmap_mode="r", allow_pickle=False)

        self.probs, self.transitions = load("probs.npy"), load("transitions.npy")
        self.n_eff, self.neff, self.offsets = load("n_eff.npy"), load("neff.npy"), load(
            "offsets.npy")

    def hmm(self, i: int) -> Any:
        """Database sequence ``i``'s HMM."""
        from homalign.profile.hmm import ProfileHMM

        seq = self.db.sequence(i)
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return ProfileHMM(seq, self.probs[a:b], self.transitions[a:b], self.n_eff[a:b],
                          float(self.neff[i]), None, seq.id, self.background.copy())


class StoredTargets:
    """A search's prepared targets (the interface of :class:`homalign.search.engine.TargetReps`)
    from a store: ``get(i)`` is a :class:`homalign.methods.profile.ProteinRep` of sequence
    ``i`` whose source is its stored HMM, memoised across the queries of one process."""

    def __init__(self, method: Any, db: Any, options: dict[str, Any], store: HMMStore,
                 max_entries: int = 50_000) -> None:
        self.method, self.db, self.options, self.store = method, db, options, store
        self.max_entries = max_entries
        self._reps: dict[int, Any] = {}

    def get(self, i: int) -> Any:
        rep = self._reps.get(i)
        if rep is None:
            from homalign.methods.profile import ProteinRep

            rep = ProteinRep(self.db.sequence(i), source=self.store.hmm(i))
            if len(self._reps) < self.max_entries:
                self._reps[i] = rep
        return rep


def stored_targets(method: Any, db: Any, options: dict[str, Any]) -> StoredTargets | None:
    """The stored HMMs as ``method``'s prepared targets where they are what it would build:
    ``hhm`` with ``target_msa`` an MSA database of ``db`` whose store is current and made with
    these profile options (no ``target_hhm``); else None (the A3M files are read)."""
    msadb = options.get("target_msa")
    if (getattr(method, "name", None) != "hhm" or not msadb or options.get("target_hhm")
            or not (Path(msadb) / STORE / "hmms.json").exists()):
        return None
    try:
        store = open_hmm_store(msadb, db)
    except InputError:
        return None
    from homalign.profile.sources import PROFILE_OPTIONS

    wanted = {k: options[k] for k in PROFILE_OPTIONS if k in options}
    return StoredTargets(method, db, options, store) if wanted == store.options else None


def open_hmm_store(outdir: str | os.PathLike, db: Any) -> HMMStore:
    """The current HMM store of the complete MSA database ``outdir`` of ``db``, or InputError
    (none yet, or made from other A3M files: rerun ``homalign makemsa``)."""
    from homalign.search.msadb_files import open_msa_db

    out = open_msa_db(outdir, db)
    store = out / STORE
    if not (store / "hmms.json").exists():
        raise InputError("the MSA database has no stored HMMs (rerun homalign makemsa on it to "
                         "write them)", path=out)
    if not _current(store, _stamp(out, db, round_options())):
        raise InputError("the MSA database's stored HMMs are out of date: its A3M files, "
                         "settings or the profile options changed (rerun homalign makemsa on "
                         "it to rewrite them)", path=store)
    return HMMStore(store, db)


__all__ = ["HMMStore", "StoredTargets", "a3m_stamp", "build_hmm_store", "open_hmm_store",
           "round_options", "stored_graph", "stored_targets"]
