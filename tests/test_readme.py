"""The README's "## Use" section runs as written.

Every ```bash and ```python block of the section, in order, in one shell in a new empty
directory, through the real ``homalign`` command and Python of this environment (its bin/ first
on PATH, as an activated venv has it). The first block copies the shipped example set
(``homalign examples``) and enters it; every later command must exit 0 and print something, and
the Python example must find hits. Nothing outside the package is read: no shared data, no
homologue database of the machine, a fresh cache.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TIMEOUT = 900


def section(text: str, heading: str) -> str:
    """The text of the ``## heading`` section (up to the next level-2 heading)."""
    m = re.search(rf"^## {re.escape(heading)}\b.*?$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"README.md has no '## {heading}' section"
    return m.group(1)


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, in order."""
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", text, re.M | re.S)]


def commands(body: str) -> list[str]:
    """The shell commands of a bash block, one per line (backslash continuations joined)."""
    out, pending = [], ""
    for line in body.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(line)
    return out


def test_setup_has_exactly_the_two_commands():
    blocks = code_blocks(section(README.read_text(), "Set-up"))
    cmds = [c for lang, body in blocks for c in commands(body)]
    assert cmds == ["bash scripts/main.sh", "bash scripts/test.sh"]


def test_use_blocks_are_bash_or_python():
    blocks = code_blocks(section(README.read_text(), "Use"))
    assert blocks and all(lang in ("bash", "python") for lang, _ in blocks), \
        [lang for lang, _ in blocks]
    assert any(lang == "python" for lang, _ in blocks)


@pytest.mark.slow
def test_every_use_block_runs_as_written(tmp_path):
    blocks = code_blocks(section(README.read_text(), "Use"))
    script = ["set -euo pipefail"]
    steps: list[tuple[str, str]] = []  # (kind, what) per output file
    for lang, body in blocks:
        if lang == "python":
            n = len(steps)
            steps.append(("python", body))
            script.append(f"python - > \"$HOMALIGN_README_OUT/{n}\" 2>&1 <<'HOMALIGN_README_PY'\n"
                          f"{body}HOMALIGN_README_PY")
            continue
        for cmd in commands(body):
            n = len(steps)
            steps.append(("bash", cmd))
            if cmd.lstrip().startswith("cd "):
                script.append(cmd)  # in this shell, so later blocks run there
            else:
                script.append(f"{{ {cmd}\n}} > \"$HOMALIGN_README_OUT/{n}\" 2>&1")
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "HOMALIGN_HOMOLOGS", "HOMALIGN_DATA")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               HOMALIGN_CACHE=str(tmp_path / "cache"), HOMALIGN_README_OUT=str(outputs),
               MPLBACKEND="Agg")
    proc = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env, text=True,
                          capture_output=True, timeout=TIMEOUT)
    done = sorted(int(p.name) for p in outputs.iterdir())
    if proc.returncode != 0:
        last = done[-1] if done else None
        what = steps[last][1] if last is not None else "(before the first command)"
        text = (outputs / str(last)).read_text() if last is not None else proc.stderr
        pytest.fail(f"README command failed (rc {proc.returncode}): {what}\n{text[-3000:]}"
                    f"\n{proc.stderr[-2000:]}")
    for n, (kind, what) in enumerate(steps):
        if kind == "bash" and what.lstrip().startswith("cd "):
            continue
        assert n in done, f"not run: {what}"
        text = (outputs / str(n)).read_text()
        assert text.strip(), f"no output from: {what}"
        if kind == "bash" and re.match(r"\s*homalign (search|align) ", what):
            assert "1rsy" in text, f"{what}: no result for 1rsy:\n{text[:2000]}"
        if kind == "python":
            hits = [line for line in text.splitlines() if re.match(r"d\w+ \S+e[-+]\d+ ", line)]
            assert len(hits) >= 3, f"the Python example found no hits:\n{text}"
