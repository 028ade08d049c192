#!/bin/sh
# multi2 against llama.cpp on the same GGUF files, interleaved rounds, for a loaded machine:
#   LLAMA_BENCH=/path/to/llama-bench sh bench/llama_rounds.sh [-t THREADS] [-p PROMPT] [-n GEN] [-r ROUNDS] FILE.gguf...
# Each round runs, for every file, `multi2 bench generate --reps 1` and `llama-bench -r 1` with the
# same -p / -n / -t (which of the two goes first alternates between rounds), each under
# /usr/bin/time for its peak resident memory. Prints per file the median over the rounds of the
# per-round ratios multi2 / llama.cpp (prompt and generation tokens/s, peak memory), their range,
# and the load average before and after: the ratio of two programs that ran seconds apart is far
# steadier on a shared machine than either program's own rate.
set -eu
T=1 P=128 N=32 R=5
while getopts t:p:n:r: o; do
    case $o in t) T=$OPTARG ;; p) P=$OPTARG ;; n) N=$OPTARG ;; r) R=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: LLAMA_BENCH=... sh bench/llama_rounds.sh [-t T] [-p N] [-n M] [-r R] FILE.gguf..." >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
M2=${M2_BIN:-$here/build/multi2}
LB=${LLAMA_BENCH:-$(command -v llama-bench || true)}
[ -n "$LB" ] && [ -x "$LB" ] || { echo "llama-bench not found: set LLAMA_BENCH" >&2; exit 2; }
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
out=$(mktemp) tm=$(mktemp)
trap 'rm -f "$out" "$tm"' EXIT
load0=$(cut -d' ' -f1-3 /proc/loadavg)
m2run() {
    /usr/bin/time -f %M -o "$tm" "$M2" bench generate --model "$1" --prompt-tokens "$P" --gen-tokens "$N" --threads "$T" --reps 1 --json
}
lbrun() {
    /usr/bin/time -f %M -o "$tm" "$LB" -m "$1" -p "$P" -n "$N" -t "$T" -r 1 -o json 2>/dev/null | tr -d '\n'
}
r=0
while [ $r -lt "$R" ]; do
    for f in "$@"; do
        if [ $((r % 2)) -eq 0 ]; then
            m=$(m2run "$f"); mk=$(cat "$tm"); l=$(lbrun "$f"); lk=$(cat "$tm")
        else
            l=$(lbrun "$f"); lk=$(cat "$tm"); m=$(m2run "$f"); mk=$(cat "$tm")
        fi
        printf '%s\t%s\t%s\t%s\t%s\n' "$f" "$m" "$mk" "$l" "$lk" >> "$out"
    done
    r=$((r + 1))
done
"$PY" - "$out" "$T" "$P" "$N" "$R" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PYEOF'
import json, sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    f, m, mk, l, lk = line.rstrip('\n').split('\t')
    m, l = json.loads(m), json.loads(l)
    lpp = next(x['avg_ts'] for x in l if x['n_prompt'] > 0 and x['n_gen'] == 0)
    ltg = next(x['avg_ts'] for x in l if x['n_gen'] > 0 and x['n_prompt'] == 0)
    rows.setdefault(f, []).append((m['prompt_tokens_per_s'], m['gen_tokens_per_s'], lpp, ltg, int(mk) / 1024, int(lk) / 1024))
print(f"threads {sys.argv[2]}, pp{sys.argv[3]} / tg{sys.argv[4]}, {sys.argv[5]} interleaved rounds; load average {sys.argv[6]} before, {sys.argv[7]} after")
print(f"{'file':32s} {'pp ratio':>9s} {'(range)':>13s} {'tg ratio':>9s} {'(range)':>13s} {'multi2 pp':>9s} {'llama pp':>9s} {'multi2 tg':>9s} {'llama tg':>9s} {'peak MiB':>9s} {'llama MiB':>9s} {'mem ratio':>9s}")
for f, rs in rows.items():
    pp = sorted(r[0] / r[2] for r in rs); tg = sorted(r[1] / r[3] for r in rs); mem = [r[4] / r[5] for r in rs]
    med = lambda i: st.median(r[i] for r in rs)
    print(f"{f[-32:]:32s} {st.median(pp):9.2f} {pp[0]:6.2f}-{pp[-1]:<6.2f} {st.median(tg):9.2f} {tg[0]:6.2f}-{tg[-1]:<6.2f} "
          f"{med(0):9.1f} {med(2):9.1f} {med(1):9.1f} {med(3):9.1f} {med(4):9.1f} {med(5):9.1f} {st.median(mem):9.2f}")
print("ratios are multi2 / llama.cpp (tokens/s: above 1 multi2 faster; memory: above 1 multi2 larger), median of the per-round ratios")
PYEOF
