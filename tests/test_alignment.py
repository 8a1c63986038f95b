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


def test_identity_counts_residues_by_code_as_the_scores_do():
    # a query's U/O/J against a makedb database's stored C/K/X (and either case) are identical
    a = make([[0, 0], [1, 1], [2, 2], [3, 3]], q="UOJA", t="ckxW")
    assert a.n_identical == 3 and a.identity == 0.75


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


def test_a_global_alignment_is_shown_end_to_end(tmp_path):
    """nw's pair display holds both sequences whole and counts the end gaps (needle's view);
    a local alignment shows its aligned region."""
    import homalign

    nw = homalign.align("AAAHEAGAWGHEE", "HEAGAWGHEEKK", method="nw")
    text = format_pair(nw)
    assert "gaps=5/15" in text
    assert "Query  1     AAAHEAGAWGHEE--  13" in text and "Sbjct  1     ---HEAGAWGHEEKK  12" in text
    sw = homalign.align("AAAHEAGAWGHEE", "HEAGAWGHEEKK", method="sw")
    assert "gaps=0/10" in format_pair(sw) and "Query  4     HEAGAWGHEE  13" in format_pair(sw)
    db = tmp_path / "db.fa"
    db.write_text(">t\nHEAGAWGHEEKK\n")
    hits = homalign.search("AAAHEAGAWGHEE", db, "nw", evalue=1e9)
    assert hits and hits[0].alignment.extra["mode"] == "global"


def _gapped_by_walking(a: Alignment, full: bool) -> tuple[str, str]:
    """The gapped rows column by column (reference for the array version)."""
    q, t = a.query, a.target
    if a.length == 0:
        return ("", "") if not full else (q + "-" * len(t), "-" * len(q) + t)
    qa, ta = [], []
    pi, pj = (0, 0) if full else (int(a.pairs[0, 0]), int(a.pairs[0, 1]))
    for i, j in a.pairs.tolist():
        qa.append(q[pi:i] + "-" * (j - pj) + q[i])
        ta.append("-" * (i - pi) + t[pj:j] + t[j])
        pi, pj = i + 1, j + 1
    if full:
        qa.append(q[pi:] + "-" * (len(t) - pj))
        ta.append("-" * (len(q) - pi) + t[pj:])
    return "".join(qa), "".join(ta)


def test_gapped_rows_equal_a_column_walk_on_random_alignments() -> None:
    rng = np.random.default_rng(0)
    letters = list("ACDEFGHIKLMNPQRSTVWY")
    for _ in range(500):
        lq, lt = (int(x) for x in rng.integers(1, 25, 2))
        q, t = "".join(rng.choice(letters, lq)), "".join(rng.choice(letters, lt))
        n = int(rng.integers(0, min(lq, lt) + 1))
        pairs = np.stack([np.sort(rng.choice(lq, n, replace=False)),
                          np.sort(rng.choice(lt, n, replace=False))], axis=1).reshape(-1, 2)
        a = Alignment("q", "t", q, t, pairs, 0.0, "test")
        for full in (False, True):
            assert a.gapped(full) == _gapped_by_walking(a, full)
