"""The alignment benchmark harness end to end on two bundled HOMSTRAD families."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from homalign.evaluate import bundled_homstrad_dev, run_alignment_benchmark
from homalign.evaluate.alignment_benchmark import PAIR_COLUMNS, SUMMARY_COLUMNS, select_pairs
from homalign.methods import METHODS, Method, get_method

FAMILIES = ("P", "PAN")  # 3 + 1 pairs, short sequences; PAN's pair is below 30% identity


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("homstrad")
    for fam in FAMILIES:
        shutil.copytree(bundled_homstrad_dev() / fam, root / fam)
    return root


def _read(path: Path) -> tuple[list[str], list[dict]]:
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


@pytest.fixture(scope="module")
def serial_run(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench1")
    rows = run_alignment_benchmark(data_dir, ["sw", "nw"], out, progress=False, echo=False)
    return out, rows


def test_outputs_and_columns(serial_run):
    out, rows = serial_run
    header, summary = _read(out / "summary.csv")
    assert header == list(SUMMARY_COLUMNS)
    assert [r["method"] for r in summary] == ["sw", "nw"]
    assert all(int(r["pairs"]) == 4 and int(r["twilight_pairs"]) == 1 for r in summary)
    header, pairs = _read(out / "pairs.csv")
    assert header == list(PAIR_COLUMNS)
    assert len(pairs) == 8
    assert {(r["family"]) for r in pairs} == set(FAMILIES)
    png = (out / "f1_vs_identity.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert [r["method"] for r in rows] == ["sw", "nw"]


def test_scores_are_sensible_and_consistent(serial_run):
    out, rows = serial_run
    _, pairs = _read(out / "pairs.csv")
    nw = rows[1]
    # HOMSTRAD family P is 40-53% identical: global alignment recovers most of the structure
    p_rows = [r for r in pairs if r["method"] == "nw" and r["family"] == "P"]
    assert all(float(r["F1"]) > 0.6 for r in p_rows)
    assert 0.4 < nw["F1"] <= 1.0
    # nw aligns every residue of the shorter sequence; the summary means match pairs.csv
    for r in p_rows:
        assert int(r["L_ali"]) <= min(int(r["Lq"]), int(r["Lt"]))
        assert float(r["S_dev"]) == pytest.approx(int(r["N_correct"]) / min(int(r["Lq"]),
                                                                             int(r["Lt"])), abs=1e-6)
    nw_rows = [r for r in pairs if r["method"] == "nw"]
    assert nw["F1"] == pytest.approx(sum(float(r["F1"]) for r in nw_rows) / 4, abs=1e-5)


def test_parallel_run_equals_serial_run(serial_run, data_dir, tmp_path):
    out1, _ = serial_run
    run_alignment_benchmark(data_dir, ["sw", "nw"], tmp_path, jobs=2, progress=False, echo=False)
    for name, drop in (("pairs.csv", "seconds"), ("summary.csv", "seconds")):
        _, a = _read(out1 / name)
        _, b = _read(tmp_path / name)
        for row in a + b:
            row.pop(drop)
        assert a == b


def test_unavailable_method_is_skipped(data_dir, tmp_path, monkeypatch, capsys):
    sw = get_method("sw")
    monkeypatch.setitem(METHODS, "missing_peer", Method(
        "missing_peer", "peer", "a peer that is not installed", sw.align,
        available=lambda: "missing_peer not found on PATH; install the Debian package nothing"))
    rows = run_alignment_benchmark(data_dir, ["missing_peer", "nw"], tmp_path, max_pairs=1,
                                   progress=False)
    captured = capsys.readouterr()
    assert "skipping missing_peer: missing_peer not found" in captured.err
    assert [r["method"] for r in rows] == ["nw"]
    assert "nw" in captured.out and "S_dev" in captured.out  # the summary table


def test_unknown_method_is_an_error(data_dir, tmp_path):
    with pytest.raises(ValueError, match="unknown method"):
        run_alignment_benchmark(data_dir, ["no_such_method"], tmp_path, progress=False)


def test_select_pairs_spreads_over_families():
    items = list(range(10))
    assert select_pairs(items, None) == items
    assert select_pairs(items, 3) == [0, 4, 9]
    with pytest.raises(ValueError):
        select_pairs(items, 0)


def test_family_chunks_are_runs_of_one_family_covering_every_pair():
    from types import SimpleNamespace

    from homalign.evaluate.alignment_benchmark import family_chunks

    refs = [SimpleNamespace(family=f) for f in "A" * 9 + "B" * 2 + "C" + "D" * 4]
    chunks = family_chunks(refs, jobs=1)  # at most ceil(16 / 4) = 4 pairs a run
    assert [k for c in chunks for k in c] == list(range(len(refs)))
    assert all(len({refs[k].family for k in c}) == 1 and len(c) <= 4 for c in chunks)
    assert [len(c) for c in chunks] == [4, 4, 1, 2, 1, 4]
    assert family_chunks([], jobs=2) == []
