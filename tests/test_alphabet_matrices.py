import numpy as np
import pytest
from Bio.Align import substitution_matrices

from homalign.alphabet import ALPHABET, BACKGROUND, decode, encode, one_hot
from homalign.errors import InputError
from homalign.matrices import MATRIX_NAMES, score_matrix, substitution_matrix


def test_encode_roundtrip_and_case():
    assert decode(encode("acdefghiklmnpqrstvwy")) == "ACDEFGHIKLMNPQRSTVWY"
    assert decode(encode("MKV*")) == "MKV"


def test_rare_residues_fold_to_standard():
    assert decode(encode("UOJBZX")) == "CKXBZX"


@pytest.mark.parametrize("bad,pos", [("MK1V", 3), ("MK V", 3), ("M-KV", 2)])
def test_encode_rejects_non_residues_naming_position(bad, pos):
    with pytest.raises(InputError) as err:
        encode(bad, path="x.fa", record="r1")
    msg = str(err.value)
    assert "x.fa" in msg and "'r1'" in msg and f"position {pos}" in msg


def test_encode_rejects_empty():
    with pytest.raises(InputError, match="empty"):
        encode("")


def test_one_hot_rows():
    oh = one_hot(encode("AX"))
    assert oh[0, 0] == 1 and oh[0].sum() == 1
    assert np.isclose(oh[1].sum(), 1) and np.allclose(oh[1], BACKGROUND, atol=1e-6)


@pytest.mark.parametrize("name", MATRIX_NAMES)
def test_matrices_match_biopython(name):
    bio = substitution_matrices.load(name)
    m = substitution_matrix(name)
    assert m.shape == (23, 23) and m.dtype == np.float32
    for a in ALPHABET:
        for b in ALPHABET:
            assert m[ALPHABET.index(a), ALPHABET.index(b)] == bio[a][b]


def test_score_matrix_lookup():
    s = score_matrix(encode("WC"), encode("CWA"))
    assert s.tolist() == [[-2, 11, -3], [9, -2, 0]]


def test_unknown_matrix():
    with pytest.raises(ValueError, match="unknown substitution matrix"):
        substitution_matrix("BLOSUM99")
