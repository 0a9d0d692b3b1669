#!/usr/bin/env bash
# H200, one call: gemm_swiglu with the CUDA epilogue (staging), the TileLang epilogue (staging) and
# the TileLang epilogue called from the mma warpgroups on their registers (no staging), timed side by
# side in one process, twice in opposite orders; correctness at even and odd M; the register build
# against its one-unit control (bit-identical outputs); the register build under the sanitizers.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/tlreg-results; mkdir -p "$R"  # tarred into $OUT at the end (the run tool returns 8 files)
export PYTHONUNBUFFERED=1
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader;
 python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)") > "$R/gpu.txt" 2>&1
sha256sum gs_cuda/kernel.cubin gs_tilelang/kernel.cubin gs_regs/kernel.cubin control/kernel.cubin >> "$R/gpu.txt"
timeout 100 python3 gemm_swiglu.py gs_cuda gs_tilelang gs_regs --shapes 16,128,2048,8192 --no-compile \
    --json "$R/order1.json" > "$R/order1.txt" 2>&1
echo "order1 rc=$? t=${SECONDS}s" | tee -a "$R/gpu.txt"
timeout 100 python3 gemm_swiglu.py gs_regs gs_tilelang gs_cuda --shapes 16,128,2048,8192 --no-compile \
    --json "$R/order2.json" > "$R/order2.txt" 2>&1
echo "order2 rc=$? t=${SECONDS}s" | tee -a "$R/gpu.txt"
timeout 60 python3 gemm_swiglu.py gs_cuda gs_tilelang gs_regs --shapes 1,33,200,1000,4099 --check-only \
    --json "$R/odd.json" > "$R/odd.txt" 2>&1
echo "odd rc=$? t=${SECONDS}s" | tee -a "$R/gpu.txt"
timeout 60 python3 gemm_swiglu.py gs_regs --parity control --shapes 200,2048 --rounds 5 \
    --json "$R/parity.json" > "$R/parity.txt" 2>&1
echo "parity rc=$? t=${SECONDS}s" | tee -a "$R/gpu.txt"
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 python3 gemm_swiglu.py gs_regs \
      --check-only --shapes 48,200 --k 512 --n 1024 > "$R/$tool.txt" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/$tool.txt" | tr '\n' ' ') t=${SECONDS}s" | tee -a "$R/gpu.txt"
done
tar -C "$R" -czf "${OUT:-/tmp/out}/results.tgz" . && cp "$R/gpu.txt" "${OUT:-/tmp/out}/"
