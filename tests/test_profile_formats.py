"""HH-suite .hhm, PSI-BLAST ASCII PSSM and HMMER3 .hmm reading/writing, with bad input."""

from __future__ import annotations

import numpy as np
import pytest

from homalign.alphabet import ALPHABET
from homalign.errors import InputError
from homalign.profile import Profile
from homalign.profile.hhm import read_hhm
from homalign.profile.pssm_io import profile_from_pssm, read_pssm, write_pssm
from homalign.sequence import Sequence

# written by HH-suite's hhmake for the A3M  >q MKVLA / >a MKV-A / >b -RVLA
HHM = """HHsearch 1.5
NAME  q
FAM
LENG  5 match states, 5 columns in multiple alignment
NEFF  1.3
SEQ
>q
MKVLA
#
NULL   3706\t5728\t4211\t4064\t4839\t3729\t4763\t4308\t4069\t3323\t5509\t4640\t4464\t4937\t4285\t4423\t3815\t3783\t6325\t4665\t
HMM    A\tC\tD\tE\tF\tG\tH\tI\tK\tL\tM\tN\tP\tQ\tR\tS\tT\tV\tW\tY\t
       M->M\tM->I\tM->D\tI->M\tI->I\tD->M\tD->D\tNeff\tNeff_I\tNeff_D
       0\t*\t*\t0\t*\t0\t*\t*\t*\t*\t
M 1    *\t*\t*\t*\t*\t*\t*\t*\t*\t*\t0\t*\t*\t*\t*\t*\t*\t*\t*\t*\t1
       0\t*\t*\t*\t*\t*\t*\t1000\t0\t0\t

K 2    *\t*\t*\t*\t*\t*\t*\t*\t1000\t*\t*\t*\t*\t*\t1000\t*\t*\t*\t*\t*\t2
       0\t*\t*\t*\t*\t*\t*\t1585\t0\t0\t

V 3    *\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t0\t*\t*\t3
       415\t*\t2000\t*\t*\t*\t*\t1000\t0\t0\t

L 4    *\t*\t*\t*\t*\t*\t*\t*\t*\t0\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t4
       0\t*\t*\t*\t*\t0\t*\t1000\t0\t1000\t

A 5    0\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t*\t5
       0\t*\t*\t0\t*\t*\t*\t1000\t0\t0\t

//
"""


def test_read_hhm(tmp_path):
    path = tmp_path / "q.hhm"
    path.write_text(HHM)
    hmm = read_hhm(path)
    assert hmm.query.residues == "MKVLA"
    assert len(hmm) == 5
    # column 2: K and R each at 2^-1 = 0.5 before pseudocounts
    assert hmm.freqs[1, ALPHABET.index("K")] == pytest.approx(0.5)
    assert hmm.freqs[1, ALPHABET.index("R")] == pytest.approx(0.5)
    assert hmm.n_eff[1] == pytest.approx(1.585)
    np.testing.assert_allclose(hmm.probs.sum(axis=1), 1.0)
    np.testing.assert_allclose(hmm.transitions[:, :3].sum(axis=1), 1.0)
    # column 3 has M->D = 2^-2: its MD probability is well above a gap-free column's
    assert hmm.transitions[2, 2] > 5 * hmm.transitions[0, 2]


@pytest.mark.parametrize("cut, message", [
    (lambda t: t[: t.index("L 4")], "cut short"),
    (lambda t: t.replace("0\t*\t*\t*\t*\t0\t*\t1000\t0\t1000\t", "0\t*\t*"), "10 fields"),
    (lambda t: t.replace("K 2    *\t", "K 2    "), "23 fields"),
    (lambda t: t.replace("HMM    A", "HMX    A"), "no 'HMM' line"),
    (lambda t: t.replace("LENG  5", "LENG  6"), "LENG says 6"),
])
def test_bad_hhm_names_file_and_line(tmp_path, cut, message):
    path = tmp_path / "bad.hhm"
    path.write_text(cut(HHM))
    with pytest.raises(InputError, match=message) as err:
        read_hhm(path)
    assert err.value.path == str(path)
    assert err.value.line is not None


def test_pssm_round_trip(tmp_path):
    prof = Profile.from_rows(["MKVLAAGW", "MRVLSAGW", "MKILAAGF"])
    path = tmp_path / "q.pssm"
    write_pssm(path, prof)
    back = read_pssm(path)
    assert back.query.residues == "MKVLAAGW"
    np.testing.assert_array_equal(back.scores, np.rint(prof.pssm()[:, :20]).astype(int))
    np.testing.assert_array_equal(back.percentages, np.floor(prof.freqs * 100 + 1e-9))
    again = profile_from_pssm(back)
    np.testing.assert_allclose(again.probs.sum(axis=1), 1.0)
    # the rebuilt profile scores like the PSSM it came from (up to rounding)
    assert np.abs(again.pssm()[:, :20] - back.scores).max() < 0.6


def test_pssm_wrong_width(tmp_path):
    prof = Profile.from_sequence("MKVLA")
    path = tmp_path / "q.pssm"
    write_pssm(path, prof)
    lines = path.read_text().splitlines()
    lines[5] = " ".join(lines[5].split()[:-3])  # row 3 loses three fields
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="fields") as err:
        read_pssm(path)
    assert err.value.line == 6


