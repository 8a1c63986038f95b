#!/usr/bin/env bash
# Create the environment, lint (ruff, the import contracts) and run the whole test suite.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh
# the shared reference data beside the checkout, unless $HOMALIGN_DATA names it already
if [ -z "${HOMALIGN_DATA:-}" ] && [ -d ../shared/data ]; then
    HOMALIGN_DATA="$(cd ../shared/data && pwd)"
    export HOMALIGN_DATA
fi
.venv/bin/ruff check src tests benchmarks
# the import contracts in pyproject.toml: layers point down, train independent, private modules
.venv/bin/lint-imports --no-logo
exec .venv/bin/python -m pytest -q "$@"
