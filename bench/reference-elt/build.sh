#!/usr/bin/env bash
# Builds the C reference of the ELT benchmark (bench/reference-elt/elt.c) against the runtime's
# corprof.h, compiled in C mode through corprof-gen/prelude, as bench/reference/build.sh does.
#
#   bench/reference-elt/build.sh [OUTPUT.so]   (default: target/bench/libelt_reference.so)
#
# Headers: $CORPROF_INCLUDE_DIR (the first folder of a search path holding corprof.h), else
# ../shared/clr-headers/runtime-net8 or runtime-main beside the repo, else headers/. They must
# declare ICorProfilerCallback11 (the vtable's size). $CC picks the compiler (default: the first of
# cc, gcc, clang). Writes the library atomically.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

out="${1:-$ROOT/target/bench/libelt_reference.so}"
include="${CORPROF_INCLUDE_DIR:-}"
if [ -z "$include" ]; then
    for d in "$ROOT/../shared/clr-headers/runtime-net8" "$ROOT/../shared/clr-headers/runtime-main" "$ROOT/headers"; do
        if [ -f "$d/corprof.h" ]; then include="$d"; break; fi
    done
fi
case "$include" in /*) ;; "") ;; *) include="$ROOT/$include" ;; esac
header_dir=""
IFS=: read -r -a dirs <<<"$include"
for d in "${dirs[@]}"; do
    if [ -f "$d/corprof.h" ]; then header_dir="$d"; break; fi
done
if [ -z "$header_dir" ]; then
    echo "reference-elt/build.sh: no corprof.h in ${include:-any default folder} (set CORPROF_INCLUDE_DIR)" >&2
    exit 1
fi
cc="${CC:-}"
if [ -z "$cc" ]; then
    for candidate in cc gcc clang; do
        if command -v "$candidate" >/dev/null 2>&1; then cc="$candidate"; break; fi
    done
fi
if [ -z "$cc" ] || ! command -v "$cc" >/dev/null 2>&1; then
    echo "reference-elt/build.sh: no C compiler (${cc:-cc, gcc or clang}): apt-get install gcc, or set CC" >&2
    exit 1
fi

mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
"$cc" -O2 -shared -fPIC -std=gnu11 -fvisibility=hidden \
    -Wall -Werror -Wno-attributes -Wno-unknown-pragmas \
    -I "$ROOT/corprof-gen/prelude" -include corprof_prelude.h -include corprof_mdtypes.h \
    -I "$header_dir" \
    -o "$tmp" "$ROOT/bench/reference-elt/elt.c"
mv -f "$tmp" "$out"
trap - EXIT
