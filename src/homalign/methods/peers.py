"""Peers: established aligners run as external programs, behind the same ``align`` interface.

Each adapter writes the two sequences into a fresh temporary directory, runs the tool, and turns
its best alignment into an :class:`~homalign.alignment.Alignment` (no pairs when the tool reports
nothing). ``available()`` says which Debian package to install when the program is missing.

- ``blastp`` (BLAST+ 2.x, ``blastp -subject``): BLOSUM62, gap open 11 / extend 1 — BLAST's
  convention is ours (a gap of length k costs open + k * extend), so the numbers pass unchanged.
  Other settings are BLAST's defaults (word size 3, composition-based statistics 2) except the
  E-value cut-off, raised to 1e6 so that the best HSP is reported whenever BLAST finds a seed.
- ``phmmer`` (HMMER 3 through pyhmmer's ``Pipeline.search_seq``): the query becomes a
  single-sequence profile HMM (BLOSUM62, gap open probability 0.02, extend 0.4 — probabilities,
  not costs: HMMER has no 11/1 to convert to); all filters off and E-value cut-offs at 1e9, so
  the best-scoring domain is reported for nearly every pair.
- ``hhalign`` (HH-suite 3): HMM–HMM alignment of single-sequence inputs by default (``query_a3m`` /
  ``target_a3m`` options give MSAs whose first row is the sequence); HH-suite's own defaults
  (local Viterbi then MAC realignment, ``-mact 0.35``).
- ``mmseqs`` (MMseqs2): ``createdb`` + ``ungappedprefilter`` (scores every diagonal: the pair is
  always passed on, like ``--exhaustive-search``) + ``align -a`` + ``convertalis``; BLOSUM62 with
  gap open 11 / extend 1, which MMseqs2 counts like BLAST, E-value cut-off 1e9.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from homalign.alignment import Alignment
from homalign.methods import register
from homalign.methods.base import Method, Option
from homalign.sequence import Sequence

TIMEOUT_S = 600.0

DEBIAN_PACKAGES = {
    "blastp": "ncbi-blast+",
    "phmmer": "hmmer",
    "hhalign": "hhsuite",
    "mmseqs": "mmseqs2",
}


# --- shared helpers -------------------------------------------------------------------------
def _binary_available(binary: str) -> Callable[[], str | None]:
    def available() -> str | None:
        if shutil.which(binary) is None:
            pkg = DEBIAN_PACKAGES[binary]
            return (f"{binary} not found on PATH; install the Debian package {pkg} "
                    f"(apt-get install {pkg})")
        return None

    return available


def _run(cmd: list[str], cwd: Path, timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess:
    """Run a peer program; a failure becomes a RuntimeError quoting the command and its stderr."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{cmd[0]} timed out after {timeout:.0f} s: {' '.join(cmd)}") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"{cmd[0]} failed with status {proc.returncode}: {' '.join(cmd)}: "
                           + " | ".join(tail))
    return proc


def _write_pair(tmp: Path, query: Sequence, target: Sequence, suffix: str = "fa") -> tuple[Path, Path]:
    """Write both sequences under neutral ids (tools mangle unusual names)."""
    from homalign.io.fasta import FastaRecord, write_fasta

    q, t = tmp / f"query.{suffix}", tmp / f"target.{suffix}"
    write_fasta(q, [FastaRecord("query", "", query.residues)])
    write_fasta(t, [FastaRecord("target", "", target.residues)])
    return q, t


def pairs_from_gapped(qaln: str, taln: str, qstart: int, tstart: int, gaps: str = "-.") -> np.ndarray:
    """Aligned residue pairs of two gapped strings whose first residues are qstart / tstart (0-based).

    A column counts as a pair when neither row has a gap character there (vectorised).
    """
    if len(qaln) != len(taln):
        raise RuntimeError("peer returned aligned rows of different lengths")
    gap_codes = np.frombuffer(gaps.encode(), dtype=np.uint8)
    q = np.frombuffer(qaln.encode("ascii"), dtype=np.uint8)
    t = np.frombuffer(taln.encode("ascii"), dtype=np.uint8)
    mq, mt = ~np.isin(q, gap_codes), ~np.isin(t, gap_codes)
    qi = qstart + np.cumsum(mq) - 1
    ti = tstart + np.cumsum(mt) - 1
    both = mq & mt
    return np.stack([qi[both], ti[both]], axis=1).astype(np.int32).reshape(-1, 2)


