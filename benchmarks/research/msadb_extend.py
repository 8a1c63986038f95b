"""Extend saved hit lists with the MSA-database graph candidates (``learned@3+msadb`` offline).

    python benchmarks/research/msadb_extend.py --round hhm    --hits A/hits/hhm@3+msadb.tsv --out H.tsv
    python benchmarks/research/msadb_extend.py --round learned --hits B/hits/learned.tsv    --out L.tsv
    python benchmarks/research/msadb_extend.py --round pssm   --hits C/hits/pssm@3.tsv      --out P.tsv
    python benchmarks/homology.py fuse --hits L.tsv P.tsv H.tsv --weights 0.25,0.25,0.5 \
        --name learned@3+msadb --out OUT

``iterative_search(..., target_msa=MSADB)`` scores the query's prefilter candidates *and* the
targets its MSA reaches through the MSA database (:func:`homalign.search.msadb.graph_candidates`)
with all three rounds. A hit list saved by a ``sensitivity`` run before the graph candidates
existed covers the prefilter candidates only; this script scores the missing graph candidates of
each query with the same round and appends them. Every round's E-value of a target is independent
of which other targets are scored (the learned and MSA-database laws are per target; the PSSM
round's search space is the database's), so the extended lists are what the end-to-end method
computes; ``--verify N`` checks that on N queries (end-to-end ``iterative_search`` against the
fusion of the three extended lists, then :func:`homalign.search.msadb.neighbour_support` as the
search applies it). ``--prefilter N`` also adds the prefilter's top N candidates (a larger
candidate set; held-out check in docs/learned.md).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from homalign.io import read_a3m
from homalign.methods import get_method
from homalign.methods.profile import ProteinRep
from homalign.paths import shared_data_root
from homalign.profile.profile import Profile
from homalign.search import Hit, fuse_hits, search
from homalign.search.engine import TargetReps
from homalign.search.iterative import PROFILE_DB_OPTIONS, msa_db_round
from homalign.search.msa_build import cached_database
from homalign.search.msadb import graph_candidates, msa_filename, neighbour_support
from homalign.search.prefilter import prefilter
from homalign.stats import karlin_altschul

DB = str(shared_data_root() / "scope/astral-2.07-40.trainval.fa")


def read_hits(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    with open(path) as fh:
        for line in fh:
            out.setdefault(line.split("\t", 1)[0], []).append(line)
    return out


def extend(args: argparse.Namespace) -> None:
    db = cached_database(str(args.db))
    hits = read_hits(args.hits)
    learned = get_method("learned")
    reps = TargetReps(learned, db, dict(learned.defaults))
    params = karlin_altschul("BLOSUM62", 11.0, 1.0)
    t0, n_extra = time.time(), 0
    with open(args.out, "w") as fh:
        for q, lines in hits.items():
            fh.writelines(lines)
            have = {line.split("\t")[1] for line in lines}
            msa = read_a3m(args.msadb / msa_filename(q))  # = build_msa(q, db, 2) for a member
            qseq = db.sequence(db.index_of(q))
            cand = graph_candidates(q, list(msa.ids), args.msadb, db)
            if args.prefilter:
                cand = np.union1d(cand, prefilter(db.codes_of(db.index_of(q)), db,
                                                  max_seqs=args.prefilter))
            extra = np.array([t for t in cand if db.ids[int(t)] not in have and
                              db.ids[int(t)] != q], dtype=np.int64)
            if len(extra) == 0:
                continue
            n_extra += len(extra)
            if args.round == "learned":
                hs = search(qseq, db, "learned", evalue=math.inf, max_hits=None,
                            candidates=extra, traceback=False, target_reps=reps)
                rows = [(h.target_id, h.score, h.evalue) for h in hs]
            elif args.round == "pssm":  # pssm@3's score column is -ln E
                rep = ProteinRep(qseq, source=Profile.from_msa(msa, pseudocounts="matrix",
                                                               matrix="BLOSUM62"))
                hs = search(qseq, db, "pssm", evalue=math.inf, max_hits=None, candidates=extra,
                            traceback=False, query_rep=rep, params=params, matrix="BLOSUM62",
                            gap_open=11.0, gap_extend=1.0)
                rows = [(h.target_id, -math.log(max(h.evalue, 1e-300)), h.evalue) for h in hs]
            else:
                hs, _ = msa_db_round(qseq, db, msa, extra, args.msadb)
                rows = [(h.target_id, h.score, h.evalue) for h in hs]
            for t, s, e in rows:
                fh.write(f"{q}\t{t}\t{s:.6g}\t{e:.4g}\n")
    print(f"{args.round}: {n_extra} graph candidates added over {len(hits)} queries "
          f"({n_extra / max(len(hits), 1):.2f} per query), {time.time() - t0:.0f} s",
          file=sys.stderr)


def verify(args: argparse.Namespace) -> None:
    from homalign.search.iterative import iterative_search

    db = cached_database(str(args.db))
    lists = [read_hits(p) for p in args.lists]
    queries = list(lists[0])[:: max(len(lists[0]) // args.verify, 1)][: args.verify]
    for q in queries:
        parsed = [[Hit(q, t, db.index_of(t), float(s), 0.0, float(e)) for q_, t, s, e in
                   (line.rstrip("\n").split("\t") for line in lst.get(q, []))] for lst in lists]
        off = {h.target_id: h.evalue for h in neighbour_support(
            fuse_hits(parsed, [0.25, 0.25, 0.5]), q, args.msadb)}
        on = {h.target_id: h.evalue for h in iterative_search(
            db.sequence(db.index_of(q)), db, 3, "learned", target_msa=args.msadb, evalue=1e9,
            max_hits=None, traceback=False)}
        diff = max(abs(math.log(on[t]) - math.log(off[t])) for t in set(on) & set(off))
        top = [t for t, _ in sorted(on.items(), key=lambda x: x[1])][:20] == [
            t for t, _ in sorted(off.items(), key=lambda x: x[1])][:20]
        print(f"{q}: {len(on)} targets end to end, {len(off)} offline, max |d ln E| "
              f"{diff:.5f}, same top 20: {top}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--round", choices=("hhm", "learned", "pssm"))
    ap.add_argument("--hits", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--db", type=Path, default=Path(DB))
    ap.add_argument("--msadb", type=Path, default=Path("runs/msadb"))
    ap.add_argument("--prefilter", type=int, default=0,
                    help="also add the prefilter's top N candidates (a larger candidate set)")
    ap.add_argument("--verify", type=int, default=0,
                    help="check N queries end to end against --lists LEARNED PSSM HHM")
    ap.add_argument("--lists", type=Path, nargs=3)
    args = ap.parse_args(argv)
    assert PROFILE_DB_OPTIONS  # the MSA-database round's settings are the library's
    if args.verify:
        verify(args)
    else:
        extend(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
