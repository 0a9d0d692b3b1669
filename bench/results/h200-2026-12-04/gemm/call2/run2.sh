#!/usr/bin/env bash
# H200 call 2 (smallm): ncu at M = 16 (call 1's file was not returned), W's L2 promotion A/B interleaved,
# Inductor max-autotune of the whole up-projection.
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > "$R/gpu.txt" 2>&1
S=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s" | tee -a "$R/steps.txt"; S=$SECONDS; }
timeout 40 ncu --clock-control none -k regex:'kl_dispatch|nvjet|xmma|sm90|gemm' --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum,lts__t_bytes.sum python3 ncu_target.py small > "$R/ncu_small.txt" 2>&1; step ncu_small $?
timeout 30 python3 parity_time.py 16,128 "$R/promotion_ab.json" linked_small:dp:l2b128 linked_small:dp linked_small:dp:l2none linked_small:dp > "$R/promotion_ab.txt" 2>&1; step promotion_ab $?
timeout 110 $B --kernels "" --check-shapes "" --shapes 16,128,512 --baselines autotune --autotune-shapes 16,128,512 --budget-s 70 \
  --json "$R/autotune.json" > "$R/autotune.txt" 2>&1; step autotune $?
[ -f "$R/autotune.json" ] || [ ! -f "$R/autotune.partial.jsonl" ] || python3 -c "import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))" "$R/autotune.partial.jsonl" > "$R/autotune.json"
rm -f "$R"/*.partial.jsonl
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
cat "$R/promotion_ab.txt"; grep -E "kl_dispatch|nvjet|xmma|sm90|dram__bytes|Duration|DRAM Through|L2 Hit|lts__t_bytes" "$R/ncu_small.txt" | head -40; grep -v "^{" "$R/autotune.txt" | tail -8
