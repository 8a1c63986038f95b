"""Database MSAs for homology search, tuned on held-out TRAIN-fold queries (never dev).

    python benchmarks/research/msadb_tune.py scores --msadb MSADB --queries 200 --out F.json \
        --variants hhm:hh_shift=-0.03,hhm,compass
    python benchmarks/research/msadb_tune.py null --msadb MSADB --out F.json --variants ...
    python benchmarks/research/msadb_tune.py report --out F.json --learned N200.json --pssm LM200.json
    python benchmarks/research/msadb_tune.py hits --out F.json --variants hhm:hh_shift=-0.03 \
        --hits-out HELDOUT.tsv     # then benchmarks/research/msadb_extend.py --round hhm --hits HELDOUT.tsv

``MSADB`` is an MSA database of the trainval ASTRAL set (``homalign makemsa DB.fa MSADB
--iterations 2 --jobs 2``). ``scores``: each held-out train-fold query's MSA (its own file in
MSADB) against the MSAs of its 1,000 prefilter candidates, with the query left out of every
target's MSA (as ``iterative_search(target_msa=...)`` does; ``VARIANT+self`` keeps it), for
each score variant (``METHOD`` or ``METHOD:OPTION=VALUE``). ``null``: the variant's Gumbel law
with a length exponent on 3,000 cross-fold train-fold pairs (the dev queries' folds and the
held-out folds left out; :func:`homalign.model.homology.null_fit_pairs`) and on 3,000 random
pairs. ``report``: superfamily / family sensitivity to the first false positive of each ranking
alone (raw score, null E-value) and fused (:func:`homalign.search.fuse_hits`' rule: weighted
sum of ln E, a missing target taking the list's worst) with the learned search (hit lists with
scores from ``benchmarks/research/learned_null_tune.py``'s cache, E-values recomputed under the shipped
null) and ``pssm@3`` (``benchmarks/research/learned_msa_tune.py``'s cache), on the queries every list has.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from homalign.evaluate.homology import mean_sensitivity, query_sensitivity, train_fold_tuning_set
from homalign.io import read_a3m
from homalign.io.atomic import atomic_write
from homalign.methods import get_method
from homalign.methods.profile import ProteinRep
from homalign.profile.profile import Profile
from homalign.score.pair_scores import score_values
from homalign.search.database import SequenceDB
from homalign.search.msadb import msa_filename, without_member
from homalign.search.prefilter import prefilter
from homalign.stats import EVDParams, db_evalues, fit_gumbel

WEIGHTS = ((0.5, 0.5, 0.0), (0.0, 0.5, 0.5), (0.5, 0.0, 0.5), (0.34, 0.33, 0.33),
           (0.25, 0.25, 0.5), (0.25, 0.5, 0.25), (0.0, 0.25, 0.75), (0.25, 0.0, 0.75))


def parse_variant(v: str) -> tuple[Any, dict[str, Any]]:
    """``METHOD[:OPTION=VALUE]`` -> (method, score options)."""
    name, _, opt = v.partition(":")
    m = get_method(name)
    opts = dict(m.defaults)
    if opt:
        key, _, value = opt.partition("=")
        opts[key] = float(value)
    return m, opts


class Reps:
    """Target profiles from the MSA database, memoised; the query's own row left out on demand."""

    def __init__(self, db: SequenceDB, msadb: Path) -> None:
        self.db, self.msadb = db, msadb
        self.msas: dict[int, Any] = {}
        self.reps: dict[tuple[int, str], ProteinRep] = {}

    def msa(self, i: int) -> Any:
        if i not in self.msas:
            self.msas[i] = read_a3m(self.msadb / msa_filename(self.db.ids[i]))
        return self.msas[i]

    def get(self, i: int, method: Any, exclude: str | None = None) -> ProteinRep:
        msa = self.msa(i)
        drop = exclude is not None and exclude in msa.ids[1:]
        key = (i, method.name)
        if not drop and key in self.reps:
            return self.reps[key]
        opts = method.defaults
        src = Profile.from_msa(without_member(msa, exclude) if drop else msa,
                               pseudocounts=opts.get("pseudocounts", "matrix"),
                               admix=opts.get("admix", "psiblast"), matrix="BLOSUM62")
        rep = ProteinRep(self.db.sequence(i), source=src)
        if not drop:
            self.reps[key] = rep
        return rep


