#!/usr/bin/env bash
# The main job: install dependencies, build tessera, and generate text with a model.
# Uses ../shared/models/stories260K.gguf when it is there (or $TESSERA_SHARED/models/...);
# otherwise writes a small random-weight LLaMA with `tessera synth` and runs that.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/deps.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DTESSERA_TESTS=OFF >/dev/null
cmake --build "$root/build" -j"$(nproc)" --target tessera_cli
tessera="$root/build/tessera"

shared="${TESSERA_SHARED:-$root/../shared}"
model="$shared/models/stories260K.gguf"
if [ ! -f "$model" ]; then
  model="$root/build/demo-mini.gguf"
  echo "tessera: $shared/models/stories260K.gguf not found;" \
       "writing a small random-weight model to $model (its text will be gibberish)" >&2
  "$tessera" synth --preset mini -o "$model"
fi
"$tessera" run -m "$model" -p "Once upon a time" -n 64 --temp 0 "$@"
