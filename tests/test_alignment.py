import numpy as np
import pytest

from homalign.alignment import Alignment, cigar_from_pairs
from homalign.report import format_a3m, format_fasta, format_pair


def make(pairs, q="ACDEFG", t="ACEFGH"):
    return Alignment("q", "t", q, t, np.array(pairs), 10.0, "test")


def test_cigar_and_gapped_strings():
    a = make([[0, 0], [1, 1], [3, 2], [4, 3], [5, 4]])
    assert a.cigar == "2M1I3M"
    assert a.gapped() == ("ACDEFG", "AC-EFG")
    assert a.gapped(full=True) == ("ACDEFG-", "AC-EFGH")
    assert a.identity == 1.0
    assert a.coverage == pytest.approx(5 / 6)
    assert a.n_gap_opens == 1


def test_cigar_deletion_then_insertion():
    assert cigar_from_pairs(np.array([[0, 0], [1, 3], [4, 4]])) == "1M2D1M2I1M"


def test_pairs_must_increase():
    with pytest.raises(ValueError, match="strictly increasing"):
        make([[0, 0], [0, 1]])
    with pytest.raises(ValueError, match="outside"):
        make([[0, 9]])


def test_empty_alignment():
    a = make(np.zeros((0, 2)))
    assert a.length == 0 and a.identity == 0 and a.cigar == "" and a.gapped() == ("", "")
    assert "no alignment" in format_pair(a)


def test_to_biopython_matches_gapped_strings():
    a = make([[0, 0], [1, 1], [3, 2], [4, 3], [5, 4]])
    bio = a.to_biopython()
    assert bio[0] == "ACDEFG-" and bio[1] == "AC-EFGH"


def test_renderings():
    a = make([[0, 0], [1, 1], [3, 2], [4, 3], [5, 4]])
    assert format_fasta(a) == ">q\nACDEFG-\n>t\nAC-EFGH\n"
    # A3M: query is master; the target's H after the query's end is an insert (lowercase)
    assert format_a3m(a).splitlines()[3] == "AC-EFGh"
    text = format_pair(a)
    assert "Query  1     ACDEFG  6" in text and "Sbjct  1     AC-EFG  5" in text
