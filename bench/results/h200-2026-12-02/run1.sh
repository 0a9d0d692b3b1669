#!/usr/bin/env bash
# H200 exploratory call: correctness of the variants, timing (base / skip / skipfast vs cuBLAS),
# the padded-A diagnostic at small M, and Nsight Compute sections at M = 16, 128 and 2048.
source .gpu/prelude.sh
export PYTHONPATH=$PWD/.gpu/gemm/tree:$PYTHONPATH
R=${OUT:-/tmp/out}; mkdir -p "$R"; W=$(mktemp -d); L=.gpu/gemm/links
B=.gpu/gemm/tree/bench/gemm_swiglu.py
step() { local t=$1; shift; local f=$1; shift; local s=$SECONDS; timeout "$t" "$@" > "$W/$f" 2>&1; echo "rc=$? ${f} $((SECONDS - s))s" | tee -a "$W/steps.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$W/gpu.txt" 2>&1
step 60 check.txt python3 $B $L/base $L/skip $L/skipfast --check-only --shapes 16,48,100,200,320 --k 512 --n 1024
step 200 bench.txt python3 $B $L/base $L/skip $L/skipfast --json "$W/bench.json"
step 60 pad.txt python3 $B $L/skip --shapes 16,128 --pad-a --no-compile
NCU="ncu --clock-control none -k kl_dispatch -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats"
for m in 16 128 2048; do step 90 ncu-$m.txt $NCU python3 $B $L/skip --check-only --shapes $m --no-compile; done
tar -C "$W" -czf "$R/results.tar.gz" .
cp "$W/bench.txt" "$W/steps.txt" "$W/check.txt" "$W/pad.txt" "$W/ncu-2048.txt" "$W/ncu-16.txt" "$R/" 2>/dev/null
cat "$W/steps.txt"; tail -n 32 "$W/bench.txt"; tail -n 8 "$W/pad.txt"; tail -n 12 "$W/check.txt"
