"""Homology detection benchmark on SCOPe: the protocol of the Foldseek paper.

van Kempen et al., "Fast and accurate protein structure search with Foldseek", Nature
Biotechnology 2023 (SCOPe40 benchmark), exactly as its published script computes it
(foldseek-analysis ``scopbenchmark/scripts/bench.noselfhit.awk``). For each query, its hits are
walked best first and the self hit is skipped; until the first false positive (a hit in another
fold, or a hit on a target without a SCOP label), a hit in the query's family counts for the
*family* level, one in its superfamily but another family for the *superfamily* level, one in its
fold but another superfamily for the *fold* level. With ``famCnt``, ``sfamCnt``, ``foldCnt`` the
database members (the query included) of the query's family, superfamily and fold, the script
divides::

    family       found / (famCnt - 1)
    superfamily  found / (sfamCnt - (famCnt - 1))
    fold         found / (foldCnt - (sfamCnt - 1))

(the published denominators count one member too many at the two upper levels: the query is
subtracted once per level, not once overall). Those are the headline columns ``family``,
``superfamily``, ``fold``, comparable with the paper's tables. The *exclusive* variant divides by
the members at that level only (``sfamCnt - famCnt``, ``foldCnt - sfamCnt``): columns
``superfamily_exclusive`` and ``fold_exclusive``. Only queries whose family has another member,
whose superfamily has members outside the family and whose fold has members outside the
superfamily are scored (the script's condition); the benchmark reports means over the scored
queries (the script's own mean divides by the row count plus its header line, a 1/(n+1) bias
not reproduced here). A query without hits scores 0. A target listed twice counts once (the
script is fed one row per target; BLAST's extra HSPs are not more hits).

Also: precision / recall / F1 of "homologous" calls (same superfamily) at E-value thresholds,
``summary.csv`` (``method,queries,family,superfamily,fold,seconds``), per-query sensitivities and
cumulative sensitivity plots like the paper's. homalign's methods run through
:func:`homalign.search.search_many`; the installed peers (blastp, psiblast, phmmer, jackhmmer,
mmseqs) run as programs on the whole database, with their maximum target counts raised so that
the rankings go deep.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from homalign.errors import InputError
from homalign.scop import Scop, is_heldout_fold, labels_from_fasta

LEVELS = ("family", "superfamily", "fold")
EXCLUSIVE = ("superfamily_exclusive", "fold_exclusive")
"""The exclusive-count variant's columns (denominators without the published script's +1)."""
COLUMNS = (*LEVELS, *EXCLUSIVE)
EVALUE_THRESHOLDS = (1e-10, 1e-5, 1e-3, 1e-2, 0.1, 1.0, 10.0)
PEERS = ("blastp", "psiblast", "phmmer", "jackhmmer", "mmseqs")
SUMMARY_COLUMNS = ("method", "queries", *COLUMNS, "seconds", "warmup_seconds")
"""``seconds``: the timed run over every query; ``warmup_seconds``: the untimed first search of
one query before it (:func:`run_benchmark`)."""


# ---------------------------------------------------------------------------------------------
# SCOP labels
# ---------------------------------------------------------------------------------------------

def read_query_list(path: str | Path, labels: dict[str, Scop]) -> list[str]:
    """Query ids, one a line (``#`` comments and blank lines skipped); each must be in the db."""
    ids = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            sid = line.strip()
            if not sid or sid.startswith("#"):
                continue
            if sid not in labels:
                raise InputError("query id is not in the database", path=path, line=number,
                                 record=sid)
            ids.append(sid)
    if not ids:
        raise InputError("no query ids", path=path)
    return ids


@dataclass(frozen=True)
class LevelCounts:
    """Database members of a query at each level (the query itself excluded)."""

    family: int
    superfamily: int  # same superfamily, other family
    fold: int  # same fold, other superfamily


class ScopIndex:
    """Counts of database members per family, superfamily and fold."""

    def __init__(self, labels: dict[str, Scop]) -> None:
        self.labels = labels
        self.n_family: dict[str, int] = {}
        self.n_superfamily: dict[str, int] = {}
        self.n_fold: dict[str, int] = {}
        for s in labels.values():
            self.n_family[s.family] = self.n_family.get(s.family, 0) + 1
            self.n_superfamily[s.superfamily] = self.n_superfamily.get(s.superfamily, 0) + 1
            self.n_fold[s.fold] = self.n_fold.get(s.fold, 0) + 1

    def counts(self, query: str) -> LevelCounts:
        s = self.labels[query]
        fam = self.n_family[s.family]
        sfam = self.n_superfamily[s.superfamily]
        fold = self.n_fold[s.fold]
        return LevelCounts(fam - 1, sfam - fam, fold - sfam)

    def published_denominators(self, query: str) -> tuple[int, int, int]:
        """The published script's denominators: ``famCnt - 1``, ``sfamCnt - (famCnt - 1)``,
        ``foldCnt - (sfamCnt - 1)`` (counts include the query)."""
        s = self.labels[query]
        fam = self.n_family[s.family]
        sfam = self.n_superfamily[s.superfamily]
        fold = self.n_fold[s.fold]
        return fam - 1, sfam - (fam - 1), fold - (sfam - 1)

    def scorable(self, query: str) -> bool:
        c = self.counts(query)
        return c.family > 0 and c.superfamily > 0 and c.fold > 0

    def why_unscorable(self, query: str) -> str | None:
        """Why the protocol does not score ``query`` (``None`` if it does)."""
        c = self.counts(query)
        if c.family == 0:
            return "family has no other member"
        if c.superfamily == 0:
            return "superfamily has no member outside the family"
        if c.fold == 0:
            return "fold has no member outside the superfamily"
        return None


# ---------------------------------------------------------------------------------------------
# The protocol
# ---------------------------------------------------------------------------------------------

def query_sensitivity(query: str, ranked: Sequence[str], index: ScopIndex) -> dict[str, float]:
    """Sensitivity up to the first false positive at each level for one query (see the module
    docstring): keys ``family``, ``superfamily``, ``fold`` (the published script's) and
    ``superfamily_exclusive``, ``fold_exclusive``.

    ``ranked``: target ids best first. The self hit is skipped, a target without a label is a
    false positive (as in the published script), a repeated target counts once.
    """
    q = index.labels[query]
    counts = index.counts(query)
    found = {level: 0 for level in LEVELS}
    seen: set[str] = set()
    for target in ranked:
        if target == query or target in seen:
            continue
        seen.add(target)
        t = index.labels.get(target)
        if t is None or t.fold != q.fold:
            break  # the first false positive
        if t.family == q.family:
            found["family"] += 1
        elif t.superfamily == q.superfamily:
            found["superfamily"] += 1
        else:
            found["fold"] += 1
    fam, sfam, fold = index.published_denominators(query)

    def ratio(n: int, d: int) -> float:
        return n / d if d > 0 else float("nan")

    return {"family": ratio(found["family"], fam),
            "superfamily": ratio(found["superfamily"], sfam),
            "fold": ratio(found["fold"], fold),
            "superfamily_exclusive": ratio(found["superfamily"], counts.superfamily),
            "fold_exclusive": ratio(found["fold"], counts.fold)}


def rank_by_score(hits: Iterable[tuple[str, float]]) -> list[str]:
    """Target ids sorted by score, best first (stable: equal scores keep their order)."""
    items = list(hits)
    order = sorted(range(len(items)), key=lambda k: -items[k][1])
    return [items[k][0] for k in order]


def rank_by_evalue(hits: Iterable[tuple[str, float, float]]) -> list[str]:
    """Target ids in the order a search reports them: E-value ascending, ties (e.g. blastp's
    0.0) by score descending, then as given."""
    items = list(hits)
    order = sorted(range(len(items)), key=lambda k: (items[k][2], -items[k][1]))
    return [items[k][0] for k in order]


def sensitivities(results: dict[str, list[tuple[str, float, float]]], queries: Sequence[str],
                  index: ScopIndex) -> dict[str, dict[str, float]]:
    """Per scored query: its sensitivities. ``results``: query → [(target, score, evalue)],
    walked in E-value order (:func:`rank_by_evalue`): what each tool reports first. For a
    score whose E-value corrects for the target's length (the learned search's null law) the
    order differs from the raw score's."""
    out = {}
    for q in queries:
        if not index.scorable(q):
            continue
        ranked = rank_by_evalue(results.get(q, []))
        out[q] = query_sensitivity(q, ranked, index)
    return out


def unscored(queries: Sequence[str], index: ScopIndex) -> dict[str, int]:
    """Why queries are not scored: reason → number of queries (empty when all are scored)."""
    why: dict[str, int] = {}
    for q in queries:
        reason = index.why_unscorable(q)
        if reason is not None:
            why[reason] = why.get(reason, 0) + 1
    return why


def scored_report(n_queries: int, why: dict[str, int]) -> str:
    """One line: how many queries the protocol scored, and why the others were not."""
    scored = n_queries - sum(why.values())
    line = f"{scored} of {n_queries} queries scored"
    if why:
        line += " (not scored: " + "; ".join(f"{n} {reason}" for reason, n in why.items()) + ")"
    return line


def train_fold_queries(labels: dict[str, Scop], index: ScopIndex, exclude: set[str], n: int,
                       heldout: bool = False, heldout_fraction: float = 0.08) -> list[str]:
    """``n`` scorable queries evenly spaced over the sorted domains not in ``exclude`` (the dev
    queries), for tuning on train folds; ``heldout``: only from the folds that
    ``homalign.model.contrastive.load_scop_pairs`` holds out (crc32 of the fold name)."""
    pool = [i for i in sorted(labels) if i not in exclude and index.scorable(i)]
    if heldout:
        pool = [i for i in pool if is_heldout_fold(labels[i].fold, heldout_fraction)]
    return pool[:: max(len(pool) // n, 1)][:n]


def cross_fold_decoys(fasta: str | Path, queries: Sequence[str], n_queries: int = 40,
                      n_decoys: int = 400, seed: int = 7) -> tuple[list, list]:
    """Real unrelated proteins for E-value calibration: ``n_queries`` evenly spaced sequences of
    ``queries`` (the dev queries) and ``n_decoys`` random domains of the held-out train folds
    (:func:`is_heldout_fold`), which share no fold with the dev queries (fold-disjoint splits)."""
    from homalign.sequence import read_sequences

    labels = labels_from_fasta(fasta)
    seqs = list(read_sequences(fasta))
    held = [x for x in seqs if x.id in labels and is_heldout_fold(labels[x.id].fold)]
    rng = np.random.default_rng(seed)
    decoys = [held[i] for i in rng.choice(len(held), n_decoys, replace=False)]
    wanted = set(queries)
    pool = [x for x in seqs if x.id in wanted]
    picked = [pool[i] for i in np.linspace(0, len(pool) - 1, n_queries).astype(int)]
    shared = {labels[q.id].fold for q in picked} & {labels[t.id].fold for t in decoys}
    if shared:
        raise ValueError(f"{fasta}: queries and decoys share folds {sorted(shared)}")
    return picked, decoys


@dataclass(frozen=True)
class TuningSet:
    """Train-fold SCOPe queries for tuning (never the dev queries) and their database."""

    fasta: Path
    labels: dict[str, Scop]
    index: ScopIndex
    queries: list[str]


def train_fold_tuning_set(n: int, heldout: bool = False,
                          data_root: str | Path | None = None) -> TuningSet:
    """The trainval ASTRAL database of ``data_root`` (default: the shared data) and ``n``
    :func:`train_fold_queries` of it, the dev queries of ``scope/dev-queries.txt`` excluded."""
    from homalign.paths import shared_data_root

    root = Path(data_root) if data_root is not None else shared_data_root()
    fasta = root / "scope" / "astral-2.07-40.trainval.fa"
    dev = set((root / "scope" / "dev-queries.txt").read_text().split())
    labels = labels_from_fasta(fasta)
    index = ScopIndex(labels)
    return TuningSet(fasta, labels, index, train_fold_queries(labels, index, dev, n, heldout))


def mean_sensitivity(per_query: dict[str, dict[str, float]]) -> dict[str, float]:
    """Means over queries of every column the per-query values have (:data:`COLUMNS`)."""
    if not per_query:
        return {level: float("nan") for level in COLUMNS}
    keys = [c for c in COLUMNS if all(c in v for v in per_query.values())]
    return {k: float(np.mean([v[k] for v in per_query.values()])) for k in keys}


def precision_recall(results: dict[str, list[tuple[str, float, float]]], queries: Sequence[str],
                     index: ScopIndex, thresholds: Sequence[float] = EVALUE_THRESHOLDS
                     ) -> list[dict[str, float]]:
    """Precision, recall and F1 of "homologous" (same superfamily) calls at E-value thresholds.

    Pooled over all ``queries`` (self hits excluded): a call is a hit with E ≤ threshold; a true
    call is in the query's superfamily; recall divides by all same-superfamily database members.
    """
    positives = 0
    for q in queries:
        c = index.counts(q)
        positives += c.family + c.superfamily
    rows = []
    for thr in thresholds:
        calls = tp = 0
        for q in queries:
            qs = index.labels[q]
            seen = set()
            for t, _s, e in results.get(q, []):
                if t == q or t in seen or e > thr or t not in index.labels:
                    continue
                seen.add(t)
                calls += 1
                tp += index.labels[t].superfamily == qs.superfamily
        precision = tp / calls if calls else float("nan")
        recall = tp / positives if positives else float("nan")
        f1 = (2 * precision * recall / (precision + recall)
              if calls and positives and (precision + recall) > 0 else 0.0)
        rows.append({"evalue": thr, "calls": calls, "true": tp, "precision": precision,
                     "recall": recall, "f1": f1})
    return rows


# ---------------------------------------------------------------------------------------------
# Running methods
# ---------------------------------------------------------------------------------------------

MSADB_SUFFIX = "+msadb"


def run_homalign_method(method: str, queries: Sequence[str], db: Any, *,
                        prefilter: bool = True, max_hits: int = 2000, progress: bool = True,
                        workers: int = 1, **options: Any
                        ) -> dict[str, list[tuple[str, float, float]]]:
    """Search every query against ``db`` (a SequenceDB) with a registered method, scores only
    (``workers``: query-parallel processes for a makedb directory, as ``homalign search -j``).

    ``METHOD@N`` (e.g. ``pssm@3``, ``learned@3``) runs
    :func:`homalign.search.iterative.iterative_search` with N iterations instead; its score
    column is ``-ln E`` (a fusion's E-value is its only score), so the walk ranks by E-value."""
    from homalign.search import search_many

    if "@" in method:
        return _run_iterative(method, queries, db, prefilter=prefilter, max_hits=max_hits,
                              progress=progress, workers=workers, **options)
    seqs = [db.sequence(db.index_of(q)) for q in queries]
    res = search_many(seqs, db, method, progress=progress, evalue=1e9, max_hits=max_hits,
                      prefilter=prefilter, traceback=False, workers=workers, **options)
    return {q.id: [(h.target_id, h.score, h.evalue) for h in hits] for q, hits in res}


def parse_iterative_name(name: str) -> tuple[str, int]:
    """``METHOD@N`` -> (METHOD, N); errors name the bad part."""
    base, _, n = name.partition("@")
    if not base or not n.isdigit() or int(n) < 1:
        raise ValueError(f"{name!r}: an iterative method is METHOD@N with N >= 1 (e.g. pssm@3)")
    return base, int(n)


def _run_iterative(name: str, queries: Sequence[str], db: Any, *, prefilter: bool, max_hits: int,
                   progress: bool, workers: int = 1,
                   **options: Any) -> dict[str, list[tuple[str, float, float]]]:
    from tqdm import tqdm

    from homalign.search.parallel import iter_search

    base, n = parse_iterative_name(name)
    seqs = [db.sequence(db.index_of(q)) for q in queries]
    out = {}
    for q, hits in tqdm(iter_search(seqs, db, base, workers=workers, iterations=n, evalue=1e9,
                                    max_hits=max_hits, prefilter=prefilter, traceback=False,
                                    **options),
                        total=len(seqs), desc=f"search {name}", unit="query",
                        disable=not progress, dynamic_ncols=True):
        # ranked by E-value (PSI-BLAST's order; a fusion's only common scale): score = -ln E
        out[q.id] = [(h.target_id, -math.log(max(h.evalue, 1e-300)), h.evalue) for h in hits]
    return out


def _write_plain_fasta(path: Path, ids: Iterable[str], db: Any) -> None:
    from homalign.io import FastaRecord, write_fasta

    write_fasta(path, (FastaRecord(i, "", db.residues(db.index_of(i))) for i in ids))


def _run(cmd: list[str], log: Path) -> None:
    with open(log, "a", encoding="utf-8") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        fh.flush()
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:  # the log's directory may be temporary: its last lines go along
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        said = [line.strip() for line in tail if line.strip() and not line.startswith("$ ")]
        raise RuntimeError(f"{cmd[0]} failed with status {proc.returncode}: " + " | ".join(said))


def _parse_blast_tab(path: Path, last_iteration: bool = False
                     ) -> dict[str, list[tuple[str, float, float]]]:
    """qseqid sseqid evalue bitscore lines; with ``last_iteration`` keep each query's last round
    (psiblast ``-outfmt 7`` prints ``# Iteration: N`` comments)."""
    out: dict[str, list[tuple[str, float, float]]] = {}
    block: list[tuple[str, float, float]] = []
    rounds: dict[str, list[tuple[str, float, float]]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("#"):
                if last_iteration and line.startswith("# Query:"):
                    block = []  # every round repeats "# Query:"; the last one wins
                    rounds[line.split()[2]] = block
                continue
            f = line.rstrip("\n").split("\t")
            if len(f) < 4:
                continue
            hit = (f[1], float(f[3]), float(f[2]))
            if last_iteration:
                block.append(hit)
            else:
                out.setdefault(f[0], []).append(hit)
    return rounds if last_iteration else out


def _parse_hmmer_tbl(path: Path) -> dict[str, list[tuple[str, float, float]]]:
    """HMMER ``--tblout``: target, acc, query, acc, full E-value, full score, ..."""
    out: dict[str, list[tuple[str, float, float]]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("#") or not line.strip():
                continue
            f = line.split()
            out.setdefault(f[2], []).append((f[0], float(f[5]), float(f[4])))
    return out


def run_peer(name: str, queries: Sequence[str], db: Any, db_fasta: Path, workdir: Path,
             threads: int = 2, max_targets: int = 5000, iterations: int = 3,
             evalue: float = 10.0) -> dict[str, list[tuple[str, float, float]]]:
    """Run a peer program on the whole database; query → [(target, score, evalue)].

    ``evalue`` is the peer's reporting threshold (10, every peer's default, is deep enough: in an
    11,000-sequence database the first false positive of almost every query scores above it, and
    a higher threshold makes BLAST trace back thousands of chance hits per query).
    """
    ev = f"{evalue:g}"
    workdir.mkdir(parents=True, exist_ok=True)
    qfa = workdir / "queries.fa"
    _write_plain_fasta(qfa, queries, db)
    log = workdir / f"{name}.log"
    t = str(threads)
    if name in ("blastp", "psiblast"):
        blastdb = workdir / "blastdb" / "db"
        if not Path(str(blastdb) + ".pin").exists() and not Path(str(blastdb) + ".pal").exists():
            blastdb.parent.mkdir(exist_ok=True)
            _run(["makeblastdb", "-in", str(db_fasta), "-dbtype", "prot", "-out", str(blastdb)],
                 log)
        out = workdir / f"{name}.tsv"
        common = ["-query", str(qfa), "-db", str(blastdb), "-evalue", ev,
                  "-max_target_seqs", str(max_targets), "-num_threads", t, "-out", str(out)]
        if name == "blastp":
            _run(["blastp", *common, "-outfmt", "6 qseqid sseqid evalue bitscore"], log)
            return _parse_blast_tab(out)
        _run(["psiblast", *common, "-num_iterations", str(iterations),
              "-outfmt", "7 qseqid sseqid evalue bitscore"], log)
        return _parse_blast_tab(out, last_iteration=True)
    if name in ("phmmer", "jackhmmer"):
        out = workdir / f"{name}.tbl"
        cmd = [name, "--tblout", str(out), "--noali", "-E", ev, "--cpu", t,
               "-o", os.devnull]
        if name == "jackhmmer":
            cmd += ["-N", str(iterations)]
        _run([*cmd, str(qfa), str(db_fasta)], log)
        return _parse_jackhmmer_tbl(out) if name == "jackhmmer" else _parse_hmmer_tbl(out)
    if name == "mmseqs":
        out = workdir / "mmseqs.m8"
        tmp = workdir / "mmseqs-tmp"
        _run(["mmseqs", "easy-search", str(qfa), str(db_fasta), str(out), str(tmp),
              "--max-seqs", str(max_targets), "-e", ev, "--threads", t,
              "--format-output", "query,target,evalue,bits", "-v", "1"], log)
        shutil.rmtree(tmp, ignore_errors=True)
        return _parse_blast_tab(out)
    raise ValueError(f"unknown peer {name!r}; peers: {', '.join(PEERS)}")


def _parse_jackhmmer_tbl(path: Path) -> dict[str, list[tuple[str, float, float]]]:
    """jackhmmer ``--tblout``: rows of all queries in one table (query name in column 3); should a
    query's rows hold several rounds (a target repeats), only the last round is kept."""
    rounds: dict[str, list[list[tuple[str, float, float]]]] = {}
    seen: dict[str, set[str]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("#") or not line.strip():
                continue
            f = line.split()
            query, target = f[2], f[0]
            blocks = rounds.setdefault(query, [[]])
            if target in seen.setdefault(query, set()):
                blocks.append([])  # a new round of the same query
                seen[query] = set()
            seen[query].add(target)
            blocks[-1].append((target, float(f[5]), float(f[4])))
    return {q: blocks[-1] for q, blocks in rounds.items()}


def peer_available(name: str) -> bool:
    programs = {"blastp": ("blastp", "makeblastdb"), "psiblast": ("psiblast", "makeblastdb"),
                "phmmer": ("phmmer",), "jackhmmer": ("jackhmmer",), "mmseqs": ("mmseqs",)}
    return all(shutil.which(p) for p in programs.get(name, (name,)))


# ---------------------------------------------------------------------------------------------
# The benchmark run
# ---------------------------------------------------------------------------------------------

def run_benchmark(db_fasta: str | Path, query_list: str | Path, methods: Sequence[str],
                  out: str | Path, *, prefilter: bool = True, max_hits: int = 2000,
                  threads: int = 2, limit: int | None = None, progress: bool = True,
                  method_options: dict[str, Any] | None = None,
                  peer_evalue: float = 10.0,
                  target_msa: str | Path | None = None,
                  profile_round: bool | None = None) -> list[dict[str, Any]]:
    """Run every method, write ``summary.csv``, ``per_query.csv``, ``precision_recall.csv``,
    ``hits/<method>.tsv`` and the plots into ``out``; returns the summary rows.

    Each method first searches the first query alone, untimed (``warmup_seconds``): homalign's
    kernels compile once per machine (numba; tens of seconds on an empty cache), and every
    method finds the database in the page cache. The database's per-process caches are then
    emptied, so ``seconds``, the run over every query, includes what a method prepares from the
    database (a FASTA database's learned embeddings, as blastp's includes ``makeblastdb``).

    ``METHOD@N+msadb`` runs ``METHOD@N`` with the MSA database ``target_msa`` (the
    ``target_msa=`` of :func:`homalign.search.iterative.iterative_search`). ``profile_round``
    (None: the default) goes to the single-pass homalign methods (``learned``: False ranks
    without the PSSM round, :mod:`homalign.search.profile_round`)."""
    from homalign.search import SequenceDB
    from homalign.threads import set_threads

    threads = set_threads(threads)  # homalign's methods get the peers' thread count
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    search_db = None
    if Path(db_fasta).is_dir():  # a makedb directory: its embeddings (and neighbour lists)
        search_db = SequenceDB.load(db_fasta, verify=False)
        db_fasta = Path(json.loads((Path(db_fasta) / "manifest.json").read_text())["source"])
    labels = labels_from_fasta(db_fasta)
    queries = read_query_list(query_list, labels)
    if limit is not None:
        step = max(len(queries) // limit, 1)
        queries = queries[::step][:limit]
    index = ScopIndex(labels)
    print(f"homology benchmark: {scored_report(len(queries), unscored(queries, index))}",
          file=sys.stderr)
    db = search_db if search_db is not None else SequenceDB.from_fasta(db_fasta)
    dataset = f"{Path(db_fasta).name}, {Path(query_list).name}"
    summary, per_query_rows, pr_rows = [], [], []
    with tempfile.TemporaryDirectory(prefix="homology-peers-", dir=out) as tmp:
        plain_db = Path(tmp) / "db.fa"
        _write_plain_fasta(plain_db, db.ids, db)
        for method in methods:
            if method in PEERS and not peer_available(method):
                print(f"homology benchmark: {method} is not installed, skipped", file=sys.stderr)
                continue

            def run(qs: Sequence[str], tag: str, method: str = method) -> dict:
                return _run_method(method, qs, db, plain_db, Path(tmp) / tag, threads=threads,
                                   prefilter=prefilter, max_hits=max_hits, progress=progress,
                                   peer_evalue=peer_evalue, target_msa=target_msa,
                                   method_options=method_options, profile_round=profile_round)

            start = time.perf_counter()
            run(queries[:1], f"{method}-warmup")  # untimed: JIT compilation, page cache
            warmup = time.perf_counter() - start
            db.cache.clear()  # work on the database (a FASTA's embeddings) stays timed
            start = time.perf_counter()
            results = run(queries, method)
            seconds = time.perf_counter() - start
            per_query = sensitivities(results, queries, index)
            means = mean_sensitivity(per_query)
            summary.append({"method": method, "queries": len(per_query), **means,
                            "seconds": seconds, "warmup_seconds": warmup})
            for q, v in per_query.items():
                per_query_rows.append({"method": method, "query": q, **v})
            for row in precision_recall(results, queries, index):
                pr_rows.append({"method": method, **row})
            _write_hits(out / "hits" / f"{method}.tsv", results)
            print(f"homology benchmark: {method}: {len(per_query)} of {len(queries)} queries "
                  f"scored, family {means['family']:.3f}, superfamily "
                  f"{means['superfamily']:.3f}, fold {means['fold']:.3f} (published protocol; "
                  f"exclusive counts: superfamily {means['superfamily_exclusive']:.3f}, fold "
                  f"{means['fold_exclusive']:.3f}), {seconds:.1f} s", file=sys.stderr)
            _write_outputs(out, summary, per_query_rows, pr_rows, dataset)  # after every method
    _write_outputs(out, summary, per_query_rows, pr_rows, dataset)
    return summary


def _run_method(method: str, queries: Sequence[str], db: Any, plain_db: Path, work: Path, *,
                threads: int, prefilter: bool, max_hits: int, progress: bool,
                peer_evalue: float, target_msa: str | Path | None,
                method_options: dict[str, Any] | None, profile_round: bool | None = None
                ) -> dict[str, list[tuple[str, float, float]]]:
    """One method's hits for ``queries``: a peer (its files under ``work``), ``METHOD@N+msadb``
    or a homalign method (``threads`` query-parallel workers; ``profile_round`` for a
    single-pass one)."""
    if method in PEERS:
        return run_peer(method, queries, db, plain_db, work, threads=threads,
                        max_targets=max_hits, evalue=peer_evalue)
    if method.endswith(MSADB_SUFFIX):
        if target_msa is None:
            raise ValueError(f"{method}: give the MSA database (target_msa / --target-msa)")
        return run_homalign_method(method[: -len(MSADB_SUFFIX)], queries, db,
                                   prefilter=prefilter, max_hits=max_hits, progress=progress,
                                   target_msa=str(target_msa), **(method_options or {}))
    if profile_round is not None and "@" not in method:  # iterative searches: rounds of their own
        method_options = {**(method_options or {}), "profile_round": profile_round}
    return run_homalign_method(method, queries, db, prefilter=prefilter, max_hits=max_hits,
                               progress=progress, workers=threads, **(method_options or {}))


def _write_outputs(out: Path, summary: list[dict[str, Any]],
                   per_query_rows: list[dict[str, Any]], pr_rows: list[dict[str, Any]],
                   dataset: str = "") -> None:
    _write_csv(out / "summary.csv", SUMMARY_COLUMNS, summary)
    _write_csv(out / "per_query.csv", ("method", "query", *COLUMNS), per_query_rows)
    _write_csv(out / "precision_recall.csv",
               ("method", "evalue", "calls", "true", "precision", "recall", "f1"), pr_rows)
    if per_query_rows:
        plot_cumulative(per_query_rows, out / "sensitivity.png", dataset=dataset)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _write_csv(path: Path, columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> None:
    from homalign.io import atomic_write

    with atomic_write(path) as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([_fmt(r[c]) for c in columns])


def _write_hits(path: Path, results: dict[str, list[tuple[str, float, float]]]) -> None:
    from homalign.io import atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as fh:
        for q, hits in results.items():
            for t, s, e in hits:
                fh.write(f"{q}\t{t}\t{s:.6g}\t{e:.4g}\n")


def plot_cumulative(per_query_rows: Sequence[dict[str, Any]], path: Path, *,
                    dataset: str = "") -> None:
    """Three panels (family, superfamily, fold): per method, the queries sorted by sensitivity
    (x: fraction of queries, y: sensitivity up to the first false positive), as in the paper.

    The title names the dataset and the number of scored queries; each method keeps its colour
    across runs (:func:`homalign.evaluate.plots.method_color`); the legend sits below the panels.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from homalign.evaluate.plots import method_color
    from homalign.io import atomic_write

    methods = list(dict.fromkeys(r["method"] for r in per_query_rows))
    n = {m: sum(r["method"] == m for r in per_query_rows) for m in methods}
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.8), sharey=True)
    try:
        means = {m: " / ".join(f"{np.mean([r[lv] for r in per_query_rows if r['method'] == m]):.3f}"
                               for lv in LEVELS) for m in methods}
        for ax, level in zip(axes, LEVELS, strict=True):
            for m in methods:
                v = np.sort([r[level] for r in per_query_rows if r["method"] == m])[::-1]
                x = np.arange(1, len(v) + 1) / len(v)
                ax.plot(x, v, color=method_color(m),
                        label=f"{m} (family / superfamily / fold {means[m]})")
            ax.set_title(level.capitalize())
            ax.set_xlabel("Fraction of queries")
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1.02)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("Sensitivity up to the 1st FP")
        counts = sorted(set(n.values()))
        n_text = f"n = {counts[0]}" if len(counts) == 1 else "n = " + ", ".join(
            f"{m} {k}" for m, k in n.items())
        fig.suptitle(f"SCOPe homology benchmark{': ' + dataset if dataset else ''} "
                     f"({n_text} scored queries; published protocol)", fontsize=10)
        handles, names = axes[0].get_legend_handles_labels()
        fig.legend(handles, names, loc="lower center", ncol=min(len(methods), 3), fontsize=8,
                   frameon=False)
        fig.tight_layout(rect=(0, 0.04 + 0.04 * ((len(methods) - 1) // 3 + 1), 1, 0.95))
        with atomic_write(path, "wb") as fh:
            fig.savefig(fh, format="png", dpi=120)
    finally:
        plt.close(fig)


# ---------------------------------------------------------------------------------------------
# Command line (``homalign benchmark homology``)
# ---------------------------------------------------------------------------------------------

def _threads(n: int | None) -> int:
    from homalign.threads import available_cores

    return available_cores() if n is None else n


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``homalign benchmark homology``."""
    p.add_argument("--db", required=True, metavar="FASTA",
                   help="ASTRAL FASTA (headers '>id class.fold.superfamily.family ...'), or a "
                        "makedb directory of one (homalign searches it, with its stored "
                        "embeddings and neighbour lists; the peers get its FASTA)")
    p.add_argument("--queries", required=True, metavar="LIST", help="query ids, one a line")
    p.add_argument("--methods", default="sw,blastp,mmseqs", metavar="M1,M2,...",
                   help=f"homalign methods and peers ({', '.join(PEERS)}); METHOD@N is an "
                        "N-round iterative search (pssm@3: PSI-BLAST class; learned@3: learned "
                        "fused with the PSSM round); default sw,blastp,mmseqs")
    p.add_argument("--out", required=True, metavar="OUTDIR", help="output directory")
    p.add_argument("--target-msa", default=None, metavar="MSADB",
                   help="MSA database of --db (homalign makemsa) for METHOD@N+msadb methods "
                        "(hhm@3+msadb: HHblits class; learned@3+msadb: learned fused with it)")
    p.add_argument("--exhaustive", action="store_true", help="homalign methods: no prefilter")
    p.add_argument("--no-profile-round", dest="profile_round", action="store_false",
                   default=None, help="single-pass learned: its ranking alone, without the "
                                      "PSSM round (homalign search --no-profile-round)")
    p.add_argument("--max-hits", type=int, default=2000,
                   help="ranking depth per query, also the peers' max target count (2000)")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="use N queries evenly spaced over the list (a documented subset)")
    p.add_argument("-j", "--threads", type=int, default=None,
                   help="threads of homalign's methods and of the peer programs, the same "
                        "count (default: all cores)")
    p.add_argument("--peer-evalue", type=float, default=10.0,
                   help="peers' reporting E-value threshold (default 10)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def run_cli(args: argparse.Namespace) -> int:
    from homalign.methods import get_method

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods:
        raise ValueError("give at least one method")
    if len(set(methods)) != len(methods):
        raise ValueError(f"--methods names a method twice: {args.methods}")
    for name, value in (("--limit", args.limit), ("--max-hits", args.max_hits)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    for m in methods:  # every name checked before any method runs
        if m.endswith(MSADB_SUFFIX):
            if "@" not in m or args.target_msa is None:
                raise ValueError(f"{m}: +msadb needs an iterative METHOD@N and --target-msa")
            m = m[: -len(MSADB_SUFFIX)]
        if "@" in m:
            m = parse_iterative_name(m)[0]
        if m not in PEERS:
            get_method(m)  # an unknown name: the registry's error, with the known ones
    run_benchmark(args.db, args.queries, methods, args.out, prefilter=not args.exhaustive,
                  max_hits=args.max_hits, threads=_threads(args.threads), limit=args.limit,
                  progress=not args.no_progress and sys.stderr.isatty(), peer_evalue=args.peer_evalue,
                  target_msa=args.target_msa, profile_round=args.profile_round)
    return 0
