"""HMMER3 through pyhmmer: build profile HMMs, align and search sequences, read/write ``.hmm``.

We do not re-implement HMMER: :func:`build_hmm` calls HMMER's builder (``hmmbuild``; for one
sequence the ``phmmer`` single-sequence model with BLOSUM62, popen 0.02, pextend 0.4) and
:func:`hmm_align` runs HMMER's full pipeline with the acceleration filters switched off (max
mode: F1 = F2 = F3 = 1, no bias filter), so every pair gets HMMER's own local (multihit-local,
best domain) Viterbi/posterior alignment. Results are wrapped into :class:`homalign.Alignment`
(score = HMMER bit score, ``evalue`` with Z = 1, i.e. the pairwise E-value).

HMM nodes are the query's residues: an MSA is built with ``architecture="hand"`` and a reference
line marking the columns where the first row (the query) has a residue, so node k is query
residue k and the alignment pairs index the query sequence directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from homalign.alignment import Alignment
from homalign.errors import InputError
from homalign.sequence import Sequence

_GAPS = "-."


def _alphabet():
    from pyhmmer import easel

    return easel.Alphabet.amino()


def _digital(seq: Sequence):
    from pyhmmer import easel

    return easel.TextSequence(name=seq.id.encode() or b"seq", sequence=seq.residues).digitize(
        _alphabet()
    )


def build_hmm(query: Sequence, msa: Any = None, *, name: str | None = None):
    """A ``pyhmmer.plan7.HMM`` for ``query``: from its MSA (first row = query) or the sequence alone.

    ``msa`` is an ``homalign.io.MSA`` (A3M inserts already removed) or None.
    """
    from pyhmmer import easel, plan7

    alphabet = _alphabet()
    background = plan7.Background(alphabet)
    hname = (name or query.id or "query").encode()
    if msa is None or len(msa.rows) == 1:
        builder = plan7.Builder(alphabet)
        hmm, _, _ = builder.build(_digital(query), background)
        hmm.name = hname
        return hmm
    rows = [r.upper().replace(".", "-") for r in msa.rows]
    ref = "".join("x" if c not in _GAPS else "." for c in rows[0])
    seqs = [
        easel.TextSequence(name=f"s{n}".encode(), sequence=r) for n, r in enumerate(rows)
    ]
    tmsa = easel.TextMSA(name=hname, sequences=seqs)
    tmsa.reference = ref
    builder = plan7.Builder(alphabet, architecture="hand")
    hmm, _, _ = builder.build_msa(tmsa.digitize(alphabet), background)
    return hmm


def _best_domain(hmm: Any, target: Sequence):
    """HMMER's best domain of ``target`` against ``hmm`` in max mode (no filters), or None."""
    from pyhmmer import easel, plan7

    alphabet = _alphabet()
    pipeline = plan7.Pipeline(alphabet, bias_filter=False, F1=1.0, F2=1.0, F3=1.0, E=1e12,
                              domE=1e12, Z=1, domZ=1)
    block = easel.DigitalSequenceBlock(alphabet, [_digital(target)])
    best = None
    for hit in pipeline.search_hmm(hmm, block):
        for dom in hit.domains:
            if best is None or dom.score > best.score:
                best = dom
    return best


def node_map(hmm: Any, query: Sequence) -> np.ndarray:
    """int64 ``(M,)``: the query residue (0-based) at each node of ``hmm``, -1 where none.

    For a model of any provenance (``hmmbuild`` with its default architecture, Pfam): the query
    is placed on the model by HMMER's own alignment (its best domain, as ``hmmalign`` would
    place it), so that node pairs become query-residue pairs."""
    out = np.full(hmm.M, -1, dtype=np.int64)
    best = _best_domain(hmm, query)
    if best is not None:
        ali = best.alignment
        pairs = alignment_pairs(ali.hmm_sequence, ali.target_sequence, ali.hmm_from,
                                ali.target_from)
        pairs = pairs[(pairs[:, 0] < hmm.M) & (pairs[:, 1] < len(query))]
        out[pairs[:, 0]] = pairs[:, 1]
    return out


def hmm_align(hmm: Any, query: Sequence, target: Sequence, method: str = "hmm", *,
              nodes_are_query: bool = True) -> Alignment:
    """Align ``target`` to ``hmm`` with HMMER's pipeline in max mode.

    ``nodes_are_query``: node k is query residue k (models :func:`build_hmm` makes). Otherwise
    (a ``.hmm`` file of any provenance) the nodes are mapped to query residues by
    :func:`node_map`; a target residue on a node the query does not occupy is left unpaired."""
    best = _best_domain(hmm, target)
    if best is None:
        return Alignment(query.id, target.id, query.residues, target.residues,
                         np.zeros((0, 2), np.int32), 0.0, method)
    ali = best.alignment
    pairs = alignment_pairs(ali.hmm_sequence, ali.target_sequence, ali.hmm_from, ali.target_from)
    if not nodes_are_query:
        nodes = node_map(hmm, query)
        pairs = pairs[pairs[:, 0] < hmm.M]
        pairs = np.stack([nodes[pairs[:, 0]], pairs[:, 1]], axis=1).astype(np.int32)
        pairs = pairs[pairs[:, 0] >= 0].reshape(-1, 2)
    pairs = pairs[(pairs[:, 0] < len(query)) & (pairs[:, 1] < len(target))]
    return Alignment(query.id, target.id, query.residues, target.residues, pairs,
                     float(best.score), method, evalue=float(best.i_evalue),
                     bits=float(best.score))


