#!/usr/bin/env bash
# H200 call 2: candidates A (idle-warpgroup mainloop + fast-silu epilogue), C (unchanged mainloop +
# the same epilogue), B (A with a tanh.approx silu): correctness, sanitizers (A, C), bench, parity (A, C).
source .gpu/prelude.sh
export PYTHONPATH=$PWD/.gpu/gemm/tree:$PYTHONPATH
R=${OUT:-/tmp/out}; mkdir -p "$R"; W=$(mktemp -d); L=.gpu/gemm/links
B=.gpu/gemm/tree/bench/gemm_swiglu.py
step() { local t=$1; shift; local f=$1; shift; local s=$SECONDS; timeout "$t" "$@" > "$W/$f" 2>&1; echo "rc=$? ${f} $((SECONDS - s))s" >> "$W/steps.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$W/gpu.txt" 2>&1
cat .gpu/gemm/COMMIT > "$W/commit.txt"
step 60 check.txt python3 $B $L/A $L/B $L/C --check-only --shapes 16,48,100,200,320,384 --k 512 --n 1024
SAN="compute-sanitizer --report-api-errors no --error-exitcode 3"
SMALL="--check-only --shapes 48,200 --k 256 --n 256"
for v in A C; do for t in racecheck synccheck memcheck; do step 60 $v-$t.txt $SAN --tool $t python3 $B $L/$v $SMALL; done; done
step 200 bench.txt python3 $B $L/A $L/B $L/C --json "$W/bench.json"
for v in A C; do step 90 parity-$v.txt python3 $B $L/$v --parity $L/${v}_control --shapes 16,128,512,2048,8192 --rounds 15 --json "$W/parity-$v.json"; done
step 60 pad.txt python3 $B $L/A --shapes 16,128 --pad-a --no-compile
step 60 ncu-2048.txt ncu --clock-control none -k kl_dispatch -c 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section MemoryWorkloadAnalysis python3 $B $L/A --check-only --shapes 2048 --no-compile
grep -H "RACECHECK SUMMARY\|ERROR SUMMARY" "$W"/*-*check.txt > "$W/sanitizer-summary.txt"
tar -C "$W" -czf "$R/results.tar.gz" .
cp "$W/bench.txt" "$W/steps.txt" "$W/check.txt" "$W/sanitizer-summary.txt" "$W/parity-A.txt" "$W/parity-C.txt" "$W/pad.txt" "$R/" 2>/dev/null
cat "$W/steps.txt" "$W/sanitizer-summary.txt"; tail -n 32 "$W/bench.txt"; tail -n 6 "$W/parity-A.txt" "$W/parity-C.txt"; tail -n 6 "$W/pad.txt"
