"""The SCOPe homology benchmark protocol (Foldseek paper) on hand-made rankings."""

from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from homalign.evaluate.homology import (
    Scop,
    ScopIndex,
    _parse_blast_tab,
    _parse_hmmer_tbl,
    _parse_jackhmmer_tbl,
    cross_fold_decoys,
    is_heldout_fold,
    labels_from_fasta,
    mean_sensitivity,
    precision_recall,
    query_sensitivity,
    rank_by_evalue,
    rank_by_score,
    run_benchmark,
    run_peer,
    sensitivities,
    train_fold_queries,
    train_fold_tuning_set,
)
from homalign.stats import random_sequences

# q: a.1.1.1; family mates f1 f2; superfamily (other family) s1 s2 s3; fold (other sf) o1 o2;
# other folds x1 x2; "lonely" has no family mate.
LABELS = {
    "q": "a.1.1.1", "f1": "a.1.1.1", "f2": "a.1.1.1",
    "s1": "a.1.1.2", "s2": "a.1.1.2", "s3": "a.1.1.3",
    "o1": "a.1.2.1", "o2": "a.1.2.1",
    "x1": "b.1.1.1", "x2": "b.2.1.1",
    "lonely": "a.1.1.4",
}


@pytest.fixture
def index() -> ScopIndex:
    return ScopIndex({k: Scop.parse(v) for k, v in LABELS.items()})


def test_train_fold_queries_skip_excluded_and_unscorable_and_split_by_fold(index):
    import zlib

    labels = {k: Scop.parse(v) for k, v in LABELS.items()}
    every = train_fold_queries(labels, index, set(), 100)
    assert "lonely" not in every and set(every) == {k for k in labels if index.scorable(k)}
    assert "q" not in train_fold_queries(labels, index, {"q"}, 100)
    assert len(train_fold_queries(labels, index, set(), 2)) == 2
    assert zlib.crc32(b"a.1") % 10_000 == 2499  # every scorable domain here is in fold a.1
    assert train_fold_queries(labels, index, set(), 100, heldout=True, heldout_fraction=0.3) == every
    assert train_fold_queries(labels, index, set(), 100, heldout=True, heldout_fraction=0.2) == []


def test_scop_parse():
    s = Scop.parse("a.1.2.3")
    assert (s.family, s.superfamily, s.fold) == ("a.1.2.3", "a.1.2", "a.1")
    with pytest.raises(ValueError):
        Scop.parse("a.1.2")


def test_level_counts_exclude_the_query(index):
    c = index.counts("q")
    assert (c.family, c.superfamily, c.fold) == (2, 4, 2)  # lonely is in q's superfamily
    assert index.scorable("q")
    assert not index.scorable("lonely")  # its family has no other member
    assert not index.scorable("x1")


def test_walk_stops_at_the_first_false_positive(index):
    ranking = ["q", "f1", "s1", "o1", "x1", "f2", "s2", "o2"]
    sens = query_sensitivity("q", ranking, index)
    # published denominators: famCnt-1 = 2, sfamCnt-(famCnt-1) = 7-2 = 5, foldCnt-(sfamCnt-1) = 3
    assert sens == {"family": 1 / 2, "superfamily": 1 / 5, "fold": 1 / 3,
                    "superfamily_exclusive": 1 / 4, "fold_exclusive": 1 / 2}


def test_perfect_ranking_and_unknown_or_repeated_targets(index):
    ranking = ["f1", "f1", "f2", "s1", "s2", "s3", "lonely", "o2", "q", "o1", "x2"]
    assert query_sensitivity("q", ranking, index) == {
        "family": 1.0, "superfamily": 4 / 5, "fold": 2 / 3,  # the published +1 denominators
        "superfamily_exclusive": 1.0, "fold_exclusive": 1.0}
    # a target without a label is a false positive (the published script's rule)
    assert query_sensitivity("q", ["f1", "unknown", "f2"], index)["family"] == 1 / 2
    assert set(query_sensitivity("q", ["x1", "f1"], index).values()) == {0.0}


