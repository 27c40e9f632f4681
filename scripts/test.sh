#!/usr/bin/env bash
# Builds and runs every test. With --sanitize: an AddressSanitizer + UBSan build in
# build-asan instead. With --tsan: a ThreadSanitizer build in build-tsan of only the test
# suites that run threads, and only their threaded tests (the thread pool and work queue,
# concurrent tokenizing, the serving engine and its parts, `tessera parallel`, the HTTP
# server and its clients).
# Reference data: ../shared (or $TESSERA_SHARED); tests that need an absent file skip
# with a message.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/deps.sh" --tests
build="$root/build"
flags=(-DCMAKE_BUILD_TYPE=Release -DTESSERA_TEST_SHARDS=0)
# The sanitizer builds: -O2 with line tables only (-g1), which is what their reports'
# stack traces read; full debug info added a sixth to a half to the compile time of a file
# (json_schema_merge.cpp: 32-45 s with -g, 27-30 s with -g1).
debug_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
             "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
if [ "${1:-}" = "--sanitize" ]; then
  build="$root/build-asan"
  # Each suite as 8 sharded processes rather than a process per test (see CMakeLists.txt).
  flags=("${debug_flags[@]}" -DTESSERA_SANITIZE=ON -DTESSERA_TEST_SHARDS=8)
fi
targets=()  # all
select=()   # every test
if [ "${1:-}" = "--tsan" ]; then
  build="$root/build-tsan"
  flags=("${debug_flags[@]}" -DTESSERA_TSAN=ON -DTESSERA_TEST_SHARDS=0)  # -R below names tests
  targets=(--target tessera_unit_tests tessera_golden_tests)  # and tessera_cli, which they run
  select=(-R '^((ThreadPool|WorkQueueTest|StopStrings|PrefixCache|ServingEngine|RuntimeParallel|ServerHttp|ServerHttpLimits|ServerLoad)[.].*|TokenizerBpe[.]EncodesOnManyThreadsAtOnce|server_curl|server_node)$')
  # A child `tessera serve` inherits this: a report there makes it exit 66, which its test
  # checks (stop() == 0). tests/tsan.supp: false positives of uninstrumented libraries.
  export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}:suppressions=$root/tests/tsan.supp"
fi
jobs="$(nproc)"
cmake -S "$root" -B "$build" "${flags[@]}" -DTESSERA_TESTS=ON -DTESSERA_BENCH=ON -DTESSERA_MPI=ON >/dev/null
cmake --build "$build" -j"$jobs" "${targets[@]}"
# The CUDA backend compiles wherever nvcc is (no GPU needed): its .cu files alone, for
# Hopper, so that it cannot rot in a tree whose CI has no GPU. (A machine with a GPU
# builds everything with -DTESSERA_CUDA=ON; the CUDA tests skip without one.)
nvcc_bin="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
if [ "${1:-}" = "" ] && [ -x "$nvcc_bin" ]; then
  cmake -S "$root" -B "$root/build-cuda" -DCMAKE_BUILD_TYPE=Release -DTESSERA_CUDA=ON \
    -DCMAKE_CUDA_COMPILER="$nvcc_bin" -DCMAKE_CUDA_ARCHITECTURES=90 -DTESSERA_TESTS=OFF >/dev/null
  cmake --build "$root/build-cuda" -j"$jobs" --target tessera_cuda
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
ctest --test-dir "$build" -j"$jobs" --output-on-failure --timeout 600 "${select[@]}"
