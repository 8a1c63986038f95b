#!/usr/bin/env bash
# Train every shipped weight set (learned, learned_search, learned_template) with `homalign train`,
# stage after stage, and write them with their records to OUT (default runs/recipe/weights).
#
#   scripts/train_weights.sh [--tiny] [--runs DIR] [--out DIR] [--stage NAME]
#
# --stage NAME runs that one stage only (its source must exist), so independent stages (mgs3; the
# more2 chain; tmpl1 once more2 is done) can run beside learned's chain on another core; a later
# plain run skips them and writes the records.
# Resumable: a stage whose product (export) exists is skipped; a stage that was stopped resumes
# from its newest checkpoint (the runtime's), so rerunning the same command continues the recipe.
# Each stage's command, start, end and seconds go to RUNS/<stage>/stage.json and RUNS/commands.log;
# OUT/<name>.json gets a "training" record (commands, data, steps, seconds) of the stages it
# came from. Model selection uses held-out TRAIN families/folds only (configs/*.toml); dev is for
# reporting once, afterwards (benchmarks/learned.py).
#
# The full recipe is about 4 CPU hours on one thread (docs/learned.md). --tiny runs the same
# stages, configs and code on a few bundled families for a few steps (minutes; a smoke test, its
# weights are worthless). After a full run: python benchmarks/learned_heldout.py OUT/learned must
# be at least the shipped "heldout" numbers before OUT/* is copied into src/homalign/weights/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

TINY=0
RUNS=""
ONLY=""
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --tiny) TINY=1 ;;
        --runs) RUNS="$2"; shift ;;
        --out) OUT="$2"; shift ;;
        --stage) ONLY="$2"; shift ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
if [ "${HOMALIGN_RECIPE_TINY:-0}" = 1 ]; then TINY=1; fi
if [ "$TINY" = 1 ]; then RUNS="${RUNS:-runs/recipe-tiny}"; else RUNS="${RUNS:-runs/recipe}"; fi
OUT="${OUT:-$RUNS/weights}"
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3
HOMALIGN=("$PY" -c "import sys; from homalign.cli import main; sys.exit(main())")
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1
mkdir -p "$RUNS" "$OUT"

DATA="${HOMALIGN_DATA:-}"
SET=()           # --set overrides of every alignment stage (tiny mode)
HOMSET=()        # and of the homology-adapter stage
HOMOLOGY_FIT=(--pairs 300)
NULL_FIT=(--null-pairs 3000)
CHANCE_FIT=(--chance-pairs 24000)
if [ "$TINY" = 1 ]; then
    FAMILIES="$("$PY" -c 'from homalign.evaluate import bundled_homstrad_dev; print(bundled_homstrad_dev())')"
    SET=(--set "model_args.homstrad=\"$FAMILIES\"" --set 'model_args.tmalign=""'
         --set model_args.window=64 --set model_args.max_pairs_per_family=2
         --set model_args.val_fraction=0.3 --set model_args.eval_pairs=3
         --set model_args.config.dim=8 --set model_args.max_cells=8192 --set train.steps=4
         --set train.save_model_steps=2 --set train.log_every_steps=0
         --set eval.throttle_secs=0.05)
    if [ -z "$DATA" ] || [ ! -f "$DATA/scope/astral-2.07-40.trainval.fa" ]; then
        echo "--tiny needs \$HOMALIGN_DATA/scope/astral-2.07-40.trainval.fa (the homology stage)" >&2
        exit 2
    fi
    # two members of every 40th superfamily that has two (many folds, few sequences)
    "$PY" - "$DATA/scope/astral-2.07-40.trainval.fa" "$RUNS/scop-tiny.fa" <<'PYEOF'
import sys
from homalign.sequence import read_sequences
by_sf = {}
for s in read_sequences(sys.argv[1]):
    by_sf.setdefault(".".join(s.description.split()[0].split(".")[:3]), []).append(s)
with open(sys.argv[2], "w") as out:
    for sf in sorted(k for k, v in by_sf.items() if len(v) >= 2)[::40]:
        for s in by_sf[sf][:2]:
            out.write(f">{s.id} {s.description}\n{s.residues}\n")
PYEOF
    HOMSET=(--set "model_args.scop=\"$RUNS/scop-tiny.fa\"" --set model_args.val_fraction=0.3
            --set model_args.homology_batch=4 --set model_args.homology_eval_batches=2
            --set model_args.config.dim=8 --set train.steps=4 --set train.save_model_steps=2
            --set train.log_every_steps=0 --set eval.throttle_secs=0.05)
    HOMOLOGY_FIT=(--pairs 10 --fasta "$RUNS/scop-tiny.fa")
    NULL_FIT=(--null-pairs 40 --fasta "$RUNS/scop-tiny.fa")
    CHANCE_FIT=(--chance-pairs 40 --fasta "$RUNS/scop-tiny.fa")
fi

