#!/usr/bin/env bash
# Create the environment and run the whole test suite.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh
.venv/bin/ruff check src tests benchmarks
exec .venv/bin/python -m pytest -q "$@"
