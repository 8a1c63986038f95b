"""Iterative MSA building (PSI-BLAST style) with a small in-test search function."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from homalign.alignment import Alignment
from homalign.io import read_a3m
from homalign.methods import get_method
from homalign.profile import Profile
from homalign.search.msa_build import build_msa, cache_dir, cached_msa
from homalign.sequence import Sequence

QUERY = Sequence("q", "MKVLAAGIVGLLLAGCSSHKEEAPKAEEAAPAAEEKTEKAE")
FAMILY = [
    Sequence("h1", "MKILAAGIVGLLLAGCTSHKEEAPKAEEAAPAAEEKTEKAE"),
    Sequence("h2", "PPMKVLSAGIVGLLLAGCSSHKDEAPKAEEAAPAAEEKSEKAE"),
    Sequence("far", "MRVISAGLVGLILSGCSTHKDEAPRAEDAAPSAEEKSEKSD"),
]
NOISE = [Sequence(f"n{i}", s) for i, s in enumerate(
    ["WYWYHHPPGGCCWYWYHHPPGG", "DDEEKKRRDDEEKKRRDDEEKK", "CPCPCPWHWHWHYFYFYF"])]


def fake_search(query, db, *, method, evalue, max_hits, query_rep, min_score=40.0, **_):
    """Score every database sequence with the registry's pssm method; keep high scorers."""
    from homalign.dp import align

    m = get_method(method)
    hits = []
    for seq in db:
        ps = m.score(query_rep, m.prepare(seq))
        res = align(ps.S, ps.gaps, mode=ps.mode)
        if res.score >= min_score:
            aln = Alignment(query.id, seq.id, query.residues, seq.residues, res.pairs,
                            float(res.score), method)
            hits.append(SimpleNamespace(target_id=seq.id, alignment=aln, score=res.score))
    return hits[:max_hits]


def test_a3m_row_places_inserts_and_gaps():
    aln = Alignment("q", "t", "ABCDE".replace("B", "K"), "AKXXCE", np.array([[0, 0], [1, 1],
                    [2, 4], [4, 5]]), 1.0, "x")
    row, ins = aln.a3m_row(5)
    assert row == "AKC-E"
    assert ins[2] == "xx" and sum(map(len, ins)) == 2
    # skipped query columns and target residues between the same two pairs: the inserts go
    # after the deletions, in the next match column's slot, as gapped() orders them
    both = Alignment("q", "t", "ABCD", "aXYd", np.array([[0, 0], [3, 3]]), 1.0, "x")
    row, ins = both.a3m_row()
    assert (row, ins) == ("A--D", ["", "", "", "xy", ""])
    assert both.gapped() == ("ABC--D", "a--XYd")


def test_build_msa_collects_family_and_rebuilds_profile():
    db = FAMILY + NOISE + [QUERY]
    msa = build_msa(QUERY, db, 2, search_fn=fake_search)
    assert msa.ids[0] == "q"
    assert set(msa.ids[1:]) <= {"h1", "h2", "far"} and {"h1", "h2"} <= set(msa.ids)
    assert all(len(r) == len(QUERY) for r in msa.rows)
    prof = Profile.from_msa(msa)
    assert prof.query.residues == QUERY.residues
    assert prof.neff > 1.0
    for bad in (float("nan"), float("inf"), 0.0, -1.0):  # PSI-BLAST's -inclusion_ethresh
        with pytest.raises(ValueError, match="inclusion E-value must be a positive number"):
            build_msa(QUERY, db, 2, inclusion_evalue=bad, search_fn=fake_search)


def test_cached_msa_writes_a3m(tmp_path, monkeypatch):
    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path))
    dbfile = tmp_path / "db.fa"
    dbfile.write_text("".join(f">{s.id}\n{s.residues}\n" for s in FAMILY + NOISE))
    calls = []

    def counting(query, db, **kw):
        calls.append(1)
        return fake_search(query, FAMILY + NOISE, **kw)

    first = cached_msa(QUERY, dbfile, 1, search_fn=counting)
    files = list(cache_dir().glob("*.a3m"))
    assert len(files) == 1 and cache_dir() == tmp_path / "msa"
    again = cached_msa(QUERY, dbfile, 1, search_fn=counting)
    assert len(calls) == 1  # second call read the cache
    assert again.rows == first.rows and read_a3m(files[0]).ids == first.ids


def test_a3m_path_names_the_msa_behind_a_profile(tmp_path, monkeypatch):
    from homalign.profile.sources import a3m_path

    assert a3m_path(QUERY, msa="single") is None
    (tmp_path / "q.a3m").write_text(f">q\n{QUERY.residues}\n")
    assert a3m_path(QUERY, msa=str(tmp_path)) == tmp_path / "q.a3m"
    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path / "cache"))
    import homalign.search.msa_build as it

    dbfile = tmp_path / "db.fa"
    dbfile.write_text("".join(f">{s.id}\n{s.residues}\n" for s in FAMILY + NOISE))
    monkeypatch.setattr(it, "build_msa",
                        lambda q, db, n, **kw: build_msa(q, FAMILY + NOISE, n,
                                                         search_fn=fake_search))
    path = a3m_path(QUERY, msa="iterative:1", db=str(dbfile))
    assert path.parent == tmp_path / "cache" / "msa" and path.exists()
    assert read_a3m(path).ids[0] == "q"
