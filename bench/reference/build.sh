#!/usr/bin/env bash
# Builds the C reference profiler (bench/reference/reference.c) against the runtime's corprof.h,
# compiled in C mode through corprof-gen/prelude.
#
#   bench/reference/build.sh [OUTPUT.so]     (default: target/bench/libreference_profiler.so)
#
# Headers: $CORPROF_INCLUDE_DIR, else ../shared/clr-headers/runtime-net8 (or runtime-main) beside the repo, else
# headers/ (scripts/fetch-headers). They must declare ICorProfilerCallback11 (runtime-main or newer).
# $CC picks the compiler (default: the first of cc, gcc, clang). Writes the library atomically, so concurrent builds are
# safe.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

out="${1:-$ROOT/target/bench/libreference_profiler.so}"
include="${CORPROF_INCLUDE_DIR:-}"
if [ -z "$include" ]; then
    if [ -f "$ROOT/../shared/clr-headers/runtime-net8/corprof.h" ]; then
        include="$ROOT/../shared/clr-headers/runtime-net8"
    elif [ -f "$ROOT/../shared/clr-headers/runtime-main/corprof.h" ]; then
        include="$ROOT/../shared/clr-headers/runtime-main"
    else
        include="$ROOT/headers"
    fi
fi
# A relative CORPROF_INCLUDE_DIR is relative to the corprof crate, i.e. the repo root.
case "$include" in /*) ;; *) include="$ROOT/$include" ;; esac
# CORPROF_INCLUDE_DIR may be a search path; the first folder holding corprof.h wins.
header_dir=""
IFS=: read -r -a dirs <<<"$include"
for d in "${dirs[@]}"; do
    if [ -f "$d/corprof.h" ]; then header_dir="$d"; break; fi
done
if [ -z "$header_dir" ]; then
    echo "reference/build.sh: no corprof.h in $include (set CORPROF_INCLUDE_DIR)" >&2
    exit 1
fi
# The compiler: $CC, else the first of cc, gcc, clang (scripts/setup installs clang).
cc="${CC:-}"
if [ -z "$cc" ]; then
    for candidate in cc gcc clang; do
        if command -v "$candidate" >/dev/null 2>&1; then cc="$candidate"; break; fi
    done
fi
if [ -z "$cc" ] || ! command -v "$cc" >/dev/null 2>&1; then
    echo "reference/build.sh: no C compiler (${cc:-cc, gcc or clang}): apt-get install gcc, or set CC" >&2
    exit 1
fi

# .NET 8's header fixed ICorProfilerCallback11's `LoadAsNotficationOnly`: the vtable field follows
# the header, while reference.c keeps the old spelling for its function and its count label.
renamed=()
if grep -q 'LoadAsNotificationOnly' "$header_dir/corprof.h"; then
    renamed=(-DLoadAsNotficationOnly=LoadAsNotificationOnly)
fi

mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
"$cc" -O2 -shared -fPIC -std=gnu11 -fvisibility=hidden \
    -Wall -Werror -Wno-attributes -Wno-unknown-pragmas \
    -I "$ROOT/corprof-gen/prelude" -include corprof_prelude.h -include corprof_mdtypes.h \
    -I "$header_dir" "${renamed[@]}" \
    -o "$tmp" "$ROOT/bench/reference/reference.c"
mv -f "$tmp" "$out"
trap - EXIT
