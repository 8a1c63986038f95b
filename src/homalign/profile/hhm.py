"""Read HH-suite ``.hhm`` profile HMMs (the format ``hhmake`` writes), so users can bring HH-suite
profiles to the ``hhm`` and ``hhm-mac`` methods.

Format (HH-suite 3, "HHsearch 1.5"): header lines up to ``HMM`` (the alphabet, in HH-suite's
order ``ACDEFGHIKLMNPQRSTVWY``), a transition header line, one line of begin transitions, then
per match state two lines: ``<residue> <k> <20 emissions> <k>`` and
``<MM MI MD IM II DM DD> <Neff Neff_I Neff_D>``, and ``//`` at the end. Probabilities are written
as ``-1000 log2 p`` (``*`` for p = 0) and the Neffs times 1000.

HH-suite stores the emissions *before* pseudocounts; we read them as observed frequencies and add
our pseudocounts (HH-suite style admixture by default), and treat the transitions as ``Neff``
weighted counts under HMMER3's transition priors, as for a profile of our own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from homalign.alphabet import AMINO_ACIDS
from homalign.errors import InputError
from homalign.io.text import check_readable, text_lines
from homalign.profile.hmm import ProfileHMM, estimate_transitions
from homalign.profile.pseudocounts import add_pseudocounts
from homalign.sequence import Sequence

HHM_ORDER = "ACDEFGHIKLMNPQRSTVWY"


# -1000 log2 p of the smallest positive double is about 1.07e6: anything larger is p = 0.
_ZERO_BEYOND = 1_100_000
_MAX_INT = 10**12  # a Neff times 1000, a LENG, a state index: no real file comes near


def _prob(token: str, path: Path, line: int) -> float:
    if token == "*":
        return 0.0
    try:
        value = int(token)
    except ValueError:
        raise InputError(f"expected an integer or '*', got {token!r}", path=path,
                         line=line) from None
    if value < 0:
        raise InputError(f"-1000 log2 p must be >= 0 (p <= 1), got {token}", path=path, line=line)
    return 0.0 if value >= _ZERO_BEYOND else float(2.0 ** (-value / 1000.0))


def _int(token: str, path: Path, line: int) -> int:
    try:
        value = int(token)
    except ValueError:
        raise InputError(f"expected an integer, got {token!r}", path=path, line=line) from None
    if abs(value) > _MAX_INT:
        raise InputError(f"integer out of range: {token}", path=path, line=line)
    return value


def read_hhm(path: str | Path, *, pseudocounts: str = "matrix", admix: str = "hhsuite",
             matrix: str = "BLOSUM62") -> ProfileHMM:
    """Parse an ``.hhm`` file into a :class:`ProfileHMM`; malformed or truncated files raise
    :class:`InputError` naming the file and line."""
    path = check_readable(path)
    lines = text_lines(path)
    if lines and lines[0].startswith("HMMER"):
        raise InputError("a HMMER model (.hmm), not an HH-suite .hhm file: give it to "
                         "--method hmm as --query-hmm (query_hmm=)", path=path, line=1)
    name = path.stem
    length = None
    n = 0
    order: list[int] | None = None
    while n < len(lines):
        text = lines[n]
        if text.startswith("NAME"):
            name = text[4:].strip().split()[0] if text[4:].strip() else name
        elif text.startswith("LENG"):
            parts = text.split()
            length = _int(parts[1], path, n + 1) if len(parts) > 1 else None
        elif text.startswith("HMM "):
            letters = text.split()[1:]
            if sorted(letters) != sorted(HHM_ORDER) or len(letters) != 20:
                raise InputError("HMM line must list the 20 amino acids", path=path, line=n + 1)
            order = [letters.index(a) for a in AMINO_ACIDS]
            break
        n += 1
    if order is None:
        raise InputError("no 'HMM' line: not an HH-suite .hhm file (or cut short)", path=path,
                         line=len(lines))
    n += 3  # transition header line, begin transitions line
    residues: list[str] = []
    em: list[list[float]] = []
    tr: list[list[float]] = []
    neff: list[float] = []
    ended = False
    while n < len(lines):
        text = lines[n]
        if text.startswith("//"):
            ended = True
            break
        if not text.strip():
            n += 1
            continue
        parts = text.split()
        if len(parts) != 23:
            raise InputError(f"match state line needs 23 fields, found {len(parts)}", path=path,
                             line=n + 1)
        if len(parts[0]) != 1 or not parts[0].isascii() or not parts[0].isalpha():
            raise InputError(f"match state line must start with one residue letter, got "
                             f"{parts[0]!r}", path=path, line=n + 1, column=1)
        k = _int(parts[1], path, n + 1)
        if k != len(residues) + 1:
            raise InputError(f"match state {k} out of order (expected {len(residues) + 1})",
                             path=path, line=n + 1)
        e = np.array([_prob(t, path, n + 1) for t in parts[2:22]])
        if n + 1 >= len(lines):
            raise InputError(f"file ends after match state {k}: its transition line is missing",
                             path=path, line=n + 1)
        tparts = lines[n + 1].split()
        if len(tparts) != 10:
            raise InputError(f"transition line needs 10 fields, found {len(tparts)}", path=path,
                             line=n + 2)
        residues.append(parts[0].upper())
        em.append(list(e[order]))
        tr.append([_prob(t, path, n + 2) for t in tparts[:7]])
        neff.append(_int(tparts[7], path, n + 2) / 1000.0 if tparts[7] != "*" else 1.0)
        n += 2
    if not ended:
        raise InputError("file cut short: no '//' after the last match state", path=path,
                         line=len(lines))
    if not residues:
        raise InputError("no match states", path=path, line=n + 1)
    if length is not None and length != len(residues):
        raise InputError(f"LENG says {length} match states, found {len(residues)}", path=path,
                         line=n + 1)
    freqs = np.asarray(em, dtype=np.float64)
    sums = freqs.sum(axis=1, keepdims=True)
    freqs = np.divide(freqs, sums, out=np.zeros_like(freqs), where=sums > 0)
    n_eff = np.maximum(np.asarray(neff), 1.0)
    probs = add_pseudocounts(freqs, n_eff, pseudocounts, matrix=matrix, admix=admix)
    t = np.asarray(tr, dtype=np.float64)
    trans = estimate_transitions(t * n_eff[:, None])
    query = Sequence(name, "".join(r if r.isalpha() else "X" for r in residues),
                     source=str(path))
    return ProfileHMM(query, probs, trans, n_eff, float(n_eff.mean()), freqs, name)
