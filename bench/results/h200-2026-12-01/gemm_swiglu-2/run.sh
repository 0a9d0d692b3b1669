#!/usr/bin/env bash
# Device side (nvidia-h200), from the repository root: the gemm_swiglu links built on the CPU by
# .gpu/gemm/build.sh (in .gpu/gemm/links), checked, sanitized, timed. Every step under timeout;
# results in $OUT. Priority order: correctness, racecheck, the bench table, parity, the rest.
source .gpu/prelude.sh
R=${OUT:-/tmp/gemm-out}
mkdir -p "$R"
R=$(cd "$R" && pwd)
cd .gpu/gemm/tree
export PYTHONPATH=$PWD:$PYTHONPATH
L=.gpu/gemm/links
echo fd4d05a > "$R/commit.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/gpu.txt" 2>&1
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> "$R/gpu.txt" 2>&1
step() { local t=$1; shift; local f=$1; shift; local s=$SECONDS; timeout "$t" "$@" > "$R/$f" 2>&1; echo "rc=$? ${f} $((SECONDS - s))s" | tee -a "$R/steps.txt"; }
SAN="compute-sanitizer --report-api-errors no --error-exitcode 3"
SMALL="--check-only --shapes 200 --k 256 --n 256"
step 60 check.txt python3 bench/gemm_swiglu.py $L/wgmma $L/mma_sync $L/smem_acc --check-only --shapes 16,200,384 --k 512 --n 1024
step 45 wgmma-racecheck.txt $SAN --tool racecheck python3 bench/gemm_swiglu.py $L/wgmma $SMALL
step 130 bench.txt python3 bench/gemm_swiglu.py $L/wgmma $L/mma_sync $L/smem_acc --json "$R/bench.json"
step 45 mma_sync-racecheck.txt $SAN --tool racecheck python3 bench/gemm_swiglu.py $L/mma_sync $SMALL
step 50 parity-wgmma.txt python3 bench/gemm_swiglu.py $L/wgmma --parity $L/wgmma_control --shapes 128,2048,8192 --rounds 15 --json "$R/parity-wgmma.json"
step 30 wgmma-synccheck.txt $SAN --tool synccheck python3 bench/gemm_swiglu.py $L/wgmma $SMALL
step 30 wgmma-memcheck.txt $SAN --tool memcheck python3 bench/gemm_swiglu.py $L/wgmma $SMALL
cuobjdump -sass $L/wgmma/kernel.cubin > "$R/wgmma-sass.txt" 2>&1
tail -n 40 "$R/bench.txt"; cat "$R/steps.txt"; grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" "$R"/*check.txt
