"""homalign.tuned records every chosen setting with its provenance; the live values match it."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from homalign.methods import get_method
from homalign.tuned import entries

ROOT = Path(__file__).resolve().parents[1]


def _live(where: str):
    kind, _, name = where.partition(":")
    if kind == "method":
        method, _, option = name.partition(".")
        return get_method(method).defaults[option]
    return getattr(importlib.import_module(kind), name)


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e.where)
def test_live_value_is_the_recorded_one(entry) -> None:
    assert _live(entry.where) == entry.value


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e.where)
def test_entry_names_its_split_and_an_existing_script(entry) -> None:
    assert entry.split and entry.script
    if entry.script.startswith("benchmarks/"):
        assert (ROOT / entry.script.split()[0]).is_file(), entry.script


def _plain(text: str) -> str:
    """Text without Markdown code quotes and with one kind of quotation mark."""
    return text.replace("`", "").replace('"', "'")


def test_every_decision_named_is_in_docs_decisions() -> None:
    """The decision an entry (or a research script's README line) names is an entry of
    docs/decisions.md, so a renamed or merged entry is followed everywhere."""
    import re

    doc = _plain((ROOT / "docs" / "decisions.md").read_text())
    named = {e.decision for e in entries() if e.decision}
    readme = (ROOT / "benchmarks" / "research" / "README.md").read_text()
    for row in readme.splitlines():
        if row.startswith("| `"):  # a script's row: the decisions it names, last column
            named |= set(re.findall(r'"([^"]+)"', row.rstrip(" |").rsplit(" | ", 1)[-1]))
    named.discard("Failed experiments")
    missing = sorted(n for n in named if _plain(n) not in doc)
    assert not missing, missing
