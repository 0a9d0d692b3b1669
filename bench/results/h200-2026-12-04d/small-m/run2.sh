#!/usr/bin/env bash
# H200: linked_auto at M = 16 / 128 against every path replayed from a CUDA graph, then the python-call table again.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
S=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s" | tee -a "$R/steps2.txt"; S=$SECONDS; cp "$R"/* "$OUT"/ 2>/dev/null; }
timeout 300 python3 graphs_small.py 16,128 "$R/graphs_small.json" 3 linked_auto > "$R/graphs_small.txt" 2>&1; step graphs_small $?
grep '^{' "$R/graphs_small.txt" | cut -c1-900; tail -3 "$R/graphs_small.txt"
timeout 250 python3 table_rounds.py 16,128 "$R/table_small2.json" 3 linked_auto > "$R/table_small2.txt" 2>&1; step table_small2 $?
grep '^{"m"' "$R/table_small2.txt" | cut -c1-700
