#!/usr/bin/env bash
# The node clients of `tessera serve`: the official openai SDK (openai.test.mjs), the
# page's logic (webui_logic.test.mjs) and the page in Chromium (webui.test.mjs).
#
#   tests/server/run_node_tests.sh path/to/tessera
#
# Environment: TESSERA_SHARED (default: ../shared next to the repository; the model is
# $TESSERA_SHARED/models/stories260K.gguf), TESSERA_TEST_OUT (logs and the screenshot).
# Exit 77 (skipped) when node/npm are missing, `npm ci` fails (no registry) or the model
# is missing (1 with TESSERA_STRICT_DATA=1); non-zero when a test fails.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }
# Absent reference data: a skip, or a failure with TESSERA_STRICT_DATA=1 (CI has the data).
data_absent() {
  [ "${TESSERA_STRICT_DATA:-}" != 1 ] || { echo "FAIL: reference data absent: $1 (TESSERA_STRICT_DATA=1)"; exit 1; }
  skip "reference data absent: $1"
}

[ $# -ge 1 ] || { echo "usage: $0 TESSERA_BINARY" >&2; exit 2; }
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -x "$bin" ] || { echo "not an executable: $1" >&2; exit 2; }

export TESSERA_BIN="$bin"
export TESSERA_SHARED="${TESSERA_SHARED:-$root/../shared}"
export TESSERA_TEST_OUT="${TESSERA_TEST_OUT:-$root/build/test-out}"
mkdir -p "$TESSERA_TEST_OUT"
model="$TESSERA_SHARED/models/stories260K.gguf"
[ -f "$model" ] || data_absent "$model"

. "$root/scripts/node_modules.sh"
ensure_node_modules "$here" "$TESSERA_TEST_OUT/npm-ci.log"
cd "$here" || exit 2

tests=(webui_logic.test.mjs openai.test.mjs tools.test.mjs)
if [ -x /usr/bin/chromium ]; then
  tests+=(webui.test.mjs)
else
  echo "SKIP: webui.test.mjs (no /usr/bin/chromium)"
fi

# One file at a time (each starts its own servers; the machine may have 2 cores). Every
# test has its own timeout in the files; each file is bounded here too.
failed=()
for t in "${tests[@]}"; do
  echo "== node --test $t"
  timeout -k 10 240 node --test "$t"
  rc=$?
  [ $rc -eq 124 ] && echo "FAIL: $t ran past 240 s"
  [ $rc -eq 0 ] || failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "node tests FAILED: ${failed[*]} (server logs in $TESSERA_TEST_OUT)"
  exit 1
fi
echo "node tests: all passed"
