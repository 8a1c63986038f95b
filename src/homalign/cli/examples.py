"""``homalign examples DIR``: copy the shipped example files into DIR (the README runs on them)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "examples", help="copy the example files (queries, a small database, a template, an HMM) "
                         "into a directory",
        description="Copy homalign's example set into DIR and list it: the files the README's "
                    "commands use (see homalign/data/README.md for where each came from).",
    )
    p.add_argument("dir", nargs="?", default="homalign-examples",
                   help="directory to create or fill (default: ./homalign-examples)")
    p.add_argument("--force", action="store_true",
                   help="overwrite example files that were changed there")
    return p


def run(args: argparse.Namespace) -> int:
    from homalign.examples import FILES, copy_to

    try:
        written = copy_to(args.dir, force=args.force)
    except FileExistsError as exc:
        from homalign.errors import InputError

        raise InputError(str(exc)) from None
    width = max(len(str(p)) for p in written)
    for p in written:
        print(f"{str(p):<{width}}  {FILES[p.name]}")
    return 0
