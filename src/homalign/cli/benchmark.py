"""``homalign benchmark``: measure the aligners against structure-based references.

Sub-commands live in ``SUBCOMMANDS`` (name → (help, add-arguments function, run function)); a new
benchmark is one entry there. Without a sub-command, ``homalign benchmark`` runs ``alignment`` on
the bundled HOMSTRAD dev families with learned, sw, nw and the available peers, into ./homalign-benchmark/.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from homalign.cli import _common
from homalign.evaluate import homology

DEFAULT_OUT = "homalign-benchmark"
DEFAULT_SEQUENCE_METHODS = ("learned", "sw", "nw")


def default_methods() -> list[str]:
    """learned, learned-homologs (when it has a homologue database here), sw, nw and every
    registered peer whose program is installed here."""
    from homalign.methods import get_method, method_names

    peers = [n for n in method_names("peer") if get_method(n).available() is None]
    extra = ["learned-homologs"] if get_method("learned-homologs").available() is None else []
    return [DEFAULT_SEQUENCE_METHODS[0], *extra, *DEFAULT_SEQUENCE_METHODS[1:], *peers]


def _method_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one method name")
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"a method is named twice: {text}")
    return names


def _msa_mode(text: str) -> str:
    if text == "single":
        return text
    kind, _, rounds = text.partition(":")
    if kind == "iterative" and rounds.isdigit() and int(rounds) > 0:
        return text
    raise argparse.ArgumentTypeError("expected 'single' or 'iterative:N' (N >= 1)")


def method_options(args: argparse.Namespace) -> dict:
    """Options passed through to every method (only those given on the command line)."""
    opts = {}
    if getattr(args, "msa", None) is not None:
        opts["msa"] = args.msa
    if getattr(args, "db", None) is not None:
        opts["db"] = args.db
    return opts


# --- alignment --------------------------------------------------------------------------------
def add_alignment_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", metavar="DIR", default=None,
                   help="directory of <FAMILY>/<FAMILY>.ali structure-based alignments "
                        "(default: the bundled HOMSTRAD dev families)")
    p.add_argument("--methods", type=_method_list, default=None, metavar="M1,M2,...",
                   help="methods to run (default: learned,sw,nw and the installed peers)")
    p.add_argument("--out", metavar="OUTDIR", default=DEFAULT_OUT,
                   help=f"output directory (default: ./{DEFAULT_OUT})")
    p.add_argument("--max-pairs", type=_common.positive_int, default=None, metavar="N",
                   help="at most N pairs, evenly spaced over the families")
    _common.add_threads(p, "worker processes, each with one thread (1: in this process)",
                        aliases=("--jobs",))
    p.add_argument("--shift", type=_common.non_negative_int, default=0, metavar="K",
                   help="count a predicted pair correct within ±K residues (default 0)")
    p.add_argument("--msa", type=_msa_mode, default=None, metavar="single|iterative:N",
                   help="MSA mode passed to profile methods (msa= option)")
    p.add_argument("--db", default=None, metavar="FASTA",
                   help="sequence database passed to profile methods (db= option)")
    _common.add_progress(p)


def run_alignment(args: argparse.Namespace) -> int:
    from homalign.evaluate import bundled_homstrad_dev
    from homalign.evaluate.alignment_benchmark import run_alignment_benchmark
    from homalign.threads import set_threads

    data = args.data if args.data is not None else bundled_homstrad_dev()
    methods = args.methods if args.methods is not None else default_methods()
    jobs = _common.threads(args)
    if jobs == 1:
        set_threads(1)
    run_alignment_benchmark(
        data, methods, args.out, max_pairs=args.max_pairs, jobs=jobs,
        method_options=method_options(args), progress=_common.progress(args), shift=args.shift,
    )
    print(f"wrote {args.out}/summary.csv, pairs.csv, f1_vs_identity.png")
    return 0


SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None],
                             Callable[[argparse.Namespace], int]]] = {
    "alignment": ("alignment quality against HOMSTRAD-style structure-based alignments",
                  add_alignment_arguments, run_alignment),
    "homology": ("homology detection on SCOPe (the Foldseek paper's protocol)",
                 homology.add_arguments, homology.run_cli),
}
DEFAULT_SUBCOMMAND = "alignment"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "benchmark", help="benchmark aligners against structure-based references",
        description=__doc__.split("\n\n")[0],
    )
    sub = p.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    for name, (help_text, add_arguments, run_fn) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        add_arguments(sp)
        sp.set_defaults(_benchmark_run=run_fn)
    # bare `homalign benchmark`: the default sub-command with its defaults
    default_parser = argparse.ArgumentParser(add_help=False)
    SUBCOMMANDS[DEFAULT_SUBCOMMAND][1](default_parser)
    p.set_defaults(**vars(default_parser.parse_args([])),
                   _benchmark_run=SUBCOMMANDS[DEFAULT_SUBCOMMAND][2])
    return p


def run(args: argparse.Namespace) -> int:
    return int(args._benchmark_run(args) or 0)
