"""The import structure: the contracts in pyproject.toml, no import cycles, no private name used
outside its module, and the training runtime's imports.

grimp (import-linter's graph) reads every import statement of every module, the ones inside
functions too, so a deferred import is a dependency like any other.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "homalign"


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("homalign", cache_dir=None, exclude_type_checking_imports=True)


def test_import_contracts_hold() -> None:
    """What scripts/test.sh runs as ``lint-imports``: the layers, train's independence, private
    modules (pyproject.toml ``[tool.importlinter]``). In a child process: import-linter
    configures logging with ``dictConfig``, which would disable this process's loggers."""
    lint = Path(sys.executable).with_name("lint-imports")
    r = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def _cycles(adjacency: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(adjacency):
        if start in index:
            continue
        work = [(start, iter(sorted(adjacency[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(adjacency[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


#: cycles still to break, each with where it comes from (empty this list, never grow it)
KNOWN_CYCLES: list[list[str]] = []


def test_no_import_cycles(graph) -> None:
    """No module reaches itself through imports (function-level ones included; imports only for
    type checking are left out: they never run)."""
    adjacency = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert [c for c in _cycles(adjacency) if c not in KNOWN_CYCLES] == []


def test_train_imports_only_the_runtime_and_two_leaves(graph) -> None:
    """homalign.train (the training runtime) stays independent of the aligner: besides itself it
    imports only the error types and the atomic-write and digest helpers (all stdlib-only)."""
    allowed = {"homalign.errors", "homalign.io.atomic", "homalign.io.digest"}
    outside = {
        (m, t)
        for m in graph.modules if m == "homalign.train" or m.startswith("homalign.train.")
        for t in graph.find_modules_directly_imported_by(m)
        if not (t == "homalign.train" or t.startswith("homalign.train.")) and t not in allowed
    }
    assert outside == set()
    for leaf in allowed:
        assert graph.find_modules_directly_imported_by(leaf) == set(), leaf


def _private_uses(path: Path, module: str) -> list[str]:
    """``from homalign.x import _name`` and ``alias._name`` (alias an imported homalign module)
    in one source file, naming another module's private name."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.startswith("homalign"):
            for a in node.names:
                submodule = SRC.parent.joinpath(*f"{node.module}.{a.name}".split("."))
                if submodule.with_suffix(".py").is_file() or submodule.is_dir():
                    continue  # a module (a private one: the private_modules contract)
                if a.name.startswith("_") and not a.name.startswith("__") \
                        and node.module != module:
                    found.append(f"{path.name}:{node.lineno} from {node.module} import {a.name}")
                else:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("homalign") and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in aliases and node.attr.startswith("_") \
                and not node.attr.startswith("__") and aliases[node.value.id] != module:
            found.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
    return found


def test_no_private_name_is_used_outside_its_module() -> None:
    """A leading underscore means "this module's own": no other module of the package imports or
    reaches such a name (private modules are checked by the private_modules contract)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found += _private_uses(path, ".".join(parts))
    assert found == []


def test_the_package_root_wires_the_database_search() -> None:
    """The layers below search reach it only through homalign.database_search, which the package
    root connects to the search package's implementations."""
    from homalign.database_search import current
    from homalign.search import homologs, msa_build

    wired = current()
    assert wired.cached_msa is msa_build.cached_msa
    assert wired.cached_msa_path is msa_build.cached_msa_path
    assert wired.find_homologs is homologs.find_homologs
