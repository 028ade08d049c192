#!/bin/sh
# The TeamTR experiment of docs/results-teamtr.md, resumable: run it again after an interruption and
# it skips the finished runs and continues the others from their last checkpoint (--resume).
#   sh scripts/teamtr_experiment.sh [OUT_DIR] [MULTI2]      (default runs/teamtr-exp, build/multi2)
# Environment: SEEDS (default "1 2"), SIZES (chain sizes, default "8 4 2"), JOBS (runs at once,
# default 3), PARTS (default "grid single region hier").
#  grid    per size n and seed: TeamTR (configs/teamtr.yaml with teamtr.agents=n, its own pre-training),
#          then stale, stale_happo, joint and no_tr on that run's pre-trained base (run.reuse_from);
#  single  per seed: one agent alone (teamtr.agents=1, its own pre-training);
#  region  per seed, n = 2 and 4: TeamTR and no_tr with a 4x larger step (teamtr.lr=4e-3), where the
#          trust region acts, on the grid's bases;
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
JOBS=${JOBS:-3}
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

# One chain of runs (they depend on each other); the chains run JOBS at a time.
chain() {
  kind=$1; a=$2; seed=$3
  case $kind in
  grid)
    base="n${a}_s${seed}_teamtr"
    run "$base" configs/teamtr.yaml run.seed="$seed" teamtr.agents="$a"
    for v in stale stale_happo joint no_tr; do
      run "n${a}_s${seed}_$v" configs/teamtr.yaml run.seed="$seed" teamtr.agents="$a" teamtr.variant=$v \
        run.reuse_from="$OUT/$base" "run.reuse_stages=[pretrain]"
    done ;;
  single)   # one agent writes every step in one message: room for four (a chain's 24 tokens cut it)
    run "n1_s${seed}_single" configs/teamtr.yaml run.seed="$seed" teamtr.agents=1 teamtr.max_new_tokens=48 ;;
  region)
    base="n${a}_s${seed}_teamtr"
    case " $PARTS " in   # the grid chain makes the base; without the grid, this chain does
    *" grid "*) until [ -f "$OUT/$base.done" ]; do sleep 30; done ;;
    *) run "$base" configs/teamtr.yaml run.seed="$seed" teamtr.agents="$a" ;;
    esac
    for v in teamtr no_tr; do
      run "lr4e-3_n${a}_s${seed}_$v" configs/teamtr.yaml run.seed="$seed" teamtr.agents="$a" teamtr.variant=$v \
        teamtr.lr=4e-3 run.reuse_from="$OUT/$base" "run.reuse_stages=[pretrain]"
    done ;;
  hier)
    src="tc_s${seed}_multi2"
    run "$src" configs/demo.yaml run.seed="$seed" eval.episodes=41   # every ID episode, as the hierarchy's eval
    for s1 in train frozen; do
      run "tc_s${seed}_hier_$s1" configs/teamtr-hier.yaml run.seed="$seed" teamtr.hier.sys1=$s1 \
        run.reuse_from="$OUT/$src" "$HIER_REUSE"
    done ;;
  esac
}

if [ "$3" = "--chain" ]; then shift 3; chain "$@"; exit $?; fi   # one chain (xargs calls back)

# The chains, longest first (a region chain waits for its grid base, so it comes after the grid's).
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
{
  for n in $SIZES; do
    has grid && for seed in $SEEDS; do echo "grid $n $seed"; done
    [ "$n" = 8 ] && has hier && for seed in $SEEDS; do echo "hier 0 $seed"; done
  done
  case " $SIZES " in *" 8 "*) ;; *) has hier && for seed in $SEEDS; do echo "hier 0 $seed"; done ;; esac
  has region && for n in 4 2; do for seed in $SEEDS; do echo "region $n $seed"; done; done
  has single && for seed in $SEEDS; do echo "single 1 $seed"; done
} > "$OUT/.chains"
xargs -P "$JOBS" -L 1 sh "$0" "$OUT" "$BIN" --chain < "$OUT/.chains"

# The finished run folders among the arguments.
done_dirs() { for d in "$@"; do [ -d "$d" ] && [ -f "$d.done" ] && echo "$d"; done; }
report() {   # report NAME FOLDER...
  name=$1; shift
  [ $# -gt 0 ] && "$BIN" report --teamtr --out "$OUT/$name" "$@" || true
}
report report $(done_dirs "$OUT"/n*_s*_*)
report report-region $(done_dirs "$OUT"/lr4e-3_*)
report report-hier $(done_dirs "$OUT"/tc_s*)
