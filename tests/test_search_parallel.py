"""Queries searched side by side in worker processes (homalign.search.parallel)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.proteins import mutate, random_protein

from homalign.errors import WorkerError
from homalign.io import FastaRecord, write_fasta
from homalign.search import SequenceDB, makedb, open_database, parallel, search_many
from homalign.search.parallel import database_dir, iter_search, pack_hits, unpack_hits
from homalign.sequence import Sequence


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> tuple[Path, list[Sequence]]:
    rng = np.random.default_rng(11)
    base = [random_protein(rng, int(rng.integers(40, 120))) for _ in range(10)]
    seqs = [Sequence(f"p{i}", s) for i, s in enumerate(base)]
    seqs += [Sequence(f"m{i}", mutate(rng, s, 0.4)) for i, s in enumerate(base[:6])]
    tmp = tmp_path_factory.mktemp("par")
    write_fasta(tmp / "db.fa", [FastaRecord(s.id, "", s.residues) for s in seqs])
    return makedb(tmp / "db.fa", tmp / "db"), seqs


@pytest.fixture(autouse=True)
def _workers_for_a_few_queries(monkeypatch) -> None:
    """These tests are about the worker processes: spawn them for two queries and more."""
    monkeypatch.setattr(parallel, "MIN_WORKER_QUERIES", 2)


def test_fewer_queries_than_pay_for_workers_are_searched_in_this_process(database,
                                                                          monkeypatch) -> None:
    dbdir, seqs = database
    db = open_database(dbdir)
    monkeypatch.setattr(parallel, "MIN_WORKER_QUERIES", 5)

    def no_workers(*_args, **_kwargs):
        raise AssertionError("worker processes started for 4 queries")

    monkeypatch.setattr(parallel, "_in_workers", no_workers)
    got = list(iter_search(seqs[:4], db, "sw", workers=2, evalue=1e3))
    assert [q.id for q, _ in got] == [s.id for s in seqs[:4]]
    assert _key(got) == _key(iter_search(seqs[:4], db, "sw", workers=1, evalue=1e3))
    with pytest.raises(AssertionError, match="worker processes started"):
        list(iter_search(seqs[:5], db, "sw", workers=2, evalue=1e3))


def _key(results) -> list:
    return [(q.id, [(h.target_id, h.score, h.evalue, h.bits,
                     None if h.alignment is None else h.alignment.pairs.tolist())
                    for h in hits]) for q, hits in results]


@pytest.mark.parametrize("method", ["sw", "learned"])
def test_workers_give_the_hits_of_one_process_in_query_order(database, method: str) -> None:
    dbdir, seqs = database
    db = open_database(dbdir)
    assert database_dir(db) == str(dbdir)
    queries = seqs[:5]
    one = list(iter_search(queries, db, method, workers=1, evalue=1e3))
    two = list(iter_search(queries, db, method, workers=2, evalue=1e3))
    assert [q.id for q, _ in two] == [q.id for q in queries]
    assert _key(two) == _key(one)
    assert any(len(h) > 1 for _, h in one)  # real hits, not empty lists
    assert _key(search_many(queries, db, method, workers=2, progress=False,
                            evalue=1e3)) == _key(one)


@pytest.mark.parametrize("traceback", [True, False])
def test_hits_cross_the_pipe_as_columns_unchanged(database, traceback: bool) -> None:
    dbdir, seqs = database
    hits = search_many(seqs[:1], open_database(dbdir), "sw", evalue=1e3, progress=False,
                       traceback=traceback)[0][1]
    assert len(hits) > 1
    cols = pack_hits(seqs[0].id, hits)
    assert (cols[-1] is None) == (not traceback)
    back = unpack_hits(cols)
    assert _key([(seqs[0], back)]) == _key([(seqs[0], hits)])
    assert [h.query_id for h in back] == [h.query_id for h in hits]
    assert [h.target_index for h in back] == [h.target_index for h in hits]


@pytest.mark.parametrize("method", ["pssm", "learned"])
def test_workers_run_iterative_searches_as_one_process_does(database, method: str) -> None:
    """``iterations=N``: each worker runs whole iterative searches (PSI-BLAST class, or the
    learned ranking fused with the PSSM round), with the one-process hits in query order."""
    from homalign.search.iterative import iterative_search

    dbdir, seqs = database
    db = open_database(dbdir)
    queries = seqs[:4]
    one = list(iter_search(queries, db, method, workers=1, iterations=2, evalue=1e3))
    two = list(iter_search(queries, db, method, workers=2, iterations=2, evalue=1e3))
    assert _key(two) == _key(one)
    assert any(len(h) > 1 for _, h in one)
    want = iterative_search(queries[0], db, 2, method, evalue=1e3)
    assert _key([(queries[0], want)]) == _key(one[:1])


def test_a_database_without_a_directory_is_searched_here(database) -> None:
    _dbdir, seqs = database
    db = SequenceDB.from_sequences(seqs)
    assert database_dir(db) is None
    got = list(iter_search(seqs[:3], db, "sw", workers=2))
    want = list(iter_search(seqs[:3], db, "sw", workers=1))
    assert _key(got) == _key(want)


@pytest.mark.parametrize("method", ["sw", "learned"])
def test_a_fasta_database_is_searched_by_workers_through_a_temporary_directory(
        database, method: str, monkeypatch) -> None:
    """Workers over a FASTA database: one makedb directory in a temporary folder (gone
    afterwards), the hits of one process, which are those of the makedb directory itself."""
    import tempfile

    dbdir, seqs = database
    fasta = SequenceDB.from_fasta(Path(dbdir).parent / "db.fa")
    made = []
    real = tempfile.TemporaryDirectory

    def tracked(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        t = real(*args, **kwargs)
        made.append(Path(t.name))
        return t

    monkeypatch.setattr(tempfile, "TemporaryDirectory", tracked)
    queries = seqs[:4]
    two = list(iter_search(queries, fasta, method, workers=2, evalue=1e3))
    assert len(made) == 1 and not made[0].exists()  # used, then removed
    one = list(iter_search(queries, fasta, method, workers=1, evalue=1e3))
    assert _key(two) == _key(one)
    assert _key(one) == _key(iter_search(queries, open_database(dbdir), method, workers=1,
                                         evalue=1e3))
    assert any(len(h) > 1 for _, h in one)
    sub = fasta.subset(range(3, 12))  # not all the file's records: a directory of the subset
    assert _key(iter_search(queries, sub, method, workers=2, evalue=1e3)) == _key(
        iter_search(queries, sub, method, workers=1, evalue=1e3))


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


def test_a_killed_searchs_temporary_database_is_removed_by_the_next(database, tmp_path,
                                                                     monkeypatch) -> None:
    """A search killed while its workers ran leaves its temporary database behind; the next
    search over a FASTA file deletes it, and leaves running searches' folders alone."""
    import os
    import tempfile
    import time

    from homalign.search.parallel import remove_stale_search_folders

    dbdir, seqs = database
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = tmp_path / "homalign-search-dead"
    (dead / "db").mkdir(parents=True)
    (dead / ".pid").write_text(str(_dead_pid()))
    running = tmp_path / "homalign-search-running"
    running.mkdir()
    (running / ".pid").write_text(str(os.getpid()))
    unmarked_old = tmp_path / "homalign-search-old"
    unmarked_old.mkdir()
    os.utime(unmarked_old, (time.time() - 7200, time.time() - 7200))
    unmarked_new = tmp_path / "homalign-search-new"  # just made, its pid not yet written
    unmarked_new.mkdir()
    other = tmp_path / "something-else"
    other.mkdir()
    fasta = SequenceDB.from_fasta(Path(dbdir).parent / "db.fa")
    got = list(iter_search(seqs[:3], fasta, "sw", workers=2, evalue=1e3))
    assert _key(got) == _key(iter_search(seqs[:3], fasta, "sw", workers=1, evalue=1e3))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "homalign-search-new", "homalign-search-running", "something-else"]
    assert remove_stale_search_folders(tmp_path) == []