def _save(path: Path, cache: dict) -> None:
    with atomic_write(path) as fh:
        json.dump(cache, fh)


def scores(args: argparse.Namespace) -> None:
    ts = train_fold_tuning_set(args.queries, heldout=True)
    db = SequenceDB.from_fasta(ts.fasta)
    reps = Reps(db, args.msadb)
    cache = json.loads(args.out.read_text()) if args.out.exists() else {}
    t0 = time.time()
    for n, q in enumerate(ts.queries):
        qi = db.index_of(q)
        cand = prefilter(db.codes_of(qi), db)
        for v in args.variants.split(","):
            if q in cache.get(v, {}):
                continue
            m, opts = parse_variant(v)
            qrep = reps.get(qi, m)
            sc = score_values([m.score(qrep, reps.get(int(t), m, exclude=q), **opts)
                               for t in cand])
            rows = [(db.ids[int(t)], float(s), int(db.lengths[int(t)]))
                    for t, s in zip(cand, sc, strict=True)]
            cache.setdefault(v, {})[q] = rows
            with_q = [int(t) for t in cand if q in reps.msa(int(t)).ids[1:]]
            kept = score_values([m.score(qrep, reps.get(t, m), **opts) for t in with_q]
                                ) if with_q else []
            d = {db.ids[t]: float(s) for t, s in zip(with_q, kept, strict=True)}
            cache.setdefault(v + "+self", {})[q] = [(t, d.get(t, s), ln) for t, s, ln in rows]
        if n % 10 == 9 or n == len(ts.queries) - 1:
            _save(args.out, cache)
        print(f"{n + 1}/{len(ts.queries)} {q} {time.time() - t0:.0f}s", file=sys.stderr,
              flush=True)
    _save(args.out, cache)


def null(args: argparse.Namespace) -> None:
    from homalign.model.homology import null_fit_pairs

    ts = train_fold_tuning_set(200, heldout=True)
    db = SequenceDB.from_fasta(ts.fasta)
    reps = Reps(db, args.msadb)
    dev = set((ts.fasta.parent / "dev-queries.txt").read_text().split())
    cross = [(db.index_of(a.id), db.index_of(b.id)) for a, b in null_fit_pairs(ts.fasta, dev, 3000)]
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, len(db), 3000), rng.integers(0, len(db), 3000)
    rand = [(int(x), int(y)) for x, y in zip(a, b, strict=True) if x != y]
    cache = json.loads(args.out.read_text()) if args.out.exists() else {}
    nulls = cache.setdefault("null", {})
    for v in args.variants.split(","):
        m, opts = parse_variant(v)
        for name, pairs in (("cross-fold", cross), ("random", rand)):
            s = score_values([m.score(reps.get(x, m), reps.get(y, m), **opts) for x, y in pairs])
            lq = db.lengths[[x for x, _ in pairs]]
            lt = db.lengths[[y for _, y in pairs]]
            g = fit_gumbel(s, lq, lt, length_exponent=True)
            nulls[f"{v}/{name}"] = g.to_json()
            print(f"{v} {name}: lambda {g.lam:.3f} gamma {g.gamma:.3f} mean score "
                  f"{s.mean():.2f}", flush=True)
    _save(args.out, cache)


