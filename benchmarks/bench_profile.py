"""Time per pair of every profile method at L = 300, and one iterative search vs jackhmmer.

Usage::

    python benchmarks/bench_profile.py pairs [--pairs 20] [--msa single|DIR]
    python benchmarks/bench_profile.py iterative [--iterations 3] [--query ID]
    python benchmarks/bench_profile.py msas [--data DIR] [--iterations 3] [--jobs 1]
    python benchmarks/bench_profile.py compare [--msa single|iterative:3] [--methods ...]

``pairs``: sequences of length 280-320 from the ASTRAL trainval set, aligned pairwise with each
method (profiles from the single sequence unless ``--msa`` names a directory of A3Ms); one warm-up
pair first (numba compilation and caches excluded), then the mean wall time per pair.
``msas``: build (and cache on disk) the ``iterative:N`` MSAs of every sequence of a HOMSTRAD
directory, so that a benchmark run with ``--msa iterative:N --db ...`` finds them ready.
``compare``: the profile methods and HH-suite's hhalign on the HOMSTRAD dev pairs, both with the
same MSAs (``--msa iterative:N``: hhalign gets the A3M files our methods read, via
:func:`homalign.profile.sources.a3m_path`), mean F1 / S_dev / S_mod over all and twilight pairs.
``iterative``: one query of length ~300 searched iteratively against the 11,487-sequence
database with :func:`homalign.search.msa_build.build_msa` and with ``jackhmmer -N``
(both single-threaded; E-value inclusion 1e-3), reporting wall time and MSA size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from homalign.paths import shared_data_root  # noqa: E402

DB = str(shared_data_root() / "scope/astral-2.07-40.trainval.fa")
METHODS = ("sw", "pssm", "compass", "prof-sim", "hhm", "hhm-mac", "hmm")


def _sequences(lo: int = 280, hi: int = 320):
    from homalign.sequence import read_sequences

    return [s for s in read_sequences(DB) if lo <= len(s) <= hi]


def bench_pairs(n_pairs: int, msa: str) -> None:
    import homalign

    seqs = _sequences()[: 2 * n_pairs + 2]
    pairs = list(zip(seqs[0::2], seqs[1::2], strict=False))
    print("| method | pairs | mean L | s/pair |\n|---|---|---|---|")
    for method in METHODS:
        opts = {} if msa == "single" else {"msa": msa}
        homalign.align(*pairs[0], method=method, **opts)  # warm-up (JIT, caches)
        t0 = time.perf_counter()
        for q, t in pairs[1 : n_pairs + 1]:
            homalign.align(q, t, method=method, **opts)
        dt = (time.perf_counter() - t0) / n_pairs
        mean_l = sum(len(q) + len(t) for q, t in pairs[1 : n_pairs + 1]) / (2 * n_pairs)
        print(f"| {method} | {n_pairs} | {mean_l:.0f} | {dt:.4f} |", flush=True)


def bench_iterative(iterations: int, query_id: str | None) -> None:
    from homalign.search.msa_build import build_msa, cached_database

    seqs = _sequences(295, 305)
    query = next((s for s in seqs if s.id == query_id), seqs[0]) if query_id else seqs[0]
    t0 = time.perf_counter()
    db = cached_database(DB)
    t_db = time.perf_counter() - t0
    build_msa(query, db, 1)  # warm-up: JIT compilation, E-value parameters
    t0 = time.perf_counter()
    msa = build_msa(query, db, iterations)
    t_ours = time.perf_counter() - t0
    print(f"query {query.id} (L={len(query)}), database {len(db)} sequences "
          f"(loading + k-mer index: {t_db:.1f} s)")
    print(f"homalign build_msa, {iterations} iterations: {t_ours:.1f} s, "
          f"{len(msa.rows) - 1} sequences in the MSA")
    jack = shutil.which("jackhmmer")
    if jack is None:
        print("jackhmmer not installed")
        return
    with tempfile.TemporaryDirectory() as tmp:
        qf = os.path.join(tmp, "q.fa")
        with open(qf, "w") as fh:
            fh.write(f">{query.id}\n{query.residues}\n")
        sto = os.path.join(tmp, "out.sto")
        cmd = [jack, "-N", str(iterations), "--cpu", "1", "--incE", "1e-3", "-A", sto,
               "-o", os.devnull, qf, DB]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        t_jack = time.perf_counter() - t0
        n = sum(1 for line in open(sto) if line.startswith("#=GS"))
    print(f"jackhmmer -N {iterations} --cpu 1: {t_jack:.1f} s, {n} sequences in its MSA")


def _one_msa(args: tuple) -> tuple[str, int, float]:
    from homalign.profile.sources import a3m_path, read_msa_file

    seq, iterations, db = args
    t0 = time.perf_counter()
    path = a3m_path(seq, msa=f"iterative:{iterations}", db=db)
    return seq.id, len(read_msa_file(path).rows), time.perf_counter() - t0


def build_msas(data: str, iterations: int, jobs: int, db: str = DB) -> None:
    from concurrent.futures import ProcessPoolExecutor

    from homalign.evaluate.reference import load_reference_pairs

    seen: dict[str, object] = {}
    for ref in load_reference_pairs(data):
        for s in (ref.query, ref.target):
            seen.setdefault(s.residues, s)
    work = [(s, iterations, db) for s in seen.values()]
    print(f"{len(work)} sequences, {iterations} iterations each", flush=True)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(jobs) as pool:
        for n, (sid, rows, dt) in enumerate(pool.map(_one_msa, work), 1):
            print(f"{n}/{len(work)} {sid}: {rows} rows, {dt:.1f} s", flush=True)
    print(f"total {time.perf_counter() - t0:.0f} s")


def _compare_one(args: tuple) -> tuple[str, list, float]:
    import homalign
    from homalign.evaluate.metrics import score_pair
    from homalign.methods.peers import hhalign_align
    from homalign.profile.sources import a3m_path

    method, refs, msa, db = args
    rows = []
    t0 = time.perf_counter()
    for r in refs:
        if method == "hhalign":
            opts = {"msa": msa, "db": db}
            qa = a3m_path(r.query, **opts) if msa != "single" else None
            ta = a3m_path(r.target, **opts) if msa != "single" else None
            aln = hhalign_align(r.query, r.target, query_a3m=qa, target_a3m=ta)
        else:
            aln = homalign.align(r.query, r.target, method=method, msa=msa, db=db)
        rows.append(score_pair(aln.pairs, r.pairs, len(r.query), len(r.target),
                               ref_identity=r.identity))
    return method, rows, (time.perf_counter() - t0) / max(len(refs), 1)


def compare(data: str, msa: str, methods: list[str], jobs: int, max_pairs: int | None,
            db: str = DB) -> None:
    from concurrent.futures import ProcessPoolExecutor

    from homalign.evaluate.alignment_benchmark import select_pairs
    from homalign.evaluate.metrics import summarise
    from homalign.evaluate.reference import load_reference_pairs

    refs = select_pairs(load_reference_pairs(data), max_pairs)
    print(f"{len(refs)} pairs from {data}, msa={msa}, db={db}\n")
    print("| method | msa | F1 | S_dev | S_mod | twilight F1 | twilight S_dev | s/pair |")
    print("|---|---|---|---|---|---|---|---|")
    with ProcessPoolExecutor(jobs) as pool:
        for method, rows, dt in pool.map(_compare_one, [(m, refs, msa, db) for m in methods]):
            s = summarise(rows)
            print(f"| {method} | {msa} | {s['F1']:.4f} | {s['S_dev']:.4f} | {s['S_mod']:.4f} | "
                  f"{s['twilight_F1']:.4f} ({s['twilight_pairs']}) | {s['twilight_S_dev']:.4f} | "
                  f"{dt:.3f} |", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("pairs")
    p.add_argument("--pairs", type=int, default=20)
    p.add_argument("--msa", default="single")
    it = sub.add_parser("iterative")
    it.add_argument("--iterations", type=int, default=3)
    it.add_argument("--query", default=None)
    ms = sub.add_parser("msas")
    ms.add_argument("--data", default=str(shared_data_root() / "homstrad/dev"))
    ms.add_argument("--iterations", type=int, default=3)
    ms.add_argument("--jobs", type=int, default=1)
    ms.add_argument("--db", default=DB, help="sequence database of the MSAs (FASTA)")
    cp = sub.add_parser("compare")
    cp.add_argument("--data", default=str(shared_data_root() / "homstrad/dev"))
    cp.add_argument("--msa", default="single")
    cp.add_argument("--methods", default="sw,pssm,compass,prof-sim,hhm,hhm-mac,hmm,hhalign")
    cp.add_argument("--jobs", type=int, default=1)
    cp.add_argument("--max-pairs", type=int, default=None)
    cp.add_argument("--db", default=DB, help="sequence database of the iterative MSAs (FASTA)")
    args = ap.parse_args(argv)
    if args.what == "pairs":
        bench_pairs(args.pairs, args.msa)
    elif args.what == "compare":
        compare(args.data, args.msa, args.methods.split(","), args.jobs, args.max_pairs, args.db)
    elif args.what == "msas":
        build_msas(args.data, args.iterations, args.jobs, args.db)
    else:
        bench_iterative(args.iterations, args.query)
    return 0


if __name__ == "__main__":
    sys.exit(main())
