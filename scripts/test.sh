#!/usr/bin/env bash
# Create the environment, lint (ruff, the import contracts) and run the whole test suite.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh
# the shared reference data beside the checkout, unless $HOMALIGN_DATA names it already; the
# tests of the real data sets need it, so without it stop here and say so
if [ -z "${HOMALIGN_DATA:-}" ] && [ -d ../shared/data ]; then
    HOMALIGN_DATA="$(cd ../shared/data && pwd)"
    export HOMALIGN_DATA
fi
if [ -z "${HOMALIGN_DATA:-}" ] || [ ! -d "$HOMALIGN_DATA/scope" ]; then
    echo "scripts/test.sh: no shared reference data: put the checkout beside shared/ (../shared/data)" \
         "or set HOMALIGN_DATA to that folder" >&2
    exit 2
fi
.venv/bin/ruff check src tests benchmarks
# the import contracts in pyproject.toml: layers point down, train independent, private modules
.venv/bin/lint-imports --no-logo
exec .venv/bin/python -m pytest -q "$@"
