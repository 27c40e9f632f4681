#!/bin/sh
# The finetuning example's text: the fortune cookies Debian ships (package fortunes),
# one fortune per line. Usage: scripts/fortunes_text.sh > fortunes.txt
set -eu
f=/usr/share/games/fortunes/fortunes
[ -f "$f" ] || { echo "fortunes_text.sh: $f not found (apt-get install fortunes)" >&2; exit 1; }
awk 'BEGIN { RS = "%\n" } { gsub(/[ \t]*\n[ \t]*/, " "); gsub(/  +/, " "); sub(/ +$/, ""); if (length($0)) print }' "$f"
