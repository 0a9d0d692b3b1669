#!/usr/bin/env bash
# H200: the W-read floor from three independent kernel families, then the graph-replayed table at M = 16 / 64 / 128.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader; sha256sum cubins/*) > "$R/gpu.txt" 2>&1
S=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s" | tee -a "$R/steps.txt"; S=$SECONDS; cp "$R"/* "$OUT"/ 2>/dev/null; }
timeout 240 python3 weight_read_floor.py --cuda --json "$R/floor.json" > "$R/floor.txt" 2>&1; step floor $?
grep '^#' "$R/floor.txt"; tail -3 "$R/floor.txt" | grep -v '^#'
timeout 300 python3 graphs_small.py 16,64,128 "$R/graphs_small.json" 3 linked_auto > "$R/graphs_small.txt" 2>&1; step graphs_small $?
grep '^{' "$R/graphs_small.txt" | cut -c1-900; tail -2 "$R/graphs_small.txt"
