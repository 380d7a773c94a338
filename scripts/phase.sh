#!/usr/bin/env bash
# Run one phase of `make demo` (scripts/phase.sh NAME COMMAND...): say when it starts and ends,
# and, when PHASES_FILE is set, append "NAME<TAB>seconds" to it (appends from phases run side by
# side under make -j do not mix: each is one short write). `scripts/phase.sh --table FILE` prints
# the phases recorded in FILE as a table.
set -euo pipefail
if [[ "$1" == --table ]]; then
    awk -F '\t' '{ printf "  %-40s %7.1f s  %s\n", $1, $2, ($2 >= 60 ? sprintf("(%dm %02ds)", $2 / 60, $2 % 60) : "") }' "$2"
    exit 0
fi
name=$1
shift
echo "==> ${name}" >&2
start=$(date +%s.%N)
"$@"
seconds=$(awk -v start="$start" -v end="$(date +%s.%N)" 'BEGIN { printf "%.1f", end - start }')
echo "<== ${name}: ${seconds} s" >&2
if [[ -n "${PHASES_FILE:-}" ]]; then
    mkdir -p "$(dirname "$PHASES_FILE")"
    printf '%s\t%s\n' "$name" "$seconds" >>"$PHASES_FILE"
fi