def report(args: argparse.Namespace) -> None:
    from homalign.methods.learned import _null_params

    cache = json.loads(args.out.read_text())
    ts = train_fold_tuning_set(200, heldout=True)
    db = SequenceDB.from_fasta(ts.fasta)
    n_db, n_res = len(db), db.total_length
    length = dict(zip(db.ids, db.lengths.tolist(), strict=True))
    learned_hits = json.loads(args.learned.read_text())["hits:learned"]
    pssm_hits = json.loads(args.pssm.read_text())["pssm"]
    variants = [k for k in cache if k != "null"]
    qs = [q for q in ts.queries if q in learned_hits and q in pssm_hits
          and all(q in cache[v] for v in variants)]
    print(f"{len(qs)} queries")
    lp = _null_params()

    def ln_e(rows: list, params: EVDParams, q: str) -> dict[str, float]:
        s = np.array([r[1] for r in rows])
        lt = np.array([length[r[0]] for r in rows])
        e = db_evalues(s, params, length[q], lt, n_res, n_db)
        return {r[0]: float(np.log(max(x, 1e-300))) for r, x in zip(rows, e, strict=True)}

    learned = {q: ln_e(learned_hits[q], lp, q) for q in qs}
    pssm = {q: {t: float(np.log(max(e, 1e-300))) for t, e in pssm_hits[q]} for q in qs}

    def sens(name: str, d: dict[str, dict[str, float]]) -> None:
        ranks = {q: [t for t, _ in sorted(d[q].items(), key=lambda x: x[1]) if t != q]
                 for q in qs}
        v = mean_sensitivity({q: query_sensitivity(q, ranks[q], ts.index) for q in qs})
        print(f"| {name} | {v['superfamily']:.3f} | {v['family']:.3f} |", flush=True)

    def fuse(ds: list, ws: tuple) -> dict[str, dict[str, float]]:
        out = {}
        for q in qs:
            worst = [max(d[q].values()) if d[q] else 0.0 for d in ds]
            keys = set().union(*[d[q] for d in ds])
            out[q] = {t: sum(w * d[q].get(t, wv) for d, w, wv in zip(ds, ws, worst, strict=True))
                      for t in keys}
        return out

    print("| ranking | superfamily | family |\n|---|---|---|")
    sens("learned", learned)
    sens("pssm@3", pssm)
    sens("learned@3 (learned 0.5, pssm@3 0.5)", fuse([learned, pssm], (0.5, 0.5)))
    for v in variants:
        sens(f"{v} raw score", {q: {t: -s for t, s, _ in cache[v][q]} for q in qs})
        key = f"{v.split('+')[0]}/{args.null}"
        if key not in cache.get("null", {}):
            continue
        p = EVDParams(**cache["null"][key])
        e = {q: ln_e(cache[v][q], p, q) for q in qs}
        sens(f"{v} E-value ({args.null} null)", e)
        for w in WEIGHTS:
            sens(f"fusion learned / pssm@3 / {v} {w}", fuse([learned, pssm, e], w))


def write_hits(args: argparse.Namespace) -> None:
    """One variant's rows as a hit list (query, target, score, E) with E-values under the MSA
    database's own null (``null_params``, the search's), for ``benchmarks/research/msadb_extend.py``."""
    from homalign.search.iterative import PROFILE_DB_OPTIONS
    from homalign.search.msadb import null_params

    cache = json.loads(args.out.read_text())
    ts = train_fold_tuning_set(200, heldout=True)
    db = SequenceDB.from_fasta(ts.fasta)
    length = dict(zip(db.ids, db.lengths.tolist(), strict=True))
    p = null_params(args.msadb, db, "hhm", options=PROFILE_DB_OPTIONS)
    with atomic_write(args.hits_out) as fh:
        for q, rows in cache[args.variants].items():
            ev = db_evalues(np.array([r[1] for r in rows]), p, length[q],
                            np.array([r[2] for r in rows]), db.total_length, len(db))
            for r, e in zip(rows, ev, strict=True):
                fh.write(f"{q}\t{r[0]}\t{r[1]:.6g}\t{e:.4g}\n")
    args.hits_out.with_suffix(".queries").write_text("\n".join(cache[args.variants]) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("scores", "null", "report", "hits"))
    ap.add_argument("--msadb", type=Path, default=Path("runs/msadb"))
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--variants", default="hhm:hh_shift=-0.03")
    ap.add_argument("--null", default="cross-fold", choices=("cross-fold", "random"))
    ap.add_argument("--learned", type=Path, default=Path("runs/null/n200.json"))
    ap.add_argument("--pssm", type=Path, default=Path("runs/null/lm200.json"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--hits-out", type=Path, help="hits: the hit list to write")
    args = ap.parse_args(argv)
    {"scores": scores, "null": null, "report": report, "hits": write_hits}[args.what](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
