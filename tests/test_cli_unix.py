"""Unix habits through the real ``homalign`` command (subprocesses): ``-`` is stdin, output is
streamed, a closed pipe ends quietly with status 0, progress bars only when asked or on a
terminal, and one ``-j/--threads`` flag on every verb that computes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import homalign
from homalign.cli import build_parser
from homalign.io import FastaRecord, read_pir, write_fasta

HOMALIGN = str(Path(sys.executable).parent / "homalign")
DATA = Path(homalign.__file__).parent / "data" / "homstrad_dev"
ENV = {**os.environ, "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    records = []
    for fam in sorted(p.name for p in DATA.iterdir() if (p / f"{p.name}.ali").exists())[:20]:
        for entry in read_pir(DATA / fam / f"{fam}.ali"):
            seq = entry.aligned.replace("-", "").replace("/", "")
            if len(seq) >= 30 and all(r.id != entry.id for r in records):
                records.append(FastaRecord(entry.id, "", seq))
    d = tmp_path_factory.mktemp("unix")
    q, db = d / "q.fa", d / "db.fa"
    write_fasta(q, records[:3])
    write_fasta(db, records)
    return q, db, len(records)


def _homalign(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([HOMALIGN, *args], input=stdin, capture_output=True, env=ENV,
                          timeout=600, check=False)


def test_search_reads_the_query_from_stdin(files):
    q, db, _ = files
    from_file = _homalign("search", str(q), str(db))
    from_pipe = _homalign("search", "-", str(db), stdin=q.read_bytes())
    assert from_pipe.returncode == 0, from_pipe.stderr.decode()
    assert from_pipe.stdout == from_file.stdout and from_pipe.stdout.count(b"\n") >= 3


def test_gzip_by_its_magic_bytes_and_a_byte_order_mark_are_read_from_stdin_and_pipes(
        files, tmp_path):
    import gzip

    q, db, _ = files
    from_file = _homalign("search", str(q), str(db))
    for data in (gzip.compress(q.read_bytes()), b"\xef\xbb\xbf" + q.read_bytes()):
        r = _homalign("search", "-", str(db), stdin=data)
        assert r.returncode == 0, r.stderr.decode()
        assert r.stdout == from_file.stdout
    fifo = tmp_path / "query-pipe"  # a named pipe (as <(zcat q.fa.gz)): nothing lost to a peek
    os.mkfifo(fifo)
    proc = subprocess.Popen([HOMALIGN, "search", str(fifo), str(db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=ENV)
    with open(fifo, "wb") as fh:
        fh.write(gzip.compress(q.read_bytes()))
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()
    assert out == from_file.stdout


def test_align_reads_stdin_and_names_it_in_errors(files):
    q, db, _ = files
    r = _homalign("align", "-", str(q), "--method", "sw", "--format", "tab",
                  stdin=q.read_bytes())
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 9
    bad = _homalign("align", "-", str(q), "--method", "sw", stdin=b">x\nMK1VL\n")
    assert bad.returncode == 2
    err = bad.stderr.decode()
    assert "<stdin>" in err and "'x'" in err and "stdin.fa" not in err
    two = _homalign("align", "-", "-", stdin=q.read_bytes())
    assert two.returncode == 2 and b"only one input" in two.stderr


def test_makedb_reads_stdin(files, tmp_path):
    _q, db, n = files
    r = _homalign("makedb", "-", str(tmp_path / "db"), "--no-learned", stdin=db.read_bytes())
    assert r.returncode == 0, r.stderr.decode()
    assert f"{n} sequences".encode() in r.stderr


def test_closed_pipe_ends_quietly_with_status_0(files):
    """``homalign align ... | head -1`` as a shell runs it: the output (hundreds of kB) is far
    larger than the pipe, so homalign is still writing when head exits."""
    _q, db, _ = files
    cmd = (f"set -o pipefail; {HOMALIGN} align {db} {db} --method sw --format pair | head -1")
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, env=ENV, timeout=600,
                       check=False)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().startswith("# ") and r.stdout.count(b"\n") == 1
    assert b"Broken pipe" not in r.stderr and b"Error" not in r.stderr


def test_search_closed_pipe(files):
    _q, db, _ = files
    cmd = (f"set -o pipefail; {HOMALIGN} search {db} {db} --format pair --evalue 100 "
           "| head -1")
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, env=ENV, timeout=600,
                       check=False)
    assert r.returncode == 0 and r.stderr == b"", r.stderr.decode()


def test_search_streams_query_by_query(files, tmp_path):
    """The first query's hits arrive before the last query is searched."""
    _q, db, _ = files
    proc = subprocess.Popen([HOMALIGN, "search", str(db), str(db), "--method", "sw"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**ENV, "TMPDIR": str(tmp_path)})  # what the kill leaves
    try:
        first = proc.stdout.readline()
        assert first.count(b"\t") == 11
        assert proc.poll() is None  # still running: the rest is not computed yet
    finally:
        proc.kill()
        proc.communicate()


