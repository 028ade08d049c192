#!/bin/sh
# multi2's quantised matrix-vector kernels against ggml's, per type, on the same blocks (one thread,
# thread CPU time, interleaved rounds; see qdot_vs_ggml.c):
#   LLAMA_DIR=/path/to/llama.cpp (source tree with build/bin/libggml-cpu.so) sh bench/llama_compare/kernels.sh [ROWS COLS MATRICES ROUNDS [TYPES]]
set -eu
: "${LLAMA_DIR:?set LLAMA_DIR to a llama.cpp tree built with cmake (build/bin/libggml-cpu.so)}"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -I"$LLAMA_DIR/ggml/include" -I"$root/src" "$here/qdot_vs_ggml.c" "$root/build/libmulti2.a" -L"$LLAMA_DIR/build/bin" \
    -lggml-cpu -lggml-base -Wl,-rpath,"$LLAMA_DIR/build/bin" $(pkg-config --libs openblas libcjson yaml-0.1 libpcre2-8 cairo) \
    -lm -lpthread -o "$tmp/qdot_vs_ggml"
"$tmp/qdot_vs_ggml" "$@"
