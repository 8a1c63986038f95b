"""The MSA database (one iterative-search A3M per database sequence) and searching against it."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from homalign.errors import InputError
from homalign.io import read_a3m
from homalign.methods import get_method
from homalign.methods.profile import ProteinRep
from homalign.profile import Profile
from homalign.search import SequenceDB, search
from homalign.search.msadb import MANIFEST, build_msa_db, msa_filename, open_msa_db
from homalign.sequence import Sequence

FAMILY = [
    Sequence("q", "MKVLAAGIVGLLLAGCSSHKEEAPKAEEAAPAAEEKTEKAEWLRSGQ"),
    Sequence("h1", "MKILAAGIVGLLLAGCTSHKEEAPKAEEAAPAAEEKTEKAEWLRSGE"),
    Sequence("h2", "PPMKVLSAGIVGLLLAGCSSHKDEAPKAEEAAPAAEEKSEKAEWIRSGQ"),
]
NOISE = [Sequence(f"n{i}", s) for i, s in enumerate([
    "WYWYHHPPGGCCWYWYHHPPGGTRTRNMNMQSQSQS",
    "DDEEKKRRDDEEKKRRDDEEKKGHGHGHPLPLPLAA",
    "CPCPCPWHWHWHYFYFYFSTSTSTNQNQNQMVMVMV"])]


@pytest.fixture()
def dbfile(tmp_path):
    path = tmp_path / "db.fa"
    path.write_text("".join(f">{s.id}\n{s.residues}\n" for s in FAMILY + NOISE))
    return path


def test_build_writes_one_a3m_per_sequence_with_its_homologs(dbfile, tmp_path):
    out = build_msa_db(dbfile, tmp_path / "msa", 1, progress=False)
    assert sorted(p.name for p in out.glob("*.a3m")) == sorted(
        f"{s.id}.a3m" for s in FAMILY + NOISE)
    q = read_a3m(out / "q.a3m")
    assert q.ids[0] == "q" and q.rows[0] == FAMILY[0].residues
    assert {"h1", "h2"} <= set(q.ids[1:]) and not {"n0", "n1", "n2"} & set(q.ids)
    settings = json.loads((out / MANIFEST).read_text())
    assert settings["iterations"] == 1 and settings["database"]["sequences"] == 6
    db = SequenceDB.from_fasta(dbfile)
    assert open_msa_db(out, db) == out


def test_rerun_resumes_and_other_settings_are_refused(dbfile, tmp_path):
    out = build_msa_db(dbfile, tmp_path / "msa", 1, progress=False)
    before = {p.name: (p.stat().st_mtime_ns, p.read_text()) for p in out.glob("*.a3m")}
    (out / "h1.a3m").unlink()
    db = SequenceDB.from_fasta(dbfile)
    with pytest.raises(InputError, match="incomplete: 1 of 6"):
        open_msa_db(out, db)
    build_msa_db(dbfile, out, 1, progress=False)
    after = {p.name: (p.stat().st_mtime_ns, p.read_text()) for p in out.glob("*.a3m")}
    assert after.keys() == before.keys()
    assert after["h1.a3m"][1] == before["h1.a3m"][1]  # rebuilt identically
    assert all(after[k] == before[k] for k in before if k != "h1.a3m")  # not touched
    with pytest.raises(InputError, match="iterations"):
        build_msa_db(dbfile, out, 2, progress=False)


def test_parallel_build_equals_serial(dbfile, tmp_path):
    one = build_msa_db(dbfile, tmp_path / "one", 1, progress=False)
    two = build_msa_db(dbfile, tmp_path / "two", 1, jobs=2, progress=False)
    for p in one.glob("*.a3m"):
        assert (two / p.name).read_text() == p.read_text()


def test_unusable_ids_and_foreign_directories_are_errors(tmp_path):
    with pytest.raises(InputError, match="cannot name an MSA file"):
        msa_filename("a/b")
    with pytest.raises(InputError, match="not an MSA database"):
        open_msa_db(tmp_path)
    bad = tmp_path / "bad.fa"
    bad.write_text(">ok\nMKVLAAGIVG\n>sp|P1|X/1-100\nMKVLAAGIVG\n")
    with pytest.raises(InputError, match="cannot name an MSA file"):
        build_msa_db(bad, tmp_path / "out", 1, progress=False)
    assert not (tmp_path / "out").exists()  # nothing made
    from homalign.search.database import makedb

    good = tmp_path / "good.fa"
    good.write_text(">ok\nMKVLAAGIVG\n")
    seqdb = makedb(good, tmp_path / "seqdb", learned=False)
    with pytest.raises(InputError, match="makedb database; give the MSA database its own"):
        build_msa_db(seqdb, seqdb, 1, progress=False)  # into the sequence database itself
    assert not list(seqdb.glob("*.a3m")) and not (seqdb / MANIFEST).exists()


@pytest.mark.parametrize("evalue", [float("nan"), float("inf"), 0.0, -1.0])
def test_a_bad_inclusion_evalue_is_refused_before_the_manifest_is_written(dbfile, tmp_path,
                                                                          evalue):
    with pytest.raises(ValueError, match="inclusion E-value"):
        build_msa_db(dbfile, tmp_path / "msa", 1, inclusion_evalue=evalue, progress=False)
    assert not (tmp_path / "msa").exists()


def test_search_scores_targets_with_their_database_msas(dbfile, tmp_path):
    out = build_msa_db(dbfile, tmp_path / "msa", 1, progress=False)
    db = SequenceDB.from_fasta(dbfile)
    m = get_method("hhm")
    hits = search(FAMILY[0], db, "hhm", evalue=1e9, prefilter=False, traceback=False,
                  target_msa=str(out))
    by_id = {h.target_id: h.score for h in hits}
    opts = dict(m.defaults)
    qrep = ProteinRep(FAMILY[0], options=opts, role="query")
    for t in ("h1", "n0"):
        trep = ProteinRep(db.sequence(db.index_of(t)),
                          source=Profile.from_msa(read_a3m(out / f"{t}.a3m"),
                                                  pseudocounts=opts["pseudocounts"],
                                                  admix=opts["admix"]))
        ps = m.score(qrep, trep, **opts)
        from homalign.score.pair_scores import score_values

        assert by_id[t] == pytest.approx(float(score_values([ps])[0]))
    single = {h.target_id: h.score for h in search(FAMILY[0], db, "hhm", evalue=1e9,
                                                    prefilter=False, traceback=False)}
    assert not np.isclose(single["h1"], by_id["h1"])  # the target's MSA changed its profile


def test_iterative_search_against_the_msa_database(dbfile, tmp_path, monkeypatch):
    from homalign.search.iterative import iterative_search
    from homalign.search.msadb import null_params

    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path / "cache"))
    out = build_msa_db(dbfile, tmp_path / "msa", 1, progress=False)
    db = SequenceDB.from_fasta(dbfile)
    hits = iterative_search(FAMILY[0], db, 2, "hhm", target_msa=out, prefilter=False,
                            evalue=1e9)
    assert {h.target_id for h in hits[:3]} == {"q", "h1", "h2"}
    assert all(h.alignment is not None and h.alignment.evalue == h.evalue for h in hits)
    # bits are BLAST's of the E-values, log2(m n / E): the two orders agree
    assert all(a.bits >= b.bits for a, b in zip(hits, hits[1:], strict=False))
    assert hits[0].bits == pytest.approx(
        np.log2(len(FAMILY[0]) * db.total_length / hits[0].evalue))
    from homalign.search.iterative import PROFILE_DB_OPTIONS

    params = null_params(out, db, options=PROFILE_DB_OPTIONS)  # fitted by the search above
    assert json.loads((out / "null-hhm.json").read_text())["options"] == PROFILE_DB_OPTIONS
    assert params.gamma is not None
    assert null_params(out, db) != params  # other options: refitted

    two = iterative_search(FAMILY[0], db, 2, "learned", prefilter=False, evalue=1e9,
                           traceback=False)
    none = iterative_search(FAMILY[0], db, 2, "learned", prefilter=False, evalue=1e9,
                            traceback=False, target_msa=out, fusion_weight=0.5,
                            profile_weight=0.0, neighbour_support=0.0)
    # the same fusion; the plain one reports its values as the database's chance hits (a
    # monotone map), the MSA-database ranking its values as they are
    from homalign.search.tail_calibration import reported_evalues

    assert [h.target_id for h in none] == [h.target_id for h in two]
    np.testing.assert_allclose([h.evalue for h in two], reported_evalues(
        [h.evalue for h in none], "learned@2", "learned", len(FAMILY[0]), db), rtol=1e-12)
    from homalign.search.msadb import neighbour_support

    plain = iterative_search(FAMILY[0], db, 2, "learned", prefilter=False, evalue=1e9,
                             traceback=False, target_msa=out, neighbour_support=0.0)
    default = iterative_search(FAMILY[0], db, 2, "learned", prefilter=False, evalue=1e9,
                               traceback=False, target_msa=out)
    expect = neighbour_support(plain, "q", out)
    assert [(h.target_id, h.evalue) for h in default] == [(h.target_id, h.evalue) for h in expect]
    e_plain = {h.target_id: h.evalue for h in plain}
    assert any(h.evalue < e_plain[h.target_id] for h in default)
    with pytest.raises(ValueError, match="neighbour_support"):
        iterative_search(FAMILY[0], db, 2, "learned", prefilter=False, target_msa=out,
                         neighbour_support=-1.0)
    three = iterative_search(FAMILY[0], db, 2, "learned", prefilter=False, evalue=1e9,
                             traceback=False, target_msa=out, profile_weight=0.25)
    e2 = {h.target_id: h.evalue for h in two}
    assert any(not np.isclose(h.evalue, e2[h.target_id]) for h in three)
    with pytest.raises(ValueError, match="profile_weight"):
        iterative_search(FAMILY[0], db, 2, "learned", prefilter=False, target_msa=out,
                         profile_weight=0.9)


def test_cli_makemsa_then_search_with_the_msa_database(dbfile, tmp_path, monkeypatch, capsys):
    from homalign.cli import main

    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "msadb"
    pinned = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")
    before = {var: os.environ.get(var) for var in pinned}
    assert main(["makemsa", str(dbfile), str(out), "--iterations", "1", "--jobs", "2",
                 "--no-progress"]) == 0
    assert (out / "h2.a3m").exists()
    # the workers' one-thread settings stay theirs: numba would refuse to compile again here
    assert {var: os.environ.get(var) for var in pinned} == before
    query = tmp_path / "q.fa"
    query.write_text(f">q\n{FAMILY[0].residues}\n")
    capsys.readouterr()
    assert main(["search", str(query), str(dbfile), "--method", "hhm", "--target-msa", str(out),
                 "--exhaustive", "--evalue", "1000", "--no-progress"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()
            if line and not line.startswith("#")]
    assert {r[1] for r in rows[:3]} == {"q", "h1", "h2"}
    assert main(["search", str(query), str(dbfile), "--method", "hhm", "--target-msa", str(out),
                 "--exhaustive", "--evalue", "1000", "--no-progress",
                 "--neighbour-support", "2"]) == 0
    on = [line.split("\t") for line in capsys.readouterr().out.splitlines()
          if line and not line.startswith("#")]
    e_on, e_off = ({r[1]: float(r[10]) for r in rs} for rs in (on, rows))  # hhm: off by default
    assert e_on.keys() == e_off.keys() and all(e_on[t] <= e_off[t] for t in e_on)
    assert any(e_on[t] < e_off[t] for t in e_on)  # the default lifts supported targets
    assert main(["search", str(query), str(dbfile), "--neighbour-support", "1",
                 "--no-progress"]) == 2
    assert "--neighbour-support needs --target-msa" in capsys.readouterr().err
    for flag in (["--workers", "2"], ["--shard", "db"]):  # Ray's options without --ray
        assert main(["search", str(query), str(dbfile), *flag, "--no-progress"]) == 2
        assert "--workers and --shard are for --ray" in capsys.readouterr().err
    assert main(["search", str(query), str(dbfile), "--method", "hhm", "--target-msa",
                 str(tmp_path / "nothing"), "--no-progress"]) == 2
    assert "not an MSA database" in capsys.readouterr().err


def test_the_query_is_left_out_of_the_target_msas(dbfile, tmp_path, monkeypatch):
    from homalign.score.pair_scores import score_values
    from homalign.search.iterative import iterative_search
    from homalign.search.msadb import member_index, without_member

    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path / "cache"))
    out = build_msa_db(dbfile, tmp_path / "msa", 1, progress=False)
    assert {"h1", "h2"} <= set(member_index(out)["q"])
    h1 = read_a3m(out / "h1.a3m")
    reduced = without_member(h1, "q")
    assert "q" in h1.ids and "q" not in reduced.ids and reduced.ids[0] == "h1"
    assert len(reduced.ids) == len(h1.ids) - h1.ids[1:].count("q")
    db = SequenceDB.from_fasta(dbfile)
    m = get_method("hhm")
    opts = {k: m.defaults[k] for k in ("pseudocounts", "admix", "matrix")}
    hits = iterative_search(FAMILY[0], db, 1, "hhm", target_msa=out, prefilter=False,
                            evalue=1e9, traceback=False)
    qrep = ProteinRep(FAMILY[0], source=Profile.from_sequence(FAMILY[0], **opts))
    t = db.sequence(db.index_of("h1"))
    from homalign.search.iterative import PROFILE_DB_OPTIONS as shift

    left_out = score_values([m.score(qrep, ProteinRep(t, source=Profile.from_msa(reduced, **opts)),
                                     **shift)])[0]
    kept = score_values([m.score(qrep, ProteinRep(t, source=Profile.from_msa(h1, **opts)),
                                 **shift)])[0]
    score = {h.target_id: h.score for h in hits}["h1"]
    assert score == pytest.approx(left_out) and not np.isclose(score, kept)


def test_api_search_with_an_msa_database_checks_it_belongs_to_the_database(dbfile, tmp_path,
                                                                            monkeypatch):
    import homalign

    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path / "cache"))
    out = build_msa_db(dbfile, tmp_path / "msa", 1, progress=False)
    hits = homalign.search(FAMILY[0], str(dbfile), method="hhm", target_msa=str(out),
                           prefilter=False, evalue=1e9)
    assert {h.target_id for h in hits[:3]} == {"q", "h1", "h2"}
    other = tmp_path / "other.fa"
    other.write_text("".join(f">{s.id}\n{s.residues}\n" for s in FAMILY))
    with pytest.raises(InputError, match="another sequence database"):
        homalign.search(FAMILY[0], str(other), method="hhm", target_msa=str(out),
                        prefilter=False)


def test_graph_candidates_reach_two_steps_through_the_msa_database(tmp_path):
    from homalign.search.msadb import graph_candidates, member_index, msa_members

    res = "MKVLAAGIVG"
    msas = {"q": ["q", "a"], "a": ["a", "b"], "c": ["c", "a"], "b": ["b", "f"], "d": ["d", "e"],
            "e": ["e"], "f": ["f", "g"], "g": ["g"]}
    for owner, rows in msas.items():
        (tmp_path / f"{owner}.a3m").write_text("".join(f">{r}\n{res}\n" for r in rows))
    db = SequenceDB.from_sequences([Sequence(k, res) for k in msas])
    assert member_index(tmp_path)["a"] == ["c", "q"] and msa_members(tmp_path)["a"] == ["b"]
    got = graph_candidates("q", ["q", "a"], tmp_path, db)
    # a (step 1), b and c (step 2), f (step 3); not q itself, not g (4 steps), d or e
    assert sorted(db.ids[i] for i in got) == ["a", "b", "c", "f"]
    assert len(graph_candidates("q", ["q"], tmp_path, db)) == 0


def _hit(t: str, e: float, index: int = 0):
    from homalign.search import Hit

    return Hit("q", t, index, 1.0, 1.0, e)


def test_neighbour_support_lifts_targets_whose_msa_neighbours_were_found(tmp_path):
    """A hit's value becomes ``E * E_nb ** weight`` but never better than the better of its
    own and its neighbour's: a lifted hit ties its supporter at most, never passes it."""
    from homalign.search.msadb import neighbour_support

    res = "MKVLAAGIVG"
    # a's MSA holds b; c's MSA holds a and the query; d stands alone; e's MSA holds d
    msas = {"a": ["a", "b"], "b": ["b"], "c": ["c", "a", "q"], "d": ["d"], "e": ["e", "d"],
            "q": ["q", "c"]}
    for owner, rows in msas.items():
        (tmp_path / f"{owner}.a3m").write_text("".join(f">{r}\n{res}\n" for r in rows))
    hits = [_hit("a", 1e-6, 0), _hit("d", 0.5, 1), _hit("b", 4.0, 2), _hit("c", 20.0, 3),
            _hit("e", 3.0, 4)]
    got = {h.target_id: h.evalue for h in neighbour_support(hits, "q", tmp_path, 2.0)}
    assert got["b"] == 1e-6  # 4 * (1e-6)^2 would pass a, its supporter: capped at a's value
    assert got["c"] == 1e-6  # c's MSA holds a (the query does not count)
    assert got["a"] == 1e-6  # its neighbours' E > 1 bring nothing
    assert got["d"] == 0.5  # e (3.0) is d's only neighbour
    assert got["e"] == pytest.approx(3.0 * 0.25)  # d's 0.5 lifts it, not past d
    ranked = [h.target_id for h in neighbour_support(hits, "q", tmp_path, 2.0)]
    assert ranked == ["a", "b", "c", "d", "e"]  # ties keep score, then database order
    assert got == {h.target_id: h.evalue for h in neighbour_support(hits, "q", tmp_path, 2.0)}
    assert [h.evalue for h in neighbour_support(hits, "q", tmp_path, 0.0)] == [
        h.evalue for h in hits]
    one = {h.target_id: h.evalue for h in neighbour_support(hits, "q", tmp_path, 1.0)}
    assert one["b"] == pytest.approx(4.0 * 1e-6) and one["e"] == pytest.approx(1.5)
    with pytest.raises(ValueError, match=">= 0"):
        neighbour_support(hits, "q", tmp_path, -1.0)


