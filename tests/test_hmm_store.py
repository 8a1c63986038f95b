"""The MSA database's stored target HMMs (``OUTDIR/hmms/``, written by ``makemsa``)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from homalign.errors import InputError
from homalign.io import read_a3m
from homalign.methods import get_method
from homalign.methods.profile import ProteinRep
from homalign.profile import Profile
from homalign.profile.hmm import ProfileHMM
from homalign.score.pair_scores import score_values
from homalign.search import SequenceDB
from homalign.search.hmm_store import (
    STORE,
    StoredTargets,
    build_hmm_store,
    open_hmm_store,
    round_options,
)
from homalign.search.msadb import build_msa_db
from homalign.sequence import Sequence

SEQS = [
    Sequence("q", "MKVLAAGIVGLLLAGCSSHKEEAPKAEEAAPAAEEKTEKAEWLRSGQ"),
    Sequence("h1", "MKILAAGIVGLLLAGCTSHKEEAPKAEEAAPAAEEKTEKAEWLRSGE"),
    Sequence("h2", "PPMKVLSAGIVGLLLAGCSSHKDEAPKAEEAAPAAEEKSEKAEWIRSGQ"),
    Sequence("n0", "WYWYHHPPGGCCWYWYHHPPGGTRTRNMNMQSQSQS"),
    Sequence("n1", "DDEEKKRRDDEEKKRRDDEEKKGHGHGHPLPLPLAA"),
]


@pytest.fixture()
def msadb(tmp_path):
    path = tmp_path / "db.fa"
    path.write_text("".join(f">{s.id}\n{s.residues}\n" for s in SEQS))
    return path, build_msa_db(path, tmp_path / "msa", 1, progress=False)


def _from_a3m(out, seq):
    return ProfileHMM.from_profile(Profile.from_msa(read_a3m(out / f"{seq.id}.a3m"),
                                                    **round_options()))


def test_makemsa_stores_every_target_hmm_as_its_a3m_makes_it(msadb):
    dbfile, out = msadb
    db = SequenceDB.from_fasta(dbfile)
    store = open_hmm_store(out, db)
    m = get_method("hhm")
    query = ProteinRep(SEQS[0], source=_from_a3m(out, SEQS[0]))
    for i, seq in enumerate(SEQS):
        built, stored = _from_a3m(out, seq), store.hmm(i)
        assert stored.query == seq and stored.name == seq.id
        assert stored.probs.dtype == np.float32
        assert np.array_equal(stored.probs, built.probs.astype(np.float32))
        assert np.array_equal(stored.transitions, built.transitions)
        assert np.array_equal(stored.n_eff, built.n_eff) and stored.neff == built.neff
        assert np.array_equal(stored.background, built.background)
        # the hhm score reads the emissions in float32: the same bits either way
        a = m.score(query, ProteinRep(seq, source=built), hh_shift=-0.03)
        b = m.score(query, StoredTargets(m, db, {}, store).get(i), hh_shift=-0.03)
        assert np.array_equal(a.S, b.S)
        assert score_values([a])[0] == score_values([b])[0]


def test_a_changed_a3m_or_a_missing_store_is_an_error_until_makemsa_reruns(msadb):
    dbfile, out = msadb
    db = SequenceDB.from_fasta(dbfile)
    msa = out / "n0.a3m"
    msa.write_text(msa.read_text() + ">extra\n" + SEQS[4].residues[:len(SEQS[3])] + "\n")
    with pytest.raises(InputError, match="out of date"):
        open_hmm_store(out, db)
    build_msa_db(dbfile, out, 1, progress=False)  # complete: only the HMMs are rewritten
    store = open_hmm_store(out, db)
    assert np.array_equal(store.hmm(3).probs, _from_a3m(out, SEQS[3]).probs.astype(np.float32))
    assert store.hmm(3).neff > 1.0  # the added row counts
    for p in (out / STORE).iterdir():
        p.unlink()
    (out / STORE).rmdir()
    with pytest.raises(InputError, match="no stored HMMs"):
        open_hmm_store(out, db)
    from homalign.search.iterative import iterative_search

    with pytest.raises(InputError, match="rerun homalign makemsa"):
        iterative_search(SEQS[0], db, 2, "hhm", target_msa=out, prefilter=False)


def test_a_failed_build_leaves_no_half_store_and_a_killed_ones_is_removed(msadb, monkeypatch):
    import homalign.io as io_mod

    dbfile, out = msadb
    db = SequenceDB.from_fasta(dbfile)
    before = (out / STORE / "hmms.json").read_text()
    (out / "n1.a3m").write_text((out / "n1.a3m").read_text())  # same bytes: still current
    assert build_hmm_store(out, db, progress=False) == out / STORE
    (out / "n1.a3m").write_text(">n1\n" + SEQS[4].residues + "\n>n0\n" + "-" * 10
                                + SEQS[3].residues[:26] + "\n")  # another size: stale
    calls = []

    def failing(path, **kw):
        calls.append(path)
        if len(calls) == 3:
            raise OSError("disk gone")
        return read_a3m(path, **kw)

    monkeypatch.setattr(io_mod, "read_a3m", failing)
    with pytest.raises(OSError, match="disk gone"):
        build_hmm_store(out, db, progress=False)
    monkeypatch.undo()
    assert (out / STORE / "hmms.json").read_text() == before  # the old store, untouched
    assert not list(out.glob(f".{STORE}.*"))
    dead = out / f".{STORE}.tmp-killed"  # what a killed build leaves: its process is gone
    dead.mkdir()
    (dead / ".pid").write_text("999999999")
    (dead / "probs.npy").write_bytes(b"half")
    build_hmm_store(out, db, progress=False)
    assert not dead.exists()
    assert open_hmm_store(out, db).hmm(4).query == SEQS[4]
    assert oct(os.stat(out / STORE).st_mode & 0o777) == "0o755"


def test_the_msa_graph_is_stored_with_the_hmms_and_read_from_the_a3m_files_when_stale(
        msadb, monkeypatch):
    from homalign.search import msadb as msadb_mod
    from homalign.search.hmm_store import stored_graph

    dbfile, out = msadb
    stored = stored_graph(out)
    assert stored is not None and list(stored) == [s.id for s in SEQS]
    for owner, members in stored.items():
        ids = read_a3m(out / f"{owner}.a3m").ids
        assert members == [m for m in ids[1:] if m != owner]
    assert {"h1", "h2"} <= set(stored["q"])
    monkeypatch.setattr(msadb_mod, "_GRAPH", {})
    from_store = msadb_mod.member_index(out), msadb_mod.msa_members(out)
    (out / "n0.a3m").write_text((out / "n0.a3m").read_text() + ">q\n" + "-" * len(SEQS[3])
                                + "\n")
    assert stored_graph(out) is None  # an A3M changed: the headers are read again
    monkeypatch.setattr(msadb_mod, "_GRAPH", {})
    assert msadb_mod.msa_members(out)["n0"] == ["q"]
    assert msadb_mod.member_index(out)["q"] == sorted({*from_store[0].get("q", []), "n0"})
    assert {k: v for k, v in msadb_mod.msa_members(out).items() if k != "n0"} == {
        k: v for k, v in from_store[1].items() if k != "n0"}


def test_a_plain_hhm_search_of_the_msa_database_reads_the_store_with_the_same_hits(msadb):
    import shutil

    from homalign.search import search
    from homalign.search.engine import TargetReps, target_reps_for

    dbfile, out = msadb
    db = SequenceDB.from_fasta(dbfile)
    m = get_method("hhm")
    opts = {**m.defaults, "target_msa": str(out)}
    assert isinstance(target_reps_for(m, db, opts), StoredTargets)
    for other in ({"pseudocounts": "matrix"}, {"target_hhm": "x.hhm"}):  # not what was stored
        assert isinstance(target_reps_for(m, db, {**opts, **other}), TargetReps)
    assert isinstance(target_reps_for(get_method("compass"), db, opts), TargetReps)

    def hits():
        return [(h.target_id, h.score, h.evalue, h.alignment.cigar)
                for h in search(SEQS[0], db, "hhm", evalue=1e9, prefilter=False,
                                target_msa=str(out))]

    stored = hits()
    shutil.rmtree(out / STORE)
    assert isinstance(target_reps_for(m, db, opts), TargetReps)  # no store: the A3M files
    assert hits() == stored and len(stored) == len(SEQS)
