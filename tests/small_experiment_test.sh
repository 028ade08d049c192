#!/bin/sh
# scripts/small_experiment.sh with KEEP on a tiny model (the small preset's config with overrides
# that make it seconds): a folder that finishes is kept whole; one kept part-way (a session ended
# first), with its run folders gone, is put back and continued by the same command to the same
# bits as the straight run; a folder kept whole and absent from OUT is not run again; a folder is kept
# part-way while its demo runs, and when the demo fails; the online curves of multi2 follow, and
# scripts/online_curves.sh reads a comma list of methods.
#   sh tests/small_experiment_test.sh MULTI2 SOURCE_DIR
set -eu
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC_DIR=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/small_exp.XXXXXX")
trap 'rm -rf "$T"' EXIT
cd "$SRC_DIR"   # the script reads configs/small.yaml from here
EXTRA="eval.episodes=2 run.ckpt_every=2 model.tiny.vocab=320 model.tiny.dim=16 model.tiny.layers=1 model.tiny.heads=2
  model.tiny.kv_heads=1 model.tiny.ffn=32 pretrain.steps=3 pretrain.batch=2 data.expert_episodes=6
  data.medium_episodes=2 sys1.sft.epochs=1 sys2.warmup.epochs=1 sys2.offline.max_steps=2 sys2.online.epochs=1
  sys2.online.episodes_per_epoch=1 sys2.online.updates_per_epoch=1 sys2.online.batch=2 sys2.online.seed_offline=4
  eval.max_new_tokens=8"
run_exp() {   # OUT KEEP LOG
  EXTRA=$EXTRA EXTRA_textcraft="" KEEP=$2 SEEDS=22 ENVS=textcraft METHODS=multi2,offline_only,no_kl CURVES=${CURVES:-0} JOBS=1 \
    METHOD_JOBS=2 sh scripts/small_experiment.sh "$1" "$BIN" > "$3" 2>&1 || { cat "$3"; exit 1; }
}
CURVES=1 run_exp "$T/out" "$T/keep" "$T/1.log"
[ -f "$T/out/textcraft/curves/multi2/s22/results.json" ] || { echo "FAIL: no online curve of multi2"; cat "$T/1.log"; exit 1; }
[ -f "$T/keep/textcraft/s22/results.json" ] || { echo "FAIL: the finished folder was not kept whole"; cat "$T/1.log"; exit 1; }
cp -r "$T/out/textcraft/s22" "$T/straight"

# the session ends with no_kl unfinished: keep what finished, lose the machine's folders
rm "$T/out/textcraft/s22/results.json" "$T/out/textcraft/s22/textcraft/no_kl/results.json"
rm -rf "$T/keep/textcraft/s22"
sh scripts/keep_records.sh "$T/out/textcraft/s22" "$T/keep/textcraft/s22" "$BIN" > /dev/null
rm -rf "$T/out"
run_exp "$T/out" "$T/keep" "$T/2.log"
grep -q "textcraft seed 22: continuing the runs kept part-way" "$T/2.log" || { echo "FAIL: not continued"; cat "$T/2.log"; exit 1; }
grep -q "=== textcraft / multi2 -> .* (continuing)" "$T/out/textcraft/s22.log" ||
  { echo "FAIL: the kept multi2 run was computed again"; cat "$T/out/textcraft/s22.log"; exit 1; }
[ -f "$T/keep/textcraft/s22/results.json" ] || { echo "FAIL: the continued folder was not kept whole"; exit 1; }
for m in multi2 offline_only no_kl; do
  for f in eval/id.jsonl eval/ood.jsonl metrics.jsonl stages.json results.json; do
    cmp "$T/straight/textcraft/$m/$f" "$T/keep/textcraft/s22/textcraft/$m/$f"
  done
done
cmp "$T/straight/results.json" "$T/keep/textcraft/s22/results.json"
grep -q "^runs carried over from an earlier keep" "$T/keep/textcraft/s22/KEPT.txt" ||
  { echo "FAIL: KEPT.txt does not say which runs an earlier keep made"; exit 1; }

