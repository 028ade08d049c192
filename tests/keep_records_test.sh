#!/bin/sh
# scripts/keep_records.sh on a tiny demo: the kept records hold no weights, no checkpoints and no
# corpora, leave an unfinished run out, and `multi2 report` over them writes the same results.json
# and results.md as over the whole folder, with a space in every path; and a folder kept part-way,
# put back and run again, ends as the uninterrupted one (the same bits).
#   sh tests/keep_records_test.sh MULTI2 SOURCE_DIR
set -eu
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC_DIR=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/keep records.XXXXXX")   # a space in every path
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/full" "$T/kept"
# a tiny demo (split on spaces: no argument holds one)
DEMO_ARGS="--envs textcraft --methods multi2,offline_only,no_kl --episodes 2 --threads 1 run.tensorboard=true
  run.ckpt_every=2 model.tiny.vocab=320 model.tiny.dim=16 model.tiny.layers=1 model.tiny.heads=2 model.tiny.kv_heads=1
  model.tiny.ffn=32 pretrain.steps=3 pretrain.batch=2 data.expert_episodes=6 sys1.sft.epochs=1 sys2.warmup.epochs=1
  sys2.offline.max_steps=2 sys2.online.epochs=1 sys2.online.episodes_per_epoch=1 sys2.online.updates_per_epoch=1
  sys2.online.batch=2 eval.max_new_tokens=8"
"$BIN" demo --out "$T/full/s1" $DEMO_ARGS > "$T/demo.out" 2>&1 || { cat "$T/demo.out"; exit 1; }
# an unfinished run beside the finished ones
mkdir -p "$T/full/s1/textcraft/stopped"
cp "$T/full/s1/textcraft/multi2/config.yaml" "$T/full/s1/textcraft/multi2/stages.json" "$T/full/s1/textcraft/stopped/"
out=$(sh "$SRC_DIR/scripts/keep_records.sh" "$T/full/s1" "$T/kept/s1" "$BIN")
echo "$out"
echo "$out" | grep -q "left out textcraft/stopped (not finished)" || { echo "FAIL: unfinished run not named"; exit 1; }
[ ! -e "$T/kept/s1/textcraft/stopped" ] || { echo "FAIL: unfinished run kept"; exit 1; }
grep -q "^kept by: multi2 .*(commit " "$T/kept/s1/KEPT.txt" || { echo "FAIL: KEPT.txt names no commit"; exit 1; }
grep -q "^left out, not finished: textcraft/stopped" "$T/kept/s1/KEPT.txt" || { echo "FAIL: KEPT.txt lacks the run left out"; exit 1; }
[ -z "$(find "$T/kept" -name '*.safetensors' -o -name '*.gguf' -o -path '*/ckpt/*' -o -path '*/artifacts/data/*' -o -name 'events.out.*')" ] ||
  { echo "FAIL: weights, checkpoints, corpora or events kept"; exit 1; }
[ -n "$(find "$T/full" -path '*/ckpt/*' -name '*.safetensors')" ] || { echo "FAIL: the demo wrote no checkpoint to leave out"; exit 1; }
for f in eval/id.jsonl eval/ood.jsonl metrics.jsonl stages.json results.json artifacts/sys2_offline/probe.json; do
  cmp "$T/full/s1/textcraft/multi2/$f" "$T/kept/s1/textcraft/multi2/$f"
done
rm -rf "$T/full/s1/textcraft/stopped"
for d in full kept; do
  (cd "$T/$d" && "$BIN" report --out rep s1 > report.out 2>&1) || { cat "$T/$d/report.out"; exit 1; }
done
cmp "$T/full/rep/results.json" "$T/kept/rep/results.json"
cmp "$T/full/rep/results.md" "$T/kept/rep/results.md"
grep -q "offline_only" "$T/kept/rep/results.md" || { echo "FAIL: report lacks a method"; exit 1; }
[ -f "$T/kept/s1/textcraft/multi2/records_only.txt" ] || { echo "FAIL: a kept run is not marked records-only"; exit 1; }
# a kept run cannot play: `multi2 eval --run` says why instead of naming a missing weights file
if "$BIN" eval --run "$T/kept/s1/textcraft/multi2" --episodes 1 > "$T/eval.out" 2>&1; then echo "FAIL: eval of a kept run"; exit 1; fi
grep -q "holds a run's records alone" "$T/eval.out" || { echo "FAIL: eval of a kept run does not say why"; cat "$T/eval.out"; exit 1; }

# A folder kept part-way (offline_only and no_kl unfinished), put back on "another machine" and run
# again: multi2's kept run is read as finished and lends nothing (its weights are gone), offline_only
# is computed from the start and lends its stages to no_kl, and the folder ends as the uninterrupted
# demo's, the same bits.
cp -r "$T/full/s1" "$T/part"
rm "$T/part/results.json" "$T/part/textcraft/offline_only/results.json" "$T/part/textcraft/no_kl/results.json"
sh "$SRC_DIR/scripts/keep_records.sh" "$T/part" "$T/kept/part" "$BIN" > /dev/null
cp -r "$T/kept/part" "$T/again"
"$BIN" demo --out "$T/again" $DEMO_ARGS > "$T/again.out" 2>&1 || { cat "$T/again.out"; exit 1; }
if grep -q "reused .* from .*multi2" "$T/again.out"; then echo "FAIL: stages taken from a run kept without weights"; exit 1; fi
# the first method not kept takes the first run's role: no_kl takes its shared stages from offline_only
grep -q "reused pretrain,data,sys1_sft,sys2_warmup,sys2_offline from .*/offline_only" "$T/again.out" ||
  { echo "FAIL: no_kl did not take offline_only's stages"; cat "$T/again.out"; exit 1; }
for m in offline_only no_kl; do
  for f in eval/id.jsonl eval/ood.jsonl metrics.jsonl stages.json results.json artifacts/sys2_offline/probe.json; do
    cmp "$T/full/s1/textcraft/$m/$f" "$T/again/textcraft/$m/$f"
  done
done
cmp "$T/full/s1/results.json" "$T/again/results.json"
echo "keep_records_test: ok"
