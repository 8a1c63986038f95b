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
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except (HomalignError, ValueError, OSError, RuntimeError) as exc:
        if os.environ.get("HOMALIGN_DEBUG"):
            raise
        print(f"homalign {args.verb}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("homalign: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
