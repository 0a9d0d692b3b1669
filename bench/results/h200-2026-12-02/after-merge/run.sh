#!/usr/bin/env bash
# H200, from the repository root with carry [".whl", ".gpu/prelude.sh", ".gpu/final"]: the merged
# main's gemm_swiglu pairings (correctness, sanitizers, the bench table, parity with the one-unit
# control), the host side (C examples through kernel.h with the mainloop's host provider, Session),
# every step under timeout; a summary and a tarball of the logs come back.
source .gpu/prelude.sh
export PYTHONPATH=$PWD:$PYTHONPATH
R=${OUT:-/tmp/final-out}; mkdir -p "$R"; R=$(cd "$R" && pwd)
W=$(mktemp -d); L=.gpu/final/links
cat $L/COMMIT > "$W/commit.txt"; nvidia-smi --query-gpu=name,driver_version --format=csv >> "$W/commit.txt" 2>&1
step() { local t=$1; shift; local f=$1; shift; local s=$SECONDS; timeout "$t" "$@" > "$W/$f" 2>&1; echo "rc=$? ${f} $((SECONDS - s))s" | tee -a "$W/steps.txt"; }
SAN="compute-sanitizer --report-api-errors no --error-exitcode 3"
SMALL="--check-only --shapes 200 --k 256 --n 256"
step 60 check.txt python3 bench/gemm_swiglu.py $L/wgmma $L/mma_sync $L/smem_acc --check-only --shapes 16,200,384 --k 512 --n 1024
step 45 wgmma-racecheck.txt $SAN --tool racecheck python3 bench/gemm_swiglu.py $L/wgmma $SMALL
step 45 mma_sync-racecheck.txt $SAN --tool racecheck python3 bench/gemm_swiglu.py $L/mma_sync $SMALL
step 45 smem_acc-racecheck.txt $SAN --tool racecheck python3 bench/gemm_swiglu.py $L/smem_acc $SMALL
step 45 mma_sync-memcheck.txt $SAN --tool memcheck python3 bench/gemm_swiglu.py $L/mma_sync $SMALL
step 45 smem_acc-memcheck.txt $SAN --tool memcheck python3 bench/gemm_swiglu.py $L/smem_acc $SMALL
step 30 wgmma-synccheck.txt $SAN --tool synccheck python3 bench/gemm_swiglu.py $L/wgmma $SMALL
step 30 wgmma-memcheck.txt $SAN --tool memcheck python3 bench/gemm_swiglu.py $L/wgmma $SMALL
step 150 bench.txt python3 bench/gemm_swiglu.py $L/wgmma $L/mma_sync $L/smem_acc --json "$W/bench.json"
step 50 parity-wgmma.txt python3 bench/gemm_swiglu.py $L/wgmma --parity $L/wgmma_control --shapes 128,2048,8192 --rounds 15 --json "$W/parity-wgmma.json"
INC=/usr/local/cuda/include
step 60 gemm-cc.txt cc -std=c99 -O2 -I$L/wgmma -I$INC specs/examples/gemm_swiglu/host/gemm_host.c \
    $L/wgmma/provider_gemm_mainloop_mainloop_host.c -lcuda -lm -o /tmp/gemm_host
step 60 gemm-c.txt bash -c "/tmp/gemm_host 300 512 1024 && /tmp/gemm_host 16 256 64 && /tmp/gemm_host 256 1024 512"
step 60 ring-cc.txt cc -std=c99 -O2 -I$L/ring -I$INC specs/examples/ring/host/ring_host.c -lcuda -o /tmp/ring_host
step 30 ring-c.txt /tmp/ring_host 37 4
step 240 gpu-tests.txt python3 -m pytest -o addopts= -q -m gpu -p no:cacheprovider tests --ignore=tests/diagnostics --ignore=tests/test_import_cycles.py -rfE
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" "$W"/*check.txt > "$W/sanitizer-summary.txt"
tar -C "$W" -czf "$R/results.tar.gz" .
cp "$W/bench.txt" "$W/steps.txt" "$W/sanitizer-summary.txt" "$W/parity-wgmma.txt" "$W/check.txt" "$W/gpu-tests.txt" "$W/gemm-c.txt" "$R/" 2>/dev/null
tail -n 30 "$W/bench.txt"; cat "$W/steps.txt" "$W/sanitizer-summary.txt"; tail -3 "$W/gpu-tests.txt"; tail -n 5 "$W/gemm-c.txt" "$W/ring-c.txt"
