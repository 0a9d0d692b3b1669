#!/usr/bin/env bash
# H200 call 2 (smallm): two more bench repetitions (new vs base vs cuBLAS + eager / compiled) on the same tree.
source .gpu/prelude.sh
export PYTHONPATH=$PWD/.gpu/smallm/tree:$PYTHONPATH
R=${OUT:-/tmp/out}; mkdir -p "$R"; W=$(mktemp -d); L=.gpu/smallm/links; B=.gpu/smallm/tree/bench/gemm_swiglu.py
step() { local t=$1; shift; local f=$1; shift; local s=$SECONDS; timeout "$t" "$@" > "$W/$f" 2>&1; echo "rc=$? ${f} $((SECONDS - s))s" >> "$W/steps.txt"; }
{ cat .gpu/smallm/COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; } > "$W/commit.txt" 2>&1
step 100 bench-3.txt python3 $B $L/new $L/base --json "$W/bench-3.json"
step 100 bench-4.txt python3 $B $L/new $L/base --json "$W/bench-4.json"
tar -C "$W" -czf "$R/results.tar.gz" .
cat "$W/steps.txt"; for i in 3 4; do grep -v "^{" "$W/bench-$i.txt" | grep -v "^$" | grep -v "matmul only"; done
