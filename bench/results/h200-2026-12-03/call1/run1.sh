#!/usr/bin/env bash
# H200 call 1 (tree 3b2b18e; cubins from specs/examples/gemm_swiglu/persistent/build.sh, carried in .gpu/gemm/cubins).
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit,temperature.gpu --format=csv | tee "$R/gpu.txt"
python3 -c "import cuda.bindings, torch, triton; print('cuda.bindings', cuda.bindings.__version__, 'torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$R/gpu.txt"
export PYTHONUNBUFFERED=1
timeout 250 python3 gemm_swiglu_persistent.py --cubins cubins --isolate --timeout 55 \
  --kernels coop256_c1:sk,coop256_c2:sk,coop256_c2:dp,coop128_c1:sk,pp128_c1:dp,pp128_c2:dp \
  --baselines gemm,eager,static --json "$R/call1.json" 2>&1 | tee "$R/call1.txt" | grep -v '^{'
echo "rc=$?"
