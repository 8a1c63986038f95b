"""Template annotations: a protein's known secondary structure and accessibility as model input.

HHpred aligns a query to a *template* whose structure is known and reads the template's DSSP
states; the learned aligner's template mode does the same with the target: its 3-state secondary
structure and 2-state accessibility become tokens
(``homalign.model.encoder_kernel.template_tokens``) that the template encoder adds to the residue
embeddings. Strings use one letter per residue:

* secondary structure (DSSP or JOY letters): ``H G I`` helix, ``E B`` strand, any other letter
  (``C T S P``, ``-`` or space) other; ``?`` or ``X`` unknown;
* accessibility: ``T``/``E`` exposed, ``F``/``B`` buried (any case) (JOY's ``solvent accessibility`` track
  writes T/F), ``-``/``?`` unknown.
"""

from __future__ import annotations

import numpy as np

from homalign.errors import InputError

SS_TRACK = "secondary structure and phi angle"
ACC_TRACK = "solvent accessibility"
_SS = {**dict.fromkeys("HGI", 0), **dict.fromkeys("EB", 1), **dict.fromkeys("?X", -1)}
#: the letters of DSSP (H G I E B T S, blank or C or - for coil) and of JOY's track (H E C and P
#: for a positive phi), either case, and ? / X for unknown
SS_LETTERS = frozenset("HGIEBTSCPhgiebtscp-? X")
_ACC = {**dict.fromkeys("TtEe", 0), **dict.fromkeys("FfBb", 1), **dict.fromkeys("-?", -1)}


def parse_template(length: int, ss: str, acc: str | None = None, *, record: str | None = None,
                   path: str | None = None) -> np.ndarray:
    """Template tokens (int64, ``length``) from a secondary-structure string and an optional
    accessibility string (see the module docstring); errors name the record and the position."""
    from homalign.model.encoder_kernel import template_tokens

    if len(ss) != length:
        raise InputError(f"secondary structure has {len(ss)} letters for {length} residues",
                         path=path, record=record)
    ss_cls = np.empty(length, dtype=np.int64)
    for k, c in enumerate(ss):
        if c not in SS_LETTERS:
            raise InputError(f"secondary structure letter {c!r} is not a DSSP/JOY state",
                             path=path, record=record, column=k + 1)
        ss_cls[k] = _SS.get(c.upper() if c.upper() in "HGIEB" else c, 2)
    acc_cls = np.full(length, -1, dtype=np.int64)
    if acc is not None:
        if len(acc) != length:
            raise InputError(f"accessibility has {len(acc)} letters for {length} residues",
                             path=path, record=record)
        for k, c in enumerate(acc):
            if c not in _ACC:
                raise InputError(f"accessibility letter {c!r}: expected T/E (exposed), F/B "
                                 f"(buried) or -/? (unknown)", path=path, record=record,
                                 column=k + 1)
            acc_cls[k] = _ACC[c]
    return template_tokens(ss_cls, acc_cls)


def read_template_annotations(path: str) -> dict[str, tuple[str, str | None]]:
    """id -> (secondary structure, accessibility or None), ungapped, from a JOY ``.tem`` file."""
    from homalign.io import read_tem

    out: dict[str, tuple[str, str | None]] = {}
    for rid, tracks in read_tem(path).items():
        seq = tracks["sequence"]
        if SS_TRACK not in tracks:
            continue
        keep = [k for k, c in enumerate(seq) if c.isalpha()]
        ss = "".join(tracks[SS_TRACK][k] for k in keep)
        acc = "".join(tracks[ACC_TRACK][k] for k in keep) if ACC_TRACK in tracks else None
        out[rid] = (ss, acc)
    return out


__all__ = ["ACC_TRACK", "SS_TRACK", "parse_template", "read_template_annotations"]
