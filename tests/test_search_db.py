"""SequenceDB and makedb: round trip, atomic writes and clear errors on bad databases."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from homalign.errors import InputError
from homalign.search import SequenceDB, makedb, search
from homalign.search import database as database_module
from homalign.stats import random_sequences


def write_fasta(path: Path, records: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f">{i} some description\n{s.lower()}\n" for i, s in records))
    return path


@pytest.fixture
def fasta(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    return write_fasta(tmp_path / "db.fa",
                       [(f"s{i}", s) for i, s in enumerate(random_sequences(60, rng, 30, 200))])


def test_makedb_round_trip(fasta: Path, tmp_path: Path):
    mem = SequenceDB.from_fasta(fasta)
    out = makedb(fasta, tmp_path / "db")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["manifest.json", "headers.json", "codes.npy", "offsets.npy", "learned.json",
         "learned_residues.npy"])  # no k-mer index: the prefilter scans the codes
    disk = SequenceDB.load(out)
    assert disk.ids == mem.ids and disk.descriptions == mem.descriptions
    assert np.array_equal(disk.codes, mem.codes) and np.array_equal(disk.offsets, mem.offsets)
    q = mem.sequence(3)
    assert [(h.target_id, h.score, h.evalue) for h in search(q, disk)] == [
        (h.target_id, h.score, h.evalue) for h in search(q, mem)]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["version"] == database_module.DB_FORMAT_VERSION
    assert manifest["n_sequences"] == 60
    # nothing but the database is left in the parent directory
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db", "db.fa"]


def test_makedb_refuses_to_overwrite_unless_asked(fasta: Path, tmp_path: Path):
    out = makedb(fasta, tmp_path / "db")
    with pytest.raises(InputError, match="exists"):
        makedb(fasta, out)
    makedb(fasta, out, overwrite=True)
    assert len(SequenceDB.load(out)) == 60
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InputError, match="not a homalign database"):
        makedb(fasta, plain, overwrite=True)


def test_makedb_failure_leaves_no_directory(fasta: Path, tmp_path: Path, monkeypatch):
    calls = {"n": 0}
    real = database_module._write_file

    def failing(path, data=None, array=None):
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError("disk full")
        real(path, data=data, array=array)

    monkeypatch.setattr(database_module, "_write_file", failing)
    with pytest.raises(OSError, match="disk full"):
        makedb(fasta, tmp_path / "db")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.fa"]


def test_load_rejects_another_version(fasta: Path, tmp_path: Path):
    out = makedb(fasta, tmp_path / "db")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["version"] = 999
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="version 999"):
        SequenceDB.load(out)


def test_load_rejects_a_database_cut_short(fasta: Path, tmp_path: Path):
    out = makedb(fasta, tmp_path / "db")
    data = (out / "offsets.npy").read_bytes()
    (out / "offsets.npy").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="cut short"):
        SequenceDB.load(out)


def test_load_rejects_damaged_and_missing_files(fasta: Path, tmp_path: Path):
    out = makedb(fasta, tmp_path / "db")
    raw = bytearray((out / "codes.npy").read_bytes())
    raw[-1] ^= 0x01
    (out / "codes.npy").write_bytes(bytes(raw))
    with pytest.raises(InputError, match="hash"):
        SequenceDB.load(out)
    (out / "codes.npy").unlink()
    with pytest.raises(InputError, match="missing"):
        SequenceDB.load(out)
    (out / "manifest.json").unlink()
    with pytest.raises(InputError, match="no manifest"):
        SequenceDB.load(out)


def test_empty_and_duplicate_databases_are_input_errors(tmp_path: Path):
    empty = tmp_path / "empty.fa"
    empty.write_text("")
    with pytest.raises(InputError):
        SequenceDB.from_fasta(empty)
    with pytest.raises(InputError):
        makedb(empty, tmp_path / "db")
    assert not (tmp_path / "db").exists()
    dup = write_fasta(tmp_path / "dup.fa", [("a", "MKV"), ("b", "MKL"), ("a", "MKI")])
    with pytest.raises(InputError, match="'a'"):
        SequenceDB.from_fasta(dup)
    with pytest.raises(InputError):
        SequenceDB.from_sequences([])
    with pytest.raises(InputError, match="no such file"):
        SequenceDB.from_fasta(tmp_path / "missing.fa")


def test_subset_keeps_sequences(fasta: Path):
    db = SequenceDB.from_fasta(fasta)
    sub = db.subset([5, 2, 9])
    assert sub.ids == [db.ids[5], db.ids[2], db.ids[9]]
    assert sub.residues(1) == db.residues(2)
