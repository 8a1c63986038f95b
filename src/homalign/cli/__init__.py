"""The ``homalign`` command: one verb per module in this package, each a thin layer over the library.

Each verb module defines ``add_parser(subparsers)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from homalign.errors import HomalignError

VERBS = ("align", "search", "makedb", "makemsa", "benchmark", "train")


def build_parser() -> argparse.ArgumentParser:
    from homalign import __version__

    parser = argparse.ArgumentParser(
        prog="homalign", description="Find and align related proteins."
    )
    parser.add_argument("--version", action="version", version=f"homalign {__version__}")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb in VERBS:
        module = importlib.import_module(f"homalign.cli.{verb}")
        p = module.add_parser(sub)
        p.set_defaults(_run=module.run)
    _no_abbreviations(parser)
    return parser


def _no_abbreviations(parser: argparse.ArgumentParser) -> None:
    """A flag must be spelt in full: ``--evalu`` is an error, not ``--evalue`` (an abbreviation
    that works today would silently change meaning when a flag is added)."""
    parser.allow_abbrev = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _no_abbreviations(child)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except BrokenPipeError:
        return _closed_pipe()
    except (HomalignError, ValueError, OSError, RuntimeError) as exc:
        if os.environ.get("HOMALIGN_DEBUG"):
            raise
        print(f"homalign {args.verb}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("homalign: interrupted", file=sys.stderr)
        return 130


def _closed_pipe() -> int:
    """The reader of our output went away (``homalign search ... | head -1``): stop quietly with
    status 0, as BLAST and grep do. Standard output is pointed at /dev/null so that the
    interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
