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
