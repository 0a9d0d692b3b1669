#!/usr/bin/env bash
# H200, third call, after the stage's col0 became an assumption (commit 2c43ffe): run2.sh's interleaved
# timing of the register build against its control and both staging builds, the odd-M check of all
# three, and the register build under the sanitizers.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/tlreg-results3; mkdir -p "$R"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site ../../.whl/*.whl > "$R/pip.txt" 2>&1
export PYTHONPATH=/tmp/site
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) > "$R/gpu3.txt" 2>&1
sha256sum gs_cuda/kernel.cubin gs_tilelang/kernel.cubin gs_regs/kernel.cubin control/kernel.cubin >> "$R/gpu3.txt"
B="python3 src/bench/gemm_swiglu.py"
timeout 60 $B gs_regs --parity control --shapes 200,2048 --rounds 10 --json "$R/vs_control3.json" > "$R/vs_control3.txt" 2>&1
echo "vs_control rc=$? t=${SECONDS}s" | tee -a "$R/gpu3.txt"
timeout 120 $B gs_regs --parity gs_cuda --shapes 16,128,2048,8192 --rounds 30 --json "$R/vs_cuda3.json" > "$R/vs_cuda3.txt" 2>&1
echo "vs_cuda rc=$? t=${SECONDS}s" | tee -a "$R/gpu3.txt"
timeout 120 $B gs_regs --parity gs_tilelang --shapes 16,128,2048,8192 --rounds 30 --json "$R/vs_tilelang3.json" > "$R/vs_tilelang3.txt" 2>&1
echo "vs_tilelang rc=$? t=${SECONDS}s" | tee -a "$R/gpu3.txt"
timeout 60 $B gs_cuda gs_tilelang gs_regs --shapes 1,33,200,1000,4099 --check-only --json "$R/odd3.json" > "$R/odd3.txt" 2>&1
echo "odd rc=$? t=${SECONDS}s" | tee -a "$R/gpu3.txt"
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 $B gs_regs \
      --check-only --shapes 48,200 --k 512 --n 1024 > "$R/${tool}3.txt" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/${tool}3.txt" | tr '\n' ' ') t=${SECONDS}s" | tee -a "$R/gpu3.txt"
done
tar -C "$R" -czf "${OUT:-/tmp/out}/results3.tgz" . && cp "$R/gpu3.txt" "${OUT:-/tmp/out}/"
