"""A database of MSAs: one iterative-search MSA per database sequence (HHblits-style profiles).

HH-suite searches a query profile against a database of *profiles* (each database sequence's own
MSA); a profile-profile score then sees the conservation of both families. :func:`build_msa_db`
makes such a database from a sequence database: for every sequence, ``iterations`` rounds of
:func:`homalign.search.msa_build.build_msa` against the same database, written as
``OUTDIR/<id>.a3m`` — the layout ``msa=DIRECTORY`` / ``target_msa=DIRECTORY`` already read
(:mod:`homalign.profile.sources`).

Building is the long part (about 30 ms of CPU per sequence for two iterations against the
11,487 ASTRAL 40% domains: 3.1 minutes on two cores), so it is resumable and parallel:

* each A3M is written to a temporary file and renamed into place, so a file is complete or
  absent, and a rerun skips the sequences that already have one;
* ``OUTDIR/msadb.json`` records the settings and the database's identity (path, sequence count,
  residues, a hash of the ids); resuming with other settings or another database is refused;
* ``jobs`` worker processes share the sequences round-robin;
* once every A3M is there, each sequence's HMM is made from it and stored
  (``OUTDIR/hmms/``, :mod:`homalign.search.hmm_store`), so a search reads its targets' HMMs
  instead of making them from the A3M files in every process.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from homalign.errors import InputError
from homalign.search.msadb_files import (
    MANIFEST,
    msa_filename,
    open_msa_db,
    settings_of,
    write_manifest,
)


def _build_part(args: tuple) -> int:
    """Worker: MSAs of sequences ``part, part + jobs, ...`` missing from ``outdir``."""
    from homalign.io import write_a3m
    from homalign.search.database import cached_database
    from homalign.search.msa_build import build_msa

    db_path, outdir, part, jobs, iterations, inclusion, max_candidates, progress = args
    if progress is None:  # a pool worker: its progress queue came with the initializer
        from homalign.workers import shared

        progress = shared()
    db = cached_database(db_path)
    out = Path(outdir)
    done = 0
    for i in range(part, len(db), jobs):
        path = out / msa_filename(db.ids[i])
        if path.exists():
            continue
        msa = build_msa(db.sequence(i), db, iterations, inclusion_evalue=inclusion,
                        max_candidates=max_candidates)
        write_a3m(path, msa)
        done += 1
        if progress is not None:
            progress.put(1)
    return done


def build_msa_db(db: str | os.PathLike, outdir: str | os.PathLike, iterations: int = 2, *,
                 inclusion_evalue: float = 1e-3, max_candidates: int = 300, jobs: int = 1,
                 progress: bool = True) -> Path:
    """Write ``OUTDIR/<id>.a3m`` for every sequence of ``db`` (FASTA or makedb directory) that
    lacks one (see the module docstring); returns ``OUTDIR``."""
    from homalign.search.database import cached_database
    from homalign.search.hmm_store import build_hmm_store

    if iterations < 1:
        raise ValueError("iterations must be at least 1")
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    if not (np.isfinite(inclusion_evalue) and inclusion_evalue > 0):
        raise ValueError(f"inclusion E-value must be a positive number, got {inclusion_evalue}")
    if max_candidates < 1:
        raise ValueError(f"max_candidates must be at least 1, got {max_candidates}")
    seqdb = cached_database(str(db))
    out = Path(outdir)
    if out.exists() and not out.is_dir():
        raise InputError("the MSA database's directory is a file", path=out)
    if (out / "manifest.json").exists():  # a later `makedb --force` there would delete the MSAs
        raise InputError("this is a makedb database; give the MSA database its own directory",
                         path=out)
    for sid in seqdb.ids:  # every id can name a file, before anything is made
        msa_filename(sid)
    out.mkdir(parents=True, exist_ok=True)
    write_manifest(out, settings_of(seqdb, iterations, inclusion_evalue, max_candidates))
    missing = sum(not (out / msa_filename(s)).exists() for s in seqdb.ids)
    if missing == 0:
        build_hmm_store(out, seqdb, progress=progress)
        return out
    from tqdm import tqdm

    bar = tqdm(total=len(seqdb), initial=len(seqdb) - missing, desc="MSAs", unit="seq",
               disable=not progress, dynamic_ncols=True)
    try:
        jobs = min(jobs, missing)  # no worker without a sequence to do
        if jobs == 1:
            queue = _BarQueue(bar)
            _build_part((str(db), str(out), 0, 1, iterations, inclusion_evalue, max_candidates,
                         queue))
        else:
            _run_parallel(str(db), out, jobs, iterations, inclusion_evalue, max_candidates, bar)
    finally:
        bar.close()
    build_hmm_store(out, seqdb, progress=progress)
    return out


class _BarQueue:
    def __init__(self, bar: Any) -> None:
        self.bar = bar

    def put(self, n: int) -> None:
        self.bar.update(n)


def _run_parallel(db: str, out: Path, jobs: int, iterations: int, inclusion: float,
                  max_candidates: int, bar: Any) -> None:
    import multiprocessing as mp
    import queue as queue_mod

    from homalign.workers import init_worker

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    # workers die with this process, even when it is killed (SIGKILL/SIGTERM run no clean-up)
    with ctx.Pool(jobs, initializer=init_worker, initargs=(os.getpid(), q)) as pool:
        result = pool.map_async(_build_part, [
            (db, str(out), part, jobs, iterations, inclusion, max_candidates, None)
            for part in range(jobs)])
        while not result.ready():
            try:
                bar.update(q.get(timeout=0.5))
            except queue_mod.Empty:
                pass
        result.get()  # re-raises a worker's error
        while True:  # the last updates
            try:
                bar.update(q.get_nowait())
            except queue_mod.Empty:
                break


NULL_PAIRS = 2000


def null_params(outdir: str | os.PathLike, db: Any, method: str = "hhm", *,
                n_pairs: int = NULL_PAIRS, seed: int = 0, options: dict[str, Any] | None = None):
    """The null law of ``method``'s profile-profile scores between this database's MSAs.

    A Gumbel law with a fitted length exponent (:func:`homalign.stats.fit_gumbel` with
    ``length_exponent=True``) on ``n_pairs`` random pairs of database sequences, each scored with
    both MSAs (random pairs of a database of diverse proteins are unrelated but for a few per
    cent, as HHsearch assumes when it calibrates on its database). Fitted once and kept as
    ``OUTDIR/null-<method>.json`` (written atomically; refitted when ``n_pairs``, ``seed`` or the
    method ``options`` differ); returns an ``EVDParams``."""
    from homalign.io.atomic import atomic_write
    from homalign.methods import get_method
    from homalign.profile.sources import get_profile
    from homalign.score.pair_scores import score_values
    from homalign.stats import EVDParams, fit_gumbel

    out = open_msa_db(outdir)
    path = out / f"null-{method}.json"
    if path.exists():
        data = json.loads(path.read_text())
        if (data.get("n_pairs"), data.get("seed"), data.get("options")) == (
                n_pairs, seed, dict(options or {})):
            return EVDParams(**data["params"])
    m = get_method(method)
    if m.prepare is None or m.score is None:
        raise ValueError(f"method {method!r} has no profile score to fit a null law for")
    opts = {**m.defaults, **(options or {}), "msa": str(out)}
    rng = np.random.default_rng(seed)
    a = rng.integers(0, len(db), 2 * n_pairs)
    b = rng.integers(0, len(db), 2 * n_pairs)
    keep = np.flatnonzero(a != b)[:n_pairs]
    a, b = a[keep], b[keep]
    if len(a) < 10:
        raise ValueError("the database is too small to fit a null law (needs 10 pairs)")
    from homalign.methods.profile import ProteinRep

    reps: dict[int, Any] = {}

    def rep(i: int) -> Any:
        if i not in reps:
            seq = db.sequence(i)
            reps[i] = ProteinRep(seq, source=get_profile(seq, None, **opts))
        return reps[i]

    scores = score_values([m.score(rep(int(x)), rep(int(y)), **opts)
                           for x, y in zip(a, b, strict=True)])
    params = fit_gumbel(scores, db.lengths[a], db.lengths[b], length_exponent=True,
                        source=f"ML Gumbel fit with length exponent, {len(a)} random pairs of "
                               f"database MSAs ({method})")
    with atomic_write(path) as fh:
        json.dump({"n_pairs": n_pairs, "seed": seed, "options": dict(options or {}),
                   "params": params.to_json()}, fh, indent=1)
    return params


def member_index(outdir: str | os.PathLike) -> dict[str, list[str]]:
    """member id -> ids of the database sequences whose MSA holds it (the query row excluded);
    read once per process from the A3M headers."""
    return _graph(str(Path(outdir).resolve()))[0]


def msa_members(outdir: str | os.PathLike) -> dict[str, list[str]]:
    """database id -> the other ids in its MSA (the inverse of :func:`member_index`)."""
    return _graph(str(Path(outdir).resolve()))[1]


_GRAPH: dict[str, tuple[dict[str, list[str]], dict[str, list[str]]]] = {}


def _graph(outdir: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(owners, members) of the MSA graph: stored with the database's HMMs
    (:func:`homalign.search.hmm_store.stored_graph`), else from the A3M files' headers."""
    if outdir not in _GRAPH:
        from homalign.search.hmm_store import stored_graph

        members = stored_graph(outdir)
        if members is None:
            members = {}
            for path in sorted(Path(outdir).glob("*.a3m")):
                owner = path.name[: -len(".a3m")]
                with open(path, encoding="utf-8") as fh:
                    heads = [line[1:].split(None, 1)[0] for line in fh
                             if line.startswith(">") and len(line) > 2]
                members[owner] = [m for m in heads[1:] if m != owner]
        owners: dict[str, list[str]] = {}
        for owner, ms in members.items():
            for member in ms:
                owners.setdefault(member, []).append(owner)
        _GRAPH.clear()
        _GRAPH[outdir] = (owners, members)
    return _GRAPH[outdir]


