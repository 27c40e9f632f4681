#!/usr/bin/env bash
# The main job: install dependencies, build tessera, and generate text with the default
# model built into it (models/README.md: a small LLaMA tessera trained on the King James
# Bible), so no model file or network is needed. Extra arguments go to `tessera run`
# (e.g. -p "In the beginning" -n 200, or -m MODEL for another model).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/deps.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DTESSERA_TESTS=OFF -DTESSERA_MPI=ON >/dev/null
cmake --build "$root/build" -j"$(nproc)" --target tessera_cli
"$root/build/tessera" run -p "And God said" -n 96 --seed 1 "$@"
