"""The ``homalign`` command: one verb per module in this package, each a thin layer over the library.

Each verb module defines ``add_parser(subparsers)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from homalign.errors import WORKER_STATUS, HomalignError, WorkerError

VERBS = ("align", "search", "makedb", "makemsa", "benchmark", "train", "examples")


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
        p.set_defaults(_run=module.run, _parser=p)
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


class Terminated(BaseException):
    """SIGTERM or SIGHUP, raised in the main thread so that what a verb was writing is cleaned
    up on the way out (a temporary output file, a half-built database), as for Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, _frame: object) -> None:
    raise Terminated(signum)


def main(argv: list[str] | None = None) -> int:
    import signal
    import threading

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # the verb's usage and name, as `homalign search: error: ...`, not the top level's
        args._parser.error("unrecognized arguments: " + " ".join(extra))
    caught = (signal.SIGTERM, signal.SIGHUP)
    main_thread = threading.current_thread() is threading.main_thread()
    before = {s: signal.signal(s, _raise_terminated) for s in caught} if main_thread else {}
    try:
        return _run(args)
    except Terminated as stop:
        print(f"homalign: terminated by {signal.Signals(stop.signum).name}", file=sys.stderr)
        return 128 + stop.signum
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args._run(args) or 0)
    except BrokenPipeError:
        return _closed_pipe()
    except WorkerError as exc:  # killed by the system: neither bad input nor a bug
        print(f"homalign {args.verb}: error: {exc}", file=sys.stderr)
        return WORKER_STATUS
    except (HomalignError, OSError) as exc:  # bad input, a damaged file, the file system
        if os.environ.get("HOMALIGN_DEBUG"):
            raise
        print(f"homalign {args.verb}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("homalign: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # homalign's fault, not the user's: a bug report
        if os.environ.get("HOMALIGN_DEBUG"):
            raise
        if _deliberate(exc):
            print(f"homalign {args.verb}: error: {exc}", file=sys.stderr)
            return 2
        return _bug_report(args.verb)


BUG_STATUS = 70  # EX_SOFTWARE (sysexits.h): an internal software error


def _deliberate(exc: Exception) -> bool:
    """A ValueError or RuntimeError that homalign's own code raised on purpose (a ``raise``
    statement in a homalign module: a check of the arguments, a peer program that failed), not
    one from a computation (``int('x')``, numpy, torch) that homalign let escape."""
    import traceback

    if type(exc) not in (ValueError, RuntimeError) or exc.__traceback__ is None:
        return False
    last = traceback.extract_tb(exc.__traceback__)[-1]
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return (os.path.abspath(last.filename).startswith(package + os.sep)
            and (last.line or "").lstrip().startswith("raise "))


def _bug_report(verb: str) -> int:
    """Print the traceback and say that this is a bug, not bad input; returns 70."""
    import traceback

    traceback.print_exc(file=sys.stderr)
    print(f"homalign {verb}: this is a bug in homalign, not a problem with your input; please "
          "report it with the command line and the traceback above", file=sys.stderr)
    return BUG_STATUS


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