def test_sensitivities_sort_by_score_and_skip_unscorable_queries(index):
    results = {
        # given in a scrambled order: sorted by score, the walk is f1 f2 s1 | x1 ...
        "q": [("x1", 10.0, 1.0), ("f1", 90.0, 1e-9), ("s1", 20.0, 0.5), ("f2", 50.0, 1e-4),
              ("s2", 5.0, 3.0)],
        "lonely": [("s1", 99.0, 1e-20)],
    }
    per = sensitivities(results, ["q", "lonely"], index)
    assert list(per) == ["q"]
    assert per["q"] == {"family": 1.0, "superfamily": 1 / 5, "fold": 0.0,
                        "superfamily_exclusive": 1 / 4, "fold_exclusive": 0.0}
    assert mean_sensitivity(per) == per["q"]
    assert rank_by_score([("a", 1.0), ("b", 3.0), ("c", 1.0)]) == ["b", "a", "c"]
    # the walk follows E-values (ties by score): a high score with a worse E-value comes later
    assert rank_by_evalue([("a", 9.0, 1e-3), ("b", 5.0, 1e-5), ("c", 7.0, 1e-5),
                           ("d", 1.0, 0.0)]) == ["d", "c", "b", "a"]
    walked = sensitivities({"q": [("f1", 1.0, 1e-9), ("x1", 99.0, 1e-3), ("f2", 2.0, 1e-6)]},
                           ["q"], index)
    assert walked["q"]["family"] == 1.0


def test_precision_recall_at_evalue_thresholds(index):
    results = {"q": [("q", 500.0, 1e-50), ("f1", 90.0, 1e-9), ("f2", 50.0, 1e-4),
                     ("s1", 20.0, 0.5), ("x1", 10.0, 1.0)]}
    rows = {r["evalue"]: r for r in precision_recall(results, ["q"], index,
                                                     thresholds=(1e-5, 0.1, 1.0))}
    positives = 2 + 4  # same superfamily members of q (family mates included)
    assert rows[1e-5]["calls"] == 1 and rows[1e-5]["precision"] == 1.0
    assert rows[1e-5]["recall"] == pytest.approx(1 / positives)
    assert rows[0.1]["calls"] == 2 and rows[0.1]["true"] == 2
    assert rows[1.0]["calls"] == 4 and rows[1.0]["precision"] == pytest.approx(3 / 4)
    p, r = 3 / 4, 3 / positives
    assert rows[1.0]["f1"] == pytest.approx(2 * p * r / (p + r))


def test_peer_output_parsers(tmp_path):
    psi = tmp_path / "psi.tsv"
    psi.write_text(
        "# PSIBLAST\n# Iteration: 1\n# Query: q\n# Fields: x\n# 2 hits found\n"
        "q\tf1\t1e-5\t40.0\nq\tx1\t0.1\t20.0\n"
        "# PSIBLAST\n# Iteration: 2\n# Query: q\n# 2 hits found\n"
        "q\tf1\t1e-9\t60.0\nq\tf2\t1e-3\t30.0\n"
        "# PSIBLAST\n# Iteration: 1\n# Query: r\n# 1 hits found\nr\tx2\t2\t15.5\n")
    rounds = _parse_blast_tab(psi, last_iteration=True)
    assert rounds == {"q": [("f1", 60.0, 1e-9), ("f2", 30.0, 1e-3)], "r": [("x2", 15.5, 2.0)]}
    tbl = tmp_path / "p.tbl"
    tbl.write_text("# header\nf1 - q - 1e-10 45.2 0.1 1e-10 45.0 0.1 1 1 0 0 1 1 1 1 desc\n"
                   "x1 - q - 0.5 12.0 0.0 0.5 12.0 0.0 1 1 0 0 1 1 1 0 -\n# end\n")
    assert _parse_hmmer_tbl(tbl) == {"q": [("f1", 45.2, 1e-10), ("x1", 12.0, 0.5)]}
    assert _parse_jackhmmer_tbl(tbl) == {"q": [("f1", 45.2, 1e-10), ("x1", 12.0, 0.5)]}
    jk = tmp_path / "jk.tbl"  # two queries in one table, the second with two rounds
    jk.write_text("# header\n"
                  "f1 - q - 1e-10 45.2 0 0 0 0 0 0 0 0 0 0 0 0 -\n"
                  "x1 - r - 0.5 12.0 0 0 0 0 0 0 0 0 0 0 0 0 -\n"
                  "x2 - r - 0.9 10.0 0 0 0 0 0 0 0 0 0 0 0 0 -\n"
                  "x1 - r - 0.1 14.0 0 0 0 0 0 0 0 0 0 0 0 0 -\n# end\n")
    assert _parse_jackhmmer_tbl(jk) == {"q": [("f1", 45.2, 1e-10)], "r": [("x1", 14.0, 0.1)]}


