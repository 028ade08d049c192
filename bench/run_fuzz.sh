#!/bin/sh
# Builds the libFuzzer targets (fuzz/, clang + ASan + UBSan) and runs each, one at a time under
# nice, for SECONDS (default 30) or FUZZ_RUNS executions (unset: no limit), whichever comes first.
# Seeds: fuzz/corpus/<target>/ (committed, a few small files each), files that build-fuzz/make_seeds
# writes with the project's own writers, and configs/*.yaml for fuzz_config_yaml; the working
# corpus build-fuzz/corpus/<target>/ grows across runs.
#   Usage: bench/run_fuzz.sh [SECONDS] [TARGET...]      e.g. FUZZ_RUNS=1000000 bench/run_fuzz.sh 1200 fuzz_gguf
# Findings (crash-*, leak-*, timeout-*, oom-*) land in build-fuzz/findings/<target>/, with the log.
# One line per target: executions, seconds, executions/s, coverage (cov: edges, ft: features),
# corpus size, findings; the same rows are appended to build-fuzz/summary.tsv.
set -eu
cd "$(dirname "$0")/.."
SECS=${1:-30}
[ $# -gt 0 ] && shift
RUNS_OPT=""
[ -n "${FUZZ_RUNS:-}" ] && RUNS_OPT="-runs=$FUZZ_RUNS"
cmake -S fuzz -B build-fuzz -DCMAKE_C_COMPILER=clang >/dev/null
cmake --build build-fuzz -j "$(nproc)" >/dev/null
SEEDS=build-fuzz/seeds
rm -rf "$SEEDS"
./build-fuzz/make_seeds "$SEEDS" >/dev/null
TARGETS=${*:-$(cd build-fuzz && ls fuzz_* 2>/dev/null | grep -v '\.' || true)}
[ -f build-fuzz/summary.tsv ] || printf 'date\ttarget\texecs\tsecs\texec_per_s\tcov\tft\tcorpus\tfindings\n' >build-fuzz/summary.tsv
status=0
for t in $TARGETS; do
    name=${t#fuzz_}
    corpus=build-fuzz/corpus/$name
    out=build-fuzz/findings/$name
    mkdir -p "$corpus" "$out"
    [ -d "fuzz/corpus/$name" ] && cp -r "fuzz/corpus/$name/." "$corpus/" 2>/dev/null || true
    seeds=$name
    [ "$name" = model_gguf ] && seeds=gguf    # whole-model loading starts from the GGUF seeds
    [ -d "$SEEDS/$seeds" ] && cp -r "$SEEDS/$seeds/." "$corpus/" 2>/dev/null || true
    [ "$name" = config_yaml ] && cp configs/*.yaml "$corpus/" 2>/dev/null || true
    echo "== $t: ${SECS}s${FUZZ_RUNS:+ or $FUZZ_RUNS runs}, corpus at start $(ls "$corpus" | wc -l)"
    t0=$(date +%s)
    rc=0
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        nice -n 10 "./build-fuzz/$t" -max_total_time="$SECS" $RUNS_OPT -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$out/" -print_final_stats=1 "$corpus" >"$out/log.txt" 2>&1 || rc=$?
    secs=$(( $(date +%s) - t0 ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log.txt" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/log.txt" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$out/log.txt" | tail -1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$out/log.txt" | tail -1 | cut -d' ' -f2)
    found=$(ls "$out" | grep -cE '^(crash|leak|timeout|oom|slow-unit)-' || true)
    echo "$t: ${execs:-?} executions in ${secs} s (${rate:-?}/s), cov ${cov:-?}, ft ${ft:-?}, corpus $(ls "$corpus" | wc -l), findings $found"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "${execs:-}" "$secs" "${rate:-}" \
        "${cov:-}" "${ft:-}" "$(ls "$corpus" | wc -l)" "$found" >>build-fuzz/summary.tsv
    if [ "$rc" -ne 0 ]; then
        echo "-> FAILED (exit $rc): see $out/log.txt"
        tail -30 "$out/log.txt"
        status=1
    fi
done
exit $status
