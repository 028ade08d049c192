#!/bin/sh
# The experiment of docs/results-small.md: the `small` preset (configs/small.yaml), every method and
# ablation, on each environment, for several training seeds; then `multi2 report` over the seeds of
# each environment.
#
#   sh scripts/small_experiment.sh [OUT_DIR] [MULTI2]        (default runs/small-exp, build/multi2)
#
# Environment variables: SEEDS (default "22 23 24"), ENVS (default "textcraft alfworld scienceworld"),
# METHODS (default every method, multi2 first, then those that take the most of its stages: sft_only,
# offline_only and role_swap only evaluate, no_kl runs the online stage, no_anchor and rl_only offline
# RL onwards, flat and shared_adapter all but the base and data; with METHOD_JOBS > 1 each starts once
# multi2 has made its stages, so the cheap ones finish while a session lasts, and a folder kept
# part-way lacks the costly ones), THREADS (threads per run, default 1), JOBS ((environment, seed)
# folders side by side, default 2), METHOD_JOBS (within one folder, runs side by side: `multi2 demo
# --jobs`, default 1; keep JOBS x METHOD_JOBS x THREADS at most the cores), EXTRA (key=value
# overrides for every run), and per environment EXTRA_textcraft, EXTRA_alfworld, EXTRA_scienceworld. TextCraft and ALFWorld are evaluated
# in both System 2 action modes by default (eval.action_modes=[generate,score]); on ScienceWorld only
# multi2 and flat are also evaluated choosing among the admissible actions (`multi2 demo`'s
# METHOD:key=value overrides): its ~140 admissible actions a step (~280 candidates) make that mode
# many times the cost of generating, and the issue asks both modes of these two methods alone.
#
# Each (environment, seed) is one `multi2 demo` folder OUT_DIR/<env>/s<seed>; they run JOBS at a time,
# every environment of a seed before the next seed, so a partial experiment has whole seeds.
# Then, unless CURVES=0, the online stage's learning curves of the finished multi2 runs
# (scripts/online_curves.sh: a branch per run replaying its online stage with the evaluations on).
# KEEP=DIR (e.g. experiments/small): each (environment, seed) is also copied to DIR/<env>/s<seed>
# without weights (scripts/keep_records.sh), the records this repository keeps of the experiment,
# from which `multi2 report` makes the same tables: part-way while its demo runs, each time one more
# of its runs has finished (checked every KEEP_POLL seconds, default 20), so a session that ends
# without notice loses only the runs in flight; again when the demo fails (the runs that finished);
# whole when it finishes. An (environment, seed) kept there whole and absent from OUT_DIR (finished on
# another machine) is not run again, and the reports read its kept records; one kept part-way and
# absent from OUT_DIR is put back there and continued: its kept runs are read as
# finished (records_only.txt), the methods it lacks are computed, and the folder ends as the
# uninterrupted one, the same bits (tests/keep_records_test.sh).
# Interrupted? Run the same command again: a demo re-run continues its unfinished runs from their
# last checkpoints and reuses the finished ones (docs/pipeline.md), so the experiment resumes where
# it stopped, with the same bits (same seed and THREADS).
set -e
OUT=${1:-runs/small-exp}
BIN=${2:-build/multi2}
SEEDS=${SEEDS:-"22 23 24"}
ENVS=${ENVS:-"textcraft alfworld scienceworld"}
METHODS=${METHODS:-multi2,sft_only,offline_only,role_swap,no_kl,no_anchor,rl_only,flat,shared_adapter}
THREADS=${THREADS:-1}
JOBS=${JOBS:-2}
METHOD_JOBS=${METHOD_JOBS:-1}
EXTRA_textcraft=${EXTRA_textcraft-"eval.action_modes=[generate,score]"}
EXTRA_alfworld=${EXTRA_alfworld-"eval.action_modes=[generate,score]"}
EXTRA_scienceworld=${EXTRA_scienceworld-"multi2:eval.action_modes=[generate,score] flat:eval.action_modes=[generate,score]"}
mkdir -p "$OUT"
KEEP=${KEEP:-}
SCRIPTS=$(cd "$(dirname "$0")" && pwd)
export OUT BIN METHODS THREADS METHOD_JOBS KEEP SCRIPTS EXTRA EXTRA_textcraft EXTRA_alfworld EXTRA_scienceworld

