#!/bin/sh
# The online stage's learning curves of the `small` experiment (docs/results-small.md, the issue's
# "online learning curves on ID and OOD"), from its finished runs, without training anything anew.
#
#   sh scripts/online_curves.sh [OUT_DIR] [MULTI2]        (default runs/small-exp, build/multi2)
#
# For every finished run OUT_DIR/<env>/s<seed>/<env>/<method> of scripts/small_experiment.sh, a branch
# (`multi2 train --resume RUN --branch NEW sys2.online.eval_every=EVERY ...`) reuses its stages up to
# the offline one and plays the online stage again, evaluating greedily before the first epoch and
# after every EVERY epochs on the first EPISODES ID and OOD episodes of the evaluation order. The
# evaluations draw from no training stream (tests/test_pipe_train.c online_learning_curves), so the
# branch trains the same adapter: its eval/ records are compared byte for byte with the run's, and a
# difference is reported. Then `multi2 report` over the seeds of each (env, method) draws the curves
# (OUT_DIR/<env>/curves/<method>/report/plots/online.svg).
#
# MULTI2 must be the binary that made the runs (same bits). Environment variables: SEEDS (default
# "22 23 24"), ENVS (default "textcraft alfworld scienceworld"), METHODS (default multi2; only
# methods with an online stage; by spaces or commas), EVERY (default 4), EPISODES (default 20), JOBS (branches side by side,
# default 1). Re-running continues unfinished branches and skips finished ones.
set -e
OUT=${1:-runs/small-exp}
BIN=${2:-build/multi2}
SEEDS=${SEEDS:-"22 23 24"}
ENVS=${ENVS:-"textcraft alfworld scienceworld"}
# a list by spaces or commas (the demo's METHODS is a comma list: both read the same)
METHODS=$(printf '%s' "${METHODS:-multi2}" | tr ',' ' ')
EVERY=${EVERY:-4}
EPISODES=${EPISODES:-20}
JOBS=${JOBS:-1}
export OUT BIN EVERY EPISODES

tasks=""
for seed in $SEEDS; do for env in $ENVS; do for m in $METHODS; do
  [ -f "$OUT/$env/s$seed/$env/$m/results.json" ] && tasks="$tasks $env:$seed:$m"
done; done; done
[ -n "$tasks" ] || { echo "online_curves: no finished run under $OUT" >&2; exit 1; }

# shellcheck disable=SC2086
printf '%s\n' $tasks | xargs -P "$JOBS" -I{} sh -c '
  t="{}"; env=${t%%:*}; rest=${t#*:}; seed=${rest%%:*}; m=${rest#*:}
  run="$OUT/$env/s$seed/$env/$m"; new="$OUT/$env/curves/$m/s$seed"
  mkdir -p "$OUT/$env/curves/$m"
  if [ -f "$new/stages.json" ]; then set -- "$BIN" train --resume "$new"
  else set -- "$BIN" train --resume "$run" --branch "$new" sys2.online.eval_every="$EVERY" \
         sys2.online.eval_episodes="$EPISODES"; fi
  if [ -f "$new/results.json" ] || "$@" run.progress=off >> "$new.log" 2>&1; then
    same=yes
    for f in "$run"/eval/*.jsonl; do cmp -s "$f" "$new/eval/${f##*/}" || same=no; done
    echo "$env $m seed $seed: curves done; evaluation records the same as the run'"'"'s: $same"
  else
    echo "$env $m seed $seed: failed (see $new.log)"
  fi'

for env in $ENVS; do for m in $METHODS; do
  folders=""
  for seed in $SEEDS; do
    [ -f "$OUT/$env/curves/$m/s$seed/results.json" ] && folders="$folders $OUT/$env/curves/$m/s$seed"
  done
  [ -n "$folders" ] || continue
  rm -rf "$OUT/$env/curves/$m/report"
  # shellcheck disable=SC2086
  "$BIN" report --out "$OUT/$env/curves/$m/report" --title "$env $m: online learning curves" $folders &&
    echo "report: $OUT/$env/curves/$m/report/results.md"
done; done