def hmm_search(hmm: Any, query: Sequence, targets: list[Sequence], *, evalue: float = 10.0,
               method: str = "hmm") -> list[Alignment]:
    """Search ``targets`` with ``hmm`` through HMMER's accelerated pipeline (default filters, Z =
    number of targets); the best domain of each reported target, sorted by E-value."""
    from pyhmmer import easel, plan7

    alphabet = _alphabet()
    pipeline = plan7.Pipeline(alphabet, E=evalue, domE=evalue)
    block = easel.DigitalSequenceBlock(alphabet, [_digital(t) for t in targets])
    by_name = {t.id: t for t in targets}
    out: list[Alignment] = []
    for hit in pipeline.search_hmm(hmm, block):
        name = hit.name.decode() if isinstance(hit.name, bytes) else str(hit.name)
        target = by_name[name]
        best = max(hit.domains, key=lambda d: d.score, default=None)
        if best is None:
            continue
        ali = best.alignment
        pairs = alignment_pairs(ali.hmm_sequence, ali.target_sequence, ali.hmm_from,
                                ali.target_from)
        pairs = pairs[(pairs[:, 0] < len(query)) & (pairs[:, 1] < len(target))]
        out.append(Alignment(query.id, target.id, query.residues, target.residues, pairs,
                             float(hit.score), method, evalue=float(hit.evalue),
                             bits=float(hit.score)))
    return sorted(out, key=lambda a: (a.evalue, -a.score))


def alignment_pairs(hmm_row: str, target_row: str, hmm_from: int, target_from: int) -> np.ndarray:
    """(k, 2) 0-based (node, target residue) pairs of a HMMER domain alignment.

    In HMMER's rows ``.`` in the model line is a target residue in an insert state and ``-`` in
    the target line a deleted node."""
    k, j = hmm_from - 1, target_from - 1
    out = []
    for h, t in zip(hmm_row, target_row, strict=True):
        if h == ".":
            j += 1
        elif t == "-":
            k += 1
        else:
            out.append((k, j))
            k += 1
            j += 1
    return np.asarray(out, dtype=np.int32).reshape(-1, 2)


def _hmm_name(hmm) -> str:  # noqa: ANN001
    name = hmm.name
    return name.decode() if isinstance(name, bytes) else str(name)


def read_hmm(path: str | Path):
    """Read the one HMM of a HMMER3 ``.hmm`` file (gzip-compressed or not); bad or truncated
    files, and files of several models, raise InputError."""
    from pyhmmer import plan7

    from homalign.io.text import check_readable, text_lines

    path = check_readable(path)
    lines = text_lines(path)
    if not lines or not lines[0].startswith("HMMER3"):
        raise InputError("not a HMMER3 .hmm file (first line should start with 'HMMER3')",
                         path=path, line=1)
    if not any(text.strip() == "//" for text in lines):
        raise InputError("file cut short: no '//' record terminator", path=path,
                         line=len(lines))
    try:
        with plan7.HMMFile(str(path)) as f:
            hmm = f.read()
            more = f.read() if hmm is not None else None
    except (ValueError, EOFError, OSError) as exc:
        raise InputError(f"not a valid HMMER3 file: {exc}", path=path) from None
    if hmm is None:
        raise InputError("no HMM in file", path=path)
    if more is not None:
        raise InputError(f"holds more than one HMM ({_hmm_name(hmm)}, {_hmm_name(more)}, ...): "
                         "a query needs a file of one model (hmmfetch extracts one)", path=path)
    if not hmm.alphabet.is_amino():
        raise InputError(f"a {hmm.alphabet.type} HMM; homalign aligns proteins (an amino-acid "
                         "model is needed)", path=path)
    # HMMER's parser takes a damaged number (NaN, a word) without a word: each node's emissions
    # must be probabilities that sum to 1 (to HMMER's 4-5 written digits)
    for name, values in (("match emissions", hmm.match_emissions),
                         ("insert emissions", hmm.insert_emissions)):
        arr = np.asarray(values, dtype=np.float64)[1:]
        ok = np.isfinite(arr).all(axis=1) & (arr >= 0).all(axis=1) & (
            np.abs(arr.sum(axis=1) - 1.0) < 1e-3)
        if not ok.all():
            raise InputError(f"the {name} of node {int(np.flatnonzero(~ok)[0]) + 1} are not "
                             "probabilities summing to 1 (a damaged number?)", path=path)
    trans = np.asarray(hmm.transition_probabilities, dtype=np.float64)
    if not (np.isfinite(trans).all() and (trans >= 0).all()):
        raise InputError("a transition probability is not a number in [0, 1]", path=path)
    return hmm


def write_hmm(path: str | Path, hmm: Any) -> None:
    """Write ``hmm`` as a HMMER3 ``.hmm`` file (atomically)."""
    from homalign.io.atomic import atomic_write

    with atomic_write(path, "wb") as fh:
        hmm.write(fh)


def hmm_match_emissions(hmm: Any) -> np.ndarray:
    """float64 (M, 20) match emissions of a pyhmmer HMM in homalign ALPHABET order."""
    from homalign.alphabet import AMINO_ACIDS

    symbols = _alphabet().symbols[:20]
    order = [symbols.index(a) for a in AMINO_ACIDS]
    em = np.asarray(hmm.match_emissions, dtype=np.float64)[1:, :20]
    return em[:, order]
