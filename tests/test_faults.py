"""Regression tests of the faults an independent checker found (issue 22, "Faults")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path

import pytest
import torch

from homalign.errors import HomalignError, InputError

sys.path.insert(0, str(Path(__file__).parent / "train"))
sys.path.insert(0, str(Path(__file__).parent))

from test_profile_formats import HHM  # noqa: E402

# --- checkpoint index -----------------------------------------------------------------------


def test_checkpoint_index_with_non_utf8_bytes_falls_back(tmp_path):
    from homalign.train.checkpoint import CheckpointStore

    store = CheckpointStore(tmp_path)
    store.save(10, {"w": torch.ones(2)}, {"a": 1})
    store.save(20, {"w": torch.zeros(2)}, {"a": 2})
    (tmp_path / "checkpoint").write_bytes(b'model_checkpoint_path: "model.ckpt-20\x9c"\n')
    fresh = CheckpointStore(tmp_path)
    ckpt = fresh.load_latest()  # before the fix: UnicodeDecodeError out of read_metadata
    assert ckpt is not None and ckpt.info.step == 20  # the newest complete one on disk
    assert any("checkpoint" in p and "utf-8" in p for p in fresh.problems)


def test_checkpoint_manifest_with_a_bad_step_is_corrupt_not_a_crash(tmp_path):
    from homalign.train.checkpoint import CheckpointStore, CorruptCheckpointError

    store = CheckpointStore(tmp_path)
    info = store.save(10, {"w": torch.ones(2)}, {"a": 1})
    manifest = info.files()[2]
    manifest.write_text(manifest.read_text().replace('"step": 10', '"step": null'))
    with pytest.raises(CorruptCheckpointError, match="files/step"):
        store.load(info)


# --- TensorBoard after a restart that found no checkpoint -----------------------------------


def test_restart_without_checkpoint_purges_the_killed_runs_series(tmp_path):
    from train_helpers import make_toy, run_until

    from homalign.train.summary import event_files, read_scalars

    toy = make_toy()
    sv = toy.supervisor(tmp_path, save_model_steps=1000, save_summaries_secs=0)

    def crash(step: int) -> None:
        sv.summary_computed(step, {"x": float(step)})
        if step == 15:
            raise RuntimeError("killed before the first checkpoint")

    with pytest.raises(RuntimeError, match="killed"):
        run_until(sv, toy, 100, on_step=crash)
    for path in tmp_path.glob("model.ckpt-*"):  # the final save of the crash: a kill has none
        path.unlink()
    (tmp_path / "checkpoint").unlink(missing_ok=True)
    time.sleep(1.1)  # event file names carry the second: the new one must sort after
    toy2 = make_toy()
    sv2 = toy2.supervisor(tmp_path, save_model_steps=1000, save_summaries_secs=0)
    run_until(sv2, toy2, 8, on_step=lambda s: sv2.summary_computed(s, {"x": 100.0 + s}))
    assert sv2.restored_from is None and len(event_files(tmp_path)) == 2
    xs = read_scalars(tmp_path)["x"]
    assert [s for s, _ in xs] == list(range(8)), "the series must not go back in steps"
    assert [v for _, v in xs] == [100.0 + s for s in range(8)]


def test_event_writer_purge_stale_only_when_asked(tmp_path):
    from homalign.train.summary import EventWriter, read_scalars

    for purge_stale, expected in ((False, [0, 1, 2, 3, 0, 1]), (True, [0, 1])):
        logdir = tmp_path / str(purge_stale)
        w = EventWriter(logdir)
        for s in range(4):
            w.write(s, {"x": float(s)})
        w.close()
        time.sleep(1.1)
        w = EventWriter(logdir, purge_stale=purge_stale)
        for s in range(2):
            w.write(s, {"x": 10.0 + s})
        w.close()
        assert [s for s, _ in read_scalars(logdir)["x"]] == expected


# --- readers --------------------------------------------------------------------------------


def test_hhm_huge_negative_emission_is_input_error_not_overflow(tmp_path):
    from homalign.profile.hhm import read_hhm

    path = tmp_path / "bad.hhm"
    path.write_text(HHM.replace("M 1    *\t", "M 1    -1100000\t"))
    with pytest.raises(InputError, match=">= 0") as err:
        read_hhm(path)
    assert err.value.path == str(path) and err.value.line == 14


def test_hhm_very_large_emission_is_probability_zero(tmp_path):
    from homalign.profile.hhm import read_hhm

    path = tmp_path / "q.hhm"
    path.write_text(HHM.replace("M 1    *\t", "M 1    99999999\t"))
    assert len(read_hhm(path)) == 5


def test_hhm_multi_letter_residue_is_input_error_not_index_error(tmp_path):
    from homalign.profile.hhm import read_hhm

    path = tmp_path / "bad.hhm"
    path.write_text(HHM.replace("K 2    ", "MK 2    "))
    with pytest.raises(InputError, match="one residue letter") as err:
        read_hhm(path)
    assert err.value.line == 17


def test_pssm_score_beyond_int32_is_input_error(tmp_path):
    from homalign.profile import Profile
    from homalign.profile.pssm_io import read_pssm, write_pssm

    path = tmp_path / "q.pssm"
    write_pssm(path, Profile.from_sequence("MKVLA"))
    lines = path.read_text().splitlines()
    toks = lines[4].split()
    toks[3] = str(2**40)
    lines[4] = " ".join(toks)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="int32") as err:
        read_pssm(path)
    assert err.value.line == 5 and err.value.column == 4


def test_tmalign_huge_cigar_count_is_checked_before_expansion(tmp_path):
    from homalign.io.tmalign import TMALIGN_COLUMNS, read_tmalign_pairs

    path = tmp_path / "pairs.tsv"
    row = ["d1a", "d1b", "a.1.1.1", "a.1.1.1", "0.7", "0.7", "0.7", "1.0", "1000000000",
           "1000000000P", "MKV", "MKV"]
    path.write_text("\t".join(TMALIGN_COLUMNS) + "\n" + "\t".join(row) + "\n")
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(InputError, match="consumes 1000000000 query") as err:
        list(read_tmalign_pairs(path))
    elapsed = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert elapsed < 1.0 and peak < 10 * 2**20
    assert err.value.line == 2 and err.value.record == "d1a-d1b" and err.value.column == 10


# --- weights files --------------------------------------------------------------------------


def test_damaged_weights_raise_the_projects_errors_naming_the_file(tmp_path):
    from homalign.model.weights import load_bundled, load_model, save_model
    from homalign.train.checkpoint import CorruptCheckpointError
    from homalign.train.export import BestExporter, load_export
    from homalign.train.warm_start import warm_start

    model, _ = load_bundled("learned")
    save_model(model, tmp_path / "m")
    (tmp_path / "m.safetensors").write_bytes(b"not safetensors at all")
    with pytest.raises(InputError, match="damaged safetensors") as err:
        load_model(tmp_path / "m")
    assert err.value.path == str(tmp_path / "m.safetensors")
    with pytest.raises(InputError, match="no such file"):
        load_model(tmp_path / "missing")

    with pytest.raises(InputError, match="safetensors") as err:
        warm_start(model, tmp_path / "m.safetensors")
    assert err.value.path == str(tmp_path / "m.safetensors")
    with pytest.raises(InputError, match="no such"):
        warm_start(model, tmp_path / "nowhere" / "model.ckpt-5")

    exporter = BestExporter(metric="loss", mode="min")
    assert exporter is not None
    export_dir = tmp_path / "export"
    export_dir.mkdir()
    (export_dir / "model.safetensors").write_bytes(b"garbage")
    import hashlib
    import json

    (export_dir / "config.json").write_text(json.dumps(
        {"weights_sha256": hashlib.sha256(b"garbage").hexdigest()}))
    with pytest.raises(CorruptCheckpointError, match="damaged safetensors") as err:
        load_export(export_dir)
    assert str(export_dir / "model.safetensors") in str(err.value)
    assert isinstance(err.value, HomalignError)
    with pytest.raises(CorruptCheckpointError, match="missing"):
        load_export(tmp_path / "no-export")


# --- makemsa workers die with their parent --------------------------------------------------


def _children(pid: int) -> set[int]:
    kids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            kids.add(int(entry.name))
    return kids


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killed_makemsa_leaves_no_workers(tmp_path, sig):
    import random

    rng = random.Random(0)
    db = tmp_path / "db.fa"
    db.write_text("".join(f">s{i}\n{''.join(rng.choice('ACDEFGHIKLMNPQRSTVWY') for _ in range(300))}\n"
                          for i in range(400)))
    code = textwrap.dedent(f"""
        import sys
        from homalign.cli import main
        sys.exit(main(["makemsa", {str(db)!r}, {str(tmp_path / 'msa')!r}, "--jobs", "2",
                       "--iterations", "3", "--no-progress"]))
    """)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    parent = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        workers: set[int] = set()
        while time.monotonic() < deadline and parent.poll() is None:
            workers = _children(parent.pid)
            if len(workers) >= 3:  # the resource tracker and the two pool workers
                break
            time.sleep(0.2)
        assert parent.poll() is None, "makemsa ended before it could be killed"
        assert len(workers) >= 3, f"expected the pool's workers, found {workers}"
        time.sleep(2.0)  # let the workers start computing
        os.kill(parent.pid, sig)
        parent.wait(10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.2)
        left = [p for p in workers if _alive(p)]
        assert not left, f"workers {left} outlived their killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        for p in workers | _children(parent.pid):  # whatever is left of this test's processes
            if _alive(p):
                os.kill(p, signal.SIGKILL)


# --- the CLI: bad input is one line, anything else a bug report -----------------------------


def _run_cli_with(monkeypatch, capsys, failure: BaseException) -> tuple[int, str]:
    import homalign.cli.align as align_verb
    from homalign.cli import main

    def run(args):
        raise failure

    monkeypatch.setattr(align_verb, "run", run)
    rc = main(["align", "a.fa", "b.fa"])
    return rc, capsys.readouterr().err


def test_cli_input_error_is_one_line(monkeypatch, capsys):
    monkeypatch.delenv("HOMALIGN_DEBUG", raising=False)
    rc, err = _run_cli_with(monkeypatch, capsys, InputError("bad residue", path="a.fa", line=3))
    assert rc == 2 and err == "homalign align: error: a.fa:3: bad residue\n"


def test_cli_dead_worker_is_one_line_with_its_own_status(monkeypatch, capsys):
    """A worker the system killed is neither bad input (2) nor a bug (70): EX_OSERR, 71."""
    from homalign.errors import WORKER_STATUS, WorkerError

    monkeypatch.delenv("HOMALIGN_DEBUG", raising=False)
    rc, err = _run_cli_with(monkeypatch, capsys, WorkerError("a search worker process died"))
    assert rc == WORKER_STATUS == 71
    assert err == "homalign align: error: a search worker process died\n"


@pytest.mark.parametrize("failure", [IndexError("list index out of range"),
                                     OverflowError("int too large"), KeyError("x"),
                                     ValueError("invalid literal for int()")])
def test_cli_other_exceptions_are_bug_reports_not_bad_input(monkeypatch, capsys, failure):
    monkeypatch.delenv("HOMALIGN_DEBUG", raising=False)
    rc, err = _run_cli_with(monkeypatch, capsys, failure)
    assert rc == 70
    assert "Traceback (most recent call last)" in err and type(failure).__name__ in err
    assert "this is a bug in homalign, not a problem with your input" in err
    assert "error:" not in err


def test_cli_deliberate_value_error_of_homalign_code_is_one_line(tmp_path, capsys, monkeypatch):
    from homalign.cli import main

    monkeypatch.delenv("HOMALIGN_DEBUG", raising=False)
    query = tmp_path / "q.fa"
    query.write_text(">q\nMKVLAAGIVG\n")
    rc = main(["search", str(query), str(query), "--msa-db", str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "--iterations" in err


# --- Alignment.to_biopython keeps ids and score ---------------------------------------------


def test_to_biopython_keeps_ids_score_and_statistics():
    import homalign
    from homalign.sequence import Sequence

    q = Sequence("sp|P1|QUERY", "MKVLAAGIVGLLLAGCSSHKEE")
    t = Sequence("tr|T2|TARGET", "MKILAAGIVGLLAGCTSHKEE")
    aln = homalign.align(q, t, method="sw")
    bio = aln.to_biopython()
    assert [r.id for r in bio.sequences] == ["sp|P1|QUERY", "tr|T2|TARGET"]
    assert bio.score == aln.score
    assert bio.annotations["method"] == "sw"
    assert bio.annotations["evalue"] == aln.evalue and bio.annotations["bits"] == aln.bits
    assert format(bio, "fasta").startswith(">sp|P1|QUERY\n")
    # the same columns as homalign's own gapped rows
    assert tuple(str(row) for row in bio) == aln.gapped(full=True)


# --- SIGTERM / SIGHUP clean up as Ctrl-C does ------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_terminated_align_leaves_no_temporary_output(tmp_path, sig):
    from homalign import examples

    queries = tmp_path / "queries.fa"
    records = examples.path("queries.fa").read_text()
    # enough pairs to be running when the signal comes (ids made unique)
    queries.write_text("".join(records.replace(">", f">r{k}_") for k in range(20)))
    out = tmp_path / "out.txt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "homalign", "align", str(queries),
                             str(examples.path("db.fa")), "--method", "sw", "-o", str(out)],
                            env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".out.txt.*.tmp")):
        assert proc.poll() is None, "align ended before it could be terminated"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig
    assert f"terminated by {signal.Signals(sig).name}" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["queries.fa"]  # no out.txt, no temp
