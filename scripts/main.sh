#!/usr/bin/env bash
# Create the environment and run the main job: the learned aligner against SW, NW and the
# installed peers (blastp, phmmer, hhalign, mmseqs) on the bundled HOMSTRAD dev families.
# Results: ./homalign-benchmark/ (summary.csv, pairs.csv, f1_vs_identity.png). Arguments, if
# given, replace the default sub-command, e.g. `bash scripts/main.sh alignment --methods learned,sw`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh
if [ "$#" -eq 0 ]; then
    set -- alignment -j 2
fi
exec .venv/bin/homalign benchmark "$@"