def _synthetic_scop(tmp_path: Path) -> tuple[Path, Path]:
    """Two folds x two superfamilies x two families x 3 members; related by mutation."""
    rng = np.random.default_rng(5)
    aa = "ARNDCQEGHILKMFPSTWYV"

    def mutate(s: str, identity: float) -> str:
        return "".join(c if rng.random() < identity else aa[rng.integers(20)] for c in s)

    lines, queries = [], []
    for fold, root in enumerate(random_sequences(2, rng, 150, 200), start=1):
        for sf in (1, 2):
            sf_seq = mutate(root, 0.25)
            for fam in (1, 2):
                fam_seq = mutate(sf_seq, 0.55)
                for m in range(3):
                    sid = f"d{fold}{sf}{fam}{m}"
                    lines.append(f">{sid} c.{fold}.{sf}.{fam} (A:) synthetic\n"
                                 f"{mutate(fam_seq, 0.8).lower()}\n")
                    if m == 0:
                        queries.append(sid)
    db = tmp_path / "scop.fa"
    db.write_text("".join(lines))
    ql = tmp_path / "queries.txt"
    ql.write_text("# synthetic\n" + "\n".join(queries) + "\n")
    return db, ql


def test_run_benchmark_end_to_end(tmp_path):
    db, ql = _synthetic_scop(tmp_path)
    labels = labels_from_fasta(db)
    assert labels["d1110"].superfamily == "c.1.1"
    summary = run_benchmark(db, ql, ["sw"], tmp_path / "out", progress=False)
    assert [r["method"] for r in summary] == ["sw"]
    row = summary[0]
    assert row["queries"] == 8
    assert row["family"] == 1.0  # 80%-identical family mates always rank first
    with open(tmp_path / "out" / "summary.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["method", "queries", "family", "superfamily", "fold",
                             "superfamily_exclusive", "fold_exclusive", "seconds",
                             "warmup_seconds"]
    assert float(rows[0]["family"]) == 1.0
    assert float(rows[0]["warmup_seconds"]) > 0  # the first query alone, before the timed run
    with open(tmp_path / "out" / "hits" / "sw.tsv") as fh:  # the timed run's hits only
        assert len({line.split("\t")[0] for line in fh if line.strip()}) == 8
    assert (tmp_path / "out" / "sensitivity.png").stat().st_size > 1000
    with open(tmp_path / "out" / "precision_recall.csv") as fh:
        pr = list(csv.DictReader(fh))
    strict = next(r for r in pr if float(r["evalue"]) == 1e-10)
    assert math.isnan(float(strict["precision"])) or float(strict["precision"]) == 1.0


