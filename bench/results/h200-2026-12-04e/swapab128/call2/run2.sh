#!/usr/bin/env bash
# H200 call 2 (gemm5): the shipped dispatch (x_rows 64 swap-AB link at 32 < M <= 64) checked, the new link
# sanitized, the final graph-replayed table at M = 16 / 64 / 96 / 128 beside the W-read floor, ncu at M = 64.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader;
 python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; sha256sum cubins/*.cubin) > "$R/gpu.txt" 2>&1
S=$SECONDS; T0=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s total $((SECONDS-T0))s" | tee -a "$R/steps.txt"; S=$SECONDS; rm -f "$R"/*.partial.jsonl; tar -czf "$OUT/call2.tgz" -C "$R" . 2>/dev/null; }
# 1. correctness of the dispatch and of the new link
{ timeout 60 $B --kernels linked_auto,linked_swapab64:dp:l2none:gb --check-only --check-shapes 1,16,33,48,64,100,128,129 --shapes "" --baselines "" --json "$R/check_auto.json";
  timeout 40 $B --kernels linked_auto --check-only --check-shapes 1,16,33,40,64,65,128 --shapes "" --baselines "" --k 960 --n 1280 --json "$R/check_auto_odd.json"; } > "$R/check.txt" 2>&1; step check $?
grep -c '"ok": true' "$R/check.txt"; grep -c '"ok": false' "$R/check.txt"; grep -E '"ok": false|Error' "$R/check.txt" | head -5
# 2. sanitizers on the x_rows 64 link (K 512, N 1024: 8 tiles)
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --report-api-errors no --print-limit 50 $B --kernels linked_swapab64:dp:l2none:gb,linked_swapab64:dp --check-only \
    --check-shapes 33,64 --shapes "" --k 512 --n 1024 --baselines "" > "$R/$tool.txt" 2>&1; step $tool $?
  grep -E "ERROR SUMMARY|hazards displayed" "$R/$tool.txt"
done
# 3. the final table: graph-replayed rotating rounds, the W-read floor in the same process
timeout 120 python3 graphs_swapab.py 16 "$R/graphs_16.json" 5 linked_auto linked_swapab:dp:l2none:gb linked_swapab64:dp:l2none:gb linked_small:dp > "$R/graphs_16.txt" 2>&1; step graphs_16 $?
timeout 120 python3 graphs_swapab.py 64 "$R/graphs_64.json" 5 linked_auto linked_swapab64:dp:l2none:gb linked_swapab64:dp:gb linked_small:dp > "$R/graphs_64.txt" 2>&1; step graphs_64 $?
timeout 200 python3 graphs_swapab.py 96,128 "$R/graphs_128.json" 5 linked_auto linked_small:dp linked_swapab128:dp:l2none:gb > "$R/graphs_128.txt" 2>&1; step graphs_128 $?
grep -h '^{"m"' "$R"/graphs_*.txt | python3 -c "
import json,sys
for l in sys.stdin:
    r=json.loads(l); print(r['m'], r['best_path'], {k: round(v,5) for k,v in r['median_ms'].items()}); print('  best/k', {k: round(v,3) for k,v in r['best_over_kernel'].items()}, 'k/floor', {k: round(v,3) for k,v in r['kernel_over_floor'].items()})"
tail -1 "$R/graphs_128.txt"
# 4. ncu at M = 64: the new link, linked_small and cuBLAS alone (clean caches, clocks left alone)
timeout 90 ncu --clock-control none -k regex:'kl_dispatch|nvjet|gemm|xmma' --section SpeedOfLight --section WarpStateStats \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum \
  python3 ncu_target.py 64 linked_swapab64:dp:l2none:gb linked_small:dp > "$R/ncu64.txt" 2>&1; step ncu64 $?
grep -E "^  [a-zA-Z_]|gpu__time|dram__|pipe_tensor|inst_executed|stalled" "$R/ncu64.txt" | head -40
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
step done 0; true
