"""TM-align reference pairs: cigar decoding, every line of both real TSVs, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from homalign.errors import InputError
from homalign.io import TMALIGN_COLUMNS, cigar_pairs, pir_to_msa, read_pir, read_tmalign_pairs
from homalign.paths import shared_data_root

DATA = shared_data_root()  # shared, read-only
HEADER = "\t".join(TMALIGN_COLUMNS) + "\n"


def _line(cigar: str = "2P1D1I1M", qseq: str = "ACDE", tseq: str = "KLMN",
          aligned: str = "3") -> str:
    return "\t".join(["d1", "d2", "a.1.1.1", "a.1.1.2", "0.7", "0.6", "0.65", "1.5", aligned,
                      cigar, qseq, tseq]) + "\n"


def test_cigar_convention() -> None:
    # P/M: pair, D: query residue only, I: target residue only
    pairs, close, qlen, tlen = cigar_pairs("2P1D1I1M")
    assert pairs.dtype == np.int32 and pairs.shape == (3, 2)
    assert pairs.tolist() == [[0, 0], [1, 1], [3, 3]]
    assert close.tolist() == [True, True, False]
    assert (qlen, tlen) == (4, 4)
    pairs, _, qlen, tlen = cigar_pairs("3I2D")
    assert pairs.shape == (0, 2) and (qlen, tlen) == (2, 3)


@pytest.mark.parametrize("cigar", ["", "2X", "P2", "2P-1D", "0P", "2P 1D"])
def test_bad_cigar_raises(cigar: str) -> None:
    with pytest.raises(ValueError):
        cigar_pairs(cigar)


def test_read_synthetic(tmp_path: Path) -> None:
    path = tmp_path / "p.tsv"
    path.write_text(HEADER + _line() + "\n")
    (pair,) = read_tmalign_pairs(path)
    assert (pair.query, pair.target, pair.query_sccs, pair.target_sccs) == (
        "d1", "d2", "a.1.1.1", "a.1.1.2")
    assert (pair.tm1, pair.tm2, pair.tm3, pair.rmsd, pair.aligned) == (0.7, 0.6, 0.65, 1.5, 3)
    assert pair.pairs.tolist() == [[0, 0], [1, 1], [3, 3]]


@pytest.mark.parametrize(
    ("body", "line", "needle"),
    [
        (_line(cigar="3P1D"), 2, "cigar consumes 4 query and 3 target"),
        (_line(cigar="2P1D2I1M"), 3, "cigar consumes 4 query and 5 target"),
        (_line(cigar="2P1X"), 2, "unreadable cigar"),
        (_line(aligned="4"), 2, "'aligned' is 4"),
        (_line(aligned="x"), 2, "not a number"),
        (_line(qseq="AC1E"), 2, "letters"),
        ("a\tb\n", 2, "expected 12"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, body: str, line: int, needle: str) -> None:
    path = tmp_path / "bad.tsv"
    path.write_text(HEADER + (_line() if line == 3 else "") + body)
    with pytest.raises(InputError) as info:
        list(read_tmalign_pairs(path))
    assert needle in str(info.value)
    assert f"{path}:{line}" in str(info.value)


def test_missing_header(tmp_path: Path) -> None:
    path = tmp_path / "bad.tsv"
    path.write_text(_line())
    with pytest.raises(InputError, match=r"bad\.tsv:1: expected the header"):
        list(read_tmalign_pairs(path))
    path.write_text("")
    with pytest.raises(InputError, match="empty file"):
        list(read_tmalign_pairs(path))


@pytest.mark.parametrize(("split", "expected"), [("train", 4673), ("dev", 425)])
def test_every_line_of_the_real_tsv(split: str, expected: int) -> None:
    pairs = list(read_tmalign_pairs(DATA / "scope" / f"tmalign-pairs.{split}.tsv"))
    assert len(pairs) == expected
    for p in pairs:
        assert len(p.pairs) == p.aligned > 0
        assert p.pairs[:, 0].max() < len(p.query_seq) and p.pairs[:, 1].max() < len(p.target_seq)
        assert np.all(np.diff(p.pairs, axis=0) > 0)
        assert 0.0 < p.tm1 <= 1.0 and p.rmsd >= 0.0


def test_dev_tsv_agrees_with_the_dev_pir_families() -> None:
    """The dev pairs also exist as two-member PIR families: both encodings give the same pairs."""
    root = DATA / "tmalign" / "dev"
    n = 0
    for pair in read_tmalign_pairs(DATA / "scope" / "tmalign-pairs.dev.tsv"):
        name = f"{pair.query}-{pair.target}"
        entries = read_pir(root / name / f"{name}.ali")
        assert [e.id for e in entries] == [pair.query, pair.target]
        assert entries[0].sequence == pair.query_seq and entries[1].sequence == pair.target_seq
        np.testing.assert_array_equal(pir_to_msa(entries).pairs(0, 1), pair.pairs)
        n += 1
    assert n == 425
