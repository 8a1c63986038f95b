"""Rebuild BENCHMARKS.md from benchmarks/results/.

    python benchmarks/report.py            # write BENCHMARKS.md
    python benchmarks/report.py --check    # exit 1 if BENCHMARKS.md is not what this writes

BENCHMARKS.md is ``results/headline.md`` followed by the sections listed in ``SECTIONS``. Each
section is a markdown file that names the command behind each of its numbers. Where a benchmark
writes a CSV (copied into ``benchmarks/results/``), the section holds a placeholder line and the
table is made from the CSV:

    {{table FILE.csv cols=a,b,c [ratio=COL:ROW,...] [key=method] [rows=x,y]}}
    {{value FILE.csv ROW COL [ratio=ROW2]}}

``table`` prints the named columns (all, if ``cols`` is omitted); ``ratio=F1:nw`` adds a column
``F1 / nw`` dividing by the row whose ``key`` column (default ``method``, else the first column)
is ``nw``. ``value`` prints one cell, or with ``ratio`` the cell divided by another row's.
A section in ``KEY_ROWS`` (a results file with one long table) shows only the key rows of its
first table, without median columns, and links its results file for the full table.
Each section fits on one screen (about 60 lines); detail that does not goes into a results file
outside ``SECTIONS`` (``search-detail.md``), linked from its section and not rendered here.
After re-running a benchmark, copy its CSV or edit its section, then run this script.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
OUT = ROOT.parent / "BENCHMARKS.md"
SECTIONS = ["alignment", "learned", "search", "search_scale", "search_profiles", "learned_speed",
            "profile", "dp", "train"]
PLACEHOLDER = re.compile(r"\{\{(table|value) ([^}]*)\}\}")
# section -> (which rows are shown, what the full table adds, the key rows in order). A key row is
# the first row not yet shown whose text holds every string of its tuple and none of those marked
# "!" (case-insensitive); where no row matches, that key row is left out.
KEY_ROWS: dict[str, tuple[str, str, list[tuple[str, ...]]]] = {
    "dp": ("300x300 and one thread where measured, each homalign path next to parasail's",
           "all sizes, 2 threads, medians", [
        ("align_score", "integer", "300x300", "!non-integer", "!per pair"),
        ("parasail", "sw_striped_sat", "300x300"),
        ("score_local_codes", "int16", "1 thread", "!one query", "!float32"),
        ("score_local_codes_float32", "1 thread", "!one query"),
        ("parasail", "sw_striped_16", "1 thread", "!one query", "!trace"),
        ("score_local_codes", "int8", "one query", "1 thread", "!float32"),
        ("score_local_codes_float32", "one query", "1 thread"),
        ("parasail", "sw_striped_16", "one query", "1 thread", "!trace"),
        ("score_local_profile", "300x300"),
        ("align_batch score-only", "same 16 pairs", "300x300"),
        ("align (traceback)", "300x300", "!checkpoint"),
        ("align_batch traceback", "100 pairs", "1 thread", "!global", "!position-specific",
         "!per-pair", "!first 16"),
        ("align_codes traceback", "1 thread", "!global"),
        ("parasail", "sw_trace_striped_16", "1 thread"),
        ("local_forward_batch", "1 thread", "!scalar"),
        ("posterior_matrix", "300x300", "!pair by pair"),
        ("posteriors_many", "1 thread"),
        ("posteriors_many",),
        ("posterior_matrix", "pair by pair"),
    ]),
}


def _rows(name: str) -> list[dict[str, str]]:
    with open(RESULTS / name, newline="") as fh:
        return list(csv.DictReader(fh))


def _fmt(x: str | float, col: str = "") -> str:
    """Integers with thousands separators; seconds to 0.01 (0.1 from 10 s); milliseconds and
    values >= 100 to 0.1; anything else to 3 decimals."""
    try:
        v = float(x)
    except ValueError:
        return str(x)
    if v.is_integer():
        return f"{int(v):,}"
    if "second" in col and abs(v) < 10:
        return f"{v:.2f}"
    if "second" in col or "_ms" in col or abs(v) >= 100:
        return f"{v:,.1f}"
    return f"{v:.3f}"


def _opts(text: str) -> tuple[list[str], dict[str, str]]:
    args, opts = [], {}
    for tok in text.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            opts[k] = v
        else:
            args.append(tok)
    return args, opts


def _find(rows: list[dict[str, str]], key: str, value: str) -> dict[str, str]:
    for r in rows:
        if r[key] == value:
            return r
    raise KeyError(f"no row with {key} = {value!r}")


def _table(text: str) -> str:
    (name,), opts = _opts(text)
    all_rows = rows = _rows(name)
    key = opts.get("key", "method" if "method" in rows[0] else next(iter(rows[0])))
    cols = opts["cols"].split(",") if "cols" in opts else list(rows[0])
    if "rows" in opts:
        rows = [_find(all_rows, key, v) for v in opts["rows"].split(",")]
    ratios = [r.split(":") for r in opts["ratio"].split(",")] if "ratio" in opts else []
    head = [c.replace("_", " ") for c in cols] + [f"{c.replace('_', ' ')} / {ref}"
                                                   for c, ref in ratios]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [_fmt(r[c], c) for c in cols]
        for c, ref in ratios:
            cells.append(f"{float(r[c]) / float(_find(all_rows, key, ref)[c]):.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _value(text: str) -> str:
    (name, row, col), opts = _opts(text)
    rows = _rows(name)
    key = "method" if "method" in rows[0] else next(iter(rows[0]))
    v = float(_find(rows, key, row)[col])
    if "ratio" in opts:
        return f"{v / float(_find(rows, key, opts['ratio'])[col]):.2f}"
    return _fmt(v, col)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _key_rows(name: str, text: str) -> str:
    """``text`` with its first table cut to the key rows of ``KEY_ROWS[name]``, less median
    columns, after a line linking the results file."""
    what, full, picks = KEY_ROWS[name]
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return text
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    head, body = _cells(lines[start]), lines[start + 2:end]
    keep = [i for i, c in enumerate(head) if "median" not in c.lower()]
    shown: list[str] = []
    for pick in picks:
        want = [p.lower() for p in pick if not p.startswith("!")]
        avoid = [p[1:].lower() for p in pick if p.startswith("!")]
        shown += [r for r in body if r not in shown
                  and all(w in r.lower() for w in want)
                  and not any(a in r.lower() for a in avoid)][:1]
    path = f"benchmarks/results/{name}.md"
    table = [f"Key rows ({len(shown)} of {len(body)}: {what}); the full table ({full}) is in "
             f"[`{path}`]({path}).", "",
             "| " + " | ".join(head[i] for i in keep) + " |", "|" + "---|" * len(keep)]
    table += ["| " + " | ".join(_cells(r)[i] for i in keep) + " |" for r in shown]
    return "\n".join(lines[:start] + table + lines[end:])


def render() -> str:
    parts = [(RESULTS / "headline.md").read_text().rstrip("\n")]
    for name in SECTIONS:
        section = (RESULTS / f"{name}.md").read_text().rstrip("\n")
        parts.append(_key_rows(name, section) if name in KEY_ROWS else section)
    text = "\n\n---\n\n".join(parts) + "\n"

    def sub(m: re.Match[str]) -> str:
        return _table(m.group(2)) if m.group(1) == "table" else _value(m.group(2))

    return PLACEHOLDER.sub(sub, text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare, do not write")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        if OUT.read_text() != text:
            print(f"{OUT} is out of date: run python benchmarks/report.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
