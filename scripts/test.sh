#!/usr/bin/env bash
# Builds and runs every test. With --sanitize: an AddressSanitizer + UBSan build in
# build-asan instead. Reference data: ../shared (or $TESSERA_SHARED); tests that need an
# absent file skip with a message.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/deps.sh" --tests
build="$root/build"
flags=(-DCMAKE_BUILD_TYPE=Release)
if [ "${1:-}" = "--sanitize" ]; then
  build="$root/build-asan"
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_SANITIZE=ON)
fi
jobs="$(nproc)"
cmake -S "$root" -B "$build" "${flags[@]}" -DTESSERA_TESTS=ON -DTESSERA_BENCH=ON >/dev/null
cmake --build "$build" -j"$jobs"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
ctest --test-dir "$build" -j"$jobs" --output-on-failure --timeout 600