def neighbours(seq_id: str, outdir: str | os.PathLike) -> set[str]:
    """``seq_id``'s neighbours in the MSA graph: the members of its MSA and the sequences whose
    MSA holds it (``seq_id`` itself excluded)."""
    return _near(seq_id, _graph(str(Path(outdir).resolve())))


def _near(seq_id: str, graph: tuple[dict[str, list[str]], dict[str, list[str]]]) -> set[str]:
    owners, members = graph
    return (set(owners.get(seq_id, ())) | set(members.get(seq_id, ()))) - {seq_id}


def graph_candidates(query_id: str, query_members: list[str], outdir: str | os.PathLike,
                     db: Any) -> np.ndarray:
    """Database indices the query reaches through the MSA database, as HHblits reaches targets
    through its profile rather than its sequence. The graph links each database sequence to the
    members of its MSA; ``N(x)`` is ``x``'s neighbours (the members of ``x``'s MSA and the
    sequences whose MSA holds ``x``). Step 1: the members of the query's MSA and the sequences
    whose MSA holds the query; step 2: adds ``N(x)`` of each member ``x`` of the query's MSA;
    step 3: adds ``N(y)`` of everything reached so far. The query itself is left out. The k-mer
    prefilter sees only the query's sequence; these are targets its family finds."""
    graph = _graph(str(Path(outdir).resolve()))
    first = set(query_members) - {query_id}
    reached = set(graph[0].get(query_id, ())) | first
    for x in first:
        reached |= _near(x, graph)
    for y in list(reached):
        reached |= _near(y, graph)
    reached.discard(query_id)
    ids = db.id_to_index
    return np.array(sorted(ids[t] for t in reached if t in ids), dtype=np.int64)


