#!/usr/bin/env bash
# H200 call 1 (gemmlink): the linked persistent GEMM + SwiGLU beside its one-unit build and the PyTorch paths.
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader; python3 -c "import torch,triton;print(torch.__version__,triton.__version__)") > "$R/gpu.txt" 2>&1
S=$SECONDS
# 1. correctness first (fast): linked and its one-unit twin at the odd shapes, K 4096, N 28672
timeout 60 $B --kernels linked:sk:r16,coop256_c2:sk:r16 --check-only --shapes "" --baselines "" \
  --json "$R/check.json" > "$R/check.txt" 2>&1; echo "check rc=$? $((SECONDS-S))s" | tee "$R/steps.txt"; S=$SECONDS
# 2. the bench: linked, one-unit (same schedule), the shipped auto, every fast baseline, one process
timeout 170 $B --kernels linked:sk:r16,coop256_c2:sk:r16,auto --check-shapes "" \
  --baselines gemm,eager,static,dynamic --json "$R/bench.json" > "$R/bench.txt" 2>&1; echo "bench rc=$? $((SECONDS-S))s" | tee -a "$R/steps.txt"; S=$SECONDS
[ -f "$R/bench.json" ] || python3 -c "import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))" "$R/bench.partial.jsonl" > "$R/bench.json"
# 3. sanitizers on the linked kernel at small shapes (M 48: one m-tile, stream-K; M 200: two m-tiles)
for tool in memcheck racecheck synccheck; do
  timeout 50 compute-sanitizer --tool $tool --print-limit 20 $B --kernels linked:sk:r16 --check-only \
    --check-shapes 48,200 --shapes "" --k 512 --n 1024 --baselines "" > "$R/$tool.txt" 2>&1
  echo "$tool rc=$? $((SECONDS-S))s" | tee -a "$R/steps.txt"; S=$SECONDS
done
# 4. Inductor max-autotune of the whole up-projection, as long as the call lasts
timeout 100 $B --kernels "" --check-shapes "" --baselines autotune --autotune-shapes 16,128,512,2048,8192 \
  --budget-s 60 --json "$R/autotune.json" > "$R/autotune.txt" 2>&1; echo "autotune rc=$? $((SECONDS-S))s" | tee -a "$R/steps.txt"
[ -f "$R/autotune.json" ] || [ ! -f "$R/autotune.partial.jsonl" ] || python3 -c "import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))" "$R/autotune.partial.jsonl" > "$R/autotune.json"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R"/*.partial.jsonl
$B --merge "$R/bench.json" | grep -v "^{" | tail -30
grep -h "ERROR SUMMARY" "$R"/memcheck.txt "$R"/racecheck.txt "$R"/synccheck.txt
grep -c '"ok": false' "$R/check.json" "$R/bench.json"
