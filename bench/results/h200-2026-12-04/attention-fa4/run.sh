#!/usr/bin/env bash
# H200: FlashAttention 4 beside the linked attention compositions (dense non-causal, causal, sliding
# window, softcap at 4k and 16k, with cuDNN/flash SDPA, one process), then gemm_swiglu (mainloop with
# A's box rows from its params field) checked at odd M. FA4 is installed from .gpu/fa4b and /tmp/fa4x.
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > "$R/gpu.txt" 2>&1
bash ../../bench/gpu/fa4_install.sh ../fa4b /tmp/fa4site /tmp/fa4x/s.so.xz > "$R/fa4_install.txt" 2>&1
echo "fa4 install rc=$? t=${SECONDS}s" | tee -a "$R/gpu.txt"
V=noncausal,causal,window,softcap
timeout 200 python3 attention.py --cubins linked --variants $V --timed $V --seqs 4096,16384 \
    --fa4 /tmp/fa4site --json "$R/attn.json" > "$R/attn.txt" 2>&1
echo "attention rc=$? t=${SECONDS}s" | tee -a "$R/gpu.txt"
grep -v "^{" "$R/attn.txt" | grep -v "UserWarning\|exe_args" | tail -40
timeout 60 python3 gemm_swiglu.py gs_cuda --check-only --shapes 16,48,200,384,1000 --json "$R/gs.json" > "$R/gs.txt" 2>&1
echo "gemm_swiglu check rc=$? t=${SECONDS}s" | tee -a "$R/gpu.txt"
tail -8 "$R/gs.txt"