NEIGHBOUR_SUPPORT = 2.0  # exponent of the neighbours' E-value (held-out tuned, docs/learned.md)


def neighbour_support(hits: list, query_id: str, outdir: str | os.PathLike,
                      weight: float = NEIGHBOUR_SUPPORT) -> list:
    """``hits`` re-ranked with the evidence of their neighbours in the MSA graph.

    A database sequence's neighbours (the members of its MSA and the sequences whose MSA holds
    it) are its homologues at the MSA build's inclusion threshold, so a target whose neighbour
    the query found is more likely the query's homologue than its own score says (the idea of
    Rankprop, Weston et al. 2004, PNAS 101:6559, and of intermediate-sequence search, Park et
    al. 1997). Each hit's E-value becomes ``E * min(1, E_nb) ** weight``, ``E_nb`` the smallest
    E-value among its neighbours in ``hits`` (the query and the hit itself excluded), but never
    less than ``min(E, E_nb)``: evidence through a neighbour is no stronger than the neighbour's
    own, so a lifted hit ties its supporter at most; the values are read from ``hits`` as given
    (one pass, no propagation). ``weight=0`` returns ``hits`` unchanged. The result is a ranking
    value, not a calibrated E-value (a decoy query with one chance hit lifts that hit's family);
    returned sorted, alignments' ``evalue`` set.
    """
    from homalign.search.hits import EVALUE_FLOOR, Hit, rank_hits

    if not weight >= 0.0:
        raise ValueError(f"neighbour support weight must be >= 0, got {weight}")
    if weight == 0.0 or not hits:
        return list(hits)
    graph = _graph(str(Path(outdir).resolve()))
    evalue = {h.target_id: h.evalue for h in hits}
    out = []
    for h in hits:
        t = h.target_id
        near = [evalue[m] for m in _near(t, graph) if m != query_id and m in evalue]
        e_nb = min(near, default=1.0)
        if e_nb >= 1.0:
            out.append(h)
            continue
        new = max(h.evalue * e_nb ** weight, min(h.evalue, e_nb), EVALUE_FLOOR)
        if h.alignment is not None:
            h.alignment.evalue = new
        out.append(Hit(h.query_id, t, h.target_index, h.score, h.bits, new, h.alignment))
    return rank_hits(out)


