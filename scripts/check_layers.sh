#!/bin/sh
# Checks every #include "layer/..." under src/ against the layer arrows of DESIGN.md §1: a file in
# layer A may include its own layer and the layers A may see; anything else is a violation.
#   sh scripts/check_layers.sh [SRC_DIR]     exit 0: clean; 1: violations (each printed); 2: usage
#   sh scripts/check_layers.sh --self-test   plants a forbidden include in a copy and expects a failure
set -u
allowed() {   # the layers $1 may include besides itself
    case "$1" in
    core)    echo "" ;;
    kernels) echo "core" ;;
    model)   echo "kernels core" ;;
    io)      echo "model kernels core" ;;
    env)     echo "core" ;;
    data)    echo "env io core" ;;
    agent)   echo "data env model io core" ;;
    algo)    echo "agent data model kernels core dist" ;;
    dist)    echo "core" ;;
    pipe)    echo "algo agent data env model io dist core" ;;
    cli)     echo "pipe algo agent data env model io kernels dist core" ;;
    *)       echo "?" ;;
    esac
}

check() {
    src=$1
    [ -d "$src" ] || { echo "check_layers: $src: no such folder" >&2; return 2; }
    bad=0
    for f in $(find "$src" -name '*.[ch]' | sort); do
        rel=${f#"$src"/}
        layer=${rel%%/*}
        ok=$(allowed "$layer")
        if [ "$ok" = "?" ]; then
            echo "$rel: layer '$layer' is not in DESIGN.md §1's table"
            bad=1
            continue
        fi
        # lines like: #include "model/lora.h"
        for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/.*/\1/p' "$f" | sort -u); do
            [ "$inc" = "$layer" ] && continue
            case " $ok " in *" $inc "*) continue ;; esac
            line=$(grep -n "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"$inc/" "$f" | head -1 | cut -d: -f1)
            echo "$rel:$line: $layer/ may not include $inc/ (allowed: ${ok:-nothing})"
            bad=1
        done
    done
    return $bad
}

if [ "${1:-}" = "--self-test" ]; then
    here=$(cd "$(dirname "$0")/.." && pwd)
    tmp=$(mktemp -d) || exit 2
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/src/core" "$tmp/src/model" "$tmp/src/pipe"
    printf '#include "core/err.h"\n' > "$tmp/src/core/a.c"
    printf '#include "core/err.h"\n#include "kernels/ops.h"\n' > "$tmp/src/model/b.c"
    printf '#include "algo/algo.h"\n#include "env/env.h"\n' > "$tmp/src/pipe/c.c"
    check "$tmp/src" >/dev/null || { echo "self-test: a clean tree was refused"; exit 1; }
    printf '#include "pipe/plan.h"\n' >> "$tmp/src/core/a.c"         # core climbing to pipe
    out=$(check "$tmp/src") && { echo "self-test: core/ including pipe/ passed"; exit 1; }
    echo "$out" | grep -q 'core/a.c:2: core/ may not include pipe/' || { echo "self-test: wrong report: $out"; exit 1; }
    sed -i '2d' "$tmp/src/core/a.c"
    printf '#include "agent/prompts.h"\n' > "$tmp/src/model/d.c"     # model knows no agent
    check "$tmp/src" >/dev/null && { echo "self-test: model/ including agent/ passed"; exit 1; }
    echo "check_layers self-test: ok"
    exit 0
fi
src=${1:-$(cd "$(dirname "$0")/.." && pwd)/src}
check "$src"
rc=$?
[ $rc -eq 0 ] && echo "check_layers: every #include under $src follows DESIGN.md §1"
exit $rc
