"""BLAST-compatible tabular output: ``--format tab`` is exactly BLAST's 12 columns, ``--outfmt``
selects columns by BLAST's names, ``--format json`` is JSON Lines; Bio.SearchIO reads them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from Bio import SearchIO

import homalign
from homalign.cli import main
from homalign.errors import InputError
from homalign.io import FastaRecord, read_blast_tab, read_pir, write_fasta
from homalign.io.blast_tab import BLAST_TAB_COLUMNS, NOT_COMPUTED, OUTFMT_FIELDS, parse_outfmt
from homalign.methods import get_method, method_names

DATA = Path(homalign.__file__).parent / "data" / "homstrad_dev"
FAMILIES = sorted(p.name for p in DATA.iterdir() if (p / f"{p.name}.ali").exists())[:6]
ALL_FIELDS = " ".join(OUTFMT_FIELDS)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """(queries: 2 records, targets: 3 records, database: 6 families' members)."""
    records = []
    for fam in FAMILIES:
        for entry in read_pir(DATA / fam / f"{fam}.ali"):
            seq = entry.aligned.replace("-", "").replace("/", "")
            if len(seq) >= 30 and all(r.id != entry.id for r in records):
                records.append(FastaRecord(entry.id, "", seq))
    d = tmp_path_factory.mktemp("tab")
    q, t, db = d / "q.fa", d / "t.fa", d / "db.fa"
    write_fasta(q, records[:2])
    write_fasta(t, records[1:4])
    write_fasta(db, records)
    return q, t, db


def _run(capsys, argv) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


def _parse(text: str, fields: list[str] | None = None) -> list:
    kw = {"fields": fields} if fields else {}
    return list(SearchIO.parse(io.StringIO(text), "blast-tab", **kw))


# methods whose pairwise E-value/bit score exist without a fit: sw (Karlin-Altschul), learned
# (its shipped null law), the peers (their own); the others write NA there
WITH_STATS = ["sw", "learned"] + [n for n in method_names("peer")
                                   if get_method(n).available() is None and n != "hhalign"]
WITHOUT_STATS = ["nw", "glocal", "semiglobal", "pssm", "compass", "prof-sim", "hhm"]


@pytest.mark.parametrize("method", WITH_STATS)
def test_align_tab_is_blast_12_columns_and_biopython_reads_it(files, capsys, method):
    q, t, _ = files
    out = _run(capsys, ["align", str(q), str(t), "--method", method, "--format", "tab"])
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows and all(len(r) == 12 for r in rows)
    qresults = _parse(out)
    assert sum(len(h.hsps) for qr in qresults for h in qr) == len(rows)
    for qr in qresults:
        for hit in qr:
            for hsp in hit.hsps:
                assert hsp.evalue >= 0 and hsp.bitscore > -1e9
    tab = list(read_blast_tab(io_path(out, files)))
    for row, hit in zip(rows, tab, strict=True):
        assert hit.qseqid == row[0] and hit.evalue == float(row[10])


def io_path(text: str, files) -> Path:
    p = files[0].parent / "out.tab"
    p.write_text(text)
    return p


@pytest.mark.parametrize("method", WITHOUT_STATS)
def test_align_tab_marks_what_the_method_does_not_compute(files, capsys, method):
    q, t, _ = files
    out = _run(capsys, ["align", str(q), str(t), "--method", method, "--format", "tab"])
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows and all(len(r) == 12 for r in rows)
    assert all(r[10] == NOT_COMPUTED and r[11] == NOT_COMPUTED for r in rows)
    assert "nan" not in out
    # without the two columns it has not, BLAST parsers read it
    cols = [c for c in BLAST_TAB_COLUMNS if c not in ("evalue", "bitscore")] + ["score"]
    out2 = _run(capsys, ["align", str(q), str(t), "--method", method, "--outfmt",
                         "6 " + " ".join(cols)])
    assert sum(len(h.hsps) for qr in _parse(out2, cols) for h in qr) == len(rows)
    # and homalign's own reader reads NA as NaN
    hits = list(read_blast_tab(io_path(out, files)))
    assert all(h.evalue != h.evalue for h in hits)


@pytest.mark.parametrize("method", ["sw", "learned", "pssm"])
def test_search_tab_and_outfmt_biopython(files, capsys, method):
    q, _, db = files
    out = _run(capsys, ["search", str(q), str(db), "--method", method, "--no-progress"])
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows and all(len(r) == 12 for r in rows)
    qrs = _parse(out)
    assert {qr.id for qr in qrs} == {r[0] for r in rows}
    fields = ALL_FIELDS.split()
    full = _run(capsys, ["search", str(q), str(db), "--method", method, "--no-progress",
                         "--outfmt", "6 " + ALL_FIELDS])
    qrs = _parse(full, fields)
    first = full.splitlines()[0].split("\t")
    value = dict(zip(fields, first, strict=True))
    hsp = qrs[0].hsps[0]
    assert str(hsp.query.seq) == value["qseq"] and str(hsp.hit.seq) == value["sseq"]
    assert qrs[0].seq_len == int(value["qlen"])
    assert int(value["nident"]) + int(value["mismatch"]) + int(value["gaps"]) == \
        int(value["length"])
    assert int(value["positive"]) >= int(value["nident"])


HIT_COLUMNS = "qseqid sseqid evalue bitscore score qlen slen"


@pytest.mark.parametrize(("method", "extra"), [("sw", []), ("learned", []),
                                               ("learned", ["--iterations", "2"]),
                                               ("sw", ["-j", "2"])])
def test_search_without_alignment_columns_skips_the_alignments(files, capsys, monkeypatch,
                                                                method, extra):
    """Columns a hit has without its alignment alone: the same lines as when an alignment
    column is asked for too, and no alignment is computed."""
    import dataclasses

    from homalign.methods import METHODS

    m = get_method(method)
    traced = []

    def spy(query, targets, *args, **kwargs):
        traced.extend(t.id for t in targets)
        return m.align_hits(query, targets, *args, **kwargs)

    monkeypatch.setitem(METHODS, method, dataclasses.replace(m, align_hits=spy))
    q, _, db = files
    base = ["search", str(q), str(db), "--method", method, "--no-progress",
            *(extra if "-j" in extra else ["-j", "1", *extra])]
    with_aln = _run(capsys, [*base, "--outfmt", f"6 {HIT_COLUMNS} length"])
    n_traced = len(traced)
    hits_only = _run(capsys, [*base, "--outfmt", f"6 {HIT_COLUMNS}"])
    rows = [r.split("\t") for r in hits_only.splitlines()]
    assert rows and rows == [r.split("\t")[:7] for r in with_aln.splitlines()]
    if "-j" not in extra:  # worker processes do not see the spy
        assert n_traced >= len(rows) and len(traced) == n_traced
    _parse(hits_only, HIT_COLUMNS.split())


def test_search_aln_is_std_plus_qseq_sseq(files, capsys):
    q, _, db = files
    a = _run(capsys, ["search", str(q), str(db), "--aln", "--no-progress"])
    b = _run(capsys, ["search", str(q), str(db), "--outfmt", "6 std qseq sseq",
                      "--no-progress"])
    assert a == b and all(len(r.split("\t")) == 14 for r in a.splitlines())
    _parse(a, list(BLAST_TAB_COLUMNS) + ["qseq", "sseq"])


@pytest.mark.parametrize("verb", ["align", "search"])
def test_json_lines(files, capsys, verb):
    q, t, db = files
    argv = (["align", str(q), str(t), "--method", "sw"] if verb == "align"
            else ["search", str(q), str(db), "--no-progress"])
    out = _run(capsys, [*argv, "--format", "json"])
    recs = [json.loads(line) for line in out.splitlines()]
    assert recs and all({"qseqid", "sseqid", "evalue", "bitscore", "pident", "qstart",
                         "qseq", "sseq", "method"} <= set(r) for r in recs)
    assert all(isinstance(r["evalue"], float) for r in recs)


def test_json_null_where_not_computed(files, capsys):
    q, t, _ = files
    out = _run(capsys, ["align", str(q), str(t), "--method", "nw", "--format", "json"])
    assert all(json.loads(line)["evalue"] is None for line in out.splitlines())


def test_learned_pair_report_shows_evalue_bits_probability(files, capsys):
    q, t, _ = files
    out = _run(capsys, ["align", str(q), str(t), "--method", "learned"])
    assert "evalue=" in out and "bits=" in out and "homology_probability=" in out


def test_outfmt_parsing():
    assert parse_outfmt("6") == BLAST_TAB_COLUMNS
    assert parse_outfmt("6 std qlen") == (*BLAST_TAB_COLUMNS, "qlen")
    assert parse_outfmt("6 qseqid sseqid qseq sseq") == ("qseqid", "sseqid", "qseq", "sseq")
    with pytest.raises(InputError, match="did you mean 'evalue'"):
        parse_outfmt("6 qseqid evalu")
    with pytest.raises(InputError, match="format 6"):
        parse_outfmt("5")


def test_outfmt_conflicts_with_other_formats(files, capsys):
    q, t, _ = files
    assert main(["align", str(q), str(t), "--method", "sw", "--format", "pair", "--outfmt",
                 "6 qseqid"]) == 2
    assert "--outfmt" in capsys.readouterr().err


def test_blast_fields_for_some_columns_equal_the_full_record():
    """The fields a column subset skips (gapped strings, positives) change nothing else, and the
    alignment length and gap count come from the pairs as from the gapped strings."""
    import numpy as np

    from homalign.alignment import Alignment
    from homalign.report import blast_fields

    rng = np.random.default_rng(5)
    aa = "ACDEFGHIKLMNPQRSTVWY"
    for _ in range(200):
        q = "".join(rng.choice(list(aa), int(rng.integers(1, 40))))
        t = "".join(rng.choice(list(aa), int(rng.integers(1, 40))))
        n = int(rng.integers(0, min(len(q), len(t)) + 1))
        qi = np.sort(rng.choice(len(q), n, replace=False))
        ti = np.sort(rng.choice(len(t), n, replace=False))
        aln = Alignment("q", "t", q, t, np.stack([qi, ti], axis=1), score=1.0,
                        method="sw")
        full = blast_fields(aln)
        qa, ta = aln.gapped()
        assert full["length"] == len(qa) == len(ta)
        assert full["gaps"] == qa.count("-") + ta.count("-")
        assert (full["qseq"], full["sseq"]) == (qa, ta)
        some = blast_fields(aln, columns=BLAST_TAB_COLUMNS)
        assert "qseq" not in some and "positive" not in some
        assert all(some[c] == full[c] for c in BLAST_TAB_COLUMNS)
