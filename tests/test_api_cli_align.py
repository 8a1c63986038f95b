"""The public API and the ``homalign align`` verb, end to end."""

import numpy as np
import pytest
from Bio import Align
from Bio.Align import substitution_matrices

import homalign
from homalign.cli import main
from homalign.methods import get_method, method_names


def bio_score(q: str, t: str, mode: str, open_: float = 11, extend: float = 1) -> float:
    a = Align.PairwiseAligner()
    a.substitution_matrix = substitution_matrices.load("BLOSUM62")
    a.mode = mode
    # Biopython charges open_gap_score for the first gap residue: BLAST's open+extend.
    a.open_gap_score = -(open_ + extend)
    a.extend_gap_score = -extend
    return a.score(q, t)


Q = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQ"
T = "MKTAYIAKQRQISFVKSHFSRQDEERLGLIEVQGDNLSGAEKAVQVKVKALPDAQFEVVHSLAKWKRQ"


@pytest.mark.parametrize("method,mode", [("sw", "local"), ("nw", "global")])
def test_align_score_matches_biopython(method, mode):
    aln = homalign.align(Q, T, method=method)
    assert aln.score == pytest.approx(bio_score(Q, T, mode))
    assert aln.method == method and aln.length > 40


def test_gap_convention_is_blast():
    # One-residue deletion in an otherwise identical pair: 11/1 charges 12.
    q = "WWWWWCWWWWW"
    t = "WWWWWWWWWW"
    aln = homalign.align(q, t, method="nw", gap_open=11, gap_extend=1)
    assert aln.score == pytest.approx(10 * 11 - 12)
    assert aln.cigar == "5M1I5M"


def test_registry_lists_sequence_methods():
    names = method_names("sequence")
    assert {"sw", "nw", "glocal", "semiglobal"} <= set(names)
    with pytest.raises(ValueError, match="unknown method"):
        get_method("nope")


@pytest.fixture
def fasta_pair(tmp_path):
    q = tmp_path / "q.fa"
    t = tmp_path / "t.fa"
    q.write_text(f">q1 query\n{Q[:30]}\n{Q[30:].lower()}*\n")
    t.write_text(f">t1\n{T}\n>t2\n{T[5:]}\n")
    return q, t


@pytest.mark.parametrize("fmt", ["pair", "fasta", "a3m", "tab"])
def test_cli_align_formats(fasta_pair, capsys, fmt):
    q, t = fasta_pair
    assert main(["align", str(q), str(t), "--method", "sw", "--format", fmt]) == 0
    out = capsys.readouterr().out
    if fmt == "fasta":
        recs = out.split(">")[1:]
        assert len(recs) == 4
        qa = recs[0].split("\n", 1)[1].replace("\n", "")
        ta = recs[1].split("\n", 1)[1].replace("\n", "")
        assert len(qa) == len(ta) and qa.replace("-", "") == Q
    elif fmt == "tab":
        rows = [r.split("\t") for r in out.strip().splitlines()]
        assert len(rows) == 2 and rows[0][0] == "q1" and rows[0][1] == "t1"
        assert len(rows[0]) == 12  # exactly BLAST's 12 standard columns
        assert float(rows[0][10]) > 0 and float(rows[0][11]) > 0  # sw: Karlin-Altschul
    elif fmt == "a3m":
        assert out.count(">") == 4
    else:
        assert "Query" in out and "Sbjct" in out and "method=sw" in out


def test_cli_bad_input_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.fa"
    bad.write_text(">x\nMKV1A\n")
    good = tmp_path / "good.fa"
    good.write_text(">y\nMKVA\n")
    assert main(["align", str(bad), str(good)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "bad.fa" in err and "Traceback" not in err


def test_cli_missing_file(tmp_path, capsys):
    assert main(["align", str(tmp_path / "missing.fa"), str(tmp_path / "x.fa")]) == 2
    assert "missing.fa" in capsys.readouterr().err


def test_cli_writes_output_file(fasta_pair, tmp_path):
    q, t = fasta_pair
    out = tmp_path / "out.txt"
    assert main(["align", str(q), str(t), "--format", "fasta", "-o", str(out)]) == 0
    assert out.read_text().count(">") == 4
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") or "tmp" in p.name]


def test_default_method_is_learned(fasta_pair, capsys):
    assert homalign.align(Q, T).method == "learned"
    q, t = fasta_pair
    assert main(["align", str(q), str(t)]) == 0
    assert capsys.readouterr().out.count("method=learned") == 2


def test_alignment_pairs_are_valid_numpy():
    aln = homalign.align(Q, T, method="sw")
    assert aln.pairs.dtype == np.int32 and (np.diff(aln.pairs, axis=0) > 0).all()