# the arguments as one shell line: plain words as they are, anything else in single quotes
shell_words() {
    local out="" a
    for a in "$@"; do
        if [[ "$a" =~ ^[A-Za-z0-9_./=:,+-]+$ ]]; then out+="$a "
        else out+="'${a//\'/\'\\\'\'}' "; fi
    done
    printf '%s' "${out% }"
}

log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$RUNS/commands.log"; }

# stage NAME CONFIG PRODUCT [SOURCE_STEM [init]] -- homalign train one stage unless its product
# exists; the stage starts from SOURCE_STEM by [warm_start] (tensors copied), or with "init" by
# model_args.init (the source's config and weights, as the stages of `learned` start)
stage() {
    local name="$1" config="$2" product="$3" warm="${4:-}" how="${5:-warm}"
    local logdir="$RUNS/$name"
    if [ -n "$ONLY" ] && [ "$name" != "$ONLY" ]; then return 0; fi
    if [ -n "$warm" ] && [ ! -f "$warm.safetensors" ]; then
        log "$name needs $warm.safetensors (run its source stage first)"; exit 1
    fi
    if [ -f "$logdir/export/$product.safetensors" ] && [ -f "$logdir/export/$product.json" ]; then
        log "skip $name: $logdir/export/$product exists"
        return 0
    fi
    local cmd=("${HOMALIGN[@]}" train --config "configs/$config.toml" --logdir "$logdir" -j 1)
    if [ -n "$warm" ] && [ "$how" = init ]; then cmd+=(--set "model_args.init=\"$warm\"")
    elif [ -n "$warm" ]; then cmd+=(--set "warm_start.source=\"$warm.safetensors\""); fi
    if [ "$config" = homad4 ]; then cmd+=("${HOMSET[@]}"); else cmd+=("${SET[@]}"); fi
    if [ "$TINY" = 1 ] && grep -q '^\[average\]' "configs/$config.toml"; then
        if [ "$product" = last ]; then cmd+=(--set 'average.steps=[4]')
        else cmd+=(--set 'average.steps=[2, 4]'); fi
    fi
    local shown
    shown="homalign $(shell_words "${cmd[@]:3}")"   # the exact command, as a shell reads it
    log "run $name: $shown"
    local start end
    start=$(date +%s)
    mkdir -p "$logdir"
    "${cmd[@]}" 2>&1 | tee -a "$logdir/train.log"
    end=$(date +%s)
    [ -f "$logdir/export/$product.safetensors" ] || { log "$name made no export/$product"; exit 1; }
    "$PY" - "$logdir/stage.json" "$name" "$config" "$shown" "$start" "$end" "$product" <<'EOF'
import json, sys
path, name, config, command, start, end, product = sys.argv[1:]
try:
    old = json.load(open(path))
except (OSError, ValueError):
    old = {}
seconds = old.get("seconds", 0) + int(end) - int(start)  # summed over resumed sessions
json.dump({"stage": name, "config": f"configs/{config}.toml", "command": command,
           "product": product, "seconds": seconds, "last_end_utc": int(end)},
          open(path, "w"), indent=1)
EOF
}

# learned's chain: the batch order and schedule that made it (configs/learned-*.toml, mgs3.toml)
stage learned-more2 learned-more2  last
stage learned-mg2   learned-mgswa1 average "$RUNS/learned-more2/export/last" init
stage learned-mg4   learned-mgswa2 average "$RUNS/learned-mg2/export/average" init
stage learned-tw2   learned-tw2    average "$RUNS/learned-mg4/export/average" init
stage mgs3          mgs3           average
# the chain of learned_search and learned_template (docs/learned.md)
stage more2  more2  best
stage mg2    mgswa1 average "$RUNS/more2/export/best"
stage mg4    mgswa2 average "$RUNS/mg2/export/average"
stage tw2    tw2    average "$RUNS/mg4/export/average"
stage tmpl1  tmpl1  last    "$RUNS/more2/export/best"
# the ranking encoder: a weight soup of the chain's fine-tunes (one trajectory, so one basin)
if { [ -z "$ONLY" ] || [ "$ONLY" = homad4 ]; } && [ ! -f "$RUNS/soup/average.safetensors" ] \
        && [ -f "$RUNS/tw2/export/average.safetensors" ]; then
    mkdir -p "$RUNS/soup"
    log "soup: python -m homalign.model.average $RUNS/soup/average $RUNS/mg2/export/average $RUNS/mg4/export/average $RUNS/tw2/export/average"
    "$PY" -m homalign.model.average "$RUNS/soup/average" "$RUNS/mg2/export/average" \
        "$RUNS/mg4/export/average" "$RUNS/tw2/export/average"
fi
stage homad4 homad4 last    "$RUNS/soup/average"
if [ -n "$ONLY" ]; then
    case "$ONLY" in learned-more2|learned-mg2|learned-mg4|learned-tw2|mgs3) exit 0 ;; esac
    case "$ONLY" in more2|mg2|mg4|tw2|tmpl1|homad4) exit 0 ;; esac
    echo "unknown stage: $ONLY (learned-more2 learned-mg2 learned-mg4 learned-tw2 mgs3" \
         "more2 mg2 mg4 tw2 tmpl1 homad4)" >&2; exit 2