def _alignment(query: Sequence, target: Sequence, method: str, pairs: np.ndarray | None = None,
               score: float = 0.0, **kw: Any) -> Alignment:
    return Alignment(
        query_id=query.id, target_id=target.id, query=query.residues, target=target.residues,
        pairs=np.zeros((0, 2), np.int32) if pairs is None else pairs, score=score, method=method,
        **kw,
    )


def _integral(name: str, value: float) -> int:
    if float(value) != int(value):
        raise ValueError(f"{name} must be a whole number for this peer, got {value}")
    return int(value)


# --- blastp ---------------------------------------------------------------------------------
def blastp_align(query: Sequence, target: Sequence, *, matrix: str = "BLOSUM62",
                 gap_open: float = 11, gap_extend: float = 1, evalue: float = 1e6,
                 word_size: int | None = None, comp_based_stats: int | None = None,
                 timeout: float = TIMEOUT_S) -> Alignment:
    """BLAST+ blastp of query against target (``-subject``); the best HSP's aligned pairs."""
    with tempfile.TemporaryDirectory(prefix="homalign-blastp-") as d:
        tmp = Path(d)
        q, t = _write_pair(tmp, query, target)
        cmd = ["blastp", "-query", str(q), "-subject", str(t), "-matrix", matrix,
               "-gapopen", str(_integral("gap_open", gap_open)),
               "-gapextend", str(_integral("gap_extend", gap_extend)),
               "-evalue", str(evalue), "-max_hsps", "1",
               "-outfmt", "6 qstart qend sstart send qseq sseq evalue bitscore score"]
        if word_size is not None:
            cmd += ["-word_size", str(int(word_size))]
        if comp_based_stats is not None:
            cmd += ["-comp_based_stats", str(comp_based_stats)]
        out = _run(cmd, tmp, timeout).stdout
    rows = [line.split("\t") for line in out.splitlines() if line and not line.startswith("#")]
    if not rows:
        return _alignment(query, target, "blastp")
    best = max(rows, key=lambda r: float(r[7]))
    qs, qe, ts, te = (int(x) for x in best[:4])
    pairs = pairs_from_gapped(best[4], best[5], qs - 1, ts - 1)
    if len(pairs) and (pairs[-1, 0] != qe - 1 or pairs[-1, 1] != te - 1):
        raise RuntimeError("blastp alignment does not match its reported coordinates")
    return _alignment(query, target, "blastp", pairs, float(best[8]), evalue=float(best[6]),
                      bits=float(best[7]))


# --- phmmer (pyhmmer) -----------------------------------------------------------------------
def _phmmer_available() -> str | None:
    try:
        import pyhmmer  # noqa: F401
    except ImportError:
        return "pyhmmer is not installed (pip install pyhmmer)"
    return None


def phmmer_align(query: Sequence, target: Sequence, *, evalue: float = 1e9,
                 popen: float = 0.02, pextend: float = 0.4) -> Alignment:
    """HMMER3 phmmer (via pyhmmer) of query against target; the best-scoring domain's pairs."""
    from pyhmmer.easel import Alphabet, DigitalSequenceBlock, TextSequence
    from pyhmmer.plan7 import Background, Builder, Pipeline

    abc = Alphabet.amino()
    q = TextSequence(name=b"query", sequence=query.residues).digitize(abc)
    t = TextSequence(name=b"target", sequence=target.residues).digitize(abc)
    pipeline = Pipeline(abc, background=Background(abc), bias_filter=False, F1=1.0, F2=1.0,
                        F3=1.0, E=evalue, domE=evalue, Z=1, domZ=1)
    builder = Builder(abc, popen=popen, pextend=pextend)
    hits = pipeline.search_seq(q, DigitalSequenceBlock(abc, [t]), builder=builder)
    best = None
    for hit in hits:
        for dom in hit.domains:
            if best is None or dom.score > best[1].score:
                best = (hit, dom)
    if best is None:
        return _alignment(query, target, "phmmer")
    hit, dom = best
    ali = dom.alignment
    # hmm_sequence: query consensus, '.' where the target residue sits in an insert state;
    # target_sequence: '-' where a query match state is deleted.
    pairs = pairs_from_gapped(ali.hmm_sequence, ali.target_sequence, ali.hmm_from - 1,
                              ali.target_from - 1)
    if len(pairs) and (pairs[-1, 0] > ali.hmm_to - 1 or pairs[-1, 1] > ali.target_to - 1):
        raise RuntimeError("phmmer alignment does not match its reported coordinates")
    return _alignment(query, target, "phmmer", pairs, float(dom.score), evalue=float(hit.evalue),
                      bits=float(dom.score))


