#!/usr/bin/env bash
# H200: M = 64 / 128, the small link's modes and the c1 link against every path replayed from a CUDA graph.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
S=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s" | tee -a "$R/steps3.txt"; S=$SECONDS; cp "$R"/* "$OUT"/ 2>/dev/null; }
K="linked_auto linked_small:dp linked_small:sk linked_small:sk2 linked_small:dp:pf2 linked_small:dp:pf4 linked_small:sk:pf2 linked_c1:sk:r16:p3 linked_c1:sk2:r16:p3"
timeout 400 python3 graphs_small.py 128,64 "$R/graphs_m128.json" 3 $K > "$R/graphs_m128.txt" 2>&1; step graphs_m128 $?
grep '^{"m"' "$R/graphs_m128.txt" | cut -c1-1400; tail -3 "$R/graphs_m128.txt"
