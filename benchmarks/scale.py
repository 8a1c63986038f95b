"""The learned search against growing databases: makedb time, disk, peak RSS, time per query.

    HOMALIGN_DATA=../shared/data python benchmarks/scale.py build --sizes 34000,300000,1000000 --out runs/scale
    python benchmarks/scale.py search --sizes 34000,300000 --out runs/scale --queries 20

``build`` writes ``OUT/N.fa`` (the real 31,487: ASTRAL trainval plus the 20,000 UniProt
sequences of Debian's mmseqs2-examples, then decoys: real sequences shuffled residue by residue
with a fixed seed, ids ``decoy_K``) and ``OUT/N.db`` (``homalign makedb``, timed in a child
process whose peak RSS is read from ``getrusage``). Both steps resume: an existing FASTA or
database is kept. ``build`` also runs NCBI ``makeblastdb`` (``OUT/N.blast``, timed into
``OUT/makeblastdb.csv``). ``search`` runs ``homalign search --method learned`` and
``blastp -outfmt 6`` (BLAST's defaults, E ≤ 10, the same thread count) on the first
``--queries`` dev queries, each a child process per size timed alike, ``--repeat`` times in
turn (learned, blastp, learned, ...; the medians are reported: a run's time depends on which
database files the page cache still holds), and writes ``OUT/scale.csv`` and ``OUT/scale.png``
(milliseconds per query against database size).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from measure import run_measured

from homalign.paths import shared_data_root

DATA = shared_data_root() / "scope"  # $HOMALIGN_DATA
UNIPROT = Path("/usr/share/doc/mmseqs2/example-data/DB.fasta.gz")
#: `homalign ARGS` in a child process of this interpreter
HOMALIGN = "import sys; from homalign.cli import main; sys.exit(main(sys.argv[1:]))"


def _real_records() -> list[tuple[str, str]]:
    from homalign.io import read_fasta

    out = [(r.id, r.sequence.upper()) for r in read_fasta(DATA / "astral-2.07-40.trainval.fa")]
    with gzip.open(UNIPROT, "rt") as fh:
        name, seq = None, []
        for line in fh:
            if line.startswith(">"):
                if name is not None:
                    out.append((name, "".join(seq)))
                name, seq = "up_" + line[1:].split()[0], []
            else:
                seq.append(line.strip())
        if name is not None:
            out.append((name, "".join(seq)))
    allowed = set("ACDEFGHIKLMNPQRSTVWYBZX")
    return [(i, "".join(c if c in allowed else "X" for c in s)) for i, s in out if s]


def build(sizes: list[int], out: Path, threads: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    real = _real_records()
    rng = np.random.default_rng(0)
    for n in sizes:
        fa = out / f"{n}.fa"
        if not fa.exists():
            tmp = fa.with_suffix(".fa.tmp")
            with open(tmp, "w") as fh:
                for i, s in real[:n]:
                    fh.write(f">{i}\n{s}\n")
                for k in range(max(0, n - len(real))):
                    i, s = real[int(rng.integers(len(real)))]
                    fh.write(f">decoy_{k}\n{''.join(rng.permutation(list(s)))}\n")
            tmp.replace(fa)
        blast = out / f"{n}.blast"
        if not blast.with_suffix(".blast.pin").exists():
            t0 = time.perf_counter()
            subprocess.run(["makeblastdb", "-in", str(fa), "-dbtype", "prot", "-out", str(blast)],
                           check=True, capture_output=True)
            disk = sum(p.stat().st_size for p in out.glob(f"{n}.blast.*")) / 2**20
            with open(out / "makeblastdb.csv", "a") as fh:
                fh.write(f"{n},{time.perf_counter() - t0:.1f},{disk:.0f}\n")
        db = out / f"{n}.db"
        if db.exists():
            continue
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", HOMALIGN, "makedb", str(fa), str(db), "-j",
                        str(threads), "--no-progress"], check=True)
        seconds = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        disk = sum(p.stat().st_size for p in db.iterdir()) / 2**20
        with open(out / "build.csv", "a") as fh:
            fh.write(f"{n},{seconds:.1f},{disk:.0f},{rss:.0f}\n")
        print(f"makedb {n}: {seconds:.1f} s, {disk:.0f} MiB, peak RSS so far {rss:.0f} MiB",
              file=sys.stderr)


def search(sizes: list[int], out: Path, n_queries: int, threads: int, repeat: int = 1) -> None:
    from homalign.io import read_fasta

    wanted = (DATA / "dev-queries.txt").read_text().split()[:n_queries]
    by_id = {r.id: r.sequence for r in read_fasta(DATA / "astral-2.07-40.trainval.fa")}
    qfa = out / "queries.fa"
    qfa.write_text("".join(f">{i}\n{by_id[i]}\n" for i in wanted))
    rows = []
    for n in sizes:
        db = out / f"{n}.db"
        runs, b_runs = [], []
        for _ in range(repeat):
            runs.append(run_measured([sys.executable, "-c", HOMALIGN, "search", str(qfa), str(db),
                                      "--method", "learned", "-j", str(threads), "--no-progress",
                                      "-o", str(out / f"{n}.hits.tsv")]))
            b_runs.append(run_measured(["blastp", "-query", str(qfa), "-db",
                                        str(out / f"{n}.blast"), "-outfmt", "6", "-evalue",
                                        "10", "-num_threads", str(threads),
                                        "-out", str(out / f"{n}.blastp.tsv")]))
        print(f"{n}: learned {[round(t, 2) for t, _ in runs]} s, blastp "
              f"{[round(t, 2) for t, _ in b_runs]} s", file=sys.stderr)
        seconds = float(np.median([t for t, _ in runs]))
        b_seconds = float(np.median([t for t, _ in b_runs]))
        disk = sum(p.stat().st_size for p in db.iterdir()) / 2**20
        rows.append({"sequences": n, "ms_per_query": round(1000 * seconds / len(wanted), 1),
                     "peak_rss_mib": round(max(r for _, r in runs)), "disk_mib": round(disk),
                     "blastp_ms_per_query": round(1000 * b_seconds / len(wanted), 1),
                     "blastp_peak_rss_mib": round(max(r for _, r in b_runs)),
                     "time_vs_blastp": round(seconds / b_seconds, 2)})
        print(rows[-1], file=sys.stderr)
    with open(out / "scale.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(rows, len(wanted), out / "scale.png")


def plot(rows: list[dict], n_queries: int, path: Path) -> None:
    """Milliseconds per query of homalign and blastp against database size (log-log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.loglog([float(r["sequences"]) for r in rows],
              [float(r["ms_per_query"]) for r in rows], "o-", color="C0",
              label="homalign search --method learned")
    ax.loglog([float(r["sequences"]) for r in rows],
              [float(r["blastp_ms_per_query"]) for r in rows], "s--", color="C1",
              label="blastp (NCBI BLAST+), same queries and threads")
    ax.set_xlabel("database sequences (SCOPe + UniProt sample + shuffled decoys)")
    ax.set_ylabel("ms per query")
    ax.set_title(f"Learned search time vs database size\n{n_queries} dev queries, 2 threads",
                 fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=("build", "search"))
    p.add_argument("--sizes", default="34000,300000,1000000")
    p.add_argument("--out", type=Path, default=Path("runs/scale"))
    p.add_argument("--queries", type=int, default=20)
    p.add_argument("-j", "--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1,
                   help="search: time each size's pair this many times, report the medians")
    args = p.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    if not UNIPROT.exists():
        print(f"missing {UNIPROT}: install Debian's mmseqs2-examples", file=sys.stderr)
        return 1
    if not (shutil.which("blastp") and shutil.which("makeblastdb")):
        print("missing blastp / makeblastdb: install Debian's ncbi-blast+", file=sys.stderr)
        return 1
    if args.what == "build":
        build(sizes, args.out, args.threads)
    else:
        search(sizes, args.out, args.queries, args.threads, args.repeat)
    shutil.rmtree(args.out / "__pycache__", ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