# --- hhalign --------------------------------------------------------------------------------
#: columns allowed beyond the longer sequence in hhalign's -maxres (begin/end states and slack)
HHALIGN_MAXRES_MARGIN = 100
_HHR_STATS = re.compile(r"Probab=(\S+)\s+E-value=(\S+)\s+Score=(\S+)")


def _check_a3m(path: str | Path, seq: Sequence, role: str) -> Path:
    from homalign.io import read_a3m

    msa = read_a3m(path)
    first = msa.ungapped(0).upper() if msa.n_seqs else ""
    if first != seq.residues:
        raise ValueError(f"{role}_a3m {path}: its first sequence is not the {role} sequence")
    return Path(path)


def hhalign_align(query: Sequence, target: Sequence, *, query_a3m: str | Path | None = None,
                  target_a3m: str | Path | None = None, msa: str | None = None,
                  mact: float | None = None, glob: bool = False, timeout: float = TIMEOUT_S,
                  **options: Any) -> Alignment:
    """HH-suite hhalign of query against target; pairs from its first alignment (``-atab``).

    With ``msa=...`` (e.g. ``"iterative:3"`` and ``db=``) hhalign gets exactly the MSA files the
    profile methods use (``homalign.profile.sources.a3m_path``), so the comparison is fair.
    """
    from homalign.profile.sources import check_inclusion_evalue

    check_inclusion_evalue({"msa": msa, **options})
    if msa not in (None, "single") and (query_a3m is None or target_a3m is None):
        from homalign.profile.sources import a3m_path

        query_a3m = query_a3m or a3m_path(query, "query", msa=msa, **options)
        target_a3m = target_a3m or a3m_path(target, "target", msa=msa, **options)
    with tempfile.TemporaryDirectory(prefix="homalign-hhalign-") as d:
        tmp = Path(d)
        q, t = _write_pair(tmp, query, target, "a3m")
        if query_a3m is not None:
            q = _check_a3m(query_a3m, query, "query").resolve()
        if target_a3m is not None:
            t = _check_a3m(target_a3m, target, "target").resolve()
        # -maxres: hhalign sizes its arrays for 20,001 columns by default, most of its time on a
        # domain pair; the HMMs here have one column per residue of the first sequence (the
        # a3m checks above), so a bound just above the longer sequence aligns identically
        maxres = max(len(query), len(target)) + HHALIGN_MAXRES_MARGIN
        cmd = ["hhalign", "-i", str(q), "-t", str(t), "-o", str(tmp / "out.hhr"),
               "-atab", str(tmp / "out.tab"), "-v", "0", "-maxres", str(maxres)]
        if mact is not None:
            cmd += ["-mact", str(mact)]
        if glob:
            cmd += ["-glob"]
        _run(cmd, tmp, timeout)
        tab = (tmp / "out.tab").read_text()
        hhr = (tmp / "out.hhr").read_text()
    rows: list[tuple[int, int]] = []
    blocks = 0
    for line in tab.splitlines():
        if line.startswith(">"):
            blocks += 1
            if blocks > 1:
                break
            continue
        fields = line.split()
        if len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit():
            rows.append((int(fields[0]) - 1, int(fields[1]) - 1))
    if not rows:
        return _alignment(query, target, "hhalign")
    stats = _HHR_STATS.search(hhr)
    prob, ev, score = (float(x) for x in stats.groups()) if stats else (float("nan"), None, 0.0)
    return _alignment(query, target, "hhalign", np.array(rows, dtype=np.int32), score,
                      evalue=ev, extra={"probability": prob})


