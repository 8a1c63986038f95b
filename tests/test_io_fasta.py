"""FASTA reading and writing: round-trips, wrapping, case, terminators and every bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from homalign.errors import InputError
from homalign.io import FastaRecord, read_fasta, write_fasta


def _write(tmp_path: Path, text: str, name: str = "in.fa") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _error(path: Path, unique: bool = True) -> InputError:
    with pytest.raises(InputError) as info:
        list(read_fasta(path, unique=unique))
    return info.value


def test_wrapped_lines_are_joined_case_and_description_kept(tmp_path: Path) -> None:
    path = _write(tmp_path, ">a first  protein\nACDE\nfghi\n\n>b\nKLM*\n")
    records = list(read_fasta(path))
    assert records == [
        FastaRecord("a", "first  protein", "ACDEfghi"),
        FastaRecord("b", "", "KLM"),
    ]


def test_whitespace_crlf_and_gaps(tmp_path: Path) -> None:
    path = tmp_path / "crlf.fa"
    path.write_bytes(b">x desc\r\nAC DE\tF\r\n--..G\r\n")
    (record,) = read_fasta(path)
    assert record == FastaRecord("x", "desc", "ACDEF--..G")


def test_classic_mac_line_endings_and_their_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "cr.fa"
    path.write_bytes(b">x desc\rACDE\rFG\r>y\rKL\r")
    assert list(read_fasta(path)) == [
        FastaRecord("x", "desc", "ACDEFG"),
        FastaRecord("y", "", "KL"),
    ]
    path.write_bytes(b">x\rACDE\r>y\rK1L\n")
    error = _error(path)
    assert error.line == 4 and error.column == 2
    mixed = tmp_path / "mixed.fa"
    mixed.write_bytes(b">x\r\nAC\rDE\n>y\nW")
    assert [r.sequence for r in read_fasta(mixed)] == ["ACDE", "W"]


def test_star_on_its_own_line(tmp_path: Path) -> None:
    path = _write(tmp_path, ">x\nACD\n*\n>y\nW\n")
    assert [r.sequence for r in read_fasta(path)] == ["ACD", "W"]


def test_read_is_lazy_but_missing_file_fails_at_once(tmp_path: Path) -> None:
    missing = tmp_path / "missing.fa"
    with pytest.raises(InputError) as info:
        read_fasta(missing)
    assert str(missing) in str(info.value)
    assert "no such file" in str(info.value)


def test_streaming_yields_before_a_later_error(tmp_path: Path) -> None:
    path = _write(tmp_path, ">a\nAC\n>b\nA1C\n")
    it = read_fasta(path)
    assert next(it).id == "a"
    with pytest.raises(InputError):
        next(it)


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("", None, "no FASTA records"),
        ("\n\n", 2, "no FASTA records"),
        (">a\nACD\n>b\n>c\nEF\n", 3, "empty sequence"),
        (">a\nACD\n>b\n", 3, "empty sequence"),
        (">a\nAC1D\n", 2, "invalid character '1'"),
        (">a\nACD\nKL;M\n", 3, "invalid character ';'"),
        ("ACD\n>a\nACD\n", 1, "before the first '>'"),
        (">a\nACD\n>a\nEF\n", 3, "duplicate id"),
        (">\nACD\n", 1, "no sequence id"),
        (">a\nAC*D\n", 2, "'*' inside"),
        (">a\nACD*\nEF\n", 3, "after the '*'"),
    ],
)
def test_bad_input_names_file_and_line(
    tmp_path: Path, text: str, line: int | None, needle: str
) -> None:
    path = _write(tmp_path, text)
    err = _error(path)
    message = str(err)
    assert needle in message
    assert str(path) in message
    if line is not None:
        assert f"{path}:{line}" in message
        assert err.line == line


def test_bad_character_names_record_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, ">seq1\nACDE\nAC%D\n")
    err = _error(path)
    assert err.record == "seq1" and err.line == 3 and err.column == 3
    assert "record 'seq1'" in str(err) and "position 3" in str(err)


def test_duplicates_allowed_when_not_unique(tmp_path: Path) -> None:
    path = _write(tmp_path, ">a\nAC\n>a\nDE\n")
    assert [r.sequence for r in read_fasta(path, unique=False)] == ["AC", "DE"]


def test_not_utf8_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bin.fa"
    path.write_bytes(b">a\nACD\n\xff\xfe\n")
    err = _error(path)
    assert err.line == 3 and "UTF-8" in str(err)


def test_directory_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="directory"):
        read_fasta(tmp_path)


def test_write_wraps_at_width(tmp_path: Path) -> None:
    path = tmp_path / "out.fa"
    n = write_fasta(path, [FastaRecord("a", "d e", "A" * 25), FastaRecord("b", "", "CC")], width=10)
    assert n == 2
    assert path.read_text() == ">a d e\nAAAAAAAAAA\nAAAAAAAAAA\nAAAAA\n>b\nCC\n"
    write_fasta(path, [FastaRecord("a", "", "A" * 25)], width=0)
    assert path.read_text() == ">a\n" + "A" * 25 + "\n"


@pytest.mark.parametrize(
    "record",
    [FastaRecord("", "", "AC"), FastaRecord("a b", "", "AC"), FastaRecord("a", "x\ny", "AC"),
     FastaRecord("a", "", ""), FastaRecord("a", "", "AC1")],
)
def test_write_rejects_unwritable_records_and_writes_nothing(
    tmp_path: Path, record: FastaRecord
) -> None:
    path = tmp_path / "out.fa"
    with pytest.raises(ValueError):
        write_fasta(path, [FastaRecord("ok", "", "AC"), record])
    assert list(tmp_path.iterdir()) == []


_ids = st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters=">"),
               min_size=1, max_size=12)
_descriptions = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30).map(
    str.strip
)
_sequences = st.text(st.sampled_from("ACDEFGHIKLMNPQRSTVWYXacdefgwy-."), min_size=1, max_size=150)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    records=st.lists(st.tuples(_ids, _descriptions, _sequences), min_size=1, max_size=6,
                     unique_by=lambda t: t[0]),
    width=st.integers(min_value=0, max_value=80),
)
def test_round_trip_hypothesis(tmp_path: Path, records: list, width: int) -> None:
    originals = [FastaRecord(*r) for r in records]
    path = tmp_path / "rt.fa"
    write_fasta(path, originals, width=width)
    assert list(read_fasta(path)) == originals
