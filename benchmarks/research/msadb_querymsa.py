"""Query-MSA variants for ``learned@3+msadb``, on held-out TRAIN-fold queries (never dev).

    # the database plus the 20,000 UniProt sequences of Debian's mmseqs2-examples (ids up_<acc>)
    python benchmarks/research/msadb_querymsa.py combine --out COMBINED.fa
    # each held-out query's MSA built with the given settings (and, with --msa-db, from those
    # sequences: iterative_search(msa_db=...)), then the database-MSA round and the PSSM round
    # over the candidates of the saved held-out lists plus the new MSA's graph candidates
    python benchmarks/research/msadb_querymsa.py lists --hits H.tsv --iterations 2 --max-candidates 300 \
        --inclusion 1e-3 [--msa-db COMBINED.fa] --out-h H2.tsv --out-p P2.tsv
    python benchmarks/homology.py fuse --hits L.tsv P2.tsv H2.tsv --weights 0.25,0.25,0.5 \
        --queries heldout100.txt [--target-msa MSADB --neighbour-support 2] --out OUT

``H.tsv`` is a held-out list of the database-MSA round (``msadb_tune.py hits`` then
``msadb_extend.py --round hhm``); ``L.tsv`` the learned list extended the same way. Results in
docs/learned.md ("Neighbour support").
"""

from __future__ import annotations

import argparse
import gzip
import math
import sys
import time
from pathlib import Path

import numpy as np

from homalign.paths import shared_data_root

DB = str(shared_data_root() / "scope/astral-2.07-40.trainval.fa")
UNIPROT = "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz"


def combine(args: argparse.Namespace) -> None:
    from homalign.io.atomic import atomic_write

    n = 0
    with atomic_write(args.out) as fh:
        fh.write(Path(args.db).read_text())
        with gzip.open(args.uniprot, "rt") as src:
            for line in src:
                if line.startswith(">"):
                    parts = line[1:].split(None, 1)[0].split("|")
                    fh.write(f">up_{parts[1] if len(parts) > 1 else parts[0]}\n")
                    n += 1
                else:
                    fh.write(line)
    print(f"{args.out}: the database plus {n} UniProt sequences", file=sys.stderr)


def lists(args: argparse.Namespace) -> None:
    from homalign.io.atomic import atomic_write
    from homalign.methods.profile import ProteinRep
    from homalign.profile.profile import Profile
    from homalign.search import search
    from homalign.search.iterative import msa_db_round
    from homalign.search.msa_build import build_msa, cached_database
    from homalign.search.msadb import graph_candidates
    from homalign.stats import karlin_altschul

    db = cached_database(str(args.db))
    source = cached_database(str(args.msa_db)) if args.msa_db else db
    have: dict[str, set[str]] = {}
    with open(args.hits) as fh:
        for line in fh:
            q, t = line.split("\t")[:2]
            have.setdefault(q, set()).add(t)
    params = karlin_altschul("BLOSUM62", 11.0, 1.0)
    t0, depth = time.time(), []
    with atomic_write(args.out_h) as fh, atomic_write(args.out_p) as fp:
        for q, targets in have.items():
            qseq = db.sequence(db.index_of(q))
            msa = build_msa(qseq, source, args.iterations, max_candidates=args.max_candidates,
                            inclusion_evalue=args.inclusion)
            depth.append(len(msa.ids))
            cand = np.union1d(np.array(sorted(db.index_of(t) for t in targets), dtype=np.int64),
                              graph_candidates(q, list(msa.ids), args.msadb, db))
            cand = cand[cand != db.index_of(q)]
            hits, _ = msa_db_round(qseq, db, msa, cand, args.msadb)
            fh.writelines(f"{q}\t{h.target_id}\t{h.score:.6g}\t{h.evalue:.4g}\n" for h in hits)
            rep = ProteinRep(qseq, source=Profile.from_msa(msa, pseudocounts="matrix",
                                                           matrix="BLOSUM62"))
            hits = search(qseq, db, "pssm", evalue=math.inf, max_hits=None, candidates=cand,
                          traceback=False, query_rep=rep, params=params, matrix="BLOSUM62",
                          gap_open=11.0, gap_extend=1.0)
            fp.writelines(f"{q}\t{h.target_id}\t{-math.log(max(h.evalue, 1e-300)):.6g}\t"
                          f"{h.evalue:.4g}\n" for h in hits)
    print(f"{len(have)} queries, MSA depth mean {np.mean(depth):.1f} median "
          f"{np.median(depth):.0f}, {time.time() - t0:.0f} s", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("combine", "lists"))
    ap.add_argument("--db", type=Path, default=Path(DB))
    ap.add_argument("--uniprot", type=Path, default=Path(UNIPROT))
    ap.add_argument("--out", type=Path, help="combine: the FASTA to write")
    ap.add_argument("--msadb", type=Path, default=Path("runs/msadb"))
    ap.add_argument("--hits", type=Path, help="lists: a held-out database-MSA-round list")
    ap.add_argument("--msa-db", type=Path, default=None, help="lists: build MSAs from these")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--max-candidates", type=int, default=300)
    ap.add_argument("--inclusion", type=float, default=1e-3)
    ap.add_argument("--out-h", type=Path)
    ap.add_argument("--out-p", type=Path)
    args = ap.parse_args(argv)
    {"combine": combine, "lists": lists}[args.what](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
