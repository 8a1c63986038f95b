"""Stockholm: multi-block reading, annotations, round-trips and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from homalign.errors import InputError
from homalign.io import MSA, iter_stockholm, read_stockholm, write_stockholm

STO = """# STOCKHOLM 1.0
#=GF ID   test_family
#=GF CC   first comment line
#=GF CC   second comment line
#=GS seq1 DE  first sequence
#=GS seq2 AC  P12345

seq1        ACDE-FG
#=GR seq1 SS  CCHH-HE
seq2        AC.EKFG
#=GC SS_cons  CCHHHHE

# a free comment
seq1        HIK
#=GR seq1 SS  EEC
seq2        H-K
#=GC SS_cons  EEC
//
"""


def _write(tmp_path: Path, text: str, name: str = "x.sto") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_multi_block_and_annotations(tmp_path: Path) -> None:
    msa = read_stockholm(_write(tmp_path, STO))
    assert msa.ids == ["seq1", "seq2"]
    assert msa.rows == ["ACDE-FGHIK", "AC.EKFGH-K"]
    assert msa.descriptions == ["first sequence", ""]
    assert msa.annotations == {
        "GF": {"ID": "test_family", "CC": "first comment line\nsecond comment line"},
        "GS": {"seq2": {"AC": "P12345"}},
        "GR": {"seq1": {"SS": "CCHH-HEEEC"}},
        "GC": {"SS_cons": "CCHHHHEEEC"},
    }


def test_round_trip(tmp_path: Path) -> None:
    msa = read_stockholm(_write(tmp_path, STO))
    out = tmp_path / "out.sto"
    write_stockholm(out, msa)
    assert read_stockholm(out) == msa
    plain = MSA(["a", "b"], ["AC-D", "ACKD"], ["desc a", ""])
    write_stockholm(out, plain)
    assert read_stockholm(out) == plain


def test_iter_several_alignments(tmp_path: Path) -> None:
    path = _write(tmp_path, STO + STO.replace("seq", "other"))
    alignments = list(iter_stockholm(path))
    assert [a.ids for a in alignments] == [["seq1", "seq2"], ["other1", "other2"]]
    with pytest.raises(InputError, match="more than one alignment"):
        read_stockholm(path)


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        (STO.replace("//\n", ""), 17, "no '//' terminator"),
        ("seq1 ACD\n//\n", 1, "STOCKHOLM 1.0"),
        ("# STOCKHOLM 1.0\nseq1 ACD\nseq2 AC\n//\n", 3, "row has 2 columns"),
        ("# STOCKHOLM 1.0\nseq1 AC1\n//\n", 2, "invalid character '1'"),
        ("# STOCKHOLM 1.0\nseq1 AC D\n//\n", 2, "expected '<id> <aligned sequence>'"),
        ("# STOCKHOLM 1.0\nseq1 ACD\n#=GC SS_cons CC\n//\n", 4, "#=GC SS_cons has 2 columns"),
        ("# STOCKHOLM 1.0\n//\n", 2, "no sequences"),
    ],
)
def test_bad_input(tmp_path: Path, text: str, line: int, needle: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as info:
        read_stockholm(path)
    assert needle in str(info.value)
    assert f"{path}:{line}" in str(info.value)


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no Stockholm alignment"):
        read_stockholm(_write(tmp_path, "\n"))


def test_rows_of_one_id_are_refused_not_written(tmp_path: Path) -> None:
    """Every Stockholm reader joins rows of one name into one (interleaved blocks): two rows
    with the same id are refused, and nothing is written."""
    out = tmp_path / "d.sto"
    msa = MSA(["q", "s1", "s1"], ["ACDEFGHIKL", "AC-EFGHIKL", "ACDEFGHIK-"])
    with pytest.raises(ValueError, match="'s1' is the name of rows 2 and 3"):
        write_stockholm(out, msa)
    assert not out.exists()
