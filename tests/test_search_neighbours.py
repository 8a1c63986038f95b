"""Intermediate-sequence search through the database's own neighbour lists."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from tests.proteins import mutate, random_protein

import homalign.search.neighbours_build as neighbours_build
from homalign.cli import main
from homalign.errors import InputError
from homalign.io import FastaRecord, write_fasta
from homalign.search import SequenceDB, search
from homalign.search.engine import LINK_EVALUE, PATH_PENALTY
from homalign.search.neighbours import NEIGHBOURS_JSON, Neighbours, lifted_evalues, load_neighbours
from homalign.search.neighbours_build import NEIGHBOUR_EVALUE, add_neighbours
from homalign.sequence import Sequence


@pytest.fixture(scope="module")
def family_db(tmp_path_factory) -> Path:
    """Six families of four members (each 30% mutated from a root), plus unrelated sequences."""
    rng = np.random.default_rng(11)
    seqs = []
    for f in range(6):
        root = random_protein(rng, int(rng.integers(60, 140)))
        seqs += [Sequence(f"f{f}m{i}", mutate(rng, root, 0.3)) for i in range(4)]
    seqs += [Sequence(f"u{i}", random_protein(rng, int(rng.integers(40, 160))))
             for i in range(16)]
    tmp = tmp_path_factory.mktemp("nb")
    fasta = tmp / "db.fa"
    write_fasta(fasta, [FastaRecord(s.id, "", s.residues) for s in seqs])
    out = tmp / "db"
    assert main(["makedb", str(fasta), str(out), "--neighbours", "--no-progress"]) == 0
    return out


def test_makedb_writes_lists_without_self_hits_under_the_threshold(family_db: Path) -> None:
    db = SequenceDB.load(family_db)
    meta = json.loads((family_db / NEIGHBOURS_JSON).read_text())
    nb = load_neighbours(family_db, db, meta["fingerprint"])
    assert nb is not None and len(nb.indptr) == len(db) + 1 and len(nb.index) > 0
    for i in range(len(db)):
        idx, ev = nb.of(i)
        assert i not in idx.tolist()
        assert np.all(ev <= NEIGHBOUR_EVALUE)
    # family members find each other
    idx, _ = nb.of(db.index_of("f0m0"))
    assert {db.ids[j] for j in idx} & {"f0m1", "f0m2", "f0m3"}


def test_lifted_values_take_the_weaker_link_and_the_best_path() -> None:
    nb = Neighbours(indptr=np.array([0, 2, 3, 3]), index=np.array([1, 2, 2], dtype=np.int32),
                    evalue=np.array([1e-9, 1e-4, 1e-6]), fingerprint="x")
    # query hits 0 (E 1e-5) and 1 (E 1e-2: above the link threshold 1e-3)
    t, v = lifted_evalues(nb, np.array([0, 1]), np.array([1e-5, 1e-2]), 1e-3)
    assert t.tolist() == [1, 2]
    np.testing.assert_allclose(v, [1e-5, 1e-4])  # max(1e-5, 1e-9), max(1e-5, 1e-4)
    t, v = lifted_evalues(nb, np.array([0, 1]), np.array([1e-5, 1e-7]), 1e-3)
    np.testing.assert_allclose(v, [1e-5, 1e-6])  # target 2: the path through 1 is better


@pytest.mark.parametrize(("link", "penalty"), [(LINK_EVALUE, PATH_PENALTY), (1e-2, 1.0)])
def test_search_takes_the_best_of_direct_and_lifted_evalues(family_db: Path, link: float,
                                                           penalty: float, monkeypatch) -> None:
    import homalign.search.engine as engine

    monkeypatch.setattr(engine, "LINK_EVALUE", link)
    monkeypatch.setattr(engine, "PATH_PENALTY", penalty)
    db = SequenceDB.load(family_db)
    meta = json.loads((family_db / NEIGHBOURS_JSON).read_text())
    nb = load_neighbours(family_db, db, meta["fingerprint"])
    assert nb is not None
    improved = 0
    for qid in ("f1m0", "f3m2", "f5m1", "u0"):
        q = db.sequence(db.index_of(qid))
        direct = search(q, db, "learned", evalue=math.inf, traceback=False, neighbours=False)
        lifted = search(q, db, "learned", evalue=math.inf, traceback=False)
        d = {h.target_index: h.evalue for h in direct}
        got = {h.target_index: h.evalue for h in lifted}
        assert set(d) <= set(got)
        tq = np.array(list(d), dtype=np.int64)
        reach, via = lifted_evalues(nb, tq, np.array([d[t] for t in tq]), link, penalty)
        for t, e in got.items():
            best = d.get(t, math.inf)
            if t in reach:
                best = min(best, float(via[list(reach).index(t)]))
            if t in d or t in reach:
                assert e == pytest.approx(best, rel=1e-9)
            improved += e < d.get(t, math.inf) * (1 - 1e-9)
        assert all(got[t] <= d[t] * (1 + 1e-12) for t in d)
    if penalty == 1.0:  # with links this loose, some family member is found better so
        assert improved > 0


def test_a_killed_build_resumes_to_the_same_lists(family_db: Path, tmp_path: Path,
                                                  monkeypatch) -> None:
    import shutil

    import homalign.search.engine as engine

    db_dir = tmp_path / "copy"
    shutil.copytree(family_db, db_dir)
    for name in ("indptr", "index", "evalue"):
        (db_dir / f"neighbours_{name}.npy").unlink()
    (db_dir / NEIGHBOURS_JSON).unlink()
    monkeypatch.setattr(neighbours_build, "CHUNK", 7)
    real = engine.search
    calls = {"n": 0}

    def dying(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 16:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "search", dying)
    with pytest.raises(KeyboardInterrupt):
        add_neighbours(db_dir)
    assert len(list((db_dir / ".neighbours.partial").glob("chunk-*.npz"))) == 2
    monkeypatch.setattr(engine, "search", real)
    resumed = add_neighbours(db_dir)
    assert not (db_dir / ".neighbours.partial").exists()
    db = SequenceDB.load(family_db)
    meta = json.loads((family_db / NEIGHBOURS_JSON).read_text())
    clean = load_neighbours(family_db, db, meta["fingerprint"])
    assert clean is not None
    np.testing.assert_array_equal(resumed.indptr, clean.indptr)
    np.testing.assert_array_equal(resumed.index, clean.index)
    np.testing.assert_allclose(resumed.evalue, clean.evalue, rtol=1e-12)


def test_lists_of_other_weights_are_refused_naming_both(family_db: Path, tmp_path) -> None:
    import shutil

    db_dir = tmp_path / "other"
    shutil.copytree(family_db, db_dir)
    meta = json.loads((db_dir / NEIGHBOURS_JSON).read_text())
    mine = meta["fingerprint"]
    meta["fingerprint"] = "0123456789abcdef"
    (db_dir / NEIGHBOURS_JSON).write_text(json.dumps(meta))
    db = SequenceDB.load(db_dir)
    with pytest.raises(InputError, match=f"0123456789abcdef.*{mine}"):
        search(db.sequence(0), db, "learned", traceback=False)


def test_lists_of_another_evalue_scale_are_refused(family_db: Path, tmp_path) -> None:
    # the null laws sit beside the weights, so the weights' fingerprint does not see them: lists
    # built before a law or calibration changed would mix two scales of E-value
    import shutil

    from homalign.search.neighbours import evalue_scale

    db_dir = tmp_path / "old"
    shutil.copytree(family_db, db_dir)
    meta = json.loads((db_dir / NEIGHBOURS_JSON).read_text())
    assert meta["evalue_scale"] == evalue_scale()
    del meta["evalue_scale"]  # as lists made before the stamp
    (db_dir / NEIGHBOURS_JSON).write_text(json.dumps(meta))
    db = SequenceDB.load(db_dir)
    with pytest.raises(InputError, match="another scale.*unstamped.*makedb --neighbours"):
        search(db.sequence(0), db, "learned", traceback=False)
    meta["evalue_scale"] = "0123456789abcdef"
    (db_dir / NEIGHBOURS_JSON).write_text(json.dumps(meta))
    with pytest.raises(InputError, match="0123456789abcdef"):
        search(SequenceDB.load(db_dir).sequence(0), SequenceDB.load(db_dir), "learned",
               traceback=False)
