#!/usr/bin/env bash
# Every commit after SINCE has a subject of at most 72 characters (the house rule; older history
# predates it). A clone without SINCE (a shallow one) checks what it has.
set -euo pipefail
SINCE=c2390d1f1f661b7943dda4cb99ddf7be4ba25072
cd "$(dirname "$0")/.."
if git cat-file -e "$SINCE^{commit}" 2>/dev/null; then range="$SINCE..HEAD"; else range="HEAD"; fi
long=$(git log --no-merges --format='%h %s' "$range" | awk '{ subject = substr($0, index($0, " ") + 1) } length(subject) > 72')
if [ -n "$long" ]; then
  echo "commit subjects over 72 characters:" >&2
  echo "$long" >&2
  exit 1
fi
