#!/usr/bin/env bash
# A bounded soak of `tessera serve` over loopback (not CI: a benchmark; issue 30):
#   bash scripts/serve_soak.sh [MINUTES] [MODEL]      (defaults: 30, ../shared/models/stories260K.gguf)
# Builds the Release tessera and tessera_serve_soak in build/, starts the server on a free
# port, runs 64 clients (10% malformed, 10% leaving mid-request) for MINUTES, then stops
# the server with SIGTERM. Passes when the server stayed up, answered no 5xx, its RSS
# after the warm-up grew by less than 5%, and it exited 0.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
minutes="${1:-30}"
model="${2:-${TESSERA_SHARED:-$root/../shared}/models/stories260K.gguf}"
build="$root/build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTESSERA_BENCH=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target tessera_cli tessera_serve_soak >/dev/null
log="$(mktemp)"
"$build/tessera" serve -m "$model" --port 0 -np 8 -t 1 --embeddings 2>"$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
port=""
for _ in $(seq 600); do
  port="$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$log")"
  if [ -n "$port" ] && grep -q "loaded" "$log"; then break; fi
  sleep 0.1
done
[ -n "$port" ] || { echo "the server did not start:"; cat "$log"; exit 1; }
status=0
"$build/tessera_serve_soak" --port "$port" --pid "$pid" --minutes "$minutes" --clients 64 || status=$?
kill -TERM "$pid"
exit_code=0
wait "$pid" || exit_code=$?
echo "server exit status after SIGTERM: $exit_code; $(grep -c ' 5[0-9][0-9] ' "$log" || true) 5xx lines in its log"
[ "$exit_code" -eq 0 ] || status=1
exit "$status"