def test_no_room_for_the_temporary_database_searches_here_with_a_warning(database,
                                                                          monkeypatch) -> None:
    from homalign.search import database as dbmod

    dbdir, seqs = database
    fasta = SequenceDB.from_fasta(Path(dbdir).parent / "db.fa")

    def full(*_args, **_kwargs):  # noqa: ANN002, ANN003, ANN202
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(dbmod, "_write_file", full)  # the first file the directory gets
    with pytest.warns(RuntimeWarning, match="in one process.*No space left"):
        got = list(iter_search(seqs[:3], fasta, "sw", workers=2, evalue=1e3))
    assert _key(got) == _key(iter_search(seqs[:3], fasta, "sw", workers=1, evalue=1e3))


def test_a_worker_error_reaches_the_caller(database) -> None:
    dbdir, seqs = database
    too_long = Sequence("long", "A" * 50)
    with pytest.raises(Exception, match="more than the limit of 20"):
        list(iter_search([seqs[0], too_long, seqs[1]], open_database(dbdir), "sw", workers=2,
                         max_query_length=20))


def test_an_error_is_raised_at_its_querys_turn(database) -> None:
    """A query that fails (here: over the length limit) raises when its turn comes, after the
    hits of every query before it, wherever it was searched."""
    dbdir, seqs = database
    db = open_database(dbdir)
    queries = [*seqs[:3], Sequence("long", "A" * 300), *seqs[3:9]]
    got = []
    with pytest.raises(Exception, match="more than the limit of 200"):
        for q, hits in iter_search(queries, db, "sw", workers=2, evalue=1e3,
                                   max_query_length=200):
            got.append((q, hits))
    assert _key(got) == _key(iter_search(queries[:3], db, "sw", workers=1, evalue=1e3))


def test_a_dead_worker_is_an_error_never_missing_hits(database) -> None:
    """Killing the workers mid-search raises RuntimeError for the queries they held; what was
    yielded before is the one-process result."""
    import multiprocessing
    import os
    import signal

    dbdir, seqs = database
    db = open_database(dbdir)
    queries = [Sequence(f"{s.id}.{k}", s.residues) for k in range(16) for s in seqs]
    one = _key(iter_search(queries, db, "sw", workers=1, evalue=1e3))
    got = []
    with pytest.raises(WorkerError, match="worker process died"):
        for q, hits in iter_search(queries, db, "sw", workers=2, evalue=1e3):
            got.append((q, hits))
            if len(got) == 1:
                for child in multiprocessing.active_children():
                    os.kill(child.pid, signal.SIGKILL)
    assert 0 < len(got) < len(queries)
    assert _key(got) == one[:len(got)]
