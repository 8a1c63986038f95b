"""``--ray``: the sharded search gives exactly the single-process results (two local workers)."""

from __future__ import annotations

import numpy as np
import pytest
import ray  # noqa: F401  (the "ray" extra; scripts/env.sh installs it: never skipped)

from homalign.search import SequenceDB, search_many
from homalign.search.ray_backend import search_ray
from homalign.sequence import Sequence
from homalign.stats import random_sequences


def _db_and_queries():
    rng = np.random.default_rng(3)
    base = random_sequences(8, rng, 80, 200)
    seqs = []
    for f, s in enumerate(base):
        for m in range(3):
            chars = list(s)
            for k in rng.choice(len(chars), size=len(chars) // 3, replace=False):
                chars[k] = "ARNDCQEGHILKMFPSTWYV"[rng.integers(20)]
            seqs.append(Sequence(f"f{f}_{m}", "".join(chars)))
    seqs += [Sequence(f"r{i}", s) for i, s in enumerate(random_sequences(60, rng, 50, 250))]
    db = SequenceDB.from_sequences(seqs)
    queries = [db.sequence(i) for i in range(0, 24, 4)]
    return db, queries


def _key(results):
    return [(q.id, [(h.target_id, h.target_index, h.score, h.evalue, h.alignment.cigar)
                    for h in hits]) for q, hits in results]


@pytest.mark.slow
def test_ray_results_identical_to_single_process():

    db, queries = _db_and_queries()
    kw = {"evalue": 10.0, "max_hits": 7}
    single = search_many(queries, db, "sw", progress=False, **kw)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        by_queries = search_ray(queries, db, "sw", workers=2, shard="queries", **kw)
        by_db = search_ray(queries, db, "sw", workers=2, shard="db", **kw)
    finally:
        ray.shutdown()
    assert _key(by_queries) == _key(single)
    assert _key(by_db) == _key(single)
    assert any(len(hits) == 7 for _q, hits in single)  # max_hits truncation was exercised


@pytest.mark.slow
def test_ray_learned_and_iterative_searches_identical_to_single_process(tmp_path):
    from homalign.io import FastaRecord, write_fasta
    from homalign.search import makedb, open_database
    from homalign.search.iterative import iterative_search

    mem, queries = _db_and_queries()
    fasta = tmp_path / "db.fa"
    write_fasta(fasta, [FastaRecord(s.id, "", s.residues) for s in mem])
    db = open_database(makedb(fasta, tmp_path / "db"))  # workers memory-map it from disk
    kw = {"evalue": 10.0, "max_hits": 5}
    learned = search_many(queries, db, "learned", progress=False, **kw)
    plain = search_many(queries, db, "learned", progress=False, profile_round=False, **kw)
    iterative = [(q, iterative_search(q, db, 2, "sw", **kw)) for q in queries[:3]]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        by_queries = search_ray(queries, db, "learned", workers=2, shard="queries", **kw)
        # the default learned search (its PSSM round) shards the queries even when asked for db
        by_db = search_ray(queries, db, "learned", workers=2, shard="db", **kw)
        plain_by_db = search_ray(queries, db, "learned", workers=2, shard="db",
                                 profile_round=False, **kw)
        it_ray = search_ray(queries[:3], db, "sw", workers=2, iterations=2, **kw)
    finally:
        ray.shutdown()
    assert _key(by_queries) == _key(learned)
    assert _key(by_db) == _key(learned)
    assert _key(plain_by_db) == _key(plain) != _key(learned)
    assert _key(it_ray) == _key(iterative)
    assert any(h.target_id == q.id for q, hits in learned for h in hits)


def test_an_address_nothing_answers_at_is_refused_at_once(tmp_path, capsys):
    """Ray waits minutes on a wrong cluster address: a HOST:PORT that refuses connections, or an
    address that is no HOST:PORT, is a clear error before Ray is started."""
    import socket
    import time

    from homalign.cli import main

    with socket.socket() as sock:  # a port nothing listens on once this is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    db, queries = _db_and_queries()
    start = time.monotonic()
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(ValueError, match="no Ray cluster answers there"):
            search_ray(queries[:1], db, "sw", address=address)
    with pytest.raises(ValueError, match="expected local, auto or HOST:PORT"):
        search_ray(queries[:1], db, "sw", address="bogus")
    assert time.monotonic() - start < 30
    fasta = tmp_path / "db.fa"
    fasta.write_text("".join(f">{s.id}\n{s.residues}\n" for s in (db.sequence(i)
                                                                    for i in range(len(db)))))
    assert main(["search", str(fasta), str(fasta), "--ray", f"127.0.0.1:{port}",
                 "--no-progress"]) == 2
    assert "no Ray cluster answers there" in capsys.readouterr().err
