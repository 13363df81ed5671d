#!/usr/bin/env bash
# Builds the C reference of the ELT benchmark (bench/reference-elt/elt.c) against the runtime's
# corprof.h, through bench/common/compile.sh (which says where headers and the compiler come from).
#
#   bench/reference-elt/build.sh [OUTPUT.so]   (default: target/bench/libelt_reference.so)
#
# The headers must declare ICorProfilerCallback11 (the vtable's size).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
exec bash "$ROOT/bench/common/compile.sh" reference-elt/build.sh "$ROOT/bench/reference-elt/elt.c" \
    "${1:-$ROOT/target/bench/libelt_reference.so}"
