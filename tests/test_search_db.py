"""SequenceDB and makedb: round trip, atomic writes and clear errors on bad databases."""

from __future__ import annotations

import hashlib
import io
import json
import tracemalloc
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


def test_a_database_given_by_path_is_opened_once_until_it_changes(fasta: Path, tmp_path: Path):
    """Searches given a path share one open database (its memory map and caches); a rebuilt
    database, or an edited FASTA file, is read anew, never served stale."""
    out = makedb(fasta, tmp_path / "db")
    first = database_module.cached_database(out)
    assert database_module.cached_database(str(out)) is first
    assert database_module.cached_database(fasta) is database_module.cached_database(fasta)
    q = SequenceDB.from_fasta(fasta).sequence(3)
    hits = [(h.target_id, h.score, h.evalue) for h in search(q, str(out))]
    assert hits == [(h.target_id, h.score, h.evalue) for h in search(q, first)]
    smaller = write_fasta(tmp_path / "small.fa", [("only", q.residues)])
    makedb(smaller, out, overwrite=True)
    rebuilt = database_module.cached_database(out)
    assert rebuilt is not first and rebuilt.ids == ["only"]
    assert [h.target_id for h in search(q, str(out))] == ["only"]
    before = database_module.cached_database(fasta)
    write_fasta(fasta, [("edited", q.residues)])
    assert database_module.cached_database(fasta).ids == ["edited"] != before.ids
    with pytest.raises(InputError, match="no such file"):
        database_module.cached_database(tmp_path / "missing.fa")


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
    with pytest.raises(InputError, match="refusing to replace a file"):
        makedb(fasta, fasta, overwrite=True)
    assert fasta.is_file() and len(SequenceDB.from_fasta(fasta)) == 60


def test_makedb_failure_leaves_no_directory(fasta: Path, tmp_path: Path, monkeypatch):
    real = database_module._write_file

    def failing(path, data=None, array=None):
        if Path(path).name == "manifest.json":  # the last file: every other one is written
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


@pytest.mark.parametrize("edit, field", [
    (lambda m: [], "not a JSON object"),
    (lambda m: {**m, "n_sequences": "abc"}, "n_sequences must be"),
    (lambda m: {**m, "k": None}, "k must be"),
    (lambda m: {**m, "files": None}, "files must be"),
    (lambda m: {**m, "files": {**m["files"], "codes.npy": {"size": "1"}}}, "files/codes.npy"),
])
def test_load_names_a_hand_edited_manifest_field(fasta: Path, tmp_path: Path, edit, field):
    out = makedb(fasta, tmp_path / "db")
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps(edit(manifest)))
    with pytest.raises(InputError, match=field):
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


# --- makedb streams its input ------------------------------------------------------------------

def _old_files(fasta: Path) -> dict[str, bytes]:
    """The files makedb wrote when it read the whole FASTA into a SequenceDB first."""
    mem = SequenceDB.from_fasta(fasta)
    out = {"headers.json": json.dumps({"ids": mem.ids,
                                       "descriptions": mem.descriptions}).encode()}
    for name, arr in (("codes.npy", mem.codes), ("offsets.npy", mem.offsets)):
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        out[name] = buf.getvalue()
    return out


@pytest.mark.parametrize("chunk", [database_module.WRITE_CHUNK, 64, 1])
def test_streamed_makedb_writes_the_bytes_of_the_in_memory_database(tmp_path: Path, monkeypatch,
                                                                     chunk: int):
    # chunks smaller than a sequence, sequences written alone, header lists in several batches
    monkeypatch.setattr(database_module, "WRITE_CHUNK", chunk)
    monkeypatch.setattr(database_module, "_HEADER_BATCH", 3)
    rng = np.random.default_rng(1)
    seqs = random_sequences(25, rng, 5, 300)
    text = ["; an old-style comment\n"]
    for i, s in enumerate(seqs):
        header = f">p{i} protéine n°{i} \"quoted\"" if i % 3 else f">p{i}"
        body = s[:2] + "-." + s[2:].lower() + ("*" if i % 4 == 0 else "")
        text.append(header + "\n" + "\n".join(body[j:j + 37] for j in range(0, len(body), 37))
                    + "\n")
    fasta = tmp_path / "db.fa"
    fasta.write_text("".join(text), encoding="utf-8")
    out = makedb(fasta, tmp_path / "db", learned=False)
    old = _old_files(fasta)
    manifest = json.loads((out / "manifest.json").read_text())
    for name, data in old.items():
        assert (out / name).read_bytes() == data, name
        assert manifest["files"][name] == {"sha256": hashlib.sha256(data).hexdigest(),
                                           "size": len(data)}
    assert manifest["n_sequences"] == 25 and manifest["n_residues"] == sum(map(len, seqs))
    mem, disk = SequenceDB.from_fasta(fasta), SequenceDB.load(out)
    assert disk.ids == mem.ids and disk.descriptions == mem.descriptions
    assert np.array_equal(disk.codes, mem.codes) and np.array_equal(disk.offsets, mem.offsets)
    assert disk.residues(7) == seqs[7]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db", "db.fa"]


def _error(fn, *args, **kwargs) -> str:
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    return str(info.value)


