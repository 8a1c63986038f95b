"""The protein alphabet: 20 amino acids plus the ambiguity codes B, Z and X.

Residues are encoded as small integers in NCBI order (the order of the BLOSUM/PAM files), so that a
substitution matrix lookup is plain fancy indexing. Rare residues are folded into their nearest
standard one: U (selenocysteine) → C, O (pyrrolysine) → K, J (I or L) → X.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from homalign.errors import InputError

ALPHABET = "ARNDCQEGHILKMFPSTWYVBZX"
AMINO_ACIDS = ALPHABET[:20]
N_AA = 20
N_CODES = len(ALPHABET)
X_CODE = ALPHABET.index("X")
GAP = -1

_ALIASES = {"U": "C", "O": "K", "J": "X"}
_LOOKUP = np.full(256, 255, dtype=np.uint8)
for _code, _letter in enumerate(ALPHABET):
    _LOOKUP[ord(_letter)] = _code
    _LOOKUP[ord(_letter.lower())] = _code
for _rare, _standard in _ALIASES.items():
    _LOOKUP[ord(_rare)] = _LOOKUP[ord(_standard)]
    _LOOKUP[ord(_rare.lower())] = _LOOKUP[ord(_standard)]

# Background amino-acid frequencies (Robinson & Robinson 1991, as used by BLAST and HMMER).
BACKGROUND = np.array(
    [0.07805, 0.05129, 0.04487, 0.05364, 0.01925, 0.04264, 0.06295, 0.07377, 0.02199, 0.05142,
     0.09019, 0.05744, 0.02243, 0.03856, 0.05203, 0.07120, 0.05841, 0.01330, 0.03216, 0.06441],
    dtype=np.float64,
)
BACKGROUND /= BACKGROUND.sum()


def encode(seq: str, *, path: str | Path | None = None, record: str | None = None) -> np.ndarray:
    """Encode a residue string (any case, optional trailing ``*``) as uint8 codes into ALPHABET."""
    if seq.endswith("*"):
        seq = seq[:-1]
    if not seq:
        raise InputError("empty sequence", path=path, record=record)
    raw = np.frombuffer(seq.encode("ascii", errors="replace"), dtype=np.uint8)
    codes = _LOOKUP[raw]
    bad = np.flatnonzero(codes == 255)
    if bad.size:
        pos = int(bad[0])
        raise InputError(
            f"invalid residue {seq[pos]!r} (allowed: 20 amino acids, B, Z, X, U, O, J)",
            path=path, record=record, column=pos + 1,
        )
    return codes


def letter_codes(seq: str) -> np.ndarray:
    """Each letter's code as :func:`encode` gives it (U as C, O as K, J as X; either case),
    without checking: a letter outside the alphabet gets 255. Comparing these, not letters,
    counts a query's U and a database's stored C as the same residue."""
    return _LOOKUP[np.frombuffer(seq.encode("ascii", "replace"), dtype=np.uint8)]


def decode(codes: np.ndarray) -> str:
    """Turn codes back into an upper-case residue string."""
    return "".join(ALPHABET[int(c)] for c in codes)


def one_hot(codes: np.ndarray) -> np.ndarray:
    """float32 (L, 20) one-hot of the 20 amino acids; ambiguity codes get background frequencies."""
    out = np.zeros((len(codes), N_AA), dtype=np.float32)
    standard = codes < N_AA
    out[np.flatnonzero(standard), codes[standard]] = 1.0
    out[~standard] = BACKGROUND.astype(np.float32)
    return out