def test_query_msa_from_other_sequences_searches_only_the_database(tmp_path, monkeypatch):
    """``msa_db=``: the query's MSA comes from a larger sequence set (HHblits: UniRef), the search
    and its hits stay in ``db``."""
    from homalign.search.iterative import iterative_search
    from homalign.search.msa_build import build_msa

    monkeypatch.setenv("HOMALIGN_CACHE", str(tmp_path / "cache"))
    db = SequenceDB.from_sequences([FAMILY[0], FAMILY[2], *NOISE])
    more = tmp_path / "more.fa"
    more.write_text("".join(f">{s.id}\n{s.residues}\n" for s in FAMILY + NOISE))
    assert "h1" in build_msa(FAMILY[0], str(more), 1).ids  # h1 exists only in the larger set
    plain = iterative_search(FAMILY[0], db, 2, "pssm", prefilter=False, evalue=1e9,
                             traceback=False)
    wide = iterative_search(FAMILY[0], db, 2, "pssm", prefilter=False, evalue=1e9,
                            traceback=False, msa_db=str(more))
    assert {h.target_id for h in wide} == {h.target_id for h in plain} <= set(db.ids)
    e_plain = {h.target_id: h.evalue for h in plain}
    assert any(not np.isclose(h.evalue, e_plain[h.target_id]) for h in wide)  # another profile
    same = iterative_search(FAMILY[0], db, 2, "pssm", prefilter=False, evalue=1e9,
                            traceback=False, msa_db=db)
    assert [(h.target_id, h.evalue) for h in same] == [(h.target_id, h.evalue) for h in plain]