# --- mmseqs ---------------------------------------------------------------------------------
def mmseqs_align(query: Sequence, target: Sequence, *, gap_open: float = 11,
                 gap_extend: float = 1, evalue: float = 1e9, timeout: float = TIMEOUT_S
                 ) -> Alignment:
    """MMseqs2 alignment of query against target (every diagonal prefiltered, full SW backtrace)."""
    common = ["--threads", "1", "-v", "1"]
    with tempfile.TemporaryDirectory(prefix="homalign-mmseqs-") as d:
        tmp = Path(d)
        q, t = _write_pair(tmp, query, target)
        _run(["mmseqs", "createdb", str(q), "qdb", "-v", "1"], tmp, timeout)
        _run(["mmseqs", "createdb", str(t), "tdb", "-v", "1"], tmp, timeout)
        _run(["mmseqs", "ungappedprefilter", "qdb", "tdb", "pref", "--min-ungapped-score", "0",
              "-e", str(evalue), *common], tmp, timeout)
        _run(["mmseqs", "align", "qdb", "tdb", "pref", "aln", "-a", "-e", str(evalue),
              "--alignment-mode", "3",
              "--gap-open", str(_integral("gap_open", gap_open)),
              "--gap-extend", str(_integral("gap_extend", gap_extend)), *common], tmp, timeout)
        _run(["mmseqs", "convertalis", "qdb", "tdb", "aln", "out.m8", "--format-output",
              "qstart,qend,tstart,tend,qaln,taln,evalue,bits,raw", *common], tmp, timeout)
        out = (tmp / "out.m8").read_text()
    rows = [line.split("\t") for line in out.splitlines() if line.strip()]
    if not rows:
        return _alignment(query, target, "mmseqs")
    best = max(rows, key=lambda r: float(r[7]))
    qs, qe, ts, te = (int(x) for x in best[:4])
    pairs = pairs_from_gapped(best[4], best[5], qs - 1, ts - 1)
    if len(pairs) and (pairs[-1, 0] != qe - 1 or pairs[-1, 1] != te - 1):
        raise RuntimeError("mmseqs alignment does not match its reported coordinates")
    return _alignment(query, target, "mmseqs", pairs, float(best[8]), evalue=float(best[6]),
                      bits=float(best[7]))


_TIMEOUT = Option("timeout", float, TIMEOUT_S, "seconds before the program is stopped", low=0.0,
                  open="low")
_GAPS = (Option("gap_open", float, 11, "gap open cost, a whole number (BLAST convention)",
                low=0.0),
         Option("gap_extend", float, 1, "gap extend cost, a whole number", low=0.0))
BLASTP_OPTIONS = (
    Option("matrix", str, "BLOSUM62", "substitution matrix (-matrix)"), *_GAPS,
    Option("evalue", float, 1e6, "E-value cut-off of the reported HSP (-evalue)", low=0.0,
           open="low"),
    Option("word_size", int, None, "seed word size (-word_size; BLAST's default 3)", low=2,
           high=7),
    Option("comp_based_stats", int, None, "composition-based statistics 0-3 "
           "(-comp_based_stats; BLAST's default 2)", choices=(0, 1, 2, 3)),
    _TIMEOUT,
)
PHMMER_OPTIONS = (
    Option("evalue", float, 1e9, "E-value cut-off of the reported domain", low=0.0, open="low"),
    Option("popen", float, 0.02, "gap open probability of the single-sequence HMM", low=0.0,
           high=0.5, open="high"),
    Option("pextend", float, 0.4, "gap extend probability", low=0.0, high=1.0, open="high"),
)
HHALIGN_OPTIONS = (
    Option("query_a3m", str, None, "the query's MSA (A3M, first row the query)", api_types=None),
    Option("target_a3m", str, None, "the target's MSA (A3M)", api_types=None),
    Option("msa", str, None, "MSAs as the profile methods build them: iterative:N (needs db)"),
    Option("db", str, None, "sequence database for msa=iterative:N", api_types=None),
    Option("inclusion_evalue", float, None, "msa=iterative:N inclusion E-value (default 1e-3)"),
    Option("mact", float, None, "MAC threshold (-mact; HH-suite's default 0.35)", low=0.0,
           high=1.0, open="high"),
    Option("glob", bool, False, "global alignment (-glob)"),
    _TIMEOUT,
)
MMSEQS_OPTIONS = (*_GAPS, Option("evalue", float, 1e9, "E-value cut-off (-e)"), _TIMEOUT)

PEERS = (
    Method("blastp", "peer", "BLAST+ blastp, BLOSUM62 11/1, best HSP", blastp_align,
           available=_binary_available("blastp"),
           defaults={"matrix": "BLOSUM62", "gap_open": 11, "gap_extend": 1, "evalue": 1e6},
           options=BLASTP_OPTIONS),
    Method("phmmer", "peer", "HMMER3 phmmer (pyhmmer), single-sequence query HMM, best domain",
           phmmer_align, available=_phmmer_available,
           defaults={"evalue": 1e9, "popen": 0.02, "pextend": 0.4}, options=PHMMER_OPTIONS),
    Method("hhalign", "peer", "HH-suite hhalign HMM-HMM alignment (single sequences by default)",
           hhalign_align, available=_binary_available("hhalign"), defaults={},
           options=HHALIGN_OPTIONS),
    Method("mmseqs", "peer", "MMseqs2 align (exhaustive prefilter), BLOSUM62 11/1", mmseqs_align,
           available=_binary_available("mmseqs"),
           defaults={"gap_open": 11, "gap_extend": 1, "evalue": 1e9}, options=MMSEQS_OPTIONS),
)

for _method in PEERS:
    register(_method)
