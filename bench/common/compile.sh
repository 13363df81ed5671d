#!/usr/bin/env bash
# Compiles one C reference profiler into a shared library, against the runtime's own corprof.h
# compiled in C mode through corprof-gen/prelude, with bench/common/com.h on the include path.
# bench/reference/build.sh and bench/reference-elt/build.sh call it.
#
#   bench/common/compile.sh NAME SOURCE OUTPUT.so
#
# Headers: $CORPROF_INCLUDE_DIR (a folder or a :-separated search path; relative to the repo
# root), else ../shared/clr-headers/runtime-info15 (or runtime-net8, runtime-main) beside the repo, else headers/
# (scripts/fetch-headers). $CC picks the compiler (default: the first of cc, gcc, clang). Writes
# the library atomically, so concurrent builds are safe. NAME prefixes the error messages.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
name="$1" source="$2" out="$3"

include="${CORPROF_INCLUDE_DIR:-}"
if [ -z "$include" ]; then
    for d in "$ROOT/../shared/clr-headers/runtime-info15" "$ROOT/../shared/clr-headers/runtime-net8" "$ROOT/../shared/clr-headers/runtime-main" "$ROOT/headers"; do
        if [ -f "$d/corprof.h" ]; then include="$d"; break; fi
    done
fi
header_dir=""
IFS=: read -r -a dirs <<<"$include"
for d in "${dirs[@]}"; do
    case "$d" in /*) ;; *) d="$ROOT/$d" ;; esac
    if [ -f "$d/corprof.h" ]; then header_dir="$d"; break; fi
done
if [ -z "$header_dir" ]; then
    echo "$name: no corprof.h in ${include:-any default folder} (set CORPROF_INCLUDE_DIR)" >&2
    exit 1
fi
cc="${CC:-}"
if [ -z "$cc" ]; then
    for candidate in cc gcc clang; do
        if command -v "$candidate" >/dev/null 2>&1; then cc="$candidate"; break; fi
    done
fi
if [ -z "$cc" ] || ! command -v "$cc" >/dev/null 2>&1; then
    echo "$name: no C compiler (${cc:-cc, gcc or clang}): apt-get install gcc, or set CC" >&2
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
    -I "$header_dir" -I "$ROOT/bench/common" "${renamed[@]}" \
    -o "$tmp" "$source"
mv -f "$tmp" "$out"
trap - EXIT
