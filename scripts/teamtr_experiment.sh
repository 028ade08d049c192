#!/bin/sh
# The TeamTR experiment of docs/results-teamtr.md, resumable: run it again after an interruption and
# it skips the finished runs and continues the others from their last checkpoint (--resume).
#   sh scripts/teamtr_experiment.sh [OUT_DIR] [MULTI2]      (default runs/teamtr-exp, build/multi2)
# Environment: SEEDS (default "1 2"), SIZES (chain sizes, default "8 4 2"), JOBS (runs at once,
# default 10; a job waiting for the run it starts from holds its place), PARTS (default "grid single
# region hier").
#  grid    per size n and seed: TeamTR (configs/teamtr.yaml with teamtr.agents=n, its own pre-training),
#          then stale, stale_happo, joint and no_tr on that run's pre-trained base (run.reuse_from);
#  single  per seed: one agent alone (teamtr.agents=1, its own pre-training);
#  region  per seed, n = 2 and 4: TeamTR and no_tr with a 4x larger step (teamtr.lr=4e-3), where the
#          trust region acts, on the grid's bases;
# Each variant starts as soon as the run it starts from has finished the stages it takes (its
# pre-training), so the runs of one team size go side by side.
#  hier    per seed: multi2 on TextCraft (configs/demo.yaml), then the hierarchy as a TeamTR team from
#          its adapters (configs/teamtr-hier.yaml), System 1 trained and frozen.
# Every run: one thread, nice -n 10; its console goes to OUT/NAME.log, its CPU and wall seconds to
# OUT/NAME.time ("user system wall", a line per attempt). At the end: multi2 report --teamtr into
# OUT/report (grid + single), OUT/report-region and OUT/report-hier.
set -e
OUT=${1:-runs/teamtr-exp}
BIN=${2:-build/multi2}
SEEDS=${SEEDS:-1 2}
SIZES=${SIZES:-8 4 2}
JOBS=${JOBS:-10}
PARTS=${PARTS:-grid single region hier}
mkdir -p "$OUT"
HIER_REUSE="run.reuse_stages=[pretrain, data, sys1_sft, sys2_warmup, sys2_offline]"

# run NAME CONFIG [key=value ...]: skipped when done, continued when started, else started.
run() {
  name=$1; cfg=$2; shift 2
  [ -f "$OUT/$name.done" ] && return 0
  if [ -f "$OUT/$name/config.yaml" ]; then
    set -- --resume "$OUT/$name"
  else
    set -- "$cfg" run.out_dir="$OUT" run.name="$name" run.threads=1 run.progress=off "$@"
  fi
  if /usr/bin/time -a -f "%U %S %e" -o "$OUT/$name.time" nice -n 10 "$BIN" train "$@" >> "$OUT/$name.log" 2>&1; then
    touch "$OUT/$name.done"
  else
    echo "teamtr_experiment: $name failed (see $OUT/$name.log)" >&2
    return 1
  fi
}

# Wait until run $1 has finished its stage $2 (stages.json names it among its "ends").
wait_stage() {
  until [ -f "$OUT/$1.done" ] || grep -q "\"$2\":" "$OUT/$1/stages.json" 2>/dev/null; do
    [ -f "$OUT/$1.failed" ] && { echo "teamtr_experiment: $1 failed, so its dependants do not run" >&2; return 1; }
    sleep 30
  done
}

# One job: a run, after the run it starts from has finished what it takes from it.
job() {
  kind=$1; a=$2; seed=$3; v=$4
  base="n${a}_s${seed}_teamtr"
  case $kind in
  base) run "$base" configs/teamtr.yaml run.seed="$seed" teamtr.agents="$a" || { touch "$OUT/$base.failed"; return 1; } ;;
  variant)   # on the base's pre-trained model: the variants of one (n, seed) start alike
    wait_stage "$base" pretrain
    run "n${a}_s${seed}_$v" configs/teamtr.yaml run.seed="$seed" teamtr.agents="$a" teamtr.variant="$v" \
      run.reuse_from="$OUT/$base" "run.reuse_stages=[pretrain]" ;;
  region)
    wait_stage "$base" pretrain
    run "lr4e-3_n${a}_s${seed}_$v" configs/teamtr.yaml run.seed="$seed" teamtr.agents="$a" teamtr.variant="$v" \
      teamtr.lr=4e-3 run.reuse_from="$OUT/$base" "run.reuse_stages=[pretrain]" ;;
  single)   # one agent writes every step in one message: room for four (a chain's 24 tokens cut it)
    run "n1_s${seed}_single" configs/teamtr.yaml run.seed="$seed" teamtr.agents=1 teamtr.max_new_tokens=48 ;;
  multi2)   # every ID episode in its evaluation, as the hierarchy's
    run "tc_s${seed}_multi2" configs/demo.yaml run.seed="$seed" eval.episodes=41 || { touch "$OUT/tc_s${seed}_multi2.failed"; return 1; } ;;
  hier)
    wait_stage "tc_s${seed}_multi2" sys2_offline
    run "tc_s${seed}_hier_$v" configs/teamtr-hier.yaml run.seed="$seed" teamtr.hier.sys1="$v" \
      run.reuse_from="$OUT/tc_s${seed}_multi2" "$HIER_REUSE" ;;
  esac
}

if [ "$3" = "--job" ]; then shift 3; job "$@"; exit $?; fi   # one job (xargs calls back)

# The jobs, the runs others start from first, then the longest.
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
{
  for n in $SIZES; do
    if has grid || { has region && { [ "$n" = 2 ] || [ "$n" = 4 ]; }; }; then
      for seed in $SEEDS; do echo "base $n $seed -"; done
    fi
  done
  has hier && for seed in $SEEDS; do echo "multi2 0 $seed -"; done
  for n in $SIZES; do
    has grid && for v in stale stale_happo joint no_tr; do for seed in $SEEDS; do echo "variant $n $seed $v"; done; done
    if [ "$n" = 8 ] && has hier; then for v in train frozen; do for seed in $SEEDS; do echo "hier 0 $seed $v"; done; done; fi
    if has region && { [ "$n" = 2 ] || [ "$n" = 4 ]; }; then
      for v in teamtr no_tr; do for seed in $SEEDS; do echo "region $n $seed $v"; done; done
    fi
  done
  case " $SIZES " in *" 8 "*) ;; *) has hier && for v in train frozen; do for seed in $SEEDS; do echo "hier 0 $seed $v"; done; done ;; esac
  has single && for seed in $SEEDS; do echo "single 1 $seed -"; done
} > "$OUT/.jobs.$$"   # one list per invocation: two invocations (other SEEDS) may run side by side
xargs -P "$JOBS" -L 1 sh "$0" "$OUT" "$BIN" --job < "$OUT/.jobs.$$" || true
rm -f "$OUT/.jobs.$$"

# The finished run folders among the arguments.
done_dirs() { for d in "$@"; do [ -d "$d" ] && [ -f "$d.done" ] && echo "$d"; done; }
report() {   # report NAME FOLDER...
  name=$1; shift
  [ $# -gt 0 ] && "$BIN" report --teamtr --out "$OUT/$name" "$@" || true
}
report report $(done_dirs "$OUT"/n*_s*_*)
report report-region $(done_dirs "$OUT"/lr4e-3_*)
report report-hier $(done_dirs "$OUT"/tc_s*)