def test_warm_up_leaves_the_database_work_in_the_timed_run(tmp_path, monkeypatch):
    """The untimed first query compiles and loads; the embeddings of a FASTA database are made
    again inside the timed run (its caches emptied), as blastp's run includes makeblastdb."""
    from homalign.search import embeddings

    db, ql = _synthetic_scop(tmp_path)
    counted = mock.Mock(wraps=embeddings.compute_embeddings)
    monkeypatch.setattr(embeddings, "compute_embeddings", counted)
    summary = run_benchmark(db, ql, ["learned"], tmp_path / "out", progress=False, threads=1)
    assert counted.call_count == 2  # the warm-up's database, then the timed run's
    assert summary[0]["queries"] == 8 and summary[0]["warmup_seconds"] > 0


def test_blastp_peer_on_the_whole_database(tmp_path):
    assert shutil.which("blastp") and shutil.which("makeblastdb"), (
        "blastp/makeblastdb missing: apt-get install ncbi-blast+ (scripts/env.sh does)")
    from homalign.search import SequenceDB

    db_fa, ql = _synthetic_scop(tmp_path)
    db = SequenceDB.from_fasta(db_fa)
    plain = tmp_path / "plain.fa"
    plain.write_text("".join(f">{i}\n{db.residues(k)}\n" for k, i in enumerate(db.ids)))
    res = run_peer("blastp", ["d1110", "d2210"], db, plain, tmp_path / "blast")
    assert set(res) == {"d1110", "d2210"}
    ranked = rank_by_score((t, s) for t, s, _e in res["d1110"])
    assert ranked[0] == "d1110" and set(ranked[1:3]) == {"d1111", "d1112"}
    # a failing peer: its own message in the error (its log may be in a removed directory)
    with pytest.raises(RuntimeError, match=r"blastp failed with status \d+: .*expect value") as err:
        run_peer("blastp", ["d1110"], db, plain, tmp_path / "blast", evalue=-1.0)
    assert ".log" not in str(err.value)


