#!/bin/sh
# multi2 against llama.cpp on the same GGUF files, interleaved rounds, for a shared machine:
#   LLAMA_BENCH=/path/to/llama-bench sh bench/llama_rounds.sh [-t THREADS] [-p PROMPT] [-n GEN] [-r ROUNDS] FILE.gguf...
# Each round, for every file (which program goes first alternates between rounds):
# - `multi2 bench generate --reps 5`: prompt and generation tokens/s, wall and per CPU second of
#   the process, and its peak resident memory (/usr/bin/time);
# - llama-bench with the same -p / -n / -t: `-r 1` and `-r 5` of the prompt alone and of the
#   generation alone, each under /usr/bin/time: the difference of the CPU seconds of the two
#   processes over the 4 extra repetitions is llama.cpp's CPU time per run, with its model
#   loading, vocabulary set-up and warm-up cancelled out; the `-r 5` runs give its wall rates;
# - llama-bench `-p P -n N -r 1` once more for its peak resident memory (same context as multi2's).
# Prints per file the median over the rounds of the per-round ratios multi2 / llama.cpp: wall
# rates, rates per CPU second (with one thread the steadier figure on a loaded machine: other
# processes take wall time from both, CPU time only through caches and memory bandwidth), and peak
# memory, with the load average before and after.
set -eu
T=1 P=128 N=32 R=3
USAGE="LLAMA_BENCH=... sh bench/llama_rounds.sh [-t T] [-p N] [-n M] [-r R] FILE.gguf..."
. "$(dirname "$0")/llama_common.sh"
[ -n "$LB" ] && [ -x "$LB" ] || { echo "llama-bench not found: set LLAMA_BENCH" >&2; exit 2; }
tm=$(mktemp)
trap 'rm -f "$out" "$tm"' EXIT
load0=$(cut -d' ' -f1-3 /proc/loadavg)
# llama-bench FILE PROMPT GEN REPS: prints "json<TAB>cpu seconds<TAB>peak KiB"
lb() {
    j=$(/usr/bin/time -f '%U %S %M' -o "$tm" "$LB" -m "$1" -p "$2" -n "$3" -t "$T" -r "$4" -o json 2>/dev/null | tr -d '\n')
    printf '%s\t%s\n' "$j" "$(awk '{printf "%s\t%s", $1 + $2, $3}' "$tm")"
}
m2() {
    j=$(/usr/bin/time -f '%M' -o "$tm" "$M2" bench generate --model "$1" --prompt-tokens "$P" --gen-tokens "$N" --threads "$T" --reps 5 --json)
    printf '%s\t%s\n' "$j" "$(cat "$tm")"
}
llama_all() {
    printf '%s\t%s\t%s\t%s\t%s' "$(lb "$1" "$P" 0 1)" "$(lb "$1" "$P" 0 5)" "$(lb "$1" 0 "$N" 1)" "$(lb "$1" 0 "$N" 5)" "$(lb "$1" "$P" "$N" 1)"
}
r=0
while [ $r -lt "$R" ]; do
    for f in "$@"; do
        if [ $((r % 2)) -eq 0 ]; then m=$(m2 "$f"); l=$(llama_all "$f")
        else l=$(llama_all "$f"); m=$(m2 "$f"); fi
        printf '%s\t%s\t%s\n' "$f" "$m" "$l" >> "$out"
    done
    r=$((r + 1))
done
"$PY" - "$out" "$T" "$P" "$N" "$R" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PYEOF'
import json, sys, statistics as st
P, N = int(sys.argv[3]), int(sys.argv[4])
rows = {}
for line in open(sys.argv[1]):
    c = line.rstrip('\n').split('\t')
    f, m, mk = c[0], json.loads(c[1]), int(c[2])
    runs = [(json.loads(c[3 + 3 * i]), float(c[4 + 3 * i]), int(c[5 + 3 * i])) for i in range(5)]
    pp1, pp5, tg1, tg5, both = runs
    # CPU seconds per run from the difference of 5 and 1 repetitions
    lpp_cpu = 4 * P / (pp5[1] - pp1[1]) if pp5[1] > pp1[1] else float('nan')
    ltg_cpu = 4 * N / (tg5[1] - tg1[1]) if tg5[1] > tg1[1] else float('nan')
    rows.setdefault(f, []).append(dict(
        m_pp=m['prompt_tokens_per_s'], m_tg=m['gen_tokens_per_s'], m_ppc=m['prompt_tokens_per_cpu_s'], m_tgc=m['gen_tokens_per_cpu_s'],
        l_pp=pp5[0][0]['avg_ts'], l_tg=tg5[0][0]['avg_ts'], l_ppc=lpp_cpu, l_tgc=ltg_cpu, m_mem=mk / 1024, l_mem=both[2] / 1024))
print(f"threads {sys.argv[2]}, pp{P} / tg{N}, {sys.argv[5]} interleaved rounds; load average {sys.argv[6]} before, {sys.argv[7]} after")
hdr = ['pp wall', 'pp cpu', 'tg wall', 'tg cpu', 'memory']
print(f"{'file':30s} " + ' '.join(f"{h:>17s}" for h in hdr) + f" {'multi2 pp/tg per cpu-s':>24s} {'llama pp/tg per cpu-s':>23s} {'MiB m2/llama':>14s}")
for f, rs in rows.items():
    cols = []
    for a, b in (('m_pp', 'l_pp'), ('m_ppc', 'l_ppc'), ('m_tg', 'l_tg'), ('m_tgc', 'l_tgc'), ('m_mem', 'l_mem')):
        v = sorted(r[a] / r[b] for r in rs)
        cols.append(f"{st.median(v):5.2f} ({v[0]:4.2f}-{v[-1]:4.2f})")
    med = lambda k: st.median(r[k] for r in rs)
    print(f"{f[-30:]:30s} " + ' '.join(f"{c:>17s}" for c in cols) +
          f" {med('m_ppc'):12.1f}/{med('m_tgc'):<11.1f} {med('l_ppc'):11.1f}/{med('l_tgc'):<11.1f} {med('m_mem'):6.1f}/{med('l_mem'):<7.1f}")
print("each column: median of the per-round ratios multi2 / llama.cpp (range); tokens/s above 1: multi2 faster; memory above 1: multi2 larger")
PYEOF