def test_progress_only_when_asked_or_on_a_terminal(files):
    q, db, _ = files
    quiet = _homalign("search", str(q), str(db))
    assert quiet.returncode == 0 and quiet.stderr == b""  # stderr is not a terminal here
    loud = _homalign("search", str(q), str(db), "--progress")
    assert loud.returncode == 0 and b"search sw" in loud.stderr


VERBS = [["align"], ["search"], ["makedb"], ["makemsa"], ["benchmark", "alignment"],
         ["benchmark", "homology"], ["train"]]


def _subparser(path: list[str]):
    p = build_parser()
    for name in path:
        sub = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction")
        p = sub.choices[name]
    return p


@pytest.mark.parametrize("verb", VERBS, ids=" ".join)
def test_every_computing_verb_has_threads(verb):
    p = _subparser(verb)
    flags = {s for a in p._actions for s in a.option_strings}
    assert {"-j", "--threads"} <= flags
    dest = next(a for a in p._actions if "--threads" in a.option_strings)
    assert dest.default is None  # None: all cores


@pytest.mark.parametrize("verb", [["makemsa", "db", "out"], ["benchmark", "alignment"]],
                         ids=" ".join)
def test_jobs_is_a_deprecated_alias_of_threads(verb, capsys):
    args = build_parser().parse_args([*verb, "--jobs", "3"])
    assert args.threads == 3
    assert "deprecated" in capsys.readouterr().err
    assert build_parser().parse_args([*verb, "-j", "2"]).threads == 2


def test_benchmark_workers_are_pinned_to_one_thread(monkeypatch):
    """``benchmark alignment -j 2``: each worker computes with one thread (numba, torch,
    OpenMP), else N workers times a pool of threads each oversubscribe the cores. The workers
    here start with two threads in their environment; the initializer brings them to one."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import numba
    import torch

    from homalign.evaluate.alignment_benchmark import _pin_worker

    monkeypatch.setenv("NUMBA_NUM_THREADS", "2")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    ctx = multiprocessing.get_context("spawn")  # children take this environment
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        assert pool.submit(numba.get_num_threads).result() == 2  # the control
        assert pool.submit(torch.get_num_threads).result() == 2
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx, initializer=_pin_worker) as pool:
        assert pool.submit(numba.get_num_threads).result() == 1
        assert pool.submit(torch.get_num_threads).result() == 1
        assert pool.submit(os.getenv, "OMP_NUM_THREADS").result() == "1"


def test_python_dash_m_runs_the_same_command(files):
    q, db, _ = files
    script = _homalign("search", str(q), str(db))
    module = subprocess.run([sys.executable, "-m", "homalign", "search", str(q), str(db)],
                            capture_output=True, env=ENV, timeout=600, check=False)
    assert module.returncode == 0, module.stderr.decode()
    assert module.stdout == script.stdout and module.stdout.count(b"\n") >= 3
    bad = subprocess.run([sys.executable, "-m", "homalign", "search", "--evalu", "1"],
                         capture_output=True, env=ENV, timeout=600, check=False)
    assert bad.returncode == 2 and b"--evalu" in bad.stderr
