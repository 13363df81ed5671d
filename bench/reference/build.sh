#!/usr/bin/env bash
# Builds the C reference profiler (bench/reference/reference.c) against the runtime's corprof.h,
# through bench/common/compile.sh (which says where headers and the compiler come from).
#
#   bench/reference/build.sh [OUTPUT.so]     (default: target/bench/libreference_profiler.so)
#
# The headers must declare ICorProfilerCallback11 (runtime-main or newer).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
exec bash "$ROOT/bench/common/compile.sh" reference/build.sh "$ROOT/bench/reference/reference.c" \
    "${1:-$ROOT/target/bench/libreference_profiler.so}"
