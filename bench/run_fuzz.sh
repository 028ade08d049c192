#!/bin/sh
# Builds the libFuzzer targets (fuzz/, clang + ASan + UBSan) and runs each for N seconds
# (default 30) from a seed corpus: fuzz/corpus/<target>/ (committed JSON seeds) plus files that
# build-fuzz/make_seeds writes with the project's own writers. Usage: bench/run_fuzz.sh [SECONDS] [TARGET...]
# Findings (crash-*, leak-*, timeout-*) land in build-fuzz/findings/<target>/.
set -eu
cd "$(dirname "$0")/.."
SECS=${1:-30}
[ $# -gt 0 ] && shift
cmake -S fuzz -B build-fuzz -DCMAKE_C_COMPILER=clang >/dev/null
cmake --build build-fuzz -j "$(nproc)" >/dev/null
SEEDS=build-fuzz/seeds
rm -rf "$SEEDS"
./build-fuzz/make_seeds "$SEEDS" >/dev/null
TARGETS=${*:-$(cd build-fuzz && ls fuzz_* 2>/dev/null | grep -v '\.' || true)}
status=0
for t in $TARGETS; do
    name=${t#fuzz_}
    corpus=build-fuzz/corpus/$name
    mkdir -p "$corpus" "build-fuzz/findings/$name"
    [ -d "fuzz/corpus/$name" ] && cp -r "fuzz/corpus/$name/." "$corpus/" 2>/dev/null || true
    seeds=$name
    [ "$name" = model_gguf ] && seeds=gguf    # whole-model loading starts from the GGUF seeds
    [ -d "$SEEDS/$seeds" ] && cp -r "$SEEDS/$seeds/." "$corpus/" 2>/dev/null || true
    echo "== $t: ${SECS}s, seeds $(ls "$corpus" | wc -l)"
    if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "./build-fuzz/$t" -max_total_time="$SECS" -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="build-fuzz/findings/$name/" -print_final_stats=1 "$corpus" \
        >"build-fuzz/findings/$name/log.txt" 2>&1; then
        grep -E "^stat::number_of_executed_units|^stat::new_units_added" "build-fuzz/findings/$name/log.txt" | tr '\n' ' '
        echo "-> ok, corpus $(ls "$corpus" | wc -l)"
    else
        echo "-> FAILED: see build-fuzz/findings/$name/log.txt"
        tail -30 "build-fuzz/findings/$name/log.txt"
        status=1
    fi
done
exit $status
