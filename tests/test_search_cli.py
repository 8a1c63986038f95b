"""``homalign makedb`` and ``homalign search`` end to end on the bundled HOMSTRAD families."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import homalign
from homalign.cli import main
from homalign.io import (
    FastaRecord,
    read_a3m,
    read_blast_tab,
    read_fasta,
    read_pir,
    write_fasta,
)

DATA = Path(homalign.__file__).parent / "data" / "homstrad_dev"
FAMILIES = sorted(p.name for p in DATA.iterdir() if (p / f"{p.name}.ali").exists())[:12]


@pytest.fixture(scope="module")
def homstrad_fasta(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """Ungapped members of 12 bundled families as one FASTA database; id -> family."""
    records, family = [], {}
    for fam in FAMILIES:
        for entry in read_pir(DATA / fam / f"{fam}.ali"):
            sid = f"{fam}|{entry.id}"
            seq = entry.aligned.replace("-", "")
            if sid in family or len(seq) < 20:
                continue
            records.append(FastaRecord(sid, "", seq))
            family[sid] = fam
    path = tmp_path_factory.mktemp("cli") / "homstrad.fa"
    write_fasta(path, records)
    return path, family


def test_makedb_then_search_tab(homstrad_fasta, tmp_path, capsys):
    fasta, family = homstrad_fasta
    dbdir = tmp_path / "db"
    assert main(["makedb", str(fasta), str(dbdir)]) == 0
    assert (dbdir / "manifest.json").exists()
    queries = [sid for sid in family if family[sid] in FAMILIES[:3]][::2]
    qfile = tmp_path / "q.fa"
    all_records = {r.id: r for r in read_fasta(fasta)}
    write_fasta(qfile, [all_records[q] for q in queries])
    out = tmp_path / "hits.tsv"
    assert main(["search", str(qfile), str(dbdir), "--evalue", "1e-3", "--aln",
                 "-o", str(out), "--no-progress"]) == 0
    hits = list(read_blast_tab(out, extra=("qaln", "taln")))
    assert {h.qseqid for h in hits} == set(queries)
    for q in queries:
        mine = [h for h in hits if h.qseqid == q]
        assert mine[0].sseqid == q  # the self hit first
        evalues = [h.evalue for h in mine]
        assert evalues == sorted(evalues)
        # with E <= 1e-3 every hit is in the query's family (HOMSTRAD families are distinct)
        assert {family[h.sseqid] for h in mine} == {family[q]}
    # a FASTA database and --exhaustive give the same top hits
    out2 = tmp_path / "hits2.tsv"
    assert main(["search", str(qfile), str(fasta), "--evalue", "1e-3", "--exhaustive",
                 "-o", str(out2), "--no-progress"]) == 0
    strong = {(h.qseqid, h.sseqid) for h in hits if h.evalue < 1e-10}
    exhaustive = {(h.qseqid, h.sseqid) for h in read_blast_tab(out2)}
    assert strong <= exhaustive


def test_search_a3m_and_pair_output(homstrad_fasta, tmp_path, capsys):
    fasta, family = homstrad_fasta
    q = next(iter(family))
    rec = next(r for r in read_fasta(fasta) if r.id == q)
    qfile = tmp_path / "q.fa"
    write_fasta(qfile, [rec])
    a3m = tmp_path / "q.a3m"
    assert main(["search", str(qfile), str(fasta), "--format", "a3m", "-o", str(a3m),
                 "--evalue", "1e-3", "--no-progress"]) == 0
    msa = read_a3m(a3m)
    assert msa.ids[0] == q and msa.ids[1] == q and msa.rows[0] == rec.sequence.upper()
    assert main(["search", str(qfile), str(fasta), "--format", "pair", "--max-hits", "2",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count(f"# {q} (L=") == 2 and "evalue=" in out and "bits=" in out
    # a learned hit's pair block shows the score it was ranked by (JSON's), then its alignment's
    args = ["search", str(qfile), str(fasta), "--method", "learned", "--max-hits", "2",
            "--no-progress"]
    assert main([*args, "--format", "json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert main([*args, "--format", "pair"]) == 0
    heads = [line for line in capsys.readouterr().out.splitlines() if line.startswith("# score=")]
    assert len(heads) == len(records) == 2
    for head, rec in zip(heads, records, strict=True):
        assert head.startswith(f"# score={rec['score']:.2f} aln_score=")
        assert f"bits={rec['bitscore']:.1f}" in head


def test_search_cli_errors(homstrad_fasta, tmp_path, capsys):
    fasta, _ = homstrad_fasta
    empty = tmp_path / "empty.fa"
    empty.write_text("")
    assert main(["search", str(fasta), str(empty), "--no-progress"]) == 2
    assert "error" in capsys.readouterr().err
    fake = tmp_path / "notadb"
    fake.mkdir()
    assert main(["search", str(fasta), str(fake), "--no-progress"]) == 2
    assert "not a homalign database" in capsys.readouterr().err
    assert main(["makedb", str(empty), str(tmp_path / "db")]) == 2
    assert not (tmp_path / "db").exists()
    # -o naming an input (directly or through a link) would replace it with the hits
    copy = tmp_path / "copy.fa"
    copy.write_bytes(fasta.read_bytes())
    link = tmp_path / "link.fa"
    link.symlink_to(copy)
    for args in (["search", str(copy), str(copy), "-o", str(copy)],
                 ["search", str(copy), str(copy), "-o", str(link)],
                 ["align", str(copy), str(copy), "--method", "sw", "-o", str(link)]):
        assert main([*args, "--no-progress"] if args[0] == "search" else args) == 2
        assert "the output file is an input file" in capsys.readouterr().err
        assert copy.read_bytes() == fasta.read_bytes()


def _first_member_as_query(fasta: Path, family: dict[str, str], tmp_path: Path) -> tuple[str, Path]:
    """The database's first member written as a one-record query FASTA: (its id, the file)."""
    q = next(iter(family))
    qfile = tmp_path / "q.fa"
    write_fasta(qfile, [next(r for r in read_fasta(fasta) if r.id == q)])
    return q, qfile


