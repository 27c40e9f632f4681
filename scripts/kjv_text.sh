#!/bin/sh
# The King James Bible as the default model's training text: Debian's `bible` (packages
# bible-kjv and bible-kjv-text) prints it with chapter headings, verse numbers and lines
# wrapped at 80 columns; this keeps the verses, one per line, without their numbers, and
# a blank line between chapters. Usage: scripts/kjv_text.sh > kjv.txt
set -eu
command -v bible >/dev/null || { echo "kjv_text.sh: 'bible' not found (apt-get install bible-kjv)" >&2; exit 1; }
bible gen1:1-rev22:21 | awk '
  /^$/           { blank = 1; next }
  blank && !/^ / { if (verse != "") print verse; verse = ""; if (seen) print ""; seen = 1; blank = 0; next }  # a heading
  /^  [0-9]+ /   { if (verse != "") print verse; sub(/^  [0-9]+ /, ""); verse = $0; blank = 0; next }
                 { verse = verse " " $0; blank = 0 }
  END            { if (verse != "") print verse }'