def test_hmmer_round_trip_and_truncation(tmp_path):
    from homalign.io import MSA
    from homalign.profile.pyhmmer_adapter import build_hmm, read_hmm, write_hmm

    q = Sequence("q", "MKVLAAGIVGLLLAGCSSHKEE")
    msa = MSA(["q", "a", "b"], [q.residues, "MKVLSAGIV-LLLAGCSSHKEE", "--ILAAGIVGLLVAGCTSHK--"])
    hmm = build_hmm(q, msa)
    assert hmm.M == len(q)
    path = tmp_path / "q.hmm"
    write_hmm(path, hmm)
    back = read_hmm(path)
    assert back.M == hmm.M and back.name == hmm.name
    np.testing.assert_allclose(np.asarray(back.match_emissions), np.asarray(hmm.match_emissions),
                               atol=1e-4)
    text = path.read_text()
    (tmp_path / "cut.hmm").write_text(text[: len(text) // 2])
    with pytest.raises(InputError) as err:
        read_hmm(tmp_path / "cut.hmm")
    assert err.value.path == str(tmp_path / "cut.hmm") and err.value.line is not None


def test_model_files_may_be_gzip_compressed(tmp_path):
    """``.hmm``, ``.hhm`` and PSSM files read the same gzip-compressed (as HMMER reads a
    ``.hmm.gz``), whatever their names."""
    import gzip

    from homalign.io import MSA
    from homalign.profile.pyhmmer_adapter import build_hmm, read_hmm, write_hmm

    q = Sequence("q", "MKVLAAGIVGLLLAGCSSHKEE")
    hmm = build_hmm(q, MSA(["q", "a"], [q.residues, "MKVLSAGIV-LLLAGCSSHKEE"]))
    write_hmm(tmp_path / "q.hmm", hmm)
    (tmp_path / "q.hhm").write_text(HHM)
    write_pssm(tmp_path / "q.pssm", Profile.from_rows(["MKVLAAGW", "MRVLSAGW"]))
    for name in ("q.hmm", "q.hhm", "q.pssm"):
        (tmp_path / (name + ".gz")).write_bytes(gzip.compress((tmp_path / name).read_bytes()))
    a, b = read_hmm(tmp_path / "q.hmm"), read_hmm(tmp_path / "q.hmm.gz")
    assert np.array_equal(np.asarray(a.match_emissions), np.asarray(b.match_emissions))
    np.testing.assert_array_equal(read_hhm(tmp_path / "q.hhm").probs,
                                  read_hhm(tmp_path / "q.hhm.gz").probs)
    np.testing.assert_array_equal(read_pssm(tmp_path / "q.pssm").scores,
                                  read_pssm(tmp_path / "q.pssm.gz").scores)
    (tmp_path / "bad.hhm").write_bytes(gzip.compress(HHM.encode())[:40])
    with pytest.raises(InputError, match="damaged gzip data"):
        read_hhm(tmp_path / "bad.hhm")


def test_a_file_of_several_hmms_is_refused_as_a_query_model(tmp_path):
    from homalign.io import MSA
    from homalign.profile.pyhmmer_adapter import build_hmm, read_hmm, write_hmm

    models = []
    for name, residues in (("one", "MKVLAAGIVGLLLAGCSSHKEE"), ("two", "GSHMRRLLEEAAKKW")):
        q = Sequence(name, residues)
        write_hmm(tmp_path / f"{name}.hmm", build_hmm(q, MSA([name], [residues])))
        models.append((tmp_path / f"{name}.hmm").read_text())
    (tmp_path / "both.hmm").write_text("".join(models))
    with pytest.raises(InputError, match="more than one HMM") as err:
        read_hmm(tmp_path / "both.hmm")
    assert err.value.path == str(tmp_path / "both.hmm")


def test_pssm_rows_without_percentages_take_the_emissions_alone(tmp_path):
    """psiblast writes all-zero percentages for some rows: those rows (and only those) take
    the emissions as observed frequencies; every other row keeps its percentages."""
    import dataclasses

    prof = Profile.from_rows(["MKVLAAGW", "MRVLSAGW", "MKILAAGF"])
    write_pssm(tmp_path / "q.pssm", prof)
    pssm = read_pssm(tmp_path / "q.pssm")
    pct = pssm.percentages.copy()
    pct[-1] = 0.0
    got = profile_from_pssm(dataclasses.replace(pssm, percentages=pct))
    want = pssm.percentages[:-1] / pssm.percentages[:-1].sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got.freqs[:-1], want)
    np.testing.assert_allclose(got.freqs[-1], got.probs[-1])


def test_hmm_search_ranks_homologs_first():
    from homalign.profile.pyhmmer_adapter import build_hmm, hmm_search

    q = Sequence("q", "MKVLAAGIVGLLLAGCSSHKEEAPKAEEAAPAAEEKTEKAE")
    homolog = Sequence("h", "MKVLAAGIVALLLSGCSSHKEEAPKAEAAPAEEKTEKAE")
    decoys = [Sequence(f"d{i}", s) for i, s in enumerate(
        ["WYWYHHPPGGCCWYWYHHPPGGWYWYHHPP", "DDEEKKRRDDEEKKRRDDEEKKRRDDEE"])]
    hits = hmm_search(build_hmm(q), q, decoys + [homolog], evalue=10.0)
    assert hits and hits[0].target_id == "h"
    assert hits[0].evalue < 1e-5 and hits[0].length > 30