tasks=""
for seed in $SEEDS; do for env in $ENVS; do tasks="$tasks $env:$seed"; done; done
# each (env, seed) runs in its own shell, JOBS at a time, in the order of $tasks
# shellcheck disable=SC2086
printf '%s\n' $tasks | xargs -P "$JOBS" -I{} sh -c '
  OUT="$0"; BIN="$1"; t="{}"; env=${t%%:*}; seed=${t#*:}
  if [ -n "$KEEP" ] && [ -f "$KEEP/$env/s$seed/results.json" ] && [ ! -d "$OUT/$env/s$seed" ]; then
    echo "$env seed $seed: kept in $KEEP/$env/s$seed already (finished on another machine): not run again"
    exit 0
  fi
  mkdir -p "$OUT/$env"
  if [ -n "$KEEP" ] && [ -d "$KEEP/$env/s$seed" ] && [ ! -e "$OUT/$env/s$seed" ]; then
    echo "$env seed $seed: continuing the runs kept part-way in $KEEP/$env/s$seed"
    cp -r "$KEEP/$env/s$seed" "$OUT/$env/s$seed"
  fi
  eval "per=\${EXTRA_$env}"
  # runs finished before the demo starts (kept, or from an earlier call): counted before it starts,
  # or a demo quick to finish one run would have it counted here and never kept while it runs
  finished() { find "$OUT/$env/s$seed" -name results.json -type f 2>/dev/null | wc -l; }
  kept=$(finished)
  "$BIN" demo --config configs/small.yaml --out "$OUT/$env/s$seed" --envs "$env" --methods "$METHODS" \
    --threads "$THREADS" --jobs "$METHOD_JOBS" run.seed="$seed" run.progress=off $EXTRA $per >> "$OUT/$env/s$seed.log" 2>&1 &
  demo=$!
  keep() { sh "$SCRIPTS/keep_records.sh" "$OUT/$env/s$seed" "$KEEP/$env/s$seed" "$BIN"; }
  if [ -n "$KEEP" ]; then
    # while the demo runs, keep the folder part-way each time one more of its runs finishes, so that a
    # session ending without notice loses only the runs in flight
    while kill -0 "$demo" 2>/dev/null; do
      sleep "${KEEP_POLL:-20}"
      now=$(finished)
      if [ "$now" != "$kept" ] && kill -0 "$demo" 2>/dev/null; then
        keep > /dev/null && echo "$env seed $seed: kept part-way, $now runs finished"
        kept=$now
      fi
    done
  fi
  if wait "$demo"; then echo "$env seed $seed: done"; else echo "$env seed $seed: failed (see $OUT/$env/s$seed.log)"; fi
  # whole when the demo finished; after a failure, the runs that finished before it
  [ -z "$KEEP" ] || keep' "$OUT" "$BIN"

for env in $ENVS; do
  folders=""
  for seed in $SEEDS; do
    if [ -f "$OUT/$env/s$seed/results.json" ]; then folders="$folders $OUT/$env/s$seed"
    elif [ -n "$KEEP" ] && [ -f "$KEEP/$env/s$seed/results.json" ]; then folders="$folders $KEEP/$env/s$seed"; fi
  done
  [ -n "$folders" ] || continue
  rm -rf "$OUT/$env/report"
  # shellcheck disable=SC2086
  "$BIN" report --out "$OUT/$env/report" $folders && echo "report: $OUT/$env/report/results.md"
done

# the curves are multi2's (the issue's), not every method's of METHODS
[ "${CURVES:-1}" = 0 ] || METHODS=multi2 sh "$SCRIPTS/online_curves.sh" "$OUT" "$BIN"
