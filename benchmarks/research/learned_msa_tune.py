"""Does a query MSA from iterative PSSM search help the learned ranking?  TRAIN-fold queries.

    python benchmarks/research/learned_msa_tune.py --queries 40 --heldout --out runs/lm.json

For train-fold SCOPe queries (never the dev queries) against the trainval database, rankings of
the same targets:

1. ``learned``: the learned search;
2. ``pssm-N``: homalign's own PSI-BLAST-class search — :func:`homalign.search.msa_build.build_msa`
   for ``--iterations - 1`` rounds, then the whole prefilter list ranked by the last profile
   (what ``psiblast -num_iterations N`` reports);
3. fusions of the E-values by :func:`homalign.search.fuse_hits` (``w ln E_a + (1 - w) ln E_b``)
   for several ``w``, and learned + pssm with ``w`` set by whether the query's MSA has members;
4. with ``--exhaustive``: the learned search without the prefilter (every database target).

``--inclusion`` and ``--max-candidates`` set ``build_msa``'s inclusion E-value and prefilter
targets per round (non-default settings are cached under their own key). Every hit list is
cached in ``--out`` so other fusions re-evaluate without searching.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from homalign.evaluate.homology import (
    mean_sensitivity,
    query_sensitivity,
    train_fold_tuning_set,
)
from homalign.methods import get_method
from homalign.search import Hit, fuse_hits, search
from homalign.search.database import SequenceDB
from homalign.search.engine import TargetReps


def msa_member_pairs(msa, db: SequenceDB) -> list[tuple[str, np.ndarray]]:
    """(member id, (query column, member residue) pairs) of every non-query A3M row."""
    out = []
    for k in range(1, len(msa.ids)):
        row, slots = msa.rows[k], msa.insertions[k]
        frag, pairs, pos = [], [], 0
        for i, c in enumerate(row):
            frag.append(slots[i].upper())
            pos += len(slots[i])
            if c not in "-.":
                frag.append(c)
                pairs.append((i, pos))
                pos += 1
        full = db.sequence(db.index_of(msa.ids[k])).residues
        start = full.find("".join(frag))
        if start < 0 or not pairs:
            continue
        p = np.asarray(pairs, dtype=np.int64)
        p[:, 1] += start
        out.append((msa.ids[k], p))
    return out


def fuse(a: list, b: list, w: float, query: str) -> list[str]:
    """Targets of two (target, E-value) lists ranked by the shipped fusion,
    :func:`homalign.search.fuse_hits` with weights ``w`` and ``1 - w``."""
    ids: dict[str, int] = {}

    def hits(lst: list) -> list[Hit]:
        return [Hit(query, t, ids.setdefault(t, len(ids)), 0.0, 0.0, e) for t, e in lst]

    return [h.target_id for h in fuse_hits([hits(a), hits(b)], [w, 1.0 - w])
            if h.target_id != query]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--heldout", action="store_true")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--inclusion", type=float, default=1e-3)
    ap.add_argument("--max-candidates", type=int, default=300)
    ap.add_argument("--exhaustive", action="store_true",
                    help="also the learned search over every database target (slow)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    from homalign.methods.profile import ProteinRep
    from homalign.profile.profile import Profile
    from homalign.search.msa_build import build_msa
    from homalign.stats import karlin_altschul

    ts = train_fold_tuning_set(args.queries, args.heldout)
    fasta, index, queries = ts.fasta, ts.index, ts.queries
    cache = json.loads(args.out.read_text()) if args.out.exists() else {}
    setting = (args.iterations, args.inclusion, args.max_candidates)
    suffix = "" if setting == (3, 1e-3, 300) else "@{},{:g},{}".format(*setting)
    pssm_key, members_key = "pssm" + suffix, "members" + suffix
    for key in ("learned", pssm_key, members_key, "learned-exhaustive"):
        cache.setdefault(key, {})
    db = SequenceDB.from_fasta(fasta)
    m = get_method("learned")
    reps = TargetReps(m, db, dict(m.defaults))
    params = karlin_altschul("BLOSUM62", 11.0, 1.0)
    t0 = time.time()
    for n, q in enumerate(queries):
        qi = db.index_of(q)
        qseq = db.sequence(qi)
        if q not in cache["learned"]:
            hs = search(qseq, db, "learned", evalue=1e9, max_hits=2000, traceback=False,
                        target_reps=reps)
            cache["learned"][q] = [(h.target_id, h.evalue) for h in hs]
        if q not in cache[pssm_key]:
            msa = build_msa(qseq, db, max(args.iterations - 1, 1),
                            inclusion_evalue=args.inclusion, max_candidates=args.max_candidates)
            prof = Profile.from_msa(msa, pseudocounts="matrix", matrix="BLOSUM62")
            hs = search(qseq, db, "pssm", evalue=1e9, max_hits=2000, traceback=False,
                        query_rep=ProteinRep(qseq, source=prof), params=params,
                        prefilter_options={"max_seqs": 1000})
            cache[pssm_key][q] = [(h.target_id, h.evalue) for h in hs]
            cache[members_key][q] = [(t, p.tolist()) for t, p in msa_member_pairs(msa, db)]
        if q not in cache["learned-exhaustive"] and args.exhaustive:
            hs = search(qseq, db, "learned", evalue=1e9, max_hits=3000, prefilter=False,
                        traceback=False, target_reps=reps)
            cache["learned-exhaustive"][q] = [(h.target_id, h.evalue) for h in hs]
        args.out.write_text(json.dumps(cache))
        print(f"{n + 1}/{len(queries)} {q} members {len(cache[members_key][q])} "
              f"{time.time() - t0:.0f}s", file=sys.stderr, flush=True)

    def report(name: str, ranks: dict[str, list[str]]) -> None:
        v = mean_sensitivity({q: query_sensitivity(q, ranks[q], index) for q in queries})
        print(f"{name:28s} " + " ".join(f"{lv}={x:.3f}" for lv, x in v.items()), flush=True)

    lists = {k: cache[k] for k in ("learned", pssm_key, "learned-exhaustive")
             if all(q in cache[k] for q in queries)}
    for k, v in lists.items():
        report(k, {q: [t for t, _ in sorted(v[q], key=lambda x: x[1]) if t != q] for q in queries})
    names = list(lists)
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            for w in (0.25, 0.5, 0.75):
                report(f"{names[a]}*{w}+{names[b]}", {
                    q: fuse(lists[names[a]][q], lists[names[b]][q], w, q) for q in queries})
    shallow = {q for q in queries if not cache[members_key][q]}
    for w_none, w_some in ((0.5, 0.5), (0.7, 0.5), (0.7, 0.3), (0.5, 0.3), (0.8, 0.4), (1.0, 0.5)):
        report(f"learned*({w_none} no MSA member, {w_some} else)+{pssm_key}", {
            q: fuse(cache["learned"][q], cache[pssm_key][q],
                    w_none if q in shallow else w_some, q) for q in queries})
    print(f"{len(shallow)} of {len(queries)} queries have no MSA member", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