def without_member(msa: Any, member: str) -> Any:
    """``msa`` without the rows of ``member`` (the first row is always kept)."""
    from homalign.io import MSA

    keep = [k for k, rid in enumerate(msa.ids) if k == 0 or rid != member]
    if len(keep) == len(msa.ids):
        return msa
    ins = None if msa.insertions is None else [msa.insertions[k] for k in keep]
    return MSA([msa.ids[k] for k in keep], [msa.rows[k] for k in keep], insertions=ins)


class LeaveQueryOut:
    """A search's target representations for one query: a shared ``TargetReps`` of an MSA
    database, except that targets whose MSA holds the query get a profile built without it, so a
    database member is scored as a new query would be (its own sequence never in a target's
    profile)."""

    def __init__(self, reps: Any, outdir: str | os.PathLike, query_id: str,
                 profile_options: dict[str, Any]) -> None:
        self.base, self.method, self.db, self.options = reps, reps.method, reps.db, reps.options
        self.outdir = Path(outdir)
        self.query_id = query_id
        self.profile_options = profile_options
        ids = self.db.id_to_index
        self.affected = {ids[t] for t in member_index(outdir).get(query_id, []) if t in ids}
        self._own: dict[int, Any] = {}

    def get(self, i: int) -> Any:
        if i not in self.affected:
            return self.base.get(i)
        if i not in self._own:
            from homalign.io import read_a3m
            from homalign.methods.profile import ProteinRep
            from homalign.profile.profile import Profile

            seq = self.db.sequence(i)
            msa = without_member(read_a3m(self.outdir / msa_filename(seq.id)), self.query_id)
            self._own[i] = ProteinRep(seq, source=Profile.from_msa(msa, **self.profile_options))
        return self._own[i]


__all__ = ["MANIFEST", "NEIGHBOUR_SUPPORT", "LeaveQueryOut", "build_msa_db", "graph_candidates",
           "member_index", "msa_filename", "msa_members", "neighbour_support", "neighbours",
           "null_params", "open_msa_db", "without_member"]
