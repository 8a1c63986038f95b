#!/usr/bin/env bash
# Which frozen aligner the learned search's ranking adapter should sit on: the recipe's adapter
# stage (configs/homad4.toml) on the given aligner export, its probability head and null law
# fitted as scripts/train_weights.sh does, then the search's held-out sensitivity.
#
#   HOMALIGN_DATA=../shared/data bash benchmarks/research/ranking_encoder.sh NAME ALIGNER_STEM
#   e.g. ... ranking_encoder.sh soup runs/recipe/soup/average
#
# Writes runs/ranking-encoder/NAME/ (the adapter run, learned_search.{json,safetensors}, a makedb
# directory of trainval with those weights) and prints family / superfamily sensitivity of
# `search_depth_tune.py --settings sw:-:80` (the search's defaults) on the 563 held-out
# train-fold queries (never dev). One thread, deterministic: ~6 minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
NAME="$1"; STEM="$2"
OUT="runs/ranking-encoder/$NAME"
PY="${PYTHON:-.venv/bin/python}"
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1
mkdir -p "$OUT"
"$PY" -c "import sys; from homalign.cli import main; sys.exit(main())" train \
    --config configs/homad4.toml --logdir "$OUT/adapter" -j 1 \
    --set "warm_start.source=\"$STEM.safetensors\""
cp "$OUT/adapter/export/last.json" "$OUT/learned_search.json"
cp "$OUT/adapter/export/last.safetensors" "$OUT/learned_search.safetensors"
"$PY" -m homalign.model.homology --weights "$OUT/learned_search" --pairs 300
"$PY" -m homalign.model.homology --weights "$OUT/learned_search" --null-pairs 3000 --no-head
export HOMALIGN_WEIGHTS="$OUT"
"$PY" -c "import sys; from homalign.cli import main; sys.exit(main())" makedb --force -j 1 \
    "$HOMALIGN_DATA/scope/astral-2.07-40.trainval.fa" "$OUT/trainval.db"
"$PY" benchmarks/research/search_depth_tune.py --db "$OUT/trainval.db" --settings sw:-:80 \
    --out "$OUT/sensitivity.csv"
