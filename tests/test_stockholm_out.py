"""``homalign align --format sto``: Stockholm with insert columns as HMMER expects, read back by
homalign, by pyhmmer's Easel and by ``hmmbuild --hand``; ``--format a3m`` read back too."""

from __future__ import annotations

import shutil
import subprocess

from homalign.cli import main
from homalign.io import iter_stockholm, read_a3m

Q = "MKVLAAGIVGLLLAGCSSHKEEAPKAEE"
T = "MKILAAGIVGWWLLAGCTSHKEEKAEE"  # an insertion (WW) and a deletion relative to Q


def _align(tmp_path, capsys, fmt: str) -> str:
    (tmp_path / "q.fa").write_text(f">q1\n{Q}\n")
    (tmp_path / "t.fa").write_text(f">t1\n{T}\n>t2\n{T[3:]}\n")
    assert main(["align", str(tmp_path / "q.fa"), str(tmp_path / "t.fa"), "--method", "sw",
                 "--format", fmt]) == 0
    return capsys.readouterr().out


def test_align_writes_stockholm_with_hmmer_insert_columns(tmp_path, capsys):
    text = _align(tmp_path, capsys, "sto")
    path = tmp_path / "out.sto"
    path.write_text(text)
    blocks = list(iter_stockholm(path))
    assert len(blocks) == 2  # one alignment per pair
    first = blocks[0]
    assert first.ids == ["q1", "t1"]
    rf = first.annotations["GC"]["RF"]
    qrow, trow = first.rows
    assert len(rf) == len(qrow) == len(trow)
    for r, a, b in zip(rf, qrow, trow, strict=True):
        if r == "x":  # match column: query residue, target uppercase or '-'
            assert a.isupper() and (b.isupper() or b == "-")
        else:  # insert column: '.' in the query, '.' or lowercase in the target
            assert r == "." and a == "." and (b == "." or b.islower())
    assert qrow.replace(".", "") == Q and any(c.islower() for c in trow) and "-" in trow
    assert trow.replace("-", "").replace(".", "").upper() == T

    from pyhmmer import easel

    with easel.MSAFile(str(path), format="stockholm") as fh:
        msa = fh.read()
    assert [s.name for s in msa.sequences] in (["q1", "t1"], [b"q1", b"t1"])
    if shutil.which("hmmbuild"):  # --hand: the RF line defines the match states
        hmm = tmp_path / "pair.hmm"
        single = tmp_path / "first.sto"
        single.write_text(text[: text.index("//\n") + 3])
        subprocess.run(["hmmbuild", "--hand", "--amino", str(hmm), str(single)], check=True,
                       capture_output=True)
        assert f"LENG  {len(Q)}" in hmm.read_text()


def test_align_writes_a3m_that_reads_back(tmp_path, capsys):
    text = _align(tmp_path, capsys, "a3m")
    first = text.split(">q1\n")[1]
    path = tmp_path / "out.a3m"
    path.write_text(">q1\n" + first)
    msa = read_a3m(path)
    assert msa.ids == ["q1", "t1"] and msa.rows[0] == Q
