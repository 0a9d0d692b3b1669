#!/usr/bin/env bash
# H200 call 1 (gemm5): the swap-AB levers x_rows 128 and 64 checked, sanitized (128), timed in graph-replayed
# rotating rounds at M = 64 / 96 / 128 against every path and the W-read floor; ncu at M = 128.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader;
 python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; sha256sum cubins/*.cubin) > "$R/gpu.txt" 2>&1
S=$SECONDS; T0=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s total $((SECONDS-T0))s" | tee -a "$R/steps.txt"; S=$SECONDS; cp "$R"/* "$OUT"/ 2>/dev/null; }
# 1. correctness
{ timeout 60 $B --kernels linked_swapab128:dp:l2none:gb,linked_swapab128:dp,linked_auto --check-only \
    --check-shapes 33,48,64,65,100,127,128 --shapes "" --baselines "" --json "$R/check_128.json";
  timeout 40 $B --kernels linked_swapab64:dp:l2none:gb,linked_swapab64:dp --check-only --check-shapes 1,33,48,63,64 --shapes "" --baselines "" --json "$R/check_64.json";
  timeout 40 $B --kernels linked_swapab128:dp:l2none:gb,linked_swapab128:dp --check-only --check-shapes 48,100,128 --shapes "" --baselines "" \
    --k 960 --n 1280 --json "$R/check_128_odd.json";
  timeout 40 $B --kernels linked_swapab64:dp:l2none:gb --check-only --check-shapes 40,64 --shapes "" --baselines "" \
    --k 960 --n 1280 --json "$R/check_64_odd.json"; } > "$R/check.txt" 2>&1; step check $?
grep -c '"ok": true' "$R/check.txt"; grep -c '"ok": false' "$R/check.txt"; grep -E '"ok": false|Error|error' "$R/check.txt" | head -5
# 2. memcheck / racecheck / synccheck of the 128 lever (K 512, N 1024: 8 tiles)
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --report-api-errors no --print-limit 50 $B --kernels linked_swapab128:dp:l2none:gb --check-only \
    --check-shapes 64,128 --shapes "" --k 512 --n 1024 --baselines "" > "$R/$tool.txt" 2>&1; step $tool $?
  grep -E "ERROR SUMMARY|hazards displayed" "$R/$tool.txt"
done
# 3. graph-replayed rotating rounds, the floor in the same process
K="linked_auto linked_small:dp linked_swapab128:dp:l2none:gb linked_swapab128:dp:gb linked_swapab128:dp:l2none"
timeout 200 python3 graphs_swapab.py 64 "$R/graphs_64.json" 5 $K linked_swapab64:dp:l2none:gb linked_swapab64:dp:gb > "$R/graphs_64.txt" 2>&1; step graphs_64 $?
grep '^{' "$R/graphs_64.txt" | cut -c1-2500; tail -2 "$R/graphs_64.txt"
timeout 300 python3 graphs_swapab.py 128,96 "$R/graphs_128.json" 5 $K > "$R/graphs_128.txt" 2>&1; step graphs_128 $?
grep '^{' "$R/graphs_128.txt" | cut -c1-2500; tail -2 "$R/graphs_128.txt"
# 4. ncu at M = 128: both linked candidates and cuBLAS alone (clean caches, clocks left alone)
timeout 90 ncu --clock-control none -k regex:'kl_dispatch|nvjet|gemm|xmma' --section SpeedOfLight --section WarpStateStats \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum \
  python3 ncu_target.py 128 linked_small:dp linked_swapab128:dp:l2none:gb > "$R/ncu128.txt" 2>&1; step ncu128 $?
grep -E "^  [a-zA-Z_]|gpu__time|dram__|pipe_tensor|inst_executed|Stall|stall" "$R/ncu128.txt" | head -60
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
cp "$R"/* "$OUT"/ 2>/dev/null; true
