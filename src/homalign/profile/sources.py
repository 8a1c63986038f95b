"""Where a protein's profile comes from: the ``msa=`` / ``query_msa=`` / ``*_hhm=`` options.

* ``msa="single"`` (default): the sequence alone, with pseudocounts.
* ``msa="iterative"`` or ``"iterative:N"`` with ``db=FASTA``: N (default 3) rounds of
  :func:`homalign.search.msa_build.build_msa`, cached on disk (reached through
  :mod:`homalign.database_search`: the profile layer may not import the search engine).
* ``msa=DIRECTORY``: ``DIRECTORY/<sequence id>.a3m`` (or ``.fa``, ``.fasta``, ``.afa``, ``.sto``,
  ``.hhm``), so a benchmark can hand the same precomputed MSAs to every method and peer.
* ``query_msa=PATH`` / ``target_msa=PATH`` (A3M, aligned FASTA or Stockholm, chosen by suffix,
  or a DIRECTORY of ``<id>.a3m`` files such as an MSA database written by
  :func:`homalign.search.msadb.build_msa_db`) and ``query_hhm=PATH`` / ``target_hhm=PATH``
  override ``msa`` for that side (``search`` prepares its query as ``"query"`` and the database
  sequences as ``"target"``).

The MSA's first row (its match columns) must be the sequence being aligned, else InputError.
Profiles are memoised per process (LRU) on (sequence, source, options).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from homalign.errors import InputError
from homalign.sequence import Sequence

MSA_SUFFIXES = (".a3m", ".fa", ".fasta", ".afa", ".sto", ".stk", ".hhm")
PROFILE_OPTIONS = ("pseudocounts", "admix", "matrix")


def read_msa_file(path: str | Path):
    """Read an MSA by suffix: ``.a3m`` → A3M, ``.sto``/``.stk``/``.stockholm`` → Stockholm,
    otherwise aligned FASTA."""
    from homalign.io import read_a3m, read_aligned_fasta, read_stockholm

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such MSA file")
    _not_a_model(p)
    suffix = p.suffix.lower()
    if suffix == ".a3m":
        return read_a3m(p)
    if suffix in (".sto", ".stk", ".stockholm"):
        return read_stockholm(p)
    return read_aligned_fasta(p, unique=False)


def _not_a_model(path: Path) -> None:
    """InputError when the file at ``path`` is a profile HMM (HH-suite or HMMER), not an MSA,
    naming the option that reads it."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError:
        return  # the MSA reader reports it
    if head.startswith(b"HHsearch") or path.suffix.lower() == ".hhm":
        raise InputError("an HH-suite HMM (.hhm), not an MSA: give it as --query-hhm / "
                         "--target-hhm (query_hhm= / target_hhm=)", path=str(path), line=1)
    if head.startswith(b"HMMER"):
        raise InputError("a HMMER model (.hmm), not an MSA: give it to --method hmm as "
                         "--query-hmm (query_hmm=)", path=str(path), line=1)


def is_iterative(msa: Any) -> bool:
    """Whether an ``msa`` option builds each MSA by searching a database (``iterative[:N]``)."""
    msa = str(msa or "")
    return msa == "iterative" or msa.startswith("iterative:")


def check_inclusion_evalue(options: dict[str, Any]) -> None:
    """Refuse ``inclusion_evalue`` where ``msa`` runs no rounds (it would change nothing)."""
    msa = str(options.get("msa") or "single")
    if options.get("inclusion_evalue") is not None and not is_iterative(msa):
        raise ValueError(f"inclusion_evalue applies to msa=iterative:N (search: --iterations N), "
                         f"not msa={msa!r}: no MSA is built")


