#!/usr/bin/env bash
# H200, one call: the wgmma mainloop linked with the CUDA SwiGLU epilogue (staging) and with the
# TileLang epilogue (staging), checked against the float32 reference and timed side by side.
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader;
 python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)") > "$R/gpu.txt" 2>&1
sha256sum gs_cuda/kernel.cubin gs_tilelang/kernel.cubin >> "$R/gpu.txt"
timeout 62 python3 gemm_swiglu.py gs_cuda gs_tilelang --shapes 16,128,2048,8192 --no-compile \
    --json "$R/tilelang.json" 2>&1 | tee "$R/tilelang.txt"
echo "rc=$? t=${SECONDS}s" | tee -a "$R/gpu.txt"
