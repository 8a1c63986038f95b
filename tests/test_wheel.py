"""The wheel: ``python -m build --wheel`` of the source tree, installed into a clean venv.

The venv is new and empty (``--without-pip``); the wheel goes in with ``pip --python VENV
install --no-deps`` (the dependencies would be the same files as in the project's ``.venv``, so
the test lends them to the new venv by a ``.pth`` line *after* its own site-packages instead of
downloading torch again). The project's own source tree is not on the path: ``import homalign``
must find the installed wheel, with its weights and example data, and ``homalign align`` must
run from the venv's own entry point. See docs/decisions.md.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 600


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    pytest.importorskip("build", reason="the test extra installs 'build' (pip install -e .[test])")
    tree = tmp_path_factory.mktemp("tree")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc", "*.nbi",
                                                  "*.nbc"))
    dist = tmp_path_factory.mktemp("dist")
    # --no-isolation: the venv's setuptools builds it, offline (see docs/decisions.md)
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                    str(dist), str(tree)], check=True, capture_output=True, timeout=TIMEOUT)
    wheels = list(dist.glob("homalign-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_the_wheel_holds_the_weights_the_data_and_the_license(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for model in ("learned", "learned_search", "learned_template"):
        assert f"homalign/weights/{model}.safetensors" in names
        assert f"homalign/weights/{model}.json" in names
    assert any(n.startswith("homalign/data/homstrad_dev/") and n.endswith(".ali") for n in names)
    from homalign.examples import FILES  # the README's example set (tests/test_readme.py)

    assert {f"homalign/data/examples/{n}" for n in FILES} <= names
    assert not any("__pycache__" in n or n.startswith("tests/") for n in names)
    info = next(n for n in names if n.endswith(".dist-info/METADATA"))
    meta = zipfile.ZipFile(wheel).read(info).decode()
    assert "Requires-Python: <3.14,>=3.10" in meta or "Requires-Python: >=3.10,<3.14" in meta
    torch_req = [line for line in meta.splitlines() if line.startswith("Requires-Dist: torch")]
    assert torch_req and "==" not in torch_req[0], torch_req
    assert "License-Expression: MIT" in meta
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_the_wheel_installs_in_a_clean_venv_and_aligns(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=TIMEOUT)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                    "--no-index", "--quiet", str(wheel)], check=True, timeout=TIMEOUT)
    purelib = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip())
    # the dependencies: the project's .venv site-packages, after the venv's own (no .pth there
    # is processed, so the project's editable source tree stays off the path)
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
            *site.getsitepackages()}
    (purelib / "zz-project-deps.pth").write_text("".join(f"{d}\n" for d in sorted(deps)))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    code = (
        "import homalign, pathlib\n"
        "print(pathlib.Path(homalign.__file__).resolve())\n"
        "a = homalign.align('MKVLAAGIVGLLLAGCSSHKEE', 'MKILAAGIVGLLLAGCTSHKEE', method='learned')\n"
        "print(len(a.pairs), a.score)\n"
    )
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=TIMEOUT).stdout.splitlines()
    assert Path(out[0]).is_relative_to(venv), f"imported {out[0]}, not the wheel"
    assert not Path(out[0]).is_relative_to(ROOT)
    n_pairs, score = out[1].split()
    assert int(n_pairs) >= 18 and float(score) > 0
    fasta_q, fasta_t = tmp_path / "q.fa", tmp_path / "t.fa"
    fasta_q.write_text(">q\nMKVLAAGIVGLLLAGCSSHKEE\n")
    fasta_t.write_text(">t\nMKILAAGIVGLLLAGCTSHKEE\n")
    cli = subprocess.run([str(venv / "bin" / "homalign"), "align", str(fasta_q), str(fasta_t),
                          "--method", "learned"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=TIMEOUT)
    assert cli.returncode == 0, cli.stderr
    assert "q" in cli.stdout and "t" in cli.stdout
