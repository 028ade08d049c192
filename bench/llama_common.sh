# Sourced by the scripts that run multi2 beside llama.cpp (llama_bench.sh, llama_rounds.sh,
# thread_scaling.sh). With USAGE set (the line printed when no file follows), it parses their options
# -t THREADS -p PROMPT -n GEN -r REPS into T P N R (defaults set before sourcing). Then the programs
# and a scratch file removed on exit.
#   here: the checkout; M2: multi2 ($M2_BIN or build/multi2); LB: llama-bench ($LLAMA_BENCH or on
#   PATH, empty when absent); PY: python3; out: a temporary file.
if [ -n "${USAGE:-}" ]; then   # thread_scaling.sh parses its own options
    while getopts t:p:n:r: o; do
        case $o in t) T=$OPTARG ;; p) P=$OPTARG ;; n) N=$OPTARG ;; r) R=$OPTARG ;; *) exit 2 ;; esac
    done
    shift $((OPTIND - 1))
    [ $# -ge 1 ] || { echo "usage: $USAGE" >&2; exit 2; }
fi
here=$(cd "$(dirname "$0")/.." && pwd)
M2=${M2_BIN:-$here/build/multi2}
LB=${LLAMA_BENCH:-$(command -v llama-bench || true)}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
