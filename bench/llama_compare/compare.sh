#!/bin/sh
# Logits of llama.cpp and multi2 on the same GGUF files, one token at a time (both decode paths)
# and the same 6 tokens in one prefill (multi2's integer GEMM where the CPU has it):
#   LLAMA_DIR=/path/to/llama.cpp (source tree with build/bin/libllama.so) sh bench/llama_compare/compare.sh FILE.gguf...
# Prints max |logit difference| relative to the logit scale, the correlation and both argmaxes. A
# wrong block layout on either side shows as a correlation near 0.
set -eu
: "${LLAMA_DIR:?set LLAMA_DIR to a llama.cpp tree built with cmake (build/bin/libllama.so)}"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -I"$LLAMA_DIR/include" -I"$LLAMA_DIR/ggml/include" "$here/llama_logits.c" -L"$LLAMA_DIR/build/bin" \
    -lllama -lggml -lggml-base -Wl,-rpath,"$LLAMA_DIR/build/bin" -o "$tmp/llama_logits"
cc -O2 -I"$root/src" "$here/m2_logits.c" "$root/build/libmulti2.a" $(pkg-config --libs openblas libcjson yaml-0.1 libpcre2-8 cairo) -lm -lpthread -o "$tmp/m2_logits"
for f in "$@"; do
    for mode in decode prefill; do
        "$tmp/llama_logits" "$f" 6 $mode > "$tmp/l.bin" 2>/dev/null
        "$tmp/m2_logits" "$f" 6 $mode > "$tmp/m.bin"
        /usr/bin/python3 - "$tmp/l.bin" "$tmp/m.bin" "$f" $mode <<'PYEOF'
import sys, numpy as np
a = np.fromfile(sys.argv[1], dtype='<f4'); b = np.fromfile(sys.argv[2], dtype='<f4')
d = np.abs(a - b).max(); s = np.abs(a).max()
print(f"{sys.argv[3]} ({sys.argv[4]}): max|dlogit| {d:.4g} of scale {s:.4g} ({d / s:.3g}), correlation {np.corrcoef(a, b)[0, 1]:.6f}, argmax llama.cpp {a.argmax()} multi2 {b.argmax()}")
PYEOF
    done
done
