#!/usr/bin/env bash
# Installs the Debian 12 packages tessera builds with (skips what is already there).
# --tests: also what the tests drive (a terminal, curl, node + npm, Chromium).
# --fuzz: also clang and its libFuzzer and sanitizer runtimes (scripts/fuzz.sh).
set -euo pipefail
packages=(cmake make g++ pkg-config libgtest-dev libgmock-dev libbenchmark-dev
          libcli11-dev nlohmann-json3-dev libpcre2-dev libboost-dev libcpp-httplib-dev
          libedit-dev  # line editing and history in `tessera chat`
          libopenmpi-dev openmpi-bin)  # --mpi: a model split across the ranks of an mpirun job
if [ "${1:-}" = "--tests" ]; then
  packages+=(tmux      # the test that drives `tessera chat` in a real terminal
             python3   # reads `bench -o csv` with its csv module
             curl      # the server's curl test
             chromium) # the web page's test (driven by playwright-core from npm)
  # node and npm run the server's client tests (the openai package); a machine that has
  # them from elsewhere keeps its own, since Debian's npm would conflict with that node.
  if ! command -v node >/dev/null 2>&1; then packages+=(nodejs); fi
  if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi
fi
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang libclang-rt-14-dev llvm-14)  # llvm-14: llvm-symbolizer for the stacks
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "tessera: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
