#!/bin/sh
# Prompt-processing and generation speed of multi2 against llama.cpp on the same GGUF files and
# thread count, in one run:
#   sh bench/llama_bench.sh [-t THREADS] [-p PROMPT_TOKENS] [-n GEN_TOKENS] [-r REPS] FILE.gguf...
# For each file: `multi2 bench generate --json`, and llama.cpp's `llama-bench -o json` with the
# same -p / -n / -t when it is found ($LLAMA_BENCH, else llama-bench on PATH). Prints tokens/s of
# both, the ratios multi2 / llama.cpp (or "not measured" without llama.cpp), and every file's
# rates relative to the first file's (e.g. q8_0 and q4_k against f32), and generation on the
# quantised block products against the same model generating through dequantised tiles, also per
# CPU second of the process (steadier than wall time on a shared machine).
# Files for it: build/bench_quant_models OUTDIR writes one random Qwen2-shaped model in four types.
set -eu
T=2 P=512 N=128 R=3
USAGE="sh bench/llama_bench.sh [-t T] [-p N] [-n M] [-r R] FILE.gguf..."
. "$(dirname "$0")/llama_common.sh"
for f in "$@"; do
    m2=$("$M2" bench generate --model "$f" --prompt-tokens "$P" --gen-tokens "$N" --threads "$T" --reps "$R" --json)
    # the same generation through dequantised tiles (the training path): the block products' reference
    m2t=$("$M2" bench generate --model "$f" --prompt-tokens "$P" --gen-tokens "$N" --threads "$T" --reps "$R" --json --tiles)
    if [ -n "$LB" ] && [ -x "$LB" ]; then
        lb=$("$LB" -m "$f" -p "$P" -n "$N" -t "$T" -r "$R" -o json 2>/dev/null || echo null)
    else
        lb=null
    fi
    printf '%s\t%s\t%s\t%s\n' "$f" "$m2" "$(echo "$lb" | tr -d '\n')" "$m2t" >> "$out"
done
"$PY" - "$out" "$LB" <<'PYEOF'
import json, sys
rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1])]
lb_name = sys.argv[2] or 'llama-bench not found'
first = None
print(f"{'file':40s} {'multi2 pp':>10s} {'multi2 tg':>10s} {'llama pp':>10s} {'llama tg':>10s} {'pp ratio':>9s} {'tg ratio':>9s} {'peak MiB':>9s} {'file MiB':>9s} {'tg vs 1st':>9s} {'tg/tiles':>9s} {'tg/cpu-s':>9s} {'cpu:tiles':>9s}")
for path, m2s, lbs, m2ts in rows:
    m = json.loads(m2s)
    mt = json.loads(m2ts)
    lb = json.loads(lbs) if lbs and lbs != 'null' else None
    lpp = ltg = None
    if lb:
        for r in lb:
            if r.get('n_prompt', 0) > 0 and r.get('n_gen', 0) == 0: lpp = r['avg_ts']
            if r.get('n_gen', 0) > 0 and r.get('n_prompt', 0) == 0: ltg = r['avg_ts']
    if first is None: first = m
    f = lambda v: f"{v:10.1f}" if v is not None else f"{'-':>10s}"
    ratio = lambda a, b: f"{a / b:9.2f}" if b else f"{'not meas.':>9s}"
    print(f"{path[-40:]:40s} {m['prompt_tokens_per_s']:10.1f} {m['gen_tokens_per_s']:10.1f} {f(lpp)} {f(ltg)} "
          f"{ratio(m['prompt_tokens_per_s'], lpp)} {ratio(m['gen_tokens_per_s'], ltg)} {m['peak_rss_mib']:9.1f} {m['file_mib']:9.1f} "
          f"{m['gen_tokens_per_s'] / first['gen_tokens_per_s']:9.2f} {m['gen_tokens_per_s'] / mt['gen_tokens_per_s']:9.2f} "
          f"{m['gen_tokens_per_cpu_s']:9.1f} {m['gen_tokens_per_cpu_s'] / mt['gen_tokens_per_cpu_s']:9.2f}")
print(f"threads {first['threads']}, pp{first['prompt_tokens']} / tg{first['gen_tokens']}, products {first['qdot_path']}; llama.cpp: {lb_name}")
PYEOF
