"""Profile maths on hand-computed examples: weights, Neff, pseudocounts, gap statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from homalign.alphabet import ALPHABET, BACKGROUND
from homalign.errors import InputError
from homalign.matrices import substitution_matrix
from homalign.profile import Profile, add_pseudocounts, dirichlet_mixture, henikoff_weights
from homalign.profile.mixtures import SJOLANDER9_ALPHA, SJOLANDER9_WEIGHTS
from homalign.profile.profile import encode_rows
from homalign.profile.pseudocounts import conditional_matrix, matrix_lambda
from homalign.profile.sequence_weights import column_neff, msa_neff


def test_henikoff_weights_hand_example():
    # col 1: A A C -> r=2: 1/4, 1/4, 1/2; col 2: A C C -> 1/2, 1/4, 1/4; sums 3/4, 1/2, 3/4
    w = henikoff_weights(encode_rows(["AA", "AC", "CC"]))
    np.testing.assert_allclose(w, [0.375, 0.25, 0.375])


def test_henikoff_weights_ignore_gaps_and_identical_rows_share():
    w = henikoff_weights(encode_rows(["AC-", "AC-", "GWY"]))
    # col1 A,A,G r=2 -> 1/4,1/4,1/2; col2 same; col3 only Y: r=1 -> third gets 1
    np.testing.assert_allclose(w, np.array([0.5, 0.5, 2.0]) / 3.0)


def test_neff_hand_values():
    f = np.zeros((3, 20))
    f[0, 0] = 1.0
    f[1, :2] = 0.5
    f[2, :4] = 0.25
    np.testing.assert_allclose(column_neff(f), [1.0, 2.0, 4.0])
    assert msa_neff(f) == pytest.approx(7.0 / 3.0)


@pytest.mark.parametrize("method", ["matrix", "dirichlet", "none"])
def test_pseudocounts_sum_to_one(method):
    rng = np.random.default_rng(0)
    f = rng.dirichlet(np.ones(20) * 0.3, size=7)
    f[3] = 0.0  # an empty column falls back to the background
    p = add_pseudocounts(f, np.linspace(1, 12, 7), method)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert (p >= 0).all()
    np.testing.assert_allclose(p[3], BACKGROUND, atol=1e-12)


def test_matrix_pseudocounts_one_sequence_reproduce_matrix():
    # full pseudocount weight: log-odds = S(a, b) - ln(Z_b)/lambda, |offset| < 0.45
    prof = Profile.from_sequence(ALPHABET[:20])
    S = substitution_matrix("BLOSUM62")[:20, :20]
    diff = prof.pssm()[:, :20] - S
    assert np.abs(diff).max() < 0.45
    assert np.ptp(diff, axis=1).max() < 1e-4  # a pure per-row offset
    P = conditional_matrix()
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert 0.30 < matrix_lambda() < 0.33  # BLOSUM62 ungapped lambda (0.3176 with these freqs)


def test_more_sequences_weigh_data_more():
    one = Profile.from_rows(["W"])
    many = Profile.from_rows(["W", "W", "F", "Y", "W"])
    w = ALPHABET.index("W")
    assert many.neff > 1.0
    assert many.probs[0, ALPHABET.index("F")] > one.probs[0, ALPHABET.index("F")]
    assert many.freqs[0, w] < 1.0


def _mixture_by_hand(c, alpha, q):
    post = []
    for k in range(len(q)):
        a = alpha[k]
        v = math.log(q[k]) + math.lgamma(a.sum()) - math.lgamma(a.sum() + c.sum())
        v += sum(math.lgamma(a[i] + c[i]) - math.lgamma(a[i]) for i in range(len(c)))
        post.append(v)
    post = np.exp(np.array(post) - max(post))
    post /= post.sum()
    return sum(post[k] * (c + alpha[k]) / (c.sum() + alpha[k].sum()) for k in range(len(q)))


def test_dirichlet_mixture_matches_hand_formula():
    c = np.zeros(20)
    c[ALPHABET.index("L")] = 3.0
    c[ALPHABET.index("I")] = 1.5
    got = dirichlet_mixture(c[None, :])[0]
    want = _mixture_by_hand(c, SJOLANDER9_ALPHA, SJOLANDER9_WEIGHTS)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert got[ALPHABET.index("V")] > got[ALPHABET.index("D")]  # hydrophobic component wins
    # one component: the posterior mean (c + alpha) / (n + |alpha|)
    a = np.full((1, 20), 0.5)
    np.testing.assert_allclose(dirichlet_mixture(c[None, :], a, np.ones(1))[0],
                               (c + 0.5) / (c.sum() + 10.0))


def test_gap_statistics_hand_example():
    rows = ["ACDEF", "AC-EF", "--DEF", "AC-EF"]
    p = Profile.from_rows(rows, weights=np.ones(4))
    g = p.gap_stats
    # column 2 (D): inside the span of all four; rows 2 and 4 delete it
    assert g["p_del"][2] == pytest.approx(0.5)
    # columns 0-1: row 3 has not started (terminal gaps are not deletions)
    assert g["p_del"][0] == 0.0 and g["n_span"][0] == pytest.approx(0.75 * p.neff)
    t = p.trans_counts / p.neff * 4  # back to sequence counts
    assert t[1, 0] == pytest.approx(1.0)  # M->M at column 1: row 1 only
    assert t[1, 2] == pytest.approx(2.0)  # M->D: rows 2 and 4
    assert t[2, 5] == pytest.approx(2.0)  # D->M
    assert t[4].sum() == 0.0  # nothing leaves the last column


def test_inserts_from_non_match_columns():
    p = Profile.from_rows(["AC--DE", "ACkwDE", "AC-qDE"], weights=np.ones(3))
    assert p.query.residues == "ACDE"
    t = p.trans_counts / p.neff * 3
    assert t[1, 3] == pytest.approx(2.0)  # two rows insert after column 1
    assert t[1, 4] == pytest.approx(1.0)  # one extra inserted residue: I->I
    assert p.gap_stats["p_ins"][1] == pytest.approx(2 / 3)
    assert p.gap_stats["ins_len"][1] == pytest.approx(1.5)


def test_gap_vectors_one_sequence_is_plain_affine():
    v = Profile.from_sequence("ACDEFGHIK").gap_vectors(11.0, 1.0)
    np.testing.assert_allclose(v["del_open"], 11.0)
    np.testing.assert_allclose(v["ins_open"], 11.0)
    gapped = Profile.from_rows(["ACDEFG", "SC--FA", "AT--YG", "GCD-WG"])
    d = gapped.gap_vectors(11.0, 1.0)["del_open"]
    assert d[3] < d[2] < 11.0 < d[0]  # cheaper where the family has gaps


def test_bad_msa_input():
    with pytest.raises(InputError, match="columns"):
        Profile.from_rows(["ACD", "AC"], ["a", "b"], path="x.fa")
    with pytest.raises(InputError, match="empty"):
        Profile.from_rows([])
    with pytest.raises(InputError, match="invalid MSA character"):
        Profile.from_rows(["AC1"])
    with pytest.raises(InputError, match="no residue"):
        Profile.from_rows(["---", "ACD"])


@pytest.mark.parametrize("kind", ["logodds", "average"])
def test_a_query_x_scores_as_the_matrix_x_row(kind):
    """An X of the query is an unknown residue: its PSSM row is the matrix's X row (as BLAST
    scores it), whatever the MSA aligns there, so local alignments do not run through runs of
    X at no cost; other columns keep their scores."""
    rows = ["MKXXLAW", "MKVILAW", "MRVLLSW"]
    prof = Profile.from_rows(rows)
    got = prof.pssm(kind)
    x_row = substitution_matrix("BLOSUM62")[ALPHABET.index("X")]
    for col in (2, 3):
        np.testing.assert_array_equal(got[col], x_row.astype(np.float32))
    plain = Profile.from_rows(["MKVILAW", "MKVILAW", "MRVLLSW"]).pssm(kind)
    assert got[0, ALPHABET.index("M")] > 0 and got[6, ALPHABET.index("W")] > 0
    assert plain[2].max() > x_row.max()


def test_an_x_flanked_query_aligns_its_real_residues_only():
    """A query of 40 real residues between runs of X: the PSSM search's hits stay inside the
    40 (PSI-BLAST's behaviour), the identical target first, also after three rounds."""
    import homalign
    from homalign.search import SequenceDB
    from homalign.sequence import Sequence
    from proteins import mutate, random_protein

    rng = np.random.default_rng(4)
    core = random_protein(rng, 40)
    db = SequenceDB.from_sequences(
        [Sequence("same", core)]
        + [Sequence(f"homolog{k}", random_protein(rng, 30) + mutate(rng, core, 0.3)
                    + random_protein(rng, 40)) for k in range(4)]
        + [Sequence(f"r{k}", random_protein(rng, 120)) for k in range(20)])
    query = Sequence("xrich", "X" * 60 + core + "X" * 30)
    for rounds in (1, 3):
        hits = homalign.search(query, db, "pssm", iterations=rounds, evalue=1.0)
        assert hits[0].target_id == "same"
        for h in hits:
            start, end = h.alignment.query_span
            assert 60 <= start and end <= 100, (rounds, h.target_id, start, end)
