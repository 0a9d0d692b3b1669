#!/usr/bin/env bash
# H200 call 2: small-M ring variants, large-M epilogue arithmetic and raster, all PyTorch baselines but max-autotune.
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader > "$R/gpu.txt"
S=$SECONDS
timeout 60 $B --baselines "" --json "$R/small.json" \
  --kernels coop128_c1:sk@16/128,coop128k2_c1:sk@16/128,coop128k4r_c1:sk@16/128,pp128_c1:dp@16/128,coop256_c1:sk@16/128,coop128_c1:dp@16/128 \
  > "$R/small.txt" 2>&1; echo "small rc=$? $((SECONDS-S))s"; S=$SECONDS
timeout 75 $B --baselines "" --json "$R/large.json" \
  --kernels coop256_c2:sk@512/2048/8192,coop256_c2_e1:sk@512/2048/8192,coop256_c2_e2:sk@512/2048/8192,coop256_c2_e9:sk@512/2048/8192,coop256_c2:sk:r4@2048/8192,coop256_c2:sk:r16@2048/8192 \
  > "$R/large.txt" 2>&1; echo "large rc=$? $((SECONDS-S))s"; S=$SECONDS
timeout 40 $B --kernels "" --check-shapes "" --baselines gemm,read --json "$R/base.json" \
  > "$R/base.txt" 2>&1; echo "base rc=$? $((SECONDS-S))s"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
$B --merge "$R"/small.json "$R"/large.json "$R"/base.json | grep -v "^\s*$" | grep -v " yes  *- " ; tail -3 "$R/small.txt" "$R/large.txt" | grep -i -E "error|Trace" ; cat "$R/gpu.txt"
