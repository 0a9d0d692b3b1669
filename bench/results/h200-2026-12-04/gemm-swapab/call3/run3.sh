#!/usr/bin/env bash
# H200 call 3 (swapab): the table of what ships (linked_auto: swap-AB with promotion none and the
# balanced grid at M <= 32), interleaved A/B of the two swap-AB levers, ncu of the shipped kernel at M = 16.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader; sha256sum cubins/*.cubin) > "$R/gpu.txt" 2>&1
S=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s" | tee -a "$R/steps.txt"; S=$SECONDS; }
timeout 90 $B --kernels "linked_auto,linked_swapab:dp:l2none@16/32,linked_swapab:dp@16/32" --check-shapes 1,33 --shapes 16,32,64,128 \
  --baselines gemm,eager,static,dynamic,read --clean-flush-shapes 16 --json "$R/bench.json" > "$R/bench.txt" 2>&1; step bench $?
[ -f "$R/bench.json" ] || python3 -c "import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))" "$R/bench.partial.jsonl" > "$R/bench.json"
$B --merge "$R/bench.json" | tail -4
timeout 30 python3 ab_time.py 16,32 "$R/ab.json" linked_swapab:dp:l2none:gb linked_swapab:dp:l2none linked_swapab:dp:l2none linked_swapab:dp > "$R/ab.txt" 2>&1; step ab $?
cat "$R/ab.txt"
timeout 30 ncu --clock-control none -k regex:'kl_dispatch|nvjet' --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum,lts__t_bytes.sum \
  python3 ncu_target3.py > "$R/ncu_small.txt" 2>&1; step ncu_small $?
grep -E "kl_dispatch|nvjet|dram__bytes_read|Duration|DRAM Through|smsp__inst_executed" "$R/ncu_small.txt" | head -12
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R"/*.partial.jsonl
tar -czf "$OUT/call3.tgz" -C "$R" .
true
