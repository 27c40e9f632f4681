#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan + UBSan, in build-fuzz) and runs them.
#   scripts/fuzz.sh [TARGET|all] [SECONDS]  fuzz each target for SECONDS (default 60),
#                                           two at a time (TESSERA_FUZZ_JOBS)
#   scripts/fuzz.sh --replay                every corpus file through its harness, once
#   scripts/fuzz.sh --ci                    --replay, then 30 s of fuzzing per target
#   scripts/fuzz.sh --seeds                 rewrites the seed-* files of tests/fuzz/corpus
# The corpora in tests/fuzz/corpus/<target> are read, never written: new inputs go to
# build-fuzz/corpus/<target>, crashes to build-fuzz/findings/<target>/ (minimise one with
# `tessera_fuzz_<target> -minimize_crash=1 FILE`, then add it to the corpus as crash-*).
# TESSERA_FUZZ_RUNS=N stops each target after N executions. The last line of each run
# (executions, coverage) goes to build-fuzz/stats/<target>.txt; docs/robustness.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TESSERA_FUZZ_BUILD:-$root/build-fuzz}"
corpus="$root/tests/fuzz/corpus"
bash "$root/scripts/deps.sh" --fuzz
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_FUZZ=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  -DTESSERA_TESTS=OFF -DTESSERA_BENCH=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz
mapfile -t all_targets < <(cd "$root/tests/fuzz" && ls fuzz_*.cpp | grep -v fuzz_support | sed 's/^fuzz_//; s/\.cpp$//')
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# libFuzzer flags of a target: its dictionary, per-input time and memory limits.
flags_of() {
  local t="$1" dict=""
  case "$t" in
    gguf|lora|state) dict="$root/tests/fuzz/dict/gguf.dict" ;;
    grammar) dict="$root/tests/fuzz/dict/grammar.dict" ;;
    json_schema|server|tokenizer_json) dict="$root/tests/fuzz/dict/json.dict" ;;
    jinja) dict="$root/tests/fuzz/dict/jinja.dict" ;;
  esac
  local max_len=262144
  [ "$t" = jinja ] && max_len=16384  # real templates are under 10 KB
  echo "-timeout=20 -rss_limit_mb=2560 -max_len=$max_len ${dict:+-dict=$dict}"
}

replay() {
  local failed=0
  for t in "${all_targets[@]}"; do
    local files=("$corpus/$t"/*)
    echo "fuzz: replaying ${#files[@]} inputs through $t"
    # shellcheck disable=SC2046
    if ! "$build/tessera_fuzz_$t" $(flags_of "$t") -runs=1 "${files[@]}" >"$build/replay-$t.log" 2>&1; then
      echo "fuzz: $t failed on its corpus:" >&2
      tail -40 "$build/replay-$t.log" >&2
      failed=1
    fi
  done
  return $failed
}

fuzz_one() {
  local t="$1" seconds="$2"
  mkdir -p "$build/corpus/$t" "$build/findings/$t" "$build/stats"
  local runs="" start
  [ -n "${TESSERA_FUZZ_RUNS:-}" ] && runs="-runs=$TESSERA_FUZZ_RUNS"
  start=$(date +%s)
  # shellcheck disable=SC2046
  # The jinja target also starts from the real templates of the reference data: links to
  # them in the build folder (nothing is copied into the repository).
  local extra=()
  local shared="${TESSERA_SHARED:-$root/../shared}/templates"
  if [ "$t" = jinja ] && [ -d "$shared" ]; then
    mkdir -p "$build/seeds-jinja"
    ln -sf "$shared"/*.jinja "$build/seeds-jinja/"
    extra=("$build/seeds-jinja")
  fi
  if "$build/tessera_fuzz_$t" $(flags_of "$t") -max_total_time="$seconds" $runs -print_final_stats=1 \
       -artifact_prefix="$build/findings/$t/" "$build/corpus/$t" "$corpus/$t" "${extra[@]}" >"$build/fuzz-$t.log" 2>&1; then
    local execs cov
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$build/fuzz-$t.log" | awk '{print $2}')
    cov=$(grep -o 'cov: [0-9]*' "$build/fuzz-$t.log" | tail -1 | awk '{print $2}')
    echo "$t executions=$execs coverage_edges=$cov seconds=$(( $(date +%s) - start ))" | tee "$build/stats/$t.txt"
  else
    echo "fuzz: $t found a problem (build-fuzz/findings/$t/):" >&2
    grep -v '^#' "$build/fuzz-$t.log" | tail -40 >&2
    return 1
  fi
}

fuzz_all() {
  local seconds="$1"; shift
  local jobs="${TESSERA_FUZZ_JOBS:-2}" failed=0 pids=()
  for t in "$@"; do
    fuzz_one "$t" "$seconds" & pids+=($!)
    if [ ${#pids[@]} -ge "$jobs" ]; then wait "${pids[0]}" || failed=1; pids=("${pids[@]:1}"); fi
  done
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  return $failed
}

case "${1:-all}" in
  --seeds)
    find "$corpus" -name 'seed-*' -delete
    "$build/tessera_fuzz_seeds" "$corpus"
    du -sh "$corpus" ;;
  --replay) replay ;;
  --ci) replay && fuzz_all 30 "${all_targets[@]}" ;;
  all) fuzz_all "${2:-60}" "${all_targets[@]}" ;;
  *)
    [ -x "$build/tessera_fuzz_$1" ] || { echo "fuzz: no target '$1' (targets: ${all_targets[*]})" >&2; exit 2; }
    fuzz_one "$1" "${2:-60}" ;;
esac
