"""The peer adapters (BLAST+, HMMER, HH-suite, MMseqs2) on a real HOMSTRAD pair.

The programs are installed on the development and CI machines, so a missing one is a failure that
names its Debian package — unless HOMALIGN_ALLOW_MISSING_PEERS=1 is set.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from homalign.evaluate import bundled_homstrad_dev
from homalign.evaluate.metrics import score_pair
from homalign.evaluate.reference import family_pairs
from homalign.methods import get_method, method_names
from homalign.methods.peers import DEBIAN_PACKAGES, pairs_from_gapped
from homalign.sequence import Sequence

PEERS = ("blastp", "phmmer", "hhalign", "mmseqs")


@pytest.fixture(scope="module")
def alad_pair():
    """1b4ka vs 1aw5 (delta-aminolevulinic acid dehydratase, 37% identical, ~320 residues)."""
    ali = bundled_homstrad_dev() / "ALAD" / "ALAD.ali"
    return family_pairs(ali)[0]


def _require(name: str) -> None:
    reason = get_method(name).available()
    if reason is None:
        return
    if os.environ.get("HOMALIGN_ALLOW_MISSING_PEERS") == "1":
        pytest.skip(f"{name} unavailable and HOMALIGN_ALLOW_MISSING_PEERS=1: {reason}")
    pytest.fail(f"peer {name} is not available: {reason}", pytrace=False)


def test_peers_are_registered():
    assert set(PEERS) <= set(method_names("peer"))


@pytest.mark.parametrize("name", PEERS)
def test_peer_aligns_a_real_pair(name, alad_pair):
    _require(name)
    aln = get_method(name).align(alad_pair.query, alad_pair.target)
    assert aln.method == name
    assert (aln.query_id, aln.target_id) == ("1b4ka", "1aw5")
    assert aln.length > 200  # the two proteins align over most of their length
    m = score_pair(aln.pairs, alad_pair.pairs, len(alad_pair.query), len(alad_pair.target))
    assert m.F1 > 0.7, m
    assert aln.score > 0
    # aligned residues are really the sequences' residues at those positions: high identity
    assert 0.3 < aln.identity < 0.6


@pytest.mark.parametrize("name", PEERS)
def test_peer_returns_empty_alignment_without_hit(name):
    _require(name)
    q = Sequence("q", "WWWWWWWWWWWWWWWWWWWW")
    t = Sequence("t", "DEDEKDEKDEDKEKDEDEKDEDKEKDE")
    aln = get_method(name).align(q, t)
    # no homology: either nothing is reported or a short spurious local hit
    assert aln.length < 10
    assert aln.pairs.shape[1] == 2


@pytest.mark.parametrize("name", ["blastp", "hhalign", "mmseqs"])
def test_missing_binary_names_the_debian_package(name, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    reason = get_method(name).available()
    assert reason is not None
    assert DEBIAN_PACKAGES[name] in reason and name in reason


def test_pairs_from_gapped():
    # query  A C - D E      (starting at query residue 3)
    # target A - W D .      (starting at target residue 10; '.' is a gap too)
    pairs = pairs_from_gapped("AC-DE", "A-WD.", 3, 10)
    np.testing.assert_array_equal(pairs, [(3, 10), (5, 12)])
    assert pairs.dtype == np.int32
    assert pairs_from_gapped("", "", 0, 0).shape == (0, 2)


def test_hhalign_takes_query_msa(alad_pair, tmp_path):
    _require("hhalign")
    members = family_pairs(bundled_homstrad_dev() / "ALAD" / "ALAD.ali")
    others = [p.target for p in members if p.query.id == alad_pair.query.id]
    a3m = tmp_path / "q.a3m"
    a3m.write_text(">1b4ka\n" + alad_pair.query.residues + "\n")
    aln = get_method("hhalign").align(alad_pair.query, alad_pair.target, query_a3m=a3m)
    assert aln.length > 200
    wrong = tmp_path / "wrong.a3m"
    wrong.write_text(">x\n" + others[-1].residues + "\n")
    if others[-1].residues != alad_pair.query.residues:
        with pytest.raises(ValueError, match="first sequence"):
            get_method("hhalign").align(alad_pair.query, alad_pair.target, query_a3m=wrong)
    with pytest.raises(ValueError, match="db=FASTA"):
        get_method("hhalign").align(alad_pair.query, alad_pair.target, msa="iterative:3")


def test_hhalign_gets_the_profile_methods_msas(alad_pair, tmp_path, monkeypatch):
    """msa=DIR (one <id>.a3m per sequence) reaches hhalign as the same files hhm-mac reads."""
    _require("hhalign")
    import homalign.methods.peers as peers
    from homalign.profile.sources import a3m_path

    for seq in (alad_pair.query, alad_pair.target):
        (tmp_path / f"{seq.id}.a3m").write_text(f">{seq.id}\n{seq.residues}\n")
    used: list[str] = []
    check = peers._check_a3m
    monkeypatch.setattr(peers, "_check_a3m", lambda p, s, r: used.append(str(p)) or check(p, s, r))
    aln = get_method("hhalign").align(alad_pair.query, alad_pair.target, msa=str(tmp_path))
    expected = [str(a3m_path(alad_pair.query, "query", msa=str(tmp_path))),
                str(a3m_path(alad_pair.target, "target", msa=str(tmp_path)))]
    assert used == expected == [str(tmp_path / f"{s.id}.a3m")
                                for s in (alad_pair.query, alad_pair.target)]
    assert aln.length > 200


def test_hhalign_maxres_bound_aligns_as_the_default(alad_pair, monkeypatch):
    """-maxres just above the longer sequence (the speed-up) gives hhalign's default result:
    the same pairs, score, E-value and probability as its 20,001-column default."""
    _require("hhalign")
    import homalign.methods.peers as peers

    q, t = alad_pair.query, alad_pair.target
    hh = get_method("hhalign")
    bounded = hh.align(q, t)
    monkeypatch.setattr(peers, "HHALIGN_MAXRES_MARGIN", 20001 - max(len(q), len(t)))
    default = hh.align(q, t)
    assert np.array_equal(bounded.pairs, default.pairs) and len(bounded.pairs) > 0
    assert (bounded.score, bounded.evalue) == (default.score, default.evalue)
    assert bounded.extra["probability"] == default.extra["probability"]


@pytest.mark.parametrize("option", [{"popen": 2.0}, {"popen": float("nan")}, {"popen": 0.5},
                                    {"pextend": -0.5}, {"pextend": 1.0}])
def test_phmmer_gap_probabilities_outside_hmmers_range_are_errors(alad_pair, option):
    with pytest.raises(ValueError, match=r"must be \[0, (0.5|1)\)"):
        get_method("phmmer").align(alad_pair.query, alad_pair.target, **option)
