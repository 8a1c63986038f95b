#!/usr/bin/env bash
# Rebuild BENCHMARKS.md: the headline table (benchmarks/summary.md) followed by every
# benchmarks/results/*.md section, each of which names the command that produced its numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
{
    cat benchmarks/summary.md
    for f in alignment learned learned_speed profile search dp train; do
        echo
        echo "---"
        echo
        sed 's/^# /## /; s/^## \(.\)/### \1/' "benchmarks/results/$f.md" | sed '1s/^### /## /'
    done
} > BENCHMARKS.md.tmp
mv BENCHMARKS.md.tmp BENCHMARKS.md