fi

# learned = the ensemble of learned-tw2 and mgs3 (mean scores and gap costs, one DP)
if [ ! -f "$OUT/learned.safetensors" ]; then
    log "join: python -m homalign.model.ensemble $OUT/learned $RUNS/learned-tw2/export/average $RUNS/mgs3/export/average"
    "$PY" -m homalign.model.ensemble "$OUT/learned" "$RUNS/learned-tw2/export/average" \
        "$RUNS/mgs3/export/average"
fi
# learned_template = tmpl1's final step
if [ ! -f "$OUT/learned_template.safetensors" ]; then
    log "copy $RUNS/tmpl1/export/last -> $OUT/learned_template"
    cp "$RUNS/tmpl1/export/last.json" "$OUT/learned_template.json"
    cp "$RUNS/tmpl1/export/last.safetensors" "$OUT/learned_template.safetensors"
fi
# learned_search = the soup + the homad4 adapter (export/last of homad4 holds both), then the
# null laws (the ranking key's on domain pairs, the score's over all lengths on chains of
# domains) and the probability head, fitted on SCOPe train folds
if [ ! -f "$OUT/learned_search.safetensors" ] || ! grep -q '"chance"' "$OUT/learned_search.json"; then
    cp "$RUNS/homad4/export/last.json" "$OUT/learned_search.json"
    cp "$RUNS/homad4/export/last.safetensors" "$OUT/learned_search.safetensors"
    log "fit: python -m homalign.model.homology --weights $OUT/learned_search ${NULL_FIT[*]} --no-head"
    "$PY" -m homalign.model.homology --weights "$OUT/learned_search" "${NULL_FIT[@]}" --no-head
    log "fit: python -m homalign.model.homology --weights $OUT/learned_search ${CHANCE_FIT[*]} ${HOMOLOGY_FIT[*]}"
    "$PY" -m homalign.model.homology --weights "$OUT/learned_search" "${CHANCE_FIT[@]}" \
        "${HOMOLOGY_FIT[@]}"
fi

# the records: every OUT/<name>.json gets "training" = its stages' commands, data, steps, time
"$PY" - "$RUNS" "$OUT" "$TINY" <<'EOF'
import json, sys, time
from pathlib import Path

runs, out, tiny = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "1"
sources = {"learned": ["learned-more2", "learned-mg2", "learned-mg4", "learned-tw2", "mgs3"],
           "learned_search": ["more2", "mg2", "mg4", "tw2", "homad4"],
           "learned_template": ["more2", "tmpl1"]}
steps_done = {
    "learned": ["python -m homalign.model.ensemble OUT/learned RUNS/learned-tw2/export/average "
                "RUNS/mgs3/export/average"],
    "learned_search": ["python -m homalign.model.average RUNS/soup/average "
                       "RUNS/mg2/export/average RUNS/mg4/export/average RUNS/tw2/export/average "
                       "(before homad4: its warm start)",
                       "python -m homalign.model.homology --weights OUT/learned_search "
                       "--null-pairs 3000 --no-head", "python -m homalign.model.homology "
                       "--weights OUT/learned_search --chance-pairs 24000 --pairs 300"],
    "learned_template": ["cp RUNS/tmpl1/export/last.* OUT/learned_template.*"]}
for name, stages in sources.items():
    meta_path = out / f"{name}.json"
    meta = json.loads(meta_path.read_text())
    records = []
    for stage in stages:
        rec = json.loads((runs / stage / "stage.json").read_text())
        product = json.loads((runs / stage / "export" / f"{rec['product']}.json").read_text())
        rec["global_step"] = product.get("step")
        rec["averaged_steps"] = product.get("averaged_steps")
        rec["heldout_eval"] = product.get("eval")
        records.append(rec)
    meta["training"] = {
        "recipe": "scripts/train_weights.sh" + (" --tiny" if tiny else ""),
        "stages": records,
        "then": steps_done[name],
        "data": ("a few bundled example families, 4 steps a stage (--tiny: a smoke test)" if tiny
                 else "HOMSTRAD train <= 400 pairs/family + TM-align train pairs (8% of "
                      "families/folds held out for selection); SCOPe 2.07-40 train folds minus "
                      "the dev queries for the homology adapter, head and null law"),
        "threads": "OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1, -j 1",
        "seconds": sum(r["seconds"] for r in records),
        "written_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    print(f"{meta_path}: {len(records)} stages, {meta['training']['seconds']} s")
EOF
log "done: $OUT/{learned,learned_search,learned_template}.{json,safetensors}"
if [ "$TINY" = 0 ]; then
    log "next: python benchmarks/learned_heldout.py $OUT/learned  (must be >= src/homalign/weights/learned.json heldout), then HOMALIGN_WEIGHTS=$OUT to try them"
fi
