"""Wall and CPU time of `homalign search` against blastp, as a user runs them, in one run.

    python benchmarks/search_speed.py --db DBDIR --blastdb BLASTDB --queries Q.fa|IDS.txt \\
        [--limit N] [--methods learned,sw,learned@3,psiblast@3] [--threads 1,2] \\
        [--outfmt "6 qseqid sseqid evalue bitscore"] --out OUT.csv

Each command writes BLAST-style tabular hits with alignments (``homalign search --format tab``
traces every reported hit back; ``blastp -outfmt 6``), E <= 10, at each thread count, or the
``--outfmt`` columns (both tools; homalign computes no alignment when none of them needs one,
blastp always does);
``METHOD@N`` runs N search rounds (``--iterations N``; ``psiblast@N``: ``-num_iterations N``). Each
command also runs on the first k queries: k = 1 on one thread, and at T threads the
``MIN_WORKER_QUERIES`` (20) from which homalign searches in T worker processes, so that both runs
work alike. The per-query cost is (time of all queries - time of the k) / (queries - k), and the
start-up (imports, weights, compiled-code cache, and at T threads the start of the workers) is
the time of the k less k queries' cost. ``DBDIR`` is a ``homalign makedb`` directory of
the FASTA file behind ``BLASTDB`` (``makeblastdb -dbtype prot``). ``--queries`` is a FASTA file,
or a list of database ids (e.g. ``$HOMALIGN_DATA/scope/dev-queries.txt``) of which ``--limit``
evenly spaced ones are taken. The CSV has one row per
method and thread count; ``per_query_vs_blastp`` compares at the same thread count.
"""

from __future__ import annotations

import argparse
import csv
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOMALIGN = [sys.executable, "-c", "import sys; from homalign.cli import main; sys.exit(main())"]


def _timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the children) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # psiblast warns once per query on stderr: kept, and shown only if the command fails
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _command(method: str, queries: Path, args: argparse.Namespace, threads: int,
             out: Path) -> list[str]:
    """``METHOD`` or ``METHOD@N`` (N search rounds): homalign's, or ``blastp`` / ``psiblast@N``."""
    name, _, rounds = method.partition("@")
    if name in ("blastp", "psiblast"):
        cmd = [name, "-query", str(queries), "-db", args.blastdb, "-outfmt", args.outfmt,
               "-evalue", "10", "-num_threads", str(threads), "-out", str(out)]
        return cmd + (["-num_iterations", rounds] if rounds else [])
    return [*HOMALIGN, "search", str(queries), args.db, "--method", name, "--evalue", "10",
            "-j", str(threads), "--no-progress", "-o", str(out), "--outfmt", args.outfmt] + (
                ["--iterations", rounds] if rounds else [])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True, help="homalign makedb directory")
    p.add_argument("--blastdb", required=True, help="makeblastdb database of the same FASTA")
    p.add_argument("--queries", required=True, help="query FASTA, or database ids one a line")
    p.add_argument("--limit", type=int, default=None, help="evenly spaced ids of the list")
    p.add_argument("--methods", default="learned,sw")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--outfmt", default="6", help='both tools\' tabular columns (default "6")')
    p.add_argument("--out", required=True, help="CSV to write")
    args = p.parse_args(argv)
    from homalign.search import open_database
    from homalign.search.parallel import MIN_WORKER_QUERIES
    from homalign.sequence import read_sequences

    rows = []
    with tempfile.TemporaryDirectory(prefix="search-speed-") as tmp:
        queries = Path(args.queries)
        if not queries.read_text()[:1] == ">":  # database ids
            db = open_database(args.db)
            ids = [line.split()[0] for line in queries.read_text().splitlines() if line.strip()]
            if args.limit:
                ids = ids[::max(len(ids) // args.limit, 1)][:args.limit]
            queries = Path(tmp) / "queries.fa"
            queries.write_text("".join(f">{i}\n{db.residues(db.index_of(i))}\n" for i in ids))
        qs = read_sequences(queries)
        if len(qs) < 2:
            raise SystemExit("--queries needs at least two sequences")
        for threads in [int(t) for t in args.threads.split(",")]:
            k = 1 if threads == 1 else max(threads, MIN_WORKER_QUERIES)
            if len(qs) <= k:
                raise SystemExit(f"--queries needs more than {k} sequences at {threads} threads")
            first = Path(tmp) / f"first-{threads}.fa"
            first.write_text("".join(f">{q.id}\n{q.residues}\n" for q in qs[:k]))
            for method in ["blastp", *args.methods.split(",")]:
                hits = Path(tmp) / f"{method}-{threads}.tsv"
                wall1, cpu1 = _timed(_command(method, first, args, threads, hits))
                wall, cpu = _timed(_command(method, queries, args, threads, hits))
                n_hits = sum(1 for _ in open(hits))
                per_query = (wall - wall1) / (len(qs) - k)
                rows.append({"method": method, "threads": threads, "queries": len(qs),
                             "hits": n_hits, "seconds": round(wall, 2),
                             "cpu_seconds": round(cpu, 2),
                             "startup_seconds": round(max(wall1 - k * per_query, 0.0), 2),
                             "per_query_ms": round(1000 * per_query, 1)})
                print(rows[-1], file=sys.stderr)
    by = {(r["method"], r["threads"]): r for r in rows}
    for r in rows:
        b = by[("blastp", r["threads"])]
        r["per_query_vs_blastp"] = round(r["per_query_ms"] / max(b["per_query_ms"], 1e-9), 2)
        r["seconds_vs_blastp"] = round(r["seconds"] / max(b["seconds"], 1e-9), 2)
    with open(args.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print("| " + " | ".join(rows[0]) + " |")
    print("|" + "---|" * len(rows[0]))
    for r in rows:
        print("| " + " | ".join(str(v) for v in r.values()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
