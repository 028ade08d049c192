#!/bin/sh
# Generation speed against the thread count, multi2 and (when found) llama.cpp on the same file:
#   [LLAMA_BENCH=/path/to/llama-bench] sh bench/thread_scaling.sh [-T "1 2"] [-n GEN] [-r ROUNDS] FILE.gguf
# Each round runs, for every thread count, `multi2 bench generate --prompt-tokens 1 --reps 3` and
# `llama-bench -p 0 -n GEN -r 3` (which program goes first alternates). Prints per program and
# thread count the median tokens/s over the rounds and the median of the per-round ratios to its
# own first thread count (the scaling), with the load average: on a machine whose cores are busy
# with other work a second thread gains little, and that shows here as a scaling near 1.
set -eu
TS="1 2" N=64 R=3
while getopts T:n:r: o; do
    case $o in T) TS=$OPTARG ;; n) N=$OPTARG ;; r) R=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "usage: sh bench/thread_scaling.sh [-T \"1 2\"] [-n M] [-r R] FILE.gguf" >&2; exit 2; }
f=$1
. "$(dirname "$0")/llama_common.sh"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
r=0
while [ $r -lt "$R" ]; do
    for t in $TS; do
        m() { printf 'multi2\t%s\t%s\t%s\n' "$r" "$t" "$("$M2" bench generate --model "$f" --prompt-tokens 1 --gen-tokens "$N" --threads "$t" --reps 3 --json)" >> "$out"; }
        l() {
            [ -n "$LB" ] && [ -x "$LB" ] || return 0
            printf 'llama.cpp\t%s\t%s\t%s\n' "$r" "$t" "$("$LB" -m "$f" -p 0 -n "$N" -t "$t" -r 3 -o json 2>/dev/null | tr -d '\n')" >> "$out"
        }
        if [ $((r % 2)) -eq 0 ]; then m; l; else l; m; fi
    done
    r=$((r + 1))
done
"$PY" - "$out" "$f" "$N" "$R" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PYEOF'
import json, sys, statistics as st
rate = {}
for line in open(sys.argv[1]):
    prog, r, t, j = line.rstrip('\n').split('\t')
    d = json.loads(j)
    v = d['gen_tokens_per_s'] if prog == 'multi2' else d[0]['avg_ts']
    rate.setdefault(prog, {}).setdefault(int(t), {})[int(r)] = v
print(f"{sys.argv[2]}: tg{sys.argv[3]}, {sys.argv[4]} interleaved rounds; load average {sys.argv[5]} before, {sys.argv[6]} after")
print(f"{'program':10s} {'threads':>7s} {'tokens/s':>9s} {'vs first':>9s} {'(range)':>13s}")
for prog, byt in rate.items():
    ts = sorted(byt)
    for t in ts:
        sc = sorted(byt[t][r] / byt[ts[0]][r] for r in byt[t] if r in byt[ts[0]])
        print(f"{prog:10s} {t:7d} {st.median(byt[t].values()):9.1f} {st.median(sc):9.2f} {sc[0]:6.2f}-{sc[-1]:<6.2f}")
PYEOF
