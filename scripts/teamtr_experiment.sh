#!/bin/sh
# The TeamTR experiment of docs/results-teamtr.md: chains of n = 2 and 4 agents, TeamTR vs stale vs
# joint, seeds 1 and 2, each variant of one (n, seed) on the same pre-trained base (run.reuse_from).
#   sh scripts/teamtr_experiment.sh [OUT_DIR] [MULTI2]     (default runs/teamtr-exp, build/multi2)
# Then: python3 scripts/teamtr_table.py OUT_DIR
set -e
OUT=${1:-runs/teamtr-exp}
BIN=${2:-build/multi2}
STAGES=${STAGES:-10}
mkdir -p "$OUT"
for seed in 1 2; do
  for n in 2 4; do
    base="n${n}_s${seed}_teamtr"
    nice "$BIN" train configs/teamtr.yaml run.out_dir="$OUT" run.name="$base" run.seed=$seed \
      teamtr.agents=$n teamtr.stages=$STAGES run.progress=off > "$OUT/$base.log" 2>&1
    for v in stale joint; do
      nice "$BIN" train configs/teamtr.yaml run.out_dir="$OUT" run.name="n${n}_s${seed}_$v" run.seed=$seed \
        teamtr.agents=$n teamtr.stages=$STAGES teamtr.variant=$v run.progress=off \
        run.reuse_from="$OUT/$base" "run.reuse_stages=[pretrain]" > "$OUT/n${n}_s${seed}_$v.log" 2>&1
    done
  done
done
