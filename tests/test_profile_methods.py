"""Profile methods through the registry, homalign.align and the CLI."""

from __future__ import annotations

import numpy as np
import pytest

import homalign
from homalign.errors import InputError
from homalign.methods import get_method, method_names
from homalign.sequence import Sequence

Q = Sequence("q", "MKVLAAGIVGLLLAGCSSHKEEAPKAEEAAPAAEEKTEKAEWWHRT")
T = Sequence("t", "MKVLAAGIVALLLSGCSSHKEEAPKAEAAPAEEKTEKAE")
A3M = ">q\nMKVLAAGIVGLLLAGCSSHKEEAPKAEEAAPAAEEKTEKAEWWHRT\n" \
      ">h1\nMKILAAGVVGLLLAGCTSHKDEAPKAEEAAPSAEEKTEKAEWWHRS\n" \
      ">h2\n---LSAGIVGLLLAGCSSHRDEAPKAdEE--PAAEEKSEKAEW----\n"

PROFILE_METHODS = ("pssm", "profile-profile", "compass", "prof-sim", "hhm", "hmm")


def test_registered():
    names = method_names()
    for name in (*PROFILE_METHODS, "hhm-mac"):
        assert name in names
    assert get_method("pssm").kind == "profile" and get_method("hhm").kind == "hmm"


def test_single_sequence_without_pseudocounts_reproduces_sw():
    sw = homalign.align(Q, T, method="sw")
    ps = homalign.align(Q, T, method="pssm", pseudocounts="none", pssm_kind="average")
    assert ps.score == pytest.approx(sw.score)
    np.testing.assert_array_equal(ps.pairs, sw.pairs)


def test_single_sequence_logodds_pssm_close_to_sw():
    sw = homalign.align(Q, T, method="sw")
    ps = homalign.align(Q, T, method="pssm")
    assert abs(ps.score - sw.score) <= 0.45 * sw.length
    assert len(set(map(tuple, ps.pairs)) & set(map(tuple, sw.pairs))) >= 0.9 * sw.length


@pytest.mark.parametrize("method", PROFILE_METHODS)
def test_each_method_aligns_homologs(method):
    aln = homalign.align(Q, T, method=method)
    assert aln.method == method
    assert aln.length >= 30
    # the homologous region is found: most pairs sit near the diagonal of the shared prefix
    assert np.mean(np.abs(aln.pairs[:, 0] - aln.pairs[:, 1]) <= 2) > 0.9


def test_compass_is_symmetric_for_single_sequences():
    a = homalign.align(Q, T, method="compass")
    b = homalign.align(T, Q, method="compass")
    assert a.score == pytest.approx(b.score, rel=1e-5)


def test_msa_files_change_the_profile(tmp_path):
    path = tmp_path / "q.a3m"
    path.write_text(A3M)
    single = homalign.align(Q, T, method="pssm")
    with_msa = homalign.align(Q, T, method="pssm", query_msa=str(path))
    assert with_msa.score != single.score
    hh = homalign.align(Q, T, method="hhm", query_msa=str(path))
    assert hh.length >= 30
    hm = homalign.align(Q, T, method="hmm", query_msa=str(path))
    assert hm.length >= 30
    # a directory of <id>.a3m files is used for whichever side has one
    d = homalign.align(Q, T, method="pssm", msa=str(tmp_path))
    assert d.score == pytest.approx(with_msa.score)


def test_msa_for_another_sequence_is_rejected(tmp_path):
    path = tmp_path / "other.a3m"
    path.write_text(">x\nMKVLAAGIV\n>y\nMKVLSAGIV\n")
    with pytest.raises(InputError, match="not the sequence"):
        homalign.align(Q, T, method="pssm", query_msa=str(path))


def test_iterative_needs_a_database():
    with pytest.raises(ValueError, match="db="):
        homalign.align(Q, T, method="pssm", msa="iterative:2")


def test_hhm_file_as_query(tmp_path):
    from test_profile_formats import HHM

    path = tmp_path / "q.hhm"
    path.write_text(HHM)
    aln = homalign.align(Sequence("q", "MKVLA"), Sequence("t", "GGMKVLAGG"), method="hhm",
                         query_hhm=str(path))
    assert [tuple(p) for p in aln.pairs] == [(0, 2), (1, 3), (2, 4), (3, 5), (4, 6)]


def test_hhm_mac_aligns():
    assert get_method("hhm-mac").available() is None
    aln = homalign.align(Q, T, method="hhm-mac")
    assert aln.length >= 30
    assert np.mean(np.abs(aln.pairs[:, 0] - aln.pairs[:, 1]) <= 2) > 0.9


