"""MSA type, aligned FASTA and A3M."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from homalign.errors import InputError
from homalign.io import MSA, read_a3m, read_aligned_fasta, write_a3m, write_aligned_fasta


def _write(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_msa_shape_and_pairs() -> None:
    msa = MSA(["a", "b"], ["AC-DE", "-CFd."])
    assert (msa.n_seqs, msa.n_cols) == (2, 5)
    assert msa.descriptions == ["", ""]
    assert msa.ungapped(1) == "CFd"
    # columns 1 and 3 have residues in both rows: a:C(1)~b:C(0), a:D(2)~b:d(2)
    np.testing.assert_array_equal(msa.pairs(0, 1), [[1, 0], [2, 2]])
    assert msa.pairs(0, 1).dtype == np.int32
    assert msa.pairs(0, 1).shape == (2, 2)
    empty = MSA(["a", "b"], ["A-", "-C"]).pairs(0, 1)
    assert empty.shape == (0, 2)


def test_msa_rejects_unequal_rows() -> None:
    with pytest.raises(InputError, match="record 'b'"):
        MSA(["a", "b"], ["ACD", "AC"])
    with pytest.raises(ValueError):
        MSA(["a"], ["ACD", "ACD"])


def test_aligned_fasta_round_trip(tmp_path: Path) -> None:
    msa = MSA(["q", "t1", "t2"], ["AC-DEfg", "A--DEFG", ".CKDE-g"], ["query x", "", "t"])
    path = tmp_path / "aln.fa"
    write_aligned_fasta(path, msa, width=3)
    assert read_aligned_fasta(path) == msa


def test_aligned_fasta_unequal_rows_names_file_record_line(tmp_path: Path) -> None:
    path = _write(tmp_path, ">a\nAC-D\n>b\nAC\n-D\n>c\nACD\n", "bad.fa")
    with pytest.raises(InputError) as info:
        read_aligned_fasta(path)
    err = info.value
    assert err.record == "c" and err.line == 6
    assert f"{path}:6" in str(err) and "record 'c'" in str(err)


def test_aligned_fasta_propagates_fasta_errors(tmp_path: Path) -> None:
    path = _write(tmp_path, ">a\nAC-D\n>b\nAC+D\n", "bad.fa")
    with pytest.raises(InputError, match=r"bad\.fa:4"):
        read_aligned_fasta(path)


A3M = """#A3M#
#another header line
>query some protein
ACDEFG
>hit1 desc
AC-efEFG
>hit2
aACD..EFGkl
"""


def test_read_a3m_removes_and_keeps_inserts(tmp_path: Path) -> None:
    msa = read_a3m(_write(tmp_path, A3M, "x.a3m"))
    assert msa.ids == ["query", "hit1", "hit2"]
    assert msa.descriptions == ["some protein", "desc", ""]
    assert msa.rows == ["ACDEFG", "AC-EFG", "ACDEFG"]
    assert msa.insertions is not None
    assert msa.insertions[1] == ["", "", "", "ef", "", "", ""]
    assert msa.insertions[2] == ["a", "", "", "", "", "", "kl"]
    lengths = msa.insertion_lengths()
    assert lengths.shape == (3, 7) and lengths.dtype == np.int32
    np.testing.assert_array_equal(lengths.sum(axis=1), [0, 2, 3])


def test_a3m_round_trip_exact(tmp_path: Path) -> None:
    msa = read_a3m(_write(tmp_path, A3M, "x.a3m"))
    out = tmp_path / "y.a3m"
    write_a3m(out, msa)
    assert out.read_text() == (
        ">query some protein\nACDEFG\n>hit1 desc\nAC-efEFG\n>hit2\naACDEFGkl\n"
    )
    assert read_a3m(out) == msa


def test_from_a3m_matches_reader(tmp_path: Path) -> None:
    msa = read_a3m(_write(tmp_path, A3M, "x.a3m"))
    built = MSA.from_a3m(["query", "hit1", "hit2"], ["ACDEFG", "AC-efEFG", "aACD..EFGkl"],
                         ["some protein", "desc", ""])
    assert built == msa
    with pytest.raises(InputError, match="match columns"):
        MSA.from_a3m(["a", "b"], ["ACD", "ACdDE"])


def test_a3m_first_row_lowercase_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "#h\n>q\nACdE\n>t\nACE\n", "bad.a3m")
    with pytest.raises(InputError) as info:
        read_a3m(path)
    assert f"{path}:2" in str(info.value) and "first A3M row" in str(info.value)
    assert info.value.record == "q"


def test_a3m_match_count_mismatch(tmp_path: Path) -> None:
    path = _write(tmp_path, ">q\nACDE\n>t1\nAcCDE\n>t2\nAC-\n", "bad.a3m")
    with pytest.raises(InputError) as info:
        read_a3m(path)
    assert f"{path}:5" in str(info.value) and "record 't2'" in str(info.value)


def test_a3m_hash_only_skipped_at_top(tmp_path: Path) -> None:
    path = _write(tmp_path, ">q\nACDE\n#x\n", "bad.a3m")
    with pytest.raises(InputError, match=r"bad\.a3m:3.*invalid character '#'"):
        read_a3m(path)


def test_write_a3m_uppercases_aligned_fasta_rows(tmp_path: Path) -> None:
    msa = MSA(["a", "b"], ["ac-d", "A.cD"])
    out = tmp_path / "o.a3m"
    write_a3m(out, msa)
    assert read_a3m(out).rows == ["AC-D", "A-CD"]


def test_write_a3m_rejects_first_row_insertions(tmp_path: Path) -> None:
    msa = MSA(["a", "b"], ["AC", "AC"], insertions=[["x", "", ""], ["", "", ""]])
    with pytest.raises(ValueError, match="first A3M row"):
        write_a3m(tmp_path / "o.a3m", msa)
    assert list(tmp_path.iterdir()) == []


_match_cols = st.integers(min_value=1, max_value=30)


@st.composite
def _a3m_msas(draw: st.DrawFn) -> MSA:
    n_cols = draw(_match_cols)
    n_rows = draw(st.integers(min_value=1, max_value=6))
    match = st.text(st.sampled_from("ACDEFGHIKLMNPQRSTVWY-"), min_size=n_cols, max_size=n_cols)
    first = draw(match.filter(lambda s: any(c != "-" for c in s)))
    rows, inserts = [first], [[""] * (n_cols + 1)]
    for _ in range(n_rows - 1):
        rows.append(draw(match))
        inserts.append(draw(st.lists(st.text(st.sampled_from("acdefghiklmnpqrstvwy"),
                                             max_size=4),
                                     min_size=n_cols + 1, max_size=n_cols + 1)))
    ids = [f"s{i}" for i in range(n_rows)]
    descriptions = draw(st.lists(st.sampled_from(["", "desc", "a b  c"]), min_size=n_rows,
                                 max_size=n_rows))
    return MSA(ids, rows, descriptions, insertions=inserts)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(msa=_a3m_msas())
def test_a3m_round_trip_hypothesis(tmp_path: Path, msa: MSA) -> None:
    path = tmp_path / "rt.a3m"
    write_a3m(path, msa)
    back = read_a3m(path)
    assert back == msa
    np.testing.assert_array_equal(back.insertion_lengths(), msa.insertion_lengths())


def test_a3m_hhsuite_annotation_rows(tmp_path: Path) -> None:
    text = "#A3M#\n>ss_pred PSIPRED\nCHHE\n>ss_conf\n8996\n>q\nACDE\n>t\nAkC-E\n"
    msa = read_a3m(_write(tmp_path, text, "ss.a3m"))
    assert msa.ids == ["q", "t"]
    assert msa.rows == ["ACDE", "AC-E"]
    assert msa.annotations == {"hhsuite": {"ss_pred": "CHHE", "ss_conf": "8996"}}
    out = tmp_path / "out.a3m"
    write_a3m(out, msa)
    assert read_a3m(out) == msa
    bad = _write(tmp_path, ">ss_pred\nCHH\n>q\nACDE\n", "bad.a3m")
    with pytest.raises(InputError) as info:
        read_a3m(bad)
    assert f"{bad}:1" in str(info.value) and "record 'ss_pred'" in str(info.value)
