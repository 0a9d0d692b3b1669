#!/usr/bin/env bash
# H200 call 1 (gemm6): the x_rows 128 swap-AB link with two consumer warpgroups (linked_swapab128x2):
# correctness, the tentative linked_auto (64 < M <= 128 -> linked_swapab128x2) checked, graph-replayed
# rotating rounds at M = 96 and 128 beside linked_small:dp, every path and the W-read floor,
# sanitizers at M = 65 / 128, ncu at M = 128.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
X2=linked_swapab128x2
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader;
 python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; sha256sum cubins/*.cubin) > "$R/gpu.txt" 2>&1
S=$SECONDS; T0=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s total $((SECONDS-T0))s" | tee -a "$R/steps.txt"; S=$SECONDS; rm -f "$R"/*.partial.jsonl; tar -czf "$OUT/call1.tgz" -C "$R" . 2>/dev/null; }
# 1. correctness of the new link (three grids/promotions), K 4096 / N 28672 and K 960 / N 1280
{ timeout 60 $B --kernels $X2:dp:l2none:gb,$X2:dp:gb,$X2:dp --check-only --check-shapes 65,96,100,127,128 --shapes "" --baselines "" --json "$R/check_x2.json";
  timeout 40 $B --kernels $X2:dp:l2none:gb,$X2:dp --check-only --check-shapes 72,128 --shapes "" --baselines "" --k 960 --n 1280 --json "$R/check_x2_odd.json"; } > "$R/check.txt" 2>&1; step check $?
grep -c '"ok": true' "$R/check.txt"; grep -c '"ok": false' "$R/check.txt"; grep -E '"ok": false|Error' "$R/check.txt" | head -5
# 2. the tentative dispatch (ship/: LINKED_AUTO 64 < M <= 128 -> linked_swapab128x2:dp:l2none:gb)
{ timeout 60 python3 ship/gemm_swiglu_persistent.py --cubins cubins --kernels linked_auto --check-only --check-shapes 1,16,33,64,65,96,128,129 --shapes "" --baselines "" --json "$R/check_auto.json";
  timeout 40 python3 ship/gemm_swiglu_persistent.py --cubins cubins --kernels linked_auto --check-only --check-shapes 1,33,65,100,128,129 --shapes "" --baselines "" --k 960 --n 1280 --json "$R/check_auto_odd.json"; } > "$R/check_auto.txt" 2>&1; step check_auto $?
grep -c '"ok": true' "$R/check_auto.txt"; grep -c '"ok": false' "$R/check_auto.txt"; grep -E '"ok": false|Error' "$R/check_auto.txt" | head -5
# 3. graph-replayed rotating rounds, the W-read floor in the same process
timeout 150 python3 graphs_swapab.py 96,128 "$R/graphs_128.json" 5 linked_small:dp $X2:dp:l2none:gb $X2:dp:gb $X2:dp:l2none > "$R/graphs_128.txt" 2>&1; step graphs_128 $?
grep -h '^{"m"' "$R"/graphs_*.txt | python3 -c "
import json,sys
for l in sys.stdin:
    r=json.loads(l); print(r['m'], r['best_path'], {k: round(v,5) for k,v in r['median_ms'].items()}); print('  best/k', {k: round(v,3) for k,v in r['best_over_kernel'].items()}, 'k/floor', {k: round(v,3) for k,v in r['kernel_over_floor'].items()})"
tail -1 "$R/graphs_128.txt"
# 4. sanitizers on the new link (K 512, N 1024: 8 tiles) at M = 65 and 128
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --report-api-errors no --print-limit 50 $B --kernels $X2:dp:l2none:gb --check-only \
    --check-shapes 65,128 --shapes "" --k 512 --n 1024 --baselines "" > "$R/$tool.txt" 2>&1; step $tool $?
  grep -E "ERROR SUMMARY|hazards displayed" "$R/$tool.txt"
done
# 5. ncu at M = 128: the new link, linked_small and cuBLAS alone (clean caches, clocks left alone)
timeout 60 ncu --clock-control none -k regex:'kl_dispatch|nvjet|gemm|xmma' --section SpeedOfLight --section WarpStateStats \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum \
  python3 ncu_target.py 128 $X2:dp:l2none:gb linked_small:dp > "$R/ncu128.txt" 2>&1; step ncu128 $?
grep -E "^  [a-zA-Z_]|gpu__time|dram__throughput|pipe_tensor|inst_executed" "$R/ncu128.txt" | head -30
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
step done 0; true
