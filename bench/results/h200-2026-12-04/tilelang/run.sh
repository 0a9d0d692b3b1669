#!/usr/bin/env bash
# H200, one call: gemm_swiglu with the CUDA epilogue and with the TileLang epilogue (fast exp and
# division, no per-element checks), timed side by side; then the TileLang build under the sanitizers.
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader;
 python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)") > "$R/gpu.txt" 2>&1
sha256sum gs_cuda/kernel.cubin gs_tilelang/kernel.cubin >> "$R/gpu.txt"
timeout 90 python3 gemm_swiglu.py gs_cuda gs_tilelang --shapes 16,128,2048,8192 --no-compile \
    --json "$R/tilelang.json" 2>&1 | tee "$R/tilelang.txt"
echo "bench rc=$? t=${SECONDS}s" | tee -a "$R/gpu.txt"
for tool in memcheck racecheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 python3 gemm_swiglu.py gs_tilelang \
      --check-only --shapes 48,200 --k 512 --n 1024 > "$R/$tool.txt" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/$tool.txt" | tr '\n' ' ') t=${SECONDS}s" | tee -a "$R/gpu.txt"
done
