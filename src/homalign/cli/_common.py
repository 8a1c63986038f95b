"""What the verbs share: ``-`` for stdin, one ``-j/--threads`` flag, progress bars on a terminal
only, method options as flags (from the methods' declarations) and the output formats."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from homalign.errors import InputError

OPTION_PREFIX = "mopt_"
STDIN = "-"


# --- threads ----------------------------------------------------------------------------------
def positive_int(text: str, least: int = 1) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}")
    return value


def non_negative_int(text: str) -> int:
    return positive_int(text, least=0)


class _Deprecated(argparse.Action):
    """An old flag kept as an alias of another: sets the same destination, says so on stderr."""

    def __init__(self, option_strings, dest, new: str = "", **kw):
        self.new = new
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"homalign: {option_string} is deprecated; use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_threads(p: argparse.ArgumentParser, what: str = "threads for numba, torch and BLAS",
                aliases: Iterable[str] = ()) -> None:
    """``-j/--threads N`` (default: every core this process may use); ``aliases`` (e.g.
    ``--jobs``) are kept as deprecated spellings of it."""
    p.add_argument("-j", "--threads", type=positive_int, default=None, metavar="N",
                   help=f"{what} (default: all cores)")
    for alias in aliases:
        p.add_argument(alias, dest="threads", type=positive_int, action=_Deprecated,
                       new="-j/--threads", metavar="N", help=argparse.SUPPRESS)


def threads(args: argparse.Namespace) -> int:
    """The thread count of ``args`` (all cores when not given)."""
    from homalign.threads import available_cores

    n = getattr(args, "threads", None)
    return available_cores() if n is None else int(n)


# --- progress ---------------------------------------------------------------------------------
def add_progress(p: argparse.ArgumentParser) -> None:
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: only when stderr is a terminal)")


def progress(args: argparse.Namespace) -> bool:
    value = getattr(args, "progress", None)
    return sys.stderr.isatty() if value is None else bool(value)


# --- inputs -----------------------------------------------------------------------------------
@contextlib.contextmanager
def input_path(path: str) -> Iterator[str]:
    """``path`` itself, or for ``-`` a temporary file holding standard input (read once); an
    InputError about that file names ``<stdin>`` instead."""
    if path != STDIN:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="homalign-stdin-") as d:
        tmp = os.path.join(d, "stdin.fa")
        with open(tmp, "wb") as fh:
            shutil.copyfileobj(sys.stdin.buffer, fh)
        try:
            yield tmp
        except InputError as exc:
            if exc.path != tmp:
                raise
            raise InputError(exc.reason, path="<stdin>", line=exc.line, record=exc.record,
                             column=exc.column) from None


def check_one_stdin(*paths: str | None) -> None:
    if sum(p == STDIN for p in paths) > 1:
        raise InputError("only one input can be '-' (standard input)")


def read_sequences(path: str) -> list:
    """The sequences of a FASTA file, or of standard input for ``-``."""
    from homalign.sequence import read_sequences as read

    with input_path(path) as p:
        return read(p)


# --- method options ---------------------------------------------------------------------------
def add_method_options(p: argparse.ArgumentParser, skip: Iterable[str] = ()) -> None:
    """One flag per option declared by any registered method (``--gap-open`` for ``gap_open``),
    with its meaning, the methods that read it and their defaults; only flags given on the
    command line reach the method, and one the chosen method does not declare is an error."""
    from homalign.methods import get_method, method_names

    skip = set(skip)
    seen: dict[str, list[tuple[str, Any]]] = {}
    first: dict[str, Any] = {}
    for name in method_names():
        for o in get_method(name).options or ():
            if not o.cli or o.name in skip:
                continue
            seen.setdefault(o.name, []).append((name, o.default))
            first.setdefault(o.name, o)
    g = p.add_argument_group("method options", "given to --method; an option the method does "
                             "not read is an error")
    for oname, users in seen.items():
        o = first[oname]
        defaults = {d for _, d in users if d is not None}  # 11 and 11.0 are one default
        who = ", ".join(n for n, _ in users)
        text = o.help + f" [{who}"
        if len(defaults) == 1 and all(d is not None for _, d in users):
            text += f"; default {next(iter(defaults))}"
        text += "]"
        text = text.replace("%", "%%")
        kw: dict[str, Any] = {"dest": OPTION_PREFIX + oname, "default": argparse.SUPPRESS,
                              "help": text}
        if o.type is bool:
            kw["action"] = "store_true"
        else:
            kw["type"] = o.type
            kw["metavar"] = oname.upper()
            if o.choices:
                kw["choices"] = o.choices
        g.add_argument(o.flag, **kw)


def method_options(args: argparse.Namespace) -> dict[str, Any]:
    """The method options given on the command line (``{"gap_open": 5.0, ...}``)."""
    return {k[len(OPTION_PREFIX):]: v for k, v in vars(args).items()
            if k.startswith(OPTION_PREFIX)}


def check_method_options(method: str, options: dict[str, Any]) -> None:
    """An error naming the flags when ``method`` does not read one of ``options``."""
    from homalign.methods import OptionError, get_method

    m = get_method(method)
    names = set(m.option_names or ())
    if m.options is None:
        return
    bad = [k for k in options if k not in names]
    if bad:
        flags = ", ".join("--" + k.replace("_", "-") for k in bad)
        valid = " ".join("--" + o.name.replace("_", "-") for o in m.options if o.cli) or "none"
        raise OptionError(f"--method {method} does not read {flags}; its options: {valid}")
    m.check_options(options)


# --- output formats ---------------------------------------------------------------------------
def add_output_format(p: argparse.ArgumentParser, formats: tuple[str, ...], default: str,
                      extra_help: str = "") -> None:
    p.add_argument("--format", choices=formats, default=None,
                   help=f"output format (default {default}): tab = BLAST's 12 -outfmt 6 columns "
                        "(qseqid sseqid pident length mismatch gapopen qstart qend sstart send "
                        "evalue bitscore; NA where the method computes no E-value or bit score, "
                        "no line for a pair without alignment), json = JSON Lines (one object a "
                        "line, BLAST's field names, null where not computed), pair = readable "
                        "report" + extra_help)
    p.add_argument("--outfmt", default=None, metavar='"6 FIELD ..."',
                   help='BLAST tabular with these columns, by BLAST\'s names, e.g. "6 qseqid '
                        'sseqid pident length evalue bitscore qlen slen qseq sseq"; fields: std '
                        + " ".join(_fields()))


def _fields() -> list[str]:
    from homalign.io.blast_tab import OUTFMT_FIELDS

    return list(OUTFMT_FIELDS)


def output_columns(args: argparse.Namespace, default: str) -> tuple[str, tuple[str, ...] | None]:
    """(format, tabular columns or None) from ``--format`` / ``--outfmt``."""
    from homalign.io.blast_tab import BLAST_TAB_COLUMNS, parse_outfmt

    if args.outfmt is not None:
        if args.format not in (None, "tab"):
            raise InputError(f"--outfmt writes tabular output; it does not combine with "
                             f"--format {args.format}")
        return "tab", parse_outfmt(args.outfmt)
    fmt = args.format or default
    return fmt, (BLAST_TAB_COLUMNS if fmt == "tab" else None)


def check_output(out: str, *inputs: str | None) -> None:
    """InputError when ``-o OUT`` is one of the command's input files (by path or through a
    link): the output would replace the input it is made from."""
    if out == STDIN or not os.path.exists(out):
        return
    for path in inputs:
        if path is None or path == STDIN or not os.path.exists(path):
            continue
        if os.path.samefile(out, path) and os.path.isfile(path):
            raise InputError("the output file is an input file; choose another -o",
                             path=out)


@contextlib.contextmanager
def output_stream(path: str) -> Iterator[Any]:
    """Standard output for ``-`` (each write flushed by the caller), else the file, written
    atomically (complete or absent)."""
    if path == STDIN:
        yield sys.stdout
        sys.stdout.flush()
        return
    from homalign.io.atomic import atomic_write

    with atomic_write(Path(path)) as fh:
        yield fh
