#!/usr/bin/env bash
# Create the environment and run the main job: the alignment benchmark on the bundled
# HOMSTRAD dev families (results in ./homalign-benchmark/).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh
exec .venv/bin/homalign benchmark "$@"
