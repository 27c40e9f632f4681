#!/usr/bin/env bash
# The CUDA backend's check on a machine with a GPU (the device tool's H200: 16 cores, the
# CUDA toolkit, no network). Sections: packages; configure and build `build-gpu`
# (-DTESSERA_CUDA=ON for sm_90, tests and benches, all cores); nvidia-smi; the CUDA tests;
# the device's memory bandwidth; `tessera bench -p 512 -n 128 -ngl 99` of TinyLlama-1.1B
# and LLaMA-7B shapes (`tessera synth` presets tinyllama-1.1b and llama-7b: n_embd 4096,
# 32 layers, 32 heads, n_ff 11008, vocab 32000) at F16, Q8_0, Q4_K_M and Q4_0.
#
#   bash scripts/cuda_device_check.sh                  # all of it, one command (timeout_s 600)
#   bash scripts/cuda_device_check.sh build test       # some of: build test bench
#
# Results go to $OUT (the folder the device tool brings back; default
# /tmp/tessera-cuda-check): summary.txt (each section's status and times), nvidia-smi.txt,
# build.log, tests.txt (ctest of the suites Cuda* -- ops, golden offload, unit -- and the
# GpuPlacement unit tests), bandwidth.txt, bench.txt. The exit status is non-zero when
# anything failed; a failing test does not stop the benchmarks.
#
# Time: the device tool stops a command after 10 minutes and lends ~15 minutes of device
# time in all, machine start included. TESSERA_CHECK_BUDGET_S (default 560) bounds this
# script: before each benchmark it checks what is left and skips (saying so) what would
# not fit. Estimates for 16 cores, not yet measured there: packages + configure ~30 s;
# build ~3 min; the synthetic models are written in the background from the end of the
# build (single-threaded: TinyLlama ~25 s, 7B F16 ~2.5 min) while the tests (~1 min) and
# the bandwidth probe run; TinyLlama's three quantizations and four benches ~1 min; 7B
# Q4_0, Q4_K_M and Q8_0 ~1 min each (quantize with every core, then bench); 7B F16 last,
# -r 3 when 90 s are left, -r 1 when 45 s are, else skipped.
#
# Reference files: the golden tests read ../shared/models and ../shared/golden
# ($TESSERA_SHARED), and ../shared does not travel to the device machine. Copy those two
# folders (20 MB) into .device-shared/ of the checkout (named in .git/info/exclude) and
# name it in the run's carry, or the golden tests skip with "shared file absent".
#
# Packages: scripts/deps.sh installs them with apt, which that machine cannot reach. What
# is missing is listed below; .deb files carried in .device-debs/ (`apt-get download` them
# here: libcli11-dev nlohmann-json3-dev libpcre2-dev libcpp-httplib-dev libgtest-dev
# libbenchmark-dev libedit-dev and whatever else the list names) are unpacked into /tmp/tessera-deps
# and put on the compiler's and CMake's paths (not tried on that machine yet).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
OUT="${OUT:-/tmp/tessera-cuda-check}"
mkdir -p "$OUT"
budget="${TESSERA_CHECK_BUDGET_S:-560}"
jobs="$(nproc)"
nvcc="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
build="$root/build-gpu"
cli="$build/tessera"
models="${TMPDIR:-/tmp}/tessera-bench-models"
phases=" ${*:-build test bench} "
for p in $phases; do
  case "$p" in
    build | test | bench) ;;
    *) echo "cuda_device_check: unknown phase '$p' (phases: build test bench)" >&2 && exit 2 ;;
  esac
done
failures=()

