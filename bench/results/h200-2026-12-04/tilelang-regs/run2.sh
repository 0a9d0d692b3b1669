#!/usr/bin/env bash
# H200, second call: interleaved timing (bench/gemm_swiglu.py --parity: the kernels launched in rotating
# order, round after round, median ratio with a 95% bootstrap interval; outputs first compared bit for
# bit) of the register build against its one-unit control, against the CUDA epilogue with staging and
# against the TileLang epilogue with staging. The first call (run.sh) timed the kernels one after the
# other, and the position in that sequence moved a kernel's time by up to 5%.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/tlreg-results2; mkdir -p "$R"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site ../../.whl/*.whl > "$R/pip.txt" 2>&1
export PYTHONPATH=/tmp/site
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) > "$R/gpu2.txt" 2>&1
sha256sum gs_cuda/kernel.cubin gs_tilelang/kernel.cubin gs_regs/kernel.cubin control/kernel.cubin >> "$R/gpu2.txt"
B="python3 src/bench/gemm_swiglu.py"
timeout 60 $B gs_regs --parity control --shapes 200,2048 --rounds 10 --json "$R/vs_control.json" > "$R/vs_control.txt" 2>&1
echo "vs_control rc=$? t=${SECONDS}s" | tee -a "$R/gpu2.txt"
timeout 120 $B gs_regs --parity gs_cuda --shapes 16,128,2048,8192 --rounds 30 --json "$R/vs_cuda.json" > "$R/vs_cuda.txt" 2>&1
echo "vs_cuda rc=$? t=${SECONDS}s" | tee -a "$R/gpu2.txt"
timeout 120 $B gs_regs --parity gs_tilelang --shapes 16,128,2048,8192 --rounds 30 --json "$R/vs_tilelang.json" > "$R/vs_tilelang.txt" 2>&1
echo "vs_tilelang rc=$? t=${SECONDS}s" | tee -a "$R/gpu2.txt"
tar -C "$R" -czf "${OUT:-/tmp/out}/results2.tgz" . && cp "$R/gpu2.txt" "${OUT:-/tmp/out}/"
