"""Read and write PSI-BLAST ASCII PSSMs (``psiblast -out_ascii_pssm``).

Layout: a title line, a header line with the 20 residue letters twice (scores, then weighted
observed percentages), one row per query position — ``index residue <20 integer scores>
<20 percentages> <information> <relative weight>`` — a blank line and a footer of Karlin–Altschul
parameters (ignored by the reader). Rows with only the 20 scores are accepted too.

:func:`profile_from_pssm` turns a PSSM back into a :class:`Profile`: emission probabilities
``p(a) ∝ f(a) exp(lambda s(a))`` from the scores, observed frequencies from the percentages.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from homalign.alphabet import AMINO_ACIDS, BACKGROUND
from homalign.errors import InputError
from homalign.profile.profile import Profile
from homalign.profile.pseudocounts import matrix_lambda
from homalign.sequence import Sequence

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
TITLE = ("Last position-specific scoring matrix computed, weighted observed percentages rounded "
         "down, information per position, and relative weight of gapless real matches to "
         "pseudocounts")


@dataclass
class AsciiPSSM:
    """A parsed ASCII PSSM; arrays are in homalign ALPHABET order (20 amino acids)."""

    query: Sequence
    scores: np.ndarray  # int32 (L, 20)
    percentages: np.ndarray | None  # float64 (L, 20) or None
    information: np.ndarray | None  # (L,)
    relative_weight: np.ndarray | None  # (L,)


def read_pssm(path: str | Path) -> AsciiPSSM:
    """Parse an ASCII PSSM; wrong widths and bad numbers raise InputError naming file and line."""
    from homalign.io.text import check_readable, text_lines

    path = check_readable(path)
    lines = text_lines(path)
    order = None
    n = 0
    for n, text in enumerate(lines):
        toks = text.split()
        if len(toks) >= 20 and all(len(t) == 1 and t.isalpha() for t in toks[:20]):
            if sorted(toks[:20]) != sorted(AMINO_ACIDS):
                raise InputError("PSSM header must list the 20 amino acids", path=path,
                                 line=n + 1)
            order = [toks[:20].index(a) for a in AMINO_ACIDS]
            break
    if order is None:
        raise InputError("no PSSM header line (the 20 residue letters)", path=path,
                         line=len(lines) or None)
    residues: list[str] = []
    scores: list[list[int]] = []
    pct: list[list[float]] = []
    info: list[float] = []
    weight: list[float] = []
    full = None
    for m in range(n + 1, len(lines)):
        toks = lines[m].split()
        if not toks:
            if residues:
                break
            continue
        if len(toks) not in (22, 44):
            raise InputError(
                f"PSSM row has {len(toks)} fields, expected 22 (index, residue, 20 scores) or 44 "
                "(plus 20 percentages, information, relative weight)", path=path, line=m + 1)
        if full is None:
            full = len(toks) == 44
        elif full != (len(toks) == 44):
            raise InputError("PSSM rows change width", path=path, line=m + 1)
        try:
            idx = int(toks[0])
            row = [int(t) for t in toks[2:22]]
            if full:
                pct.append([float(t) for t in toks[22:42]])
                info.append(float(toks[42]))
                weight.append(float(toks[43]))
                if not np.isfinite(pct[-1] + info[-1:] + weight[-1:]).all() or min(pct[-1]) < 0:
                    raise ValueError("percentages, information and weight must be finite, "
                                     "percentages >= 0")
        except ValueError as exc:
            raise InputError(f"bad number in PSSM row: {exc}", path=path, line=m + 1) from None
        for k, v in enumerate(row):
            if not _INT32_MIN <= v <= _INT32_MAX:
                raise InputError(f"score {v} is beyond the int32 range", path=path, line=m + 1,
                                 column=k + 3)
        if len(toks[1]) != 1 or not toks[1].isascii() or not toks[1].isalpha():
            raise InputError(f"PSSM row residue must be one letter, got {toks[1]!r}", path=path,
                             line=m + 1, column=2)
        if idx != len(residues) + 1:
            raise InputError(f"PSSM row index {idx}, expected {len(residues) + 1}", path=path,
                             line=m + 1)
        residues.append(toks[1])
        scores.append(row)
    if not residues:
        raise InputError("PSSM has no rows", path=path, line=len(lines))
    sc = np.asarray(scores, dtype=np.int32)[:, order]
    query = Sequence(path.stem, "".join(residues), source=str(path))
    if full:
        return AsciiPSSM(query, sc, np.asarray(pct)[:, order], np.asarray(info),
                         np.asarray(weight))
    return AsciiPSSM(query, sc, None, None, None)


def write_pssm(path: str | Path, profile: Profile) -> None:
    """Write a profile as a PSI-BLAST ASCII PSSM (integer scores in matrix units), atomically."""
    from homalign.io.atomic import atomic_write

    scores = np.rint(profile.pssm()[:, :20]).astype(int)
    pct = np.floor(profile.freqs * 100.0 + 1e-9).astype(int)
    p = profile.probs
    info = (p * np.log2(np.maximum(p, 1e-300) / profile.background)).sum(axis=1)
    from homalign.profile.pseudocounts import data_weight

    rel = data_weight(profile.n_eff)
    head = " " * 9 + "".join(f"{a:>3}" for a in AMINO_ACIDS) + "".join(f"{a:>4}" for a in AMINO_ACIDS)
    out = ["", TITLE, head]
    for i, res in enumerate(profile.query.residues):
        out.append(f"{i + 1:>5} {res}  " + "".join(f"{s:>3}" for s in scores[i])
                   + " " + "".join(f"{v:>4}" for v in pct[i]) + f"  {info[i]:.2f} {rel[i]:.2f}")
    out += ["", "                      K         Lambda",
            f"PSI Ungapped         -          {profile.lam:.4f}", ""]
    with atomic_write(path) as fh:
        fh.write("\n".join(out) + "\n")


def profile_from_pssm(pssm: AsciiPSSM, matrix: str = "BLOSUM62") -> Profile:
    """A Profile whose emissions reproduce the PSSM's scores (up to their integer rounding); its
    observed frequencies are each row's percentages, or its emissions where a row has none."""
    lam = matrix_lambda(matrix)
    logits = lam * pssm.scores.astype(np.float64)
    # shifted by each row's maximum: the same probabilities, and no overflow for large scores
    probs = BACKGROUND * np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    L = len(pssm.query)
    freqs = probs.copy()  # a row without observed percentages (psiblast writes all zeros)
    if pssm.percentages is not None:
        totals = pssm.percentages.sum(axis=1)
        seen = totals > 0
        freqs[seen] = pssm.percentages[seen] / totals[seen, None]
    occ = np.zeros((L, 2))
    occ[:, 0] = 1.0
    trans = np.zeros((L, 7))
    trans[:-1, 0] = 1.0
    return Profile(pssm.query, freqs, probs, np.ones(L), 1.0, trans, occ, matrix=matrix)
