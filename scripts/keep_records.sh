#!/bin/sh
# The records of finished runs without their weights, small enough to commit: what `multi2 report`
# reads and what people read (configs, stage ends, metrics, evaluation records and summaries, probe
# results, results tables, SVG charts). experiments/small/ holds the `small` experiment's this way
# (docs/results-small.md), so that a finished (environment, seed) outlives the machine that ran it
# and the report over the seeds can be made again from the repository alone.
#
#   sh scripts/keep_records.sh SRC DEST [MULTI2]
#
# SRC: a demo folder (or any folder of runs); DEST receives the same tree without the weights and
# optimiser state (*.safetensors, *.gguf, ckpt/), the tokenizer, the data stage's corpora
# (artifacts/data/, artifacts/pretrain/corpus/), TensorBoard events, logs, PNG charts and each run's
# own charts (the folder's SVG charts stay). A run folder left unfinished (no results.json) is
# skipped: its records would say less than its next run will. Each kept run gets RUN/records_only.txt,
# which tells multi2 that the run is finished but lends no stages (its weights are gone): a demo
# re-run over a copy of DEST computes the methods DEST lacks and reads the kept ones as they are, the
# first method not kept taking the first run's role (scripts/small_experiment.sh continues a partly
# kept folder so on another machine). DEST is replaced. Afterwards
# `multi2 report` over DEST writes the same results.json and results.md as over SRC
# (tests/keep_records_test.sh). With MULTI2, the binary that keeps, DEST/KEPT.txt names its commit
# (`multi2 --version`); each run's stages.json names the binary that made each stage (`made_by`,
# from the binaries that record it on), and `multi2 report` lists them ("Made by").
set -eu
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: sh scripts/keep_records.sh SRC DEST [MULTI2]" >&2; exit 2; }
SRC=${1%/}
DEST=${2%/}
[ -d "$SRC" ] || { echo "keep_records: $SRC: not a folder" >&2; exit 1; }
case "$DEST/" in "$SRC"/*) echo "keep_records: $DEST is inside $SRC" >&2; exit 1 ;; esac
tmp="$DEST.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
# every run folder (it holds stages.json) that has not finished: left out whole; one a line, and
# the loops below split on lines alone, so paths may hold spaces
nl='
'
IFS=$nl
unfinished=$(find "$SRC" -name stages.json -type f | while read -r s; do
  d=${s%/stages.json}; [ -f "$d/results.json" ] || echo "$d"; done)
find "$SRC" -type f \
  ! -name '*.safetensors' ! -name '*.gguf' ! -name 'tokenizer*.json' ! -name 'events.out.tfevents.*' \
  ! -name '*.png' ! -name '*.log' ! -path "$SRC/*/*/plots/*" ! -path '*/ckpt/*' ! -path '*/artifacts/data/*' \
  ! -path '*/artifacts/pretrain/corpus/*' | sort | while read -r f; do
  rel=${f#"$SRC"/}
  skip=no
  for u in $unfinished; do case "$f" in "$u"/*) skip=yes ;; esac; done
  [ $skip = no ] || continue
  mkdir -p "$tmp/$(dirname "$rel")"
  cp -p "$f" "$tmp/$rel"
done
for u in $unfinished; do echo "keep_records: left out ${u#"$SRC"/} (not finished)"; done
find "$tmp" -name stages.json -type f | while read -r s; do
  echo "kept by scripts/keep_records.sh: this finished run's weights, checkpoints and corpora were left out; its records are whole" \
    > "${s%/stages.json}/records_only.txt"
done
{
  echo "kept from: $SRC"
  echo "kept on: $(date -u '+%Y-%m-%d %H:%M UTC')"
  # the binary that kept; which binary made each stage is in the runs' stages.json (made_by)
  [ $# -lt 3 ] || echo "kept by: $("$3" --version) (the binary of each stage: its run's stages.json, made_by)"
  for u in $unfinished; do echo "left out, not finished: ${u#"$SRC"/}"; done
  if [ -f "$SRC/KEPT.txt" ]; then
    # SRC was put back from an earlier keep: its runs that were kept then (and read as finished
    # since) were made by the binaries their stages.json names
    echo "runs carried over from an earlier keep (each holds records_only.txt since then):"
    find "$SRC" -name records_only.txt -type f | sort | while read -r r; do d=${r%/records_only.txt}; echo "  ${d#"$SRC"/}"; done
    echo "that keep's KEPT.txt:"
    sed 's/^/  /' "$SRC/KEPT.txt"
  fi
} > "$tmp/KEPT.txt"
rm -rf "$DEST"
mv "$tmp" "$DEST"
echo "keep_records: $SRC -> $DEST ($(du -sh "$DEST" | cut -f1))"