# kept whole and absent from OUT: not run again, and the report reads the kept records
rm -rf "$T/out"
run_exp "$T/out" "$T/keep" "$T/3.log"
grep -q "kept in .* already (finished on another machine): not run again" "$T/3.log" ||
  { echo "FAIL: a folder kept whole was run again"; cat "$T/3.log"; exit 1; }
[ ! -e "$T/out/textcraft/s22" ] || { echo "FAIL: a folder kept whole was put back"; exit 1; }
grep -q "| offline_only |" "$T/out/textcraft/report/results.md" || { echo "FAIL: the report lacks the kept runs"; exit 1; }

# while a demo runs, each run that finishes is kept part-way, and what finished before a failure is
# kept too: a stand-in multi2 whose demo finishes one run, waits until the script has kept it, then
# finishes a second run and fails
cat > "$T/stand_in" <<'STAND_IN'
#!/bin/sh
case "$1" in
  --version) echo "stand-in multi2" ;;
  demo)
    prev=""; for a in "$@"; do [ "$prev" = --out ] && out=$a; prev=$a; done
    for m in multi2 flat; do mkdir -p "$out/textcraft/$m"; echo '{}' > "$out/textcraft/$m/stages.json"; done
    echo '{}' > "$out/textcraft/multi2/results.json"
    for i in $(seq 1 200); do
      if [ -f "$KEEP/textcraft/s22/textcraft/multi2/records_only.txt" ]; then
        echo yes > "$out.kept_while_running"
        echo '{}' > "$out/textcraft/flat/results.json"
        exit 1
      fi
      sleep 0.1
    done
    exit 1 ;;
  *) exit 0 ;;
esac
STAND_IN
chmod +x "$T/stand_in"
KEEP=$T/keep2 KEEP_POLL=1 SEEDS=22 ENVS=textcraft CURVES=0 JOBS=1 sh scripts/small_experiment.sh "$T/out2" "$T/stand_in" \
  > "$T/4.log" 2>&1 || { cat "$T/4.log"; exit 1; }
[ -f "$T/out2/textcraft/s22.kept_while_running" ] ||
  { echo "FAIL: a run that finished was not kept while the demo ran"; cat "$T/4.log"; exit 1; }
grep -q "textcraft seed 22: failed" "$T/4.log" || { echo "FAIL: the failure was not reported"; cat "$T/4.log"; exit 1; }
[ -f "$T/keep2/textcraft/s22/textcraft/flat/records_only.txt" ] ||
  { echo "FAIL: the run finished before the failure was not kept"; cat "$T/4.log"; exit 1; }
# scripts/online_curves.sh reads METHODS by commas as by spaces (a stand-in multi2 makes each branch
# a copy of its run's evaluation records; before, "multi2,no_kl" was one method of no finished run)
mkdir -p "$T/curves"
for m in multi2 no_kl; do
  mkdir -p "$T/curves/textcraft/s22/textcraft/$m/eval"
  echo "{\"m\":\"$m\"}" > "$T/curves/textcraft/s22/textcraft/$m/eval/id.jsonl"
  echo '{}' > "$T/curves/textcraft/s22/textcraft/$m/results.json"
done
cat > "$T/stand_in_curves" <<'STAND_IN'
#!/bin/sh
case "$1" in
  train) shift; run=""; new=""; prev=""
    for a in "$@"; do [ "$prev" = --resume ] && run=$a; [ "$prev" = --branch ] && new=$a; prev=$a; done
    mkdir -p "$new/eval"; cp "$run"/eval/*.jsonl "$new/eval/"; echo '{}' > "$new/results.json" ;;
  *) exit 0 ;;
esac
STAND_IN
chmod +x "$T/stand_in_curves"
SEEDS=22 ENVS=textcraft METHODS=multi2,no_kl sh scripts/online_curves.sh "$T/curves" "$T/stand_in_curves" > "$T/5.log" 2>&1 ||
  { echo "FAIL: online_curves.sh with a comma list"; cat "$T/5.log"; exit 1; }
for m in multi2 no_kl; do
  grep -q "textcraft $m seed 22: curves done; evaluation records the same as the run's: yes" "$T/5.log" ||
    { echo "FAIL: no curve of $m"; cat "$T/5.log"; exit 1; }
done
echo "small_experiment_test: ok"
