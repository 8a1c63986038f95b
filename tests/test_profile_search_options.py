"""The profile and HMM methods' options in ``search``: each one changes the search or is refused
with a one-line message, per-query inputs never reach the E-value fit, a query model belongs to
one query and is not prefiltered by the query sequence's k-mers, hhm-mac traces with MAC."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import homalign
from homalign import examples
from homalign.cli import main
from homalign.errors import InputError
from homalign.methods import OptionError, get_method


def _ex(name: str) -> str:
    return str(examples.path(name))


@pytest.fixture(scope="module")
def query():
    return homalign.read_sequences(_ex("query.fa"))[0]


@pytest.fixture(scope="module")
def myoglobin():
    return next(s for s in homalign.read_sequences(_ex("queries.fa")) if s.id == "d1naza_")


def _search_cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["search", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _values(hits) -> list[tuple[str, float]]:
    return [(h.target_id, round(h.score, 3)) for h in hits]


# --- 1: pssm --iterations N reads its profile options or refuses them -------------------------
def test_pssm_iterations_applies_profile_options(query):
    db = _ex("db.fa")
    base = homalign.search(query, db, "pssm", iterations=2, evalue=1.0)
    for opts in ({"pseudocounts": "dirichlet"}, {"admix": "hhsuite"},
                 {"pssm_kind": "average"}, {"inclusion_evalue": 1e-30}):
        hits = homalign.search(query, db, "pssm", iterations=2, evalue=1.0, **opts)
        assert hits and _values(hits) != _values(base), opts
    with pytest.raises(ValueError, match="builds the query's MSA itself"):
        homalign.search(query, db, "pssm", iterations=2, query_msa=_ex("query.fa"))
    with pytest.raises(ValueError, match="inclusion E-value must be a positive"):
        homalign.search(query, db, "pssm", iterations=2, inclusion_evalue=float("nan"))


def test_cli_pssm_iterations_options(capsys, tmp_path):
    q, db = _ex("query.fa"), _ex("db.fa")
    rc, base, _ = _search_cli(capsys, q, db, "--method", "pssm", "--iterations", "2")
    assert rc == 0 and base
    rc, out_dirichlet, _ = _search_cli(capsys, q, db, "--method", "pssm", "--iterations", "2",
                                       "--pseudocounts", "dirichlet")
    assert rc == 0 and out_dirichlet and out_dirichlet != base
    for bad, message in ((["--inclusion-evalue", "nan"], "inclusion E-value"),
                         (["--inclusion-evalue", "-1"], "inclusion E-value"),
                         (["--query-msa", q], "builds the query's MSA"),
                         (["--method", "hhm", "--pssm-kind", "average"],
                          "does not read --pssm-kind")):
        argv = [q, db, "--method", "pssm", "--iterations", "2", *bad]
        rc, out, err = _search_cli(capsys, *argv)
        assert rc == 2 and not out and message in err, bad
    # the default method (sw) with --iterations is the same PSI-BLAST-class search: the same
    # profile options, the same hits
    rc, sw_out, _ = _search_cli(capsys, q, db, "--iterations", "2", "--pseudocounts", "dirichlet")
    assert rc == 0 and sw_out == out_dirichlet
    # --matrix goes to the PSSM rounds of a fused search (it crashed: given twice)
    rc, out, _ = _search_cli(capsys, q, db, "--method", "hhm", "--iterations", "2",
                             "--matrix", "BLOSUM45", "--evalue", "1e-3")
    assert rc == 0 and out


# --- 2: per-query inputs are not applied to the E-value fit's random pairs -------------------
def test_null_fit_leaves_out_per_protein_inputs():
    from homalign.search.calibration import null_options

    opts = {"query_msa": "q.a3m", "msa": "dir", "query_hhm": "q.hhm", "gap_open": 9.0}
    assert null_options(opts) == {"gap_open": 9.0}
    # a query's HMMER model stays: the fit is that model's own null (its scores do not
    # depend on the query sequence), as HMMER calibrates a model
    assert null_options({"query_hmm": "m.hmm"}) == {"query_hmm": "m.hmm"}


def test_search_with_a_query_msa_or_an_msa_directory(query, tmp_path):
    family = ("d4weea1", "d2cm5a_", "d1tjxa1")  # the query's closest relatives in db.fa
    db_seqs = [s for k, s in enumerate(homalign.read_sequences(_ex("db.fa")))
               if k < 10 or s.id in family]
    db = tmp_path / "db.fa"
    db.write_text("".join(f">{s.id}\n{s.residues}\n" for s in db_seqs))
    msadir = tmp_path / "msas"
    msadir.mkdir()
    for s in [query, *db_seqs]:  # each protein's MSA: itself and a copy
        (msadir / f"{s.id}.a3m").write_text(f">{s.id}\n{s.residues}\n>copy\n{s.residues}\n")
    hits = homalign.search(query, str(db), "hmm", query_msa=str(msadir / f"{query.id}.a3m"),
                           evalue=1e3)
    assert hits[0].target_id in family and hits[0].alignment.length > 100
    for method in ("pssm", "hhm"):  # before: "no MSA for 'rq0' in msas"
        hits = homalign.search(query, str(db), method, msa=str(msadir), evalue=1e3)
        assert hits[0].target_id in family, method


# --- 3 and 4: a query model is one query's, and scores every target ---------------------------
def test_a_query_model_is_one_querys(capsys, myoglobin, query, tmp_path):
    rc, out, err = _search_cli(capsys, _ex("queries.fa"), _ex("db.fa"), "--method", "hmm",
                               "--query-hmm", _ex("C2.hmm"))
    assert rc == 2 and not out and "one query's model" in err
    with pytest.raises(InputError, match="places none of the query"):
        homalign.search(myoglobin, _ex("db.fa"), "hmm", query_hmm=_ex("C2.hmm"))
    rc, out, err = _search_cli(capsys, _ex("query.fa"), _ex("db.fa"), "--method", "hmm",
                               "--query-hmm", _ex("C2.hmm"), "--evalue", "1e-3")
    assert rc == 0 and out
    # align keeps the model's score for an off-model query, without pairs
    target = next(s for s in homalign.read_sequences(_ex("db.fa")) if s.id == "d4weea1")
    off = homalign.align(myoglobin, target, method="hmm", query_hmm=_ex("C2.hmm"))
    assert off.length == 0 and off.score > 100


def test_a_query_model_scores_every_target(capsys, query):
    hits = homalign.search(query, _ex("db.fa"), "hmm", query_hmm=_ex("C2.hmm"), evalue=1e-3)
    assert "d2zkmx2" in {h.target_id for h in hits}  # the query shares no k-mer seed with it
    asked = homalign.search(query, _ex("db.fa"), "hmm", query_hmm=_ex("C2.hmm"), evalue=1e-3,
                            prefilter=True)
    assert "d2zkmx2" not in {h.target_id for h in asked}
    rc, out, _ = _search_cli(capsys, _ex("query.fa"), _ex("db.fa"), "--method", "hmm",
                             "--query-hmm", _ex("C2.hmm"), "--evalue", "1e-3")
    assert rc == 0 and "\td2zkmx2\t" in out


# --- 5: hhm-mac traces its hits with MAC, as align does ---------------------------------------
def test_hhm_mac_search_traces_with_mac(query):
    db = _ex("db.fa")
    hits = homalign.search(query, db, "hhm-mac", evalue=1e-2, mact=0.9)
    assert hits
    for h in hits[:5]:
        target = next(s for s in homalign.read_sequences(db) if s.id == h.target_id)
        aln = homalign.align(query, target, method="hhm-mac", mact=0.9)
        assert np.array_equal(h.alignment.pairs, aln.pairs)
    viterbi = {h.target_id: h.alignment.pairs for h in homalign.search(query, db, "hhm",
                                                                          evalue=1e-2)}
    assert any(not np.array_equal(viterbi[h.target_id], h.alignment.pairs) for h in hits
               if h.target_id in viterbi)


# --- 6, 7, 8: options a method does not read, values help does not list ----------------------
def test_hmm_reads_no_matrix(query):
    with pytest.raises(OptionError, match="no option 'matrix'"):
        homalign.align(query, query, method="hmm", matrix="BLOSUM62")
    with pytest.raises(OptionError):
        homalign.search(query, _ex("db.fa"), "hmm", matrix="FOO")


def test_cli_refuses_iterative_msa_and_lists_every_value(capsys):
    rc, out, err = _search_cli(capsys, _ex("query.fa"), _ex("db.fa"), "--method", "pssm",
                               "--msa", "iterative:2")
    assert rc == 2 and not out and "--iterations N" in err
    with pytest.raises(SystemExit):
        main(["search", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "matrix | dirichlet | none" in text and "logodds (matrix units) | average" in text
    opts = {o.name: o for o in get_method("pssm").options}
    assert set(opts["pseudocounts"].choices) == {"matrix", "dirichlet", "none"}
    with pytest.raises(OptionError):
        homalign.align("HEAGAWGHEE", "PAWHEAE", method="pssm", pssm_kind="frequency")


def test_inclusion_evalue_without_an_msa_round_is_refused(capsys, query):
    """It sets which hits join an MSA round; with no round it would change nothing."""
    with pytest.raises(ValueError, match="inclusion_evalue applies to msa=iterative"):
        homalign.align(query, query, method="pssm", inclusion_evalue=0.01)
    with pytest.raises(ValueError, match="inclusion_evalue applies to msa=iterative"):
        homalign.search(query, _ex("db.fa"), "hmm", inclusion_evalue=0.01)
    rc, out, err = _search_cli(capsys, _ex("query.fa"), _ex("db.fa"), "--method", "pssm",
                               "--inclusion-evalue", "0.01")
    assert rc == 2 and not out and "--iterations N" in err
    pair = homalign.align(query, query, method="pssm", msa="iterative:1", db=_ex("db.fa"),
                          inclusion_evalue=0.01)
    assert pair.score > 0
    # the paths that read no MSA source: a query model, hhalign without msa=, one search round
    with pytest.raises(ValueError, match="inclusion_evalue applies to msa=iterative"):
        homalign.align(query, query, method="hmm", query_hmm=_ex("C2.hmm"),
                       inclusion_evalue=0.01)
    with pytest.raises(ValueError, match="inclusion_evalue applies to msa=iterative"):
        homalign.align(query, query, method="hhalign", inclusion_evalue=0.01)
    from homalign.search.iterative import iterative_search

    with pytest.raises(ValueError, match="one round builds no MSA"):
        iterative_search(query, _ex("db.fa"), 1, "pssm", inclusion_evalue=0.01)
    assert iterative_search(query, _ex("db.fa"), 1, "pssm", evalue=1e-3)


# --- 9: a file of the wrong kind says what it is ----------------------------------------------
def test_messages_name_the_file_kind(capsys, tmp_path):
    hhm = tmp_path / "q.hhm"
    hhm.write_text("HHsearch 1.5\nNAME  q\nLENG  3\n")
    q, db = _ex("query.fa"), _ex("db.fa")
    for argv, message in ((["--method", "hhm", "--query-hhm", _ex("C2.hmm")],
                           "a HMMER model (.hmm), not an HH-suite .hhm"),
                          (["--method", "hhm", "--query-msa", str(hhm)],
                           "an HH-suite HMM (.hhm), not an MSA"),
                          (["--method", "pssm", "--query-msa", _ex("C2.hmm")],
                           "a HMMER model (.hmm), not an MSA"),
                          (["--method", "hhm", "--target-hhm", str(hhm)],
                           "a database search needs every target's")):
        rc, out, err = _search_cli(capsys, q, db, *argv)
        assert rc == 2 and not out and message in err, argv
        assert len(err.strip().splitlines()) == 1
    assert Path(_ex("C2.hmm")).exists()
