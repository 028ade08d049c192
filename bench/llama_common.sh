# Sourced by the scripts that run multi2 beside llama.cpp (llama_bench.sh, llama_rounds.sh,
# thread_scaling.sh): the programs and a scratch file removed on exit.
#   here: the checkout; M2: multi2 ($M2_BIN or build/multi2); LB: llama-bench ($LLAMA_BENCH or on
#   PATH, empty when absent); PY: python3; out: a temporary file.
here=$(cd "$(dirname "$0")/.." && pwd)
M2=${M2_BIN:-$here/build/multi2}
LB=${LLAMA_BENCH:-$(command -v llama-bench || true)}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
