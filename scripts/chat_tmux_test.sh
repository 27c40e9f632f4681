#!/usr/bin/env bash
# `tessera chat` in a real terminal, driven through tmux as a user would: two turns, a
# Ctrl-C during a long reply, one Ctrl-C at the prompt (a hint), then /exit; the screen
# is checked after each step.
#
# Usage: scripts/chat_tmux_test.sh [TESSERA_BINARY] [MODEL]
#   defaults: build/tessera and $TESSERA_SHARED (or ../shared)/models/stories260K.gguf
# Exit status: 0 passed, 1 failed, 77 skipped (no tmux, or the model is absent).
# SHOW_SCREEN=1 prints the final screen.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build/tessera}"
model="${2:-${TESSERA_SHARED:-$root/../shared}/models/stories260K.gguf}"

if ! command -v tmux >/dev/null 2>&1; then
  echo "SKIP: tmux is not installed"
  exit 77
fi
if [ ! -f "$model" ]; then
  echo "SKIP: $model is absent"
  exit 77
fi
if [ ! -x "$bin" ]; then
  echo "FAIL: $bin is not built"
  exit 1
fi

# A private tmux server (its own socket), so no other tmux session is touched.
sock="tessera-chat-test-$$"
t() { tmux -L "$sock" "$@"; }
trap 't kill-server >/dev/null 2>&1 || true' EXIT

screen() { t capture-pane -p -J -S - -t chat; }
prompts() { screen | grep -cE '^>( |$)' || true; }
fail() {
  echo "FAIL: $1"
  echo "---- screen ----"
  screen | tail -n 30
  exit 1
}
# wait_until SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.1 s.
wait_until() {
  local seconds="$1" what="$2" i
  shift 2
  for ((i = 0; i < seconds * 10; i++)); do
    if "$@"; then return 0; fi
    sleep 0.1
  done
  fail "timed out after ${seconds}s waiting for $what"
}
shows() { screen | grep -qF -- "$1"; }
prompt_count_is() { [ "$(prompts)" -ge "$1" ]; }

# -n 3000 with an 8192 context: a reply takes a noticeable moment (stories260K never ends
# its turn by itself here), long enough to be interrupted. A shell that ignores Ctrl-C
# itself (tessera installs its own handler) prints the exit status when tessera ends.
t new-session -d -s chat -x 160 -y 50
t set-option -t chat remain-on-exit on
t respawn-pane -k -t chat \
  "bash -c \"trap '' INT; '$bin' chat -m '$model' -c 8192 -n 3000 --temp 0 -t 1; echo [exit \\\$?]\""

wait_until 30 "the banner" shows "tessera chat: template chatml"
shows "no chat template" || fail "no warning that the model has no chat template"
wait_until 10 "the first prompt" prompt_count_is 1

t send-keys -t chat "Hello" Enter
wait_until 60 "the first reply to end" prompt_count_is 2
reply="$(screen | grep -A1 -F '> Hello' | tail -n 1)"
[ -n "$reply" ] && [[ "$reply" != ">"* ]] || fail "no reply after the first turn"

reply_started() { [ -n "$(screen | grep -A1 -F '> Tell me a long story' | tail -n +2)" ]; }
t send-keys -t chat "Tell me a long story" Enter
wait_until 30 "the second reply to start" reply_started
t send-keys -t chat C-c
wait_until 60 "the reply to stop" shows "[reply stopped]"
wait_until 10 "the prompt after the stopped reply" prompt_count_is 3

t send-keys -t chat C-c
wait_until 10 "the hint after Ctrl-C at the prompt" shows "Ctrl-C again, /exit or Ctrl-D quits"

t send-keys -t chat "/exit" Enter
wait_until 60 "the program to exit" shows "[exit "
shows "[exit 0]" || fail "a non-zero exit status after /exit"
[ -z "${SHOW_SCREEN:-}" ] || screen
echo "PASS: two turns, Ctrl-C stopped a reply, the prompt hinted at quitting, /exit quit (status 0)"