left() { echo $((budget - SECONDS)); }
fits() { [ "$(left)" -ge "$1" ]; }
# A time limit for the next command: at most $1 seconds, and 10 s inside the budget.
cap() {
  local want="$1" room
  room=$(($(left) - 10))
  [ "$room" -lt "$want" ] && want="$room"
  [ "$want" -lt 1 ] && want=1
  echo "$want"
}
note() { echo "$*" | tee -a "$OUT/summary.txt"; }
section() { printf '\n==== %s   (t=%ds, %ds of the budget left)\n' "$1" "$SECONDS" "$(left)" | tee -a "$OUT/summary.txt"; }
failed() {
  failures+=("$1")
  note "FAILED: $1"
}
has() { [[ "$phases" == *" $1 "* ]]; }

: >"$OUT/summary.txt"
section "tessera CUDA device check: phases:$phases"
note "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $(uname -srm); $jobs cores"

# ---- packages ---------------------------------------------------------------------------------
section "packages"
if [ -e "$root/.device-debs" ] && ls "$root"/.device-debs/*.deb >/dev/null 2>&1; then
  prefix=/tmp/tessera-deps
  rm -rf "$prefix" && mkdir -p "$prefix"
  for deb in "$root"/.device-debs/*.deb; do dpkg-deb -x "$deb" "$prefix"; done
  # Their .pc files name /usr: point them at the unpacked copy.
  find "$prefix" -name '*.pc' -exec sed -i -E "s#^(prefix|exec_prefix|libdir|includedir)=/usr#\1=$prefix/usr#" {} +
  lib="$prefix/usr/lib/x86_64-linux-gnu"
  export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export PKG_CONFIG_PATH="$lib/pkgconfig:$prefix/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export CPATH="$prefix/usr/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$prefix/usr/bin:$PATH"
  note "unpacked $(ls "$root"/.device-debs/*.deb | wc -l) carried .deb files into $prefix"
fi
deps_rc=0
timeout 45 bash "$root/scripts/deps.sh" >"$OUT/deps.log" 2>&1 || deps_rc=$?
if [ "$deps_rc" -ne 0 ]; then
  note "scripts/deps.sh failed (rc $deps_rc): apt is not reachable from this machine (no network?); its output:"
  tail -n 5 "$OUT/deps.log" | tee -a "$OUT/summary.txt"
fi
rm -f "$OUT/deps.log"
missing=()
for tool in cmake g++ pkg-config; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
[ -x "$nvcc" ] || missing+=("nvcc ($nvcc)")
for pair in CLI/CLI.hpp:libcli11-dev nlohmann/json.hpp:nlohmann-json3-dev pcre2.h:libpcre2-dev \
  httplib.h:libcpp-httplib-dev gtest/gtest.h:libgtest-dev benchmark/benchmark.h:libbenchmark-dev \
  histedit.h:libedit-dev; do
  if ! echo "#include <${pair%%:*}>" | g++ -std=c++20 -DPCRE2_CODE_UNIT_WIDTH=8 -E -x c++ - >/dev/null 2>&1; then
    missing+=("${pair##*:}")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  note "missing, the build will fail without them: ${missing[*]}"
else
  note "every package the build needs is here"
fi
export TESSERA_SHARED="${TESSERA_SHARED:-}"
for d in "$root/.device-shared" "$root/shared" "$root/../shared"; do
  if [ -z "$TESSERA_SHARED" ] && [ -d "$d/models" ]; then TESSERA_SHARED="$(cd "$d" && pwd)"; fi
done
note "reference files (TESSERA_SHARED): ${TESSERA_SHARED:-none: the golden tests will skip}"

# ---- the GPU ----------------------------------------------------------------------------------
section "nvidia-smi"
if command -v nvidia-smi >/dev/null 2>&1; then
  { nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
    --format=csv; } >"$OUT/nvidia-smi.txt" 2>&1 || true
  tail -n 2 "$OUT/nvidia-smi.txt" | tee -a "$OUT/summary.txt"
else
  note "no nvidia-smi on this machine"
fi

# ---- build ------------------------------------------------------------------------------------
if has build || [ ! -x "$cli" ]; then
  section "configure and build $build (sm_90, $jobs jobs)"
  gen=()
  if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
  build_rc=0
  {
    cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DTESSERA_CUDA=ON \
      -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 -DTESSERA_TESTS=ON -DTESSERA_BENCH=ON &&
      cmake --build "$build" -j"$jobs" --target tessera_cli tessera_cuda_bandwidth
  } >"$OUT/build.log" 2>&1 || build_rc=$?
  note "build of the library and the command: rc $build_rc at ${SECONDS}s"
  if [ "$build_rc" -ne 0 ]; then
    tail -n 25 "$OUT/build.log"
    failed "build (build.log)"
    note "nothing more can run"
    exit 1
  fi
fi

# The synthetic models are written single-threaded: start them now, behind the test
# build and the tests.
tiny_pid="" big_pid=""
if has bench; then
  mkdir -p "$models"
  free_gb=$(($(df -Pk "$models" | awk 'NR == 2 { print $4 }') / 1048576))
  synth() {  # name preset: an F16 model at $models/name-f16.gguf
    local t0
    t0=$(date +%s)
    [ -s "$models/$1-f16.gguf" ] && { echo "already there"; return 0; }
    "$cli" synth -o "$models/$1-f16.gguf" --preset "$2" --type f16 --seed 1
    echo "written in $(($(date +%s) - t0)) s"
  }
  synth tinyllama tinyllama-1.1b >"$models/synth-tinyllama.log" 2>&1 &
  tiny_pid=$!
  if [ "$free_gb" -ge 40 ]; then
    synth llama7b llama-7b >"$models/synth-llama7b.log" 2>&1 &
    big_pid=$!
  else
    note "only $free_gb GB free under $models: the 7B models (29 GB) are skipped"
  fi
fi

# ---- tests ------------------------------------------------------------------------------------
if has test; then
  section "build the test suites"
  build_rc=0
  cmake --build "$build" -j"$jobs" --target tessera_unit_tests tessera_ops_tests tessera_golden_tests \
    >>"$OUT/build.log" 2>&1 || build_rc=$?
  note "build of the tests: rc $build_rc at ${SECONDS}s ($(grep -c 'warning' "$OUT/build.log" || true) warning lines in build.log)"
  if [ "$build_rc" -ne 0 ]; then
    tail -n 25 "$OUT/build.log"
    failed "test build (build.log)"
  fi
  # Every suite of tests/ops/cuda_*_test.cpp and tests/golden/cuda_offload_test.cpp is
  # named Cuda*, as are the host-side unit tests of the backend; GpuPlacement: -ngl's layers.
  section "tests: ctest -R 'Cuda|GpuPlacement' (ops, golden offload, unit)"
  test_rc=0
  TESSERA_SHARED="$TESSERA_SHARED" timeout "$(cap 300)" ctest --test-dir "$build" -R 'Cuda|GpuPlacement' \
    -j"$jobs" --timeout 120 --output-on-failure >"$OUT/tests.txt" 2>&1 || test_rc=$?
  note "tests: rc $test_rc; $(grep -E 'tests passed|tests failed' "$OUT/tests.txt" || echo 'no ctest summary')"
  note "skipped: $(grep -c '(Skipped)' "$OUT/tests.txt" || true) (why: tests.txt)"
  sed -n '/The following tests FAILED/,$p' "$OUT/tests.txt" | head -n 40
  [ "$test_rc" -eq 0 ] || failed "tests (tests.txt)"
fi

# ---- bandwidth and benchmarks -------------------------------------------------------------------
if has bench; then
  section "device bandwidth: tessera_cuda_bandwidth (4 GiB, best of 5)"
  bw_rc=0
  timeout "$(cap 60)" "$build/tessera_cuda_bandwidth" >"$OUT/bandwidth.txt" 2>&1 || bw_rc=$?
  tee -a "$OUT/summary.txt" <"$OUT/bandwidth.txt"
  [ "$bw_rc" -eq 0 ] || failed "bandwidth probe (rc $bw_rc)"

  : >"$OUT/bench.txt"
  # bench LABEL FILE REPS: tessera bench -p 512 -n 128 -ngl 99 into bench.txt.
  bench() {
    local rc=0 t0=$SECONDS
    echo "### $1 ($(du -h "$2" | cut -f1)), -r $3" | tee -a "$OUT/bench.txt"
    timeout "$(cap 240)" "$cli" bench -m "$2" -p 512 -n 128 -r "$3" -ngl 99 -t 4 >>"$OUT/bench.txt" 2>&1 || rc=$?
    note "bench $1: rc $rc, $((SECONDS - t0)) s"
    [ "$rc" -eq 0 ] || failed "bench $1 (bench.txt)"
  }
  # quantize NAME TYPE: $models/NAME-f16.gguf to $models/NAME-TYPE.gguf with every core.
  quantize() {
    local rc=0 t0=$SECONDS
    [ -s "$models/$1-$2.gguf" ] && return 0
    timeout "$(cap 180)" "$cli" quantize "$models/$1-f16.gguf" "$models/$1-$2.gguf" "$2" -t "$jobs" \
      >"$models/quantize-$1-$2.log" 2>&1 || rc=$?
    note "quantize $1 $2: rc $rc, $((SECONDS - t0)) s"
    [ "$rc" -eq 0 ] || { failed "quantize $1 $2"; tail -n 5 "$models/quantize-$1-$2.log"; return 1; }
  }
  # wait_synth PID NAME: waits for the background synth while NEED seconds stay in the budget.
  wait_synth() {
    local pid="$1" name="$2" need="$3" rc=0
    while kill -0 "$pid" 2>/dev/null; do
      if ! fits "$need"; then
        kill "$pid" 2>/dev/null || true
        note "synth $name: stopped, the budget ran out"
        return 1
      fi
      sleep 2
    done
    wait "$pid" || rc=$?
    note "synth $name: rc $rc, $(tail -n 1 "$models/synth-$name.log")"
    [ "$rc" -eq 0 ] || { failed "synth $name"; return 1; }
  }

  section "benchmarks: TinyLlama-1.1B, -p 512 -n 128 -ngl 99"
  if wait_synth "$tiny_pid" tinyllama 60; then
    bench "tinyllama-1.1b F16" "$models/tinyllama-f16.gguf" 3
    for type in Q8_0 Q4_K_M Q4_0; do
      if fits 40 && quantize tinyllama "$type"; then
        bench "tinyllama-1.1b $type" "$models/tinyllama-$type.gguf" 3
      elif ! fits 40; then
        note "skipped tinyllama $type: $(left) s left"
      fi
    done
  fi

  section "benchmarks: LLaMA-7B shape, -p 512 -n 128 -ngl 99"
  if [ -n "$big_pid" ] && wait_synth "$big_pid" llama7b 100; then
    # Most telling first; each quantized file is removed after its bench (disk).
    for type in Q4_0 Q4_K_M Q8_0; do
      if ! fits 75; then
        note "skipped llama-7b $type: $(left) s left"
        continue
      fi
      if quantize llama7b "$type"; then
        bench "llama-7b $type" "$models/llama7b-$type.gguf" 3
        rm -f "$models/llama7b-$type.gguf"
      fi
    done
    if fits 90; then
      bench "llama-7b F16" "$models/llama7b-f16.gguf" 3
    elif fits 45; then
      bench "llama-7b F16" "$models/llama7b-f16.gguf" 1
    else
      note "skipped llama-7b F16: $(left) s left"
    fi
  fi
  [ -z "$big_pid" ] || kill "$big_pid" 2>/dev/null || true
  [ -z "$tiny_pid" ] || kill "$tiny_pid" 2>/dev/null || true
  cat "$OUT/bench.txt"
fi

section "done"
if [ ${#failures[@]} -gt 0 ]; then
  note "failures: ${#failures[@]}: ${failures[*]}"
  exit 1
fi
note "no failures"