@pytest.mark.parametrize("method", ["pssm", "compass", "hhm", "hmm"])
def test_cli_align(tmp_path, capsys, method):
    from homalign.cli import main

    q = tmp_path / "q.fa"
    t = tmp_path / "t.fa"
    q.write_text(f">q\n{Q.residues}\n")
    t.write_text(f">t\n{T.residues}\n")
    assert main(["align", str(q), str(t), "--method", method]) == 0
    out = capsys.readouterr().out
    assert "q" in out and "t" in out and "MKVLAAGIV" in out


@pytest.mark.parametrize("name, text, message", [
    ("lower.a3m", ">q\nMKVLaaGIV\n>h\nMKVLGIV\n", "lower"),
    ("empty.a3m", "", "empty|no record|no sequence"),
    ("ragged.fa", ">q\nMKV-LA\n>h\nMKVLA\n", "column"),
])
def test_bad_msa_files_name_file_and_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError, match=message) as err:
        homalign.align(Sequence("q", "MKVLAAGIV"), T, method="pssm", query_msa=str(path))
    assert err.value.path == str(path)
    assert err.value.line is not None or name == "empty.a3m"


@pytest.mark.parametrize("score", ["compass", "prof_sim"])
def test_profile_profile_gap_costs_are_both_halves_at_half_weight(score):
    """Profile-profile gaps: half of each profile's gap vectors (query deletes on q_ins, its
    inserts on q_del, the target's on t_del / t_ins), each profile's half made once and shared
    by its pairs."""
    from homalign.dp import GapCosts
    from homalign.methods.profile import ProteinRep, score_profile_profile
    from homalign.profile import Profile

    q = ProteinRep(Sequence("q", "MKVLA"), source=Profile.from_rows(["MKVLA", "MRV-A", "-KILA"]))
    t = ProteinRep(Sequence("t", "KVLAG"), source=Profile.from_rows(["KVLAG", "KI-AG"]))
    ps = score_profile_profile(q, t, score=score, gap_open=10.0, gap_extend=2.0)
    vq, vt = q.gap_vectors(10.0, 2.0), t.gap_vectors(10.0, 2.0)
    ref = GapCosts(q_ins_open=0.5 * vq["del_open"], q_ins_ext=0.5 * vq["del_ext"],
                   q_del_open=0.5 * vq["ins_open"], q_del_ext=0.5 * vq["ins_ext"],
                   t_del_open=0.5 * vt["del_open"], t_del_ext=0.5 * vt["del_ext"],
                   t_ins_open=0.5 * vt["ins_open"], t_ins_ext=0.5 * vt["ins_ext"])
    for a, b in zip(ps.gaps.kernel_vectors(), ref.kernel_vectors(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert ps.gaps.nonnegative == ref.nonnegative
    assert ps.gaps.constant_costs() == ref.constant_costs()
    again = score_profile_profile(q, t, score=score, gap_open=10.0, gap_extend=2.0)
    assert again.gaps.t_del_open is ps.gaps.t_del_open
    assert not np.array_equal(vq["del_open"], np.full(len(q), 10.0))  # position-specific


@pytest.mark.parametrize("method", ["hhm", "prof-sim"])
def test_hmm_hmm_search_evalues_follow_lengths(method):
    """Unrelated single-sequence HMMs (and PROF_SIM profiles) score in proportion to their
    lengths, so their E-values come from a law whose location grows with both lengths
    (``Method.null_law``), not a Karlin-Altschul Gumbel fit, which had put an identical
    126-residue domain at E 3e-9 and C2 homologues at E 0.03 (HHsearch: 1e-89 and 1e-18): the
    bundled C2 query finds its identical target and homologues far below 1e-3, and shuffled
    copies of it find nothing there."""
    from homalign import examples
    from homalign.io import read_fasta
    from homalign.search import SequenceDB, search

    assert get_method(method).null_law == "regression"
    db = SequenceDB.from_sequences([Sequence(r.id, r.sequence)
                                    for r in read_fasta(examples.path("db.fa"))])
    (rec,) = read_fasta(examples.path("query.fa"))
    hits = search(Sequence(rec.id, rec.sequence), db, method, evalue=1e-3)
    assert hits[0].target_id == "d4weea1" and hits[0].evalue < 1e-15
    assert len(hits) >= 10
    rng = np.random.default_rng(8)
    for _ in range(5):
        shuffled = "".join(rng.permutation(list(rec.sequence)))
        assert search(Sequence("shuffled", shuffled), db, method, evalue=1e-3,
                      traceback=False) == []
