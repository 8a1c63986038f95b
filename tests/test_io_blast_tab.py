"""BLAST tabular output: BLAST-style number formatting, round-trips, extra columns, bad input."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from homalign.errors import InputError
from homalign.io import (
    BLAST_TAB_COLUMNS,
    TabularHit,
    format_bitscore,
    format_evalue,
    read_blast_tab,
    write_blast_tab,
)


def _hit(**kw: object) -> TabularHit:
    base = dict(qseqid="q1", sseqid="s1", pident=98.5, length=120, mismatch=2, gapopen=0,
                qstart=1, qend=120, sstart=5, send=124, evalue=2.36e-27, bitscore=45.8)
    base.update(kw)
    return TabularHit(**base)  # type: ignore[arg-type]


def test_columns() -> None:
    assert BLAST_TAB_COLUMNS == ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen",
                                 "qstart", "qend", "sstart", "send", "evalue", "bitscore")


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0, "0.0"), (1e-200, "0.0"), (1e-120, "1.00e-120"), (2.357e-27, "2.36e-27"),
     (0.0005, "5.00e-04"), (0.0123, "0.012"), (0.456, "0.46"), (3.21, "3.2"), (123.4, "123"),
     (0.996, "1.0"), (0.0999, "0.10"), (0.000899999, "0.001"), (float("nan"), "NA")],
)
def test_evalue_format(value: float, text: str) -> None:
    assert format_evalue(value) == text


@pytest.mark.parametrize(
    ("value", "text"), [(45.83, "45.8"), (99.9, "99.9"), (99.97, "100"), (285.7, "285"), (9999.7, "9999"),
     (12345.6, "12345"), (99999.9, "99999"), (105300.2, "1.053e+05")]  # as BLAST+ 2.12
)
def test_bitscore_format(value: float, text: str) -> None:
    assert format_bitscore(value) == text


def test_write_line_layout_to_stream() -> None:
    buf = io.StringIO()
    assert write_blast_tab(buf, [_hit()]) == 1
    assert buf.getvalue() == "q1\ts1\t98.500\t120\t2\t0\t1\t120\t5\t124\t2.36e-27\t45.8\n"


def test_round_trip_with_alignment_columns(tmp_path: Path) -> None:
    hits = [_hit(qaln="AC-DE", taln="ACKDE"), _hit(sseqid="s2", evalue=0.0, bitscore=250.0,
                                                   qaln="W", taln="W")]
    path = tmp_path / "hits.tsv"
    write_blast_tab(path, hits, extra=("qaln", "taln"))
    assert list(read_blast_tab(path, extra=("qaln", "taln"))) == hits
    assert len(path.read_text().splitlines()[0].split("\t")) == 14


def test_comments_and_blank_lines_skipped(tmp_path: Path) -> None:
    path = tmp_path / "h.tsv"
    write_blast_tab(path, [_hit()])
    path.write_text("# BLASTP 2.15\n# Fields: ...\n\n" + path.read_text())
    assert list(read_blast_tab(path)) == [_hit()]


def test_writer_rejects_missing_extra_and_unknown_extra(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="qaln"):
        write_blast_tab(tmp_path / "x.tsv", [_hit()], extra=("qaln",))
    with pytest.raises(ValueError, match="unknown"):
        write_blast_tab(tmp_path / "x.tsv", [_hit()], extra=("qseq",))
    with pytest.raises(ValueError, match="tab"):
        write_blast_tab(tmp_path / "x.tsv", [_hit(qseqid="a\tb")])
    with pytest.raises(ValueError, match="comment"):
        write_blast_tab(tmp_path / "x.tsv", [_hit(qseqid="#q")])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("line", "needle", "column"),
    [("q\ts\t98.5\t10\n", "expected 12", None),
     ("q\ts\t98.5\tten\t0\t0\t1\t10\t1\t10\t1e-5\t30.2\n", "'length': not an integer", 4),
     ("q\ts\t98.5\t10\t0\t0\t1\t10\t1\t10\tlow\t30.2\n", "'evalue': not a number", 11)],
)
def test_bad_lines(tmp_path: Path, line: str, needle: str, column: int | None) -> None:
    path = tmp_path / "bad.tsv"
    path.write_text("# comment\n" + line)
    with pytest.raises(InputError) as info:
        list(read_blast_tab(path))
    assert needle in str(info.value) and f"{path}:2" in str(info.value)
    assert info.value.column == column


_names = st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="#"),
                 min_size=1, max_size=10)
_ints = st.integers(min_value=0, max_value=10_000)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    hits=st.lists(st.builds(
        TabularHit, _names, _names, st.floats(0, 100), _ints, _ints, _ints, _ints, _ints, _ints,
        _ints, st.floats(0, 1e6), st.floats(0, 1e5),
    ), min_size=1, max_size=5),
)
def test_formatting_is_stable_hypothesis(tmp_path: Path, hits: list[TabularHit]) -> None:
    """Writing what was read reproduces the text; numbers survive to the printed precision."""
    first, second = tmp_path / "a.tsv", tmp_path / "b.tsv"
    write_blast_tab(first, hits)
    back = list(read_blast_tab(first))
    write_blast_tab(second, back)
    assert first.read_text() == second.read_text()
    for hit, got in zip(hits, back, strict=True):
        assert (got.qseqid, got.sseqid, got.length, got.send) == (
            hit.qseqid, hit.sseqid, hit.length, hit.send)
        # printed to 3 decimals: half a unit in the last place, and the binary rounding of both
        assert got.pident == pytest.approx(hit.pident, abs=5e-4 + 1e-12)
        assert got.evalue == pytest.approx(hit.evalue, rel=0.01, abs=0.5)