def resolve_source(seq: Sequence, role: str | None, options: dict[str, Any]) -> tuple[str, str]:
    """(kind, argument): kind is "single", "file", "hhm" or "iterative"."""
    check_inclusion_evalue(options)
    msa = str(options.get("msa") or "single")
    iterative = is_iterative(msa)
    if role in ("query", "target"):
        hhm = options.get(f"{role}_hhm")
        if hhm and options.get(f"{role}_msa"):
            raise ValueError(f"{role}_hhm and {role}_msa both name the {role}'s profile; give one")
        if hhm:
            return ("hhm", str(hhm))
        msa_file = options.get(f"{role}_msa")
        if msa_file:
            if Path(msa_file).is_dir():
                return _from_directory(seq, Path(msa_file))
            return ("file", str(msa_file))
    if msa == "single":
        return ("single", "")
    if iterative:
        n = msa.partition(":")[2] or "3"
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"msa={msa!r}: the number of iterations must be a positive integer")
        db = options.get("db")
        if not db:
            raise ValueError(f"msa={msa!r} needs a sequence database: pass db=FASTA")
        inc = options.get("inclusion_evalue")
        return ("iterative", f"{int(n)}|{db}|{1e-3 if inc is None else inc}")
    path = Path(msa)
    if path.is_dir():
        return _from_directory(seq, path)
    raise ValueError(
        f"msa={msa!r}: use 'single', 'iterative[:N]' with db=, a directory of <id>.a3m files, "
        "or query_msa=/target_msa= for files"
    )


def _from_directory(seq: Sequence, path: Path) -> tuple[str, str]:
    for suffix in MSA_SUFFIXES:
        cand = path / f"{seq.id}{suffix}"
        if cand.exists():
            return ("hhm" if suffix == ".hhm" else "file", str(cand))
    raise FileNotFoundError(f"no MSA for {seq.id!r} in {path} (tried {', '.join(MSA_SUFFIXES)})")


def _check_query(seq: Sequence, query: Sequence, path: str) -> None:
    if query.residues != seq.residues:
        raise InputError(
            f"the MSA's first row ({len(query)} residues at match columns) is not the sequence "
            f"{seq.id!r} ({len(seq)} residues)", path=path, record=query.id,
        )


@lru_cache(maxsize=4096)
def _cached(kind: str, arg: str, seq: Sequence, opts: tuple[tuple[str, Any], ...]):
    from homalign.profile.profile import Profile

    options = dict(opts)
    if kind == "single":
        return Profile.from_sequence(seq, **options)
    if kind == "hhm":
        from homalign.profile.hhm import read_hhm

        hmm = read_hhm(arg, **options)
        _check_query(seq, hmm.query, arg)
        return hmm
    if kind == "file":
        msa = read_msa_file(arg)
        prof = Profile.from_msa(msa, path=arg, **options)
        _check_query(seq, prof.query, arg)
        return prof
    if kind == "iterative":
        from homalign.database_search import current

        n, db, inc = arg.split("|")
        msa = current().cached_msa(seq, db, int(n), inclusion_evalue=float(inc))
        return Profile.from_msa(msa, **options)
    raise AssertionError(kind)


def get_profile(seq: Sequence, role: str | None = None, **options: Any):
    """The Profile (or ProfileHMM, for ``.hhm`` sources) of ``seq`` under ``options``."""
    kind, arg = resolve_source(seq, role, options)
    opts = tuple(sorted((k, options[k]) for k in PROFILE_OPTIONS if k in options))
    return _cached(kind, arg, seq, opts)


def a3m_path(seq: Sequence, role: str | None = None, **options: Any) -> Path | None:
    """The A3M/MSA file behind ``seq``'s profile under ``options`` (built and cached first for
    ``msa="iterative:N"``), or None for ``msa="single"``; lets external tools (hhalign, hmmbuild)
    get exactly the MSAs our methods use."""
    kind, arg = resolve_source(seq, role, options)
    if kind in ("file", "hhm"):
        return Path(arg)
    if kind == "iterative":
        from homalign.database_search import current

        n, db, inc = arg.split("|")
        return current().cached_msa_path(seq, db, int(n), inclusion_evalue=float(inc))
    return None
