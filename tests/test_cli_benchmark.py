"""``homalign benchmark`` through the CLI entry point."""

from __future__ import annotations

import csv
import shutil

import pytest

from homalign.cli import build_parser, main
from homalign.cli.benchmark import default_methods, method_options, run_alignment
from homalign.evaluate import bundled_homstrad_dev
from homalign.methods import METHODS, Method, get_method


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("fams")
    for fam in ("P", "PAN"):
        shutil.copytree(bundled_homstrad_dev() / fam, root / fam)
    return root


def test_benchmark_alignment_end_to_end(data_dir, tmp_path, capsys):
    out = tmp_path / "bench"
    rc = main(["benchmark", "alignment", "--data", str(data_dir), "--methods", "sw,nw",
               "--out", str(out), "--max-pairs", "2", "--no-progress"])
    assert rc == 0
    with open(out / "summary.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["method"] for r in rows] == ["sw", "nw"]
    assert all(r["pairs"] == "2" for r in rows)
    assert (out / "pairs.csv").is_file() and (out / "f1_vs_identity.png").is_file()
    printed = capsys.readouterr().out
    assert "balanced" in printed and "nw" in printed


def test_bad_data_dir_is_a_one_line_error(tmp_path, capsys):
    rc = main(["benchmark", "alignment", "--data", str(tmp_path / "absent"), "--methods", "sw",
               "--out", str(tmp_path / "o"), "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "absent" in err[0]


def test_bare_benchmark_defaults_to_alignment_on_bundled_data():
    args = build_parser().parse_args(["benchmark"])
    assert args._benchmark_run is run_alignment
    assert args.data is None and args.methods is None
    assert args.out == "homalign-benchmark" and args.threads is None and args.max_pairs is None
    methods = default_methods()
    with_db = get_method("learned-homologs").available() is None
    head = ["learned", "learned-homologs", "sw", "nw"] if with_db else ["learned", "sw", "nw"]
    assert methods[:len(head)] == head
    for name in methods[len(head):]:
        assert get_method(name).kind == "peer" and get_method(name).available() is None


def test_learned_homologs_joins_the_defaults_only_with_a_database(monkeypatch, tmp_path):
    from homalign.methods.learned import HOMOLOGS_ENV, default_homolog_db

    db = tmp_path / "db.fa"
    db.write_text(">a\nMKVLAAGIVGLLLAGCSSHKEE\n")
    monkeypatch.setenv(HOMOLOGS_ENV, str(db))
    assert default_homolog_db() == str(db)
    assert "learned-homologs" in default_methods()
    monkeypatch.setenv(HOMOLOGS_ENV, "")
    monkeypatch.setattr("homalign.methods.learned.DEBIAN_UNIPROT", str(tmp_path / "absent.gz"))
    assert default_homolog_db() is None
    assert "no homologue database" in get_method("learned-homologs").available()
    assert "learned-homologs" not in default_methods()


def test_msa_and_db_pass_through(data_dir, tmp_path, monkeypatch):
    seen: list[dict] = []
    nw = get_method("nw")

    def recording_align(query, target, **options):
        seen.append(options)
        return nw.align(query, target)  # nw itself reads no msa/db

    monkeypatch.setitem(METHODS, "recorder", Method("recorder", "profile", "records options",
                                                    recording_align))
    rc = main(["benchmark", "alignment", "--data", str(data_dir), "--methods", "recorder",
               "--out", str(tmp_path), "--max-pairs", "1", "--no-progress", "-j", "1",
               "--msa", "iterative:2", "--db", "db.fa"])
    assert rc == 0
    assert seen and all(o == {"msa": "iterative:2", "db": "db.fa"} for o in seen)
    assert method_options(build_parser().parse_args(["benchmark", "alignment"])) == {}


@pytest.mark.parametrize("bad", [["--msa", "iterative"], ["--msa", "profile"], ["--jobs", "0"],
                                 ["--max-pairs", "-1"], ["--max-pairs", "x"],
                                 ["--methods", "sw,sw"], ["--shift", "-1"]])
def test_bad_options_are_rejected(bad):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["benchmark", "alignment", *bad])


@pytest.mark.slow
def test_parallel_alignment_benchmark_compiles_in_its_workers(tmp_path) -> None:
    """With an empty numba cache the pinned workers compile the kernels themselves: changing
    NUMBA_NUM_THREADS after numba had loaded made every compile in them fail (a fresh clone's
    main job)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    r = subprocess.run([sys.executable, "-c", "import sys; from homalign.cli import main; "
                        "sys.exit(main(sys.argv[1:]))", "benchmark", "alignment", "--methods",
                        "learned", "--max-pairs", "4", "-j", "2", "--out", str(tmp_path / "o"),
                        "--no-progress"], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "o" / "summary.csv").is_file()