def test_cli_msa_db_needs_iterations(dbfile, tmp_path, capsys):
    from homalign.cli import main

    query = tmp_path / "q.fa"
    query.write_text(f">q\n{FAMILY[0].residues}\n")
    assert main(["search", str(query), str(dbfile), "--msa-db", str(dbfile),
                 "--no-progress"]) == 2
    assert "--msa-db needs --iterations" in capsys.readouterr().err
    assert main(["search", str(query), str(dbfile), "--msa-db", str(dbfile), "--iterations", "2",
                 "--method", "pssm", "--exhaustive", "--no-progress"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()
            if line and not line.startswith("#")]
    assert {r[1] for r in rows[:3]} == {"q", "h1", "h2"}


def test_neighbours_are_msa_members_and_owners(tmp_path):
    from homalign.search.msadb import neighbours

    for owner, rows in {"a": ["a", "b", "a"], "b": ["b"], "c": ["c", "a"]}.items():
        (tmp_path / f"{owner}.a3m").write_text("".join(f">{r}\nMKV\n" for r in rows))
    assert neighbours("a", tmp_path) == {"b", "c"}  # b in a's MSA, a in c's; not a itself
    assert neighbours("b", tmp_path) == {"a"} and neighbours("zz", tmp_path) == set()


def test_learned_ranks_the_best_of_the_pssm_and_database_rounds(dbfile, tmp_path, monkeypatch):
    """With database MSAs the learned ranking scores the PSSM round's and the database round's
    best FUSION_RESCORE (here 2) targets, not every candidate; the others take its worst value
    in the fusion."""
    import homalign.search.engine as engine
    import homalign.search.iterative as it

    out = build_msa_db(dbfile, tmp_path / "msa", 1, progress=False)
    db = SequenceDB.from_fasta(dbfile)
    seen: dict[str, list] = {}
    real = engine.search

    def spy(query, db_, method="sw", **kw):
        hits = real(query, db_, method=method, **kw)
        seen.setdefault(method, []).append((kw.get("candidates"), hits))
        return hits

    monkeypatch.setattr(engine, "search", spy)
    monkeypatch.setattr(it, "FUSION_RESCORE", 2)
    msadb_round = it.msa_db_round
    rounds = []
    monkeypatch.setattr(it, "msa_db_round",
                        lambda *a, **k: rounds.append(msadb_round(*a, **k)) or rounds[-1])
    hits = it.iterative_search(FAMILY[0], db, 2, "learned", prefilter=False, evalue=1e9,
                               traceback=False, target_msa=out)
    (cand, _), = seen["learned"]
    pssm = seen["pssm"][-1][1]
    profile_hits = rounds[-1][0]
    want = {h.target_index for h in pssm[:2]} | {h.target_index for h in profile_hits[:2]}
    assert set(cand.tolist()) == want and len(want) < len(db)
    assert {h.target_id for h in hits} == {s.id for s in FAMILY + NOISE}
