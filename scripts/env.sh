#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment in .venv and install the peer aligners.
# Sourced by scripts/main.sh and scripts/test.sh; safe to run repeatedly.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3.11}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
# pyproject.toml asks for a torch range (a library must install beside others); the environment
# takes the CPU wheel of torch 2.13.0 on this machine's disk first, so that pip, finding the
# range satisfied, installs no other (a newer release here is a multi-GB CUDA build).
TORCH_CPU=${HOMALIGN_TORCH:-torch==2.13.0}
stamp=.venv/.homalign-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q "$TORCH_CPU"
    .venv/bin/python -m pip install -q -e '.[test,ray]'
    rm -f .venv/.homalign-kernels
    touch "$stamp"
fi
# numba's cache checks only each compiled function's own source file, yet compiled code holds
# what it calls or reads from other modules (dp/simd.py's IR blocks, alphabet.py's constants):
# when any package source changes, every cached kernel is dropped and compiled afresh
kernels=$(find src/homalign -name '*.py' -print0 | LC_ALL=C sort -z | xargs -0 cat \
          | sha256sum | cut -c1-16)
if [ "$(cat .venv/.homalign-kernels 2>/dev/null)" != "$kernels" ]; then
    find src tests \( -name '*.nbi' -o -name '*.nbc' \) -delete
    # compile the kernels of `align`, `makedb` and `search` (sw, learned, learned@3) once, on the
    # bundled examples: numba caches them beside the sources, so a new environment's first
    # command starts in about a second instead of compiling for 10-45 s (about a minute here)
    warm=$(mktemp -d)
    ex=$(.venv/bin/python -c 'from homalign.examples import directory; print(directory())')
    if ! { .venv/bin/homalign makedb -j 1 "$ex/db.fa" "$warm/db" \
           && .venv/bin/homalign search -j 1 --method learned "$ex/queries.fa" "$warm/db" \
           && .venv/bin/homalign search -j 1 --method sw "$ex/queries.fa" "$warm/db" \
           && .venv/bin/homalign search -j 1 --method learned --iterations 3 \
                  "$ex/queries.fa" "$warm/db" \
           && .venv/bin/homalign align "$ex/query.fa" "$ex/target.fa" \
           && .venv/bin/python -c 'import numpy as np; from homalign.alphabet import encode
from homalign.search.ungapped import ungapped_scores  # a database past the ungapped cut
q = encode("W" * 40); ungapped_scores(q, q, np.array([0, 40]), np.array([0]))'
         } >"$warm/log" 2>&1; then
        echo "note: the kernel warm-up failed (first commands will compile instead):" >&2
        tail -n 5 "$warm/log" >&2
    fi
    rm -rf "$warm"
    echo "$kernels" > .venv/.homalign-kernels
fi
# byte-compile the package (only what changed): under PYTHONDONTWRITEBYTECODE every homalign
# process would otherwise compile its ~100 modules from source, ~0.1 s of each start
.venv/bin/python -m compileall -q src/homalign >/dev/null
# The peers (BLAST+, HMMER, HH-suite, MMseqs2) are Debian packages; the benchmarks and the
# peer-adapter tests run them. mmseqs2-examples' 20,000 UniProt sequences are the default
# homologue database of `learned-homologs`. Install them when missing and we are allowed to.
if ! command -v blastp >/dev/null || ! command -v phmmer >/dev/null \
    || ! command -v hhalign >/dev/null || ! command -v mmseqs >/dev/null \
    || [ ! -f /usr/share/doc/mmseqs2/example-data/DB.fasta.gz ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq ncbi-blast+ hmmer hhsuite mmseqs2 mmseqs2-examples >/dev/null
    else
        echo "note: peers missing and apt-get unavailable; install ncbi-blast+ hmmer hhsuite mmseqs2 mmseqs2-examples" >&2
    fi
fi
export OMP_WAIT_POLICY=PASSIVE
