"""PIR (.ali) and JOY template (.tem) files: synthetic cases and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from homalign.errors import InputError
from homalign.io import PirEntry, pir_to_msa, read_pir, read_tem, write_pir

ALI = """C; family: test
C; class: alpha
>P1;1abc
structureX:1abc:  10 :A: 20 :A:some protein:Homo sapiens: 2.0: 18.3
AC-DE/FG
HI*
>P1;2xyza
structureX:2xyz:   1 :B:  9 :B:other protein
ACKDE-FGH-*
"""


def _write(tmp_path: Path, text: str, name: str = "fam.ali") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _error(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        read_pir(path)
    return info.value


def test_read_pir_fields_and_chain_break(tmp_path: Path) -> None:
    entries = read_pir(_write(tmp_path, ALI))
    first, second = entries
    assert first.id == "1abc" and first.kind == "P1"
    assert first.description.startswith("structureX:1abc:  10 :A:")
    # the '/' occupies column 5, where the other member has a gap: it becomes a gap, columns
    # of the other member do not move
    assert first.aligned == "AC-DE-FGHI"
    assert first.chain_breaks == (5,)
    assert first.sequence == "ACDEFGHI"
    assert second.aligned == "ACKDE-FGH-" and second.chain_breaks == ()
    msa = pir_to_msa(entries)
    assert msa.pairs(0, 1).tolist() == [[0, 0], [1, 1], [2, 3], [3, 4], [4, 5], [5, 6], [6, 7]]


def test_chain_break_against_residue_keeps_columns(tmp_path: Path) -> None:
    text = ">P1;a\nd\nAC/DE*\n>P1;b\nd\nACKDE*\n"
    a, b = read_pir(_write(tmp_path, text))
    assert a.aligned == "AC-DE" and b.aligned == "ACKDE"
    assert pir_to_msa([a, b]).pairs(0, 1).tolist() == [[0, 0], [1, 1], [2, 3], [3, 4]]


def test_write_pir_round_trip(tmp_path: Path) -> None:
    entries = read_pir(_write(tmp_path, ALI))
    out = tmp_path / "out.ali"
    write_pir(out, entries, width=4)
    assert read_pir(out) == entries
    assert "AC-D\nE/FG\nHI*" in out.read_text()


@pytest.mark.parametrize(
    ("text", "line", "record", "needle"),
    [
        (">P1;a\nd\nACD\n>P1;b\nd\nACD*\n", 4, "a", "not terminated by '*'"),
        (">P1;a\nd\nACD\n", 3, "a", "not terminated by '*'"),
        (">P1;a\nd\nACD*\n>P1;b\nd\nAC*\n", 4, "b", "columns"),
        (">P1;a\nd\nACD*\n>P1;a\nd\nACD*\n", 4, "a", "duplicate id"),
        (">P1;a\nd\nAC1D*\n", 3, "a", "invalid character '1'"),
        (">P1;a\nd\nACD*X\n", 3, "a", "after the '*'"),
        (">P1;a\nd\nACD*\nEF\n", 4, "a", "outside a PIR entry"),
        (">a\nd\nACD*\n", 1, None, "bad PIR header"),
        (">P1;a\n", 1, "a", "no description"),
        (">P1;a\nd\n--*\n", 1, "a", "no residues"),
    ],
)
def test_bad_pir_names_file_line_record(
    tmp_path: Path, text: str, line: int, record: str | None, needle: str
) -> None:
    path = _write(tmp_path, text)
    err = _error(path)
    assert needle in str(err)
    assert f"{path}:{line}" in str(err)
    assert err.record == record


def test_empty_pir_file(tmp_path: Path) -> None:
    err = _error(_write(tmp_path, "C; only a comment\n"))
    assert "no PIR entries" in str(err)


TEM = """>P1;a
sequence
AC-DE*
>P1;b
sequence
ACKD-*
>P1;a
secondary structure and phi angle
CH-HE*
>P1;b
secondary structure and phi angle
CHHP-*
>P1;a
percentage accessibility
1a-f9*
"""


def test_read_tem(tmp_path: Path) -> None:
    tem = read_tem(_write(tmp_path, TEM, "fam.tem"))
    assert tem == {
        "a": {"sequence": "AC-DE", "secondary structure and phi angle": "CH-HE",
              "percentage accessibility": "1a-f9"},
        "b": {"sequence": "ACKD-", "secondary structure and phi angle": "CHHP-"},
    }


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        (TEM + ">P1;b\nsolvent accessibility\nTTF*\n", 16, "has 3 columns"),
        (TEM + ">P1;a\npercentage accessibility\n11111*\n", 16, "repeated"),
        (">P1;a\nDSSP\nCCC*\n", 1, "before this protein's 'sequence'"),
        (">P1;a\nsequence\nACD*\n>P1;b\nsequence\nAC*\n", 4, "columns"),
        (">P1;a\nsequence\nACD\n", 3, "not terminated"),
    ],
)
def test_bad_tem(tmp_path: Path, text: str, line: int, needle: str) -> None:
    path = _write(tmp_path, text, "fam.tem")
    with pytest.raises(InputError) as info:
        read_tem(path)
    assert needle in str(info.value)
    assert f"{path}:{line}" in str(info.value)


def test_write_pir_rejects_break_on_residue(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="chain break"):
        write_pir(tmp_path / "x.ali", [PirEntry("a", "P1", "d", "ACD", (1,))])
    assert list(tmp_path.iterdir()) == []
