#!/bin/sh
# The experiment of docs/results-small.md: the `small` preset (configs/small.yaml), every method and
# ablation, on each environment, for several training seeds; then `multi2 report` over the seeds.
#
#   sh scripts/small_experiment.sh [OUT_DIR] [MULTI2]        (default runs/small-exp, build/multi2)
#
# Environment variables: SEEDS (default "22 23 24"), ENVS (default textcraft,alfworld,scienceworld),
# METHODS (default all), THREADS (threads per run, default 1), JOBS (seeds run side by side, default 2;
# keep JOBS x THREADS at most the cores), EXTRA (more key=value overrides for every run).
#
# Each seed is one `multi2 demo` folder OUT_DIR/s<seed> holding every environment (one invocation, so
# its results.json has every environment's rows); the seeds run side by side. Interrupted? Run the same command
# again: a demo re-run continues its unfinished runs from their last checkpoints and reuses the
# finished ones (docs/pipeline.md), so the experiment resumes where it stopped, with the same bits.
set -e
OUT=${1:-runs/small-exp}
BIN=${2:-build/multi2}
SEEDS=${SEEDS:-"22 23 24"}
ENVS=${ENVS:-textcraft,alfworld,scienceworld}
METHODS=${METHODS:-all}
THREADS=${THREADS:-1}
JOBS=${JOBS:-2}
mkdir -p "$OUT"

one_seed() {
  seed=$1
  # shellcheck disable=SC2086
  "$BIN" demo --config configs/small.yaml --out "$OUT/s$seed" --envs "$ENVS" --methods "$METHODS" \
    --threads "$THREADS" run.seed="$seed" run.progress=off $EXTRA >> "$OUT/s$seed.log" 2>&1 ||
    { echo "seed $seed: failed (see $OUT/s$seed.log)"; return 1; }
  echo "seed $seed: done"
}

running=0
for seed in $SEEDS; do
  one_seed "$seed" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then wait; running=0; fi
done
wait

folders=""
for seed in $SEEDS; do folders="$folders $OUT/s$seed"; done
rm -rf "$OUT/report"
# shellcheck disable=SC2086
"$BIN" report --out "$OUT/report" $folders
echo "report: $OUT/report/results.md"