@pytest.mark.parametrize("body, expected", [
    (">a\nMKV\n>b x\nMK1V\n>c\nMKL\n", "db.fa:4, record 'b', position 3: invalid character '1'"),
    (">a\nMKV\n>b\n--..\n>c\nMKL\n", "record 'b': empty sequence"),
    (">a\nMKV\n>b\nMKL\n>a\nMKI\n", "db.fa:5, record 'a': duplicate id (first seen on line 1)"),
    ("", "no FASTA records"),
    ("MKV\n", "sequence data before the first '>' header"),
])
def test_streamed_makedb_errors_are_those_of_reading_the_fasta(tmp_path: Path, monkeypatch,
                                                              body: str, expected: str):
    monkeypatch.setattr(database_module, "WRITE_CHUNK", 4)  # the first records already written
    fasta = tmp_path / "db.fa"
    fasta.write_text(body)
    message = _error(makedb, fasta, tmp_path / "db", learned=False)
    assert expected in message and str(fasta) in message
    assert message == _error(SequenceDB.from_fasta, fasta)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.fa"]


def test_makedb_of_a_missing_file_names_it(tmp_path: Path):
    assert _error(makedb, tmp_path / "missing.fa", tmp_path / "db") == (
        f"{tmp_path / 'missing.fa'}: no such file")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_failure_mid_stream_leaves_no_temporary_directory(tmp_path: Path, monkeypatch):
    import homalign.sequence

    rng = np.random.default_rng(3)
    fasta = write_fasta(tmp_path / "db.fa",
                        [(f"s{i}", s) for i, s in enumerate(random_sequences(200, rng, 200, 300))])
    monkeypatch.setattr(database_module, "WRITE_CHUNK", 1 << 14)
    real = homalign.sequence.iter_sequences
    seen = {}

    def failing(path):
        for i, seq in enumerate(real(path)):
            if i == 150:
                (build,) = tmp_path.glob(".db.tmp-*")
                seen["written"] = (build / "codes.npy").stat().st_size
                raise OSError("read error")
            yield seq

    monkeypatch.setattr(homalign.sequence, "iter_sequences", failing)
    with pytest.raises(OSError, match="read error"):
        makedb(fasta, tmp_path / "db", learned=False)
    assert seen["written"] >= 128 + (1 << 14)  # codes were being appended when it failed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.fa"]


def test_the_learned_step_reads_the_written_codes_memory_mapped(fasta: Path, tmp_path: Path,
                                                                monkeypatch):
    import homalign.search.embeddings as embeddings

    real = embeddings.write_store
    seen = {}

    def checking(db, *args, **kwargs):
        # SequenceDB keeps the map (ascontiguousarray of a uint8 memmap is a view, no copy)
        seen["mapped"] = isinstance(db.codes.base, np.memmap) and not db.codes.flags.owndata
        return real(db, *args, **kwargs)

    monkeypatch.setattr(embeddings, "write_store", checking)
    out = makedb(fasta, tmp_path / "db")
    assert seen == {"mapped": True}
    assert (out / embeddings.STORE_ARRAY).exists()


def test_makedb_does_not_hold_the_residues_in_memory(tmp_path: Path, monkeypatch):
    # 5,000 sequences x 2,000 residues: 10 MB of residues. What makedb holds besides a chunk of
    # codes is per sequence (ids, descriptions, lengths: ~150 bytes) or fixed (the 1 MiB blocks
    # of file hashing), so longer sequences than the 300 of a typical protein keep it well apart.
    monkeypatch.setattr(database_module, "WRITE_CHUNK", 1 << 18)
    n, length = 5000, 2000
    rng = np.random.default_rng(2)
    letters = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)
    residues = letters[rng.integers(0, 20, n * length)].tobytes().decode()
    fasta = tmp_path / "big.fa"
    with open(fasta, "w") as fh:
        for i in range(n):
            fh.write(f">s{i} protein {i}\n{residues[i * length:(i + 1) * length]}\n")
    del residues
    tracemalloc.start()
    try:
        makedb(fasta, tmp_path / "db", learned=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n * length / 2, f"makedb peaked at {peak} bytes for {n * length} residues"
    db = SequenceDB.load(tmp_path / "db")
    assert db.total_length == n * length and db.ids[-1] == f"s{n - 1}"


def test_save_database_writes_makedbs_files_from_memory(fasta: Path, tmp_path: Path):
    """An in-memory database saved as a directory (a FASTA search's workers open one): the
    bytes ``makedb`` writes for the same records, its embeddings those a search computed here
    when there are any, and a subset of a file only the subset's records."""
    from homalign.search.database import save_database
    from homalign.search.embeddings import STORE_ARRAY

    made = makedb(fasta, tmp_path / "made")
    mem = SequenceDB.from_fasta(fasta)
    saved = save_database(mem, tmp_path / "saved")
    for name in ("codes.npy", "offsets.npy", "headers.json", STORE_ARRAY):
        assert (saved / name).read_bytes() == (made / name).read_bytes(), name
    manifest = json.loads((saved / "manifest.json").read_text())
    assert manifest["source"] == str(fasta) and manifest["source_sha256"] is None
    assert not database_module.same_source(saved, fasta)  # it need not be the whole file
    q = mem.sequence(5)
    search(q, mem, method="learned")  # the embeddings are now on mem
    again = save_database(mem, tmp_path / "again")
    assert (again / STORE_ARRAY).read_bytes() == (made / STORE_ARRAY).read_bytes()
    sub = mem.subset([4, 9, 20])
    part = SequenceDB.load(save_database(sub, tmp_path / "part"))
    assert part.ids == sub.ids and np.array_equal(part.codes, sub.codes)
    with pytest.raises(InputError, match="exists"):
        save_database(mem, saved)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "db.fa", "made", "part",
                                                          "saved"]