def test_benchmark_homology_cli(tmp_path):
    from homalign.cli import main

    db, ql = _synthetic_scop(tmp_path)
    out = tmp_path / "cli-out"
    assert main(["benchmark", "homology", "--db", str(db), "--queries", str(ql),
                 "--methods", "sw", "--out", str(out), "--no-progress"]) == 0
    with open(out / "summary.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["method"] for r in rows] == ["sw"] and rows[0]["queries"] == "8"
    bad = tmp_path / "bad.txt"
    bad.write_text("not_in_db\n")
    assert main(["benchmark", "homology", "--db", str(db), "--queries", str(bad),
                 "--methods", "sw", "--out", str(out), "--no-progress"]) == 2
    # every argument is checked before a method runs: nothing is written for them
    fresh = tmp_path / "never"
    for extra in (["--methods", "sw,foo"], ["--methods", "sw,sw"], ["--methods", "sw",
                  "--limit", "0"], ["--methods", "sw", "--limit", "-1"],
                  ["--methods", "sw", "--max-hits", "0"]):
        assert main(["benchmark", "homology", "--db", str(db), "--queries", str(ql),
                     "--out", str(fresh), "--no-progress", *extra]) == 2
        assert not fresh.exists()


def test_iterative_methods_in_the_benchmark(tmp_path):
    """``METHOD@N``: pssm@2 is the PSI-BLAST-class search, learned@2 its fusion with learned; the
    rows carry the names and the hit lists the fused E-values."""
    from homalign.evaluate.homology import parse_iterative_name
    from homalign.search import SequenceDB
    from homalign.search.iterative import iterative_search

    db_fa, ql = _synthetic_scop(tmp_path)
    summary = run_benchmark(db_fa, ql, ["pssm@2", "learned@2"], tmp_path / "out", progress=False,
                            limit=2)
    assert [r["method"] for r in summary] == ["pssm@2", "learned@2"]
    assert all(r["family"] == 1.0 for r in summary)
    db = SequenceDB.from_fasta(db_fa)
    q = db.sequence(db.index_of("d1110"))
    want = {h.target_id: h.evalue for h in iterative_search(q, db, 2, "learned", evalue=1e9,
                                                            max_hits=2000, traceback=False)}
    rows = [line.split("\t") for line in (tmp_path / "out" / "hits" / "learned@2.tsv")
            .read_text().splitlines() if line.startswith("d1110\t")]
    assert rows and {r[1]: float(r[3]) for r in rows} == pytest.approx(want, rel=1e-3)
    for r in rows:  # the walk ranks by the fused E-value
        assert float(r[2]) == pytest.approx(-math.log(max(float(r[3]), 1e-300)), rel=1e-3, abs=1e-3)
    assert parse_iterative_name("pssm@3") == ("pssm", 3)
    for bad in ("pssm@", "@3", "pssm@0", "pssm@x"):
        with pytest.raises(ValueError, match="METHOD@N"):
            parse_iterative_name(bad)


def test_train_fold_tuning_set_reads_a_data_root_and_leaves_out_dev_queries(tmp_path):
    db, ql = _synthetic_scop(tmp_path)
    scope = tmp_path / "root" / "scope"
    scope.mkdir(parents=True)
    (scope / "astral-2.07-40.trainval.fa").write_text(db.read_text())
    dev = [line for line in ql.read_text().split() if line.startswith("d")][:3]
    (scope / "dev-queries.txt").write_text("\n".join(dev) + "\n")
    ts = train_fold_tuning_set(100, data_root=tmp_path / "root")
    assert ts.fasta == scope / "astral-2.07-40.trainval.fa"
    assert ts.labels == labels_from_fasta(db)
    assert ts.queries == train_fold_queries(ts.labels, ts.index, set(dev), 100)
    assert ts.queries and not set(dev) & set(ts.queries)


def test_cross_fold_decoys_come_from_held_out_folds_and_share_none_with_the_queries(tmp_path):
    assert is_heldout_fold("a.9") and not is_heldout_fold("a.1")
    rng = np.random.default_rng(2)
    lines = []
    for fold in ("a.1", "a.2", "a.9", "a.24"):  # a.9 and a.24 are held-out folds
        for k, s in enumerate(random_sequences(6, rng, 40, 90)):
            lines += [f">d{fold.replace('.', '')}x{k}_ {fold}.1.1 (A:) t", s.lower()]
    fa = tmp_path / "db.fa"
    fa.write_text("\n".join(lines) + "\n")
    queries = [f"da1x{k}_" for k in range(6)] + ["da2x0_"]
    picked, decoys = cross_fold_decoys(fa, queries, n_queries=3, n_decoys=8)
    assert [q.id for q in picked] == ["da1x0_", "da1x3_", "da2x0_"]  # evenly spaced, file order
    assert len(decoys) == len({d.id for d in decoys}) == 8
    assert all(d.id.startswith(("da9x", "da24x")) for d in decoys)
    with pytest.raises(ValueError, match="share folds"):
        cross_fold_decoys(fa, ["da9x0_"], n_queries=1, n_decoys=12)


def test_run_benchmark_on_a_makedb_directory_equals_its_fasta(tmp_path):
    from homalign.search import makedb

    db, ql = _synthetic_scop(tmp_path)
    dbdir = makedb(db, tmp_path / "scop.db")
    on_fasta = run_benchmark(db, ql, ["learned"], tmp_path / "a", progress=False)
    on_dir = run_benchmark(dbdir, ql, ["learned"], tmp_path / "b", progress=False)
    for key in ("queries", "family", "superfamily", "fold"):
        assert on_dir[0][key] == on_fasta[0][key]
    # the directory's float16 embeddings: the same hits, scores within 1e-4 relative
    a = [x.split("\t") for x in (tmp_path / "a" / "hits" / "learned.tsv").read_text().split("\n")
         if x]
    b = [x.split("\t") for x in (tmp_path / "b" / "hits" / "learned.tsv").read_text().split("\n")
         if x]
    assert [x[:2] for x in a[:20]] == [x[:2] for x in b[:20]]
    np.testing.assert_allclose([float(x[2]) for x in a[:20]], [float(x[2]) for x in b[:20]],
                               rtol=1e-4)