@pytest.mark.slow
def test_search_iterations_runs_the_iterative_profile_search(homstrad_fasta, tmp_path):
    fasta, family = homstrad_fasta
    q, qfile = _first_member_as_query(fasta, family, tmp_path)
    plain, iterative = tmp_path / "plain.tsv", tmp_path / "iter.tsv"
    assert main(["search", str(qfile), str(fasta), "--evalue", "1e-3", "-o", str(plain),
                 "--no-progress"]) == 0
    assert main(["search", str(qfile), str(fasta), "--evalue", "1e-3", "--iterations", "2",
                 "-o", str(iterative), "--no-progress"]) == 0
    first = {h.sseqid for h in read_blast_tab(plain)}
    final = list(read_blast_tab(iterative))
    assert final and final[0].sseqid == q
    assert first <= {h.sseqid for h in final}
    assert {family[h.sseqid] for h in final} == {family[q]}


@pytest.mark.slow
def test_search_learned_iterations_fuses_with_the_pssm_round(homstrad_fasta, tmp_path):
    from homalign.search import SequenceDB
    from homalign.search.iterative import iterative_search

    fasta, family = homstrad_fasta
    q, qfile = _first_member_as_query(fasta, family, tmp_path)
    out = tmp_path / "fused.tsv"
    assert main(["search", str(qfile), str(fasta), "--method", "learned", "--iterations", "2",
                 "--evalue", "1e-2", "-o", str(out), "--no-progress"]) == 0
    rows = list(read_blast_tab(out))
    assert rows and rows[0].sseqid == q
    db = SequenceDB.from_fasta(fasta)
    want = iterative_search(db.sequence(db.index_of(q)), db, 2, "learned", evalue=1e-2)
    assert [r.sseqid for r in rows] == [h.target_id for h in want]
    assert {family[r.sseqid] for r in rows[:3]} == {family[q]}
