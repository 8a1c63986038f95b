#!/usr/bin/env bash
# The alignment benchmark on the HOMSTRAD dev split: every sequence method and peer, then the
# SW/NW agreement check against Biopython. Results: $OUT/{summary,pairs}.csv, f1_vs_identity.png;
# copy the tables into benchmarks/results/alignment.md.
#
# Usage: benchmarks/alignment.sh [DATA_DIR] [OUT_DIR] [JOBS]
set -euo pipefail
DATA=${1:-${HOMALIGN_DATA:?set HOMALIGN_DATA to the shared data directory}/homstrad/dev}
OUT=${2:-/tmp/bench-align}
JOBS=${3:-2}
export OMP_WAIT_POLICY=PASSIVE
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
date -u +"start %Y-%m-%dT%H:%M:%SZ"
.venv/bin/homalign benchmark alignment --data "$DATA" \
    --methods sw,nw,glocal,blastp,phmmer,hhalign,mmseqs --out "$OUT" -j "$JOBS"
"$PY" benchmarks/agreement.py --data "$DATA"
date -u +"end %Y-%m-%dT%H:%M:%SZ"
