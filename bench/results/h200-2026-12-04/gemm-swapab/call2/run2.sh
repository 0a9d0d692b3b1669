#!/usr/bin/env bash
# H200 call 2 (swapab): the dispatch's swap-AB default (W's L2 promotion none), the x_rows 64 lever
# (M <= 64), a balanced grid (112 CTAs x 2 tiles), ncu of the shipped configuration, and M = 512's levers.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader; sha256sum cubins/*.cubin) > "$R/gpu.txt" 2>&1
S=$SECONDS; T0=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s" | tee -a "$R/steps.txt"; S=$SECONDS; }
# 1. correctness of the x_rows 64 lever and the dispatch, K 4096 N 28672 and odd K 960 N 1280
K1="linked_swapab64:dp,linked_auto"
{ timeout 30 $B --kernels $K1 --check-only --check-shapes 1,33,48,64,65 --shapes "" --baselines "" --json "$R/check_a.json";
  timeout 20 $B --kernels $K1 --check-only --check-shapes 40,64 --shapes "" --baselines "" --k 960 --n 1280 --json "$R/check_b.json"; } > "$R/check.txt" 2>&1; step check $?
grep -c '"ok": false' "$R"/check_*.json
timeout 20 compute-sanitizer --tool memcheck --report-api-errors no $B --kernels linked_swapab64:dp --check-only --check-shapes 48,64 --shapes "" --k 512 --n 1024 --baselines "" > "$R/memcheck64.txt" 2>&1; step memcheck64 $?
grep -h "SUMMARY" "$R/memcheck64.txt"
# 2. bench at M = 16, 32, 64 (swap-AB levers) and 512 (the cluster kernel's levers), one process
K2="linked_auto,linked_swapab:dp@16/32,linked_swapab:dp:l2none:g112@16/32,linked_swapab64:dp:l2none@16/32/64,linked_small:dp@64,linked:sk:r4@512,linked:sk:r1@512,linked:dp:r16@512,linked_small:sk:r4@512,linked_small:dp:r4@512"
timeout 100 $B --kernels "$K2" --check-shapes "" --shapes 16,32,64,128,512 --baselines gemm,eager,static,dynamic --clean-flush-shapes 16 \
  --json "$R/bench.json" > "$R/bench.txt" 2>&1; step bench $?
[ -f "$R/bench.json" ] || python3 -c "import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))" "$R/bench.partial.jsonl" > "$R/bench.json"
$B --merge "$R/bench.json" | tail -5
# 3. ncu at M = 16 of what the dispatch runs
timeout 40 ncu --clock-control none -k regex:'kl_dispatch|nvjet' --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum,lts__t_bytes.sum \
  python3 ncu_target2.py > "$R/ncu_small.txt" 2>&1; step ncu_small $?
grep -E "kl_dispatch|nvjet|dram__bytes_read|Duration|DRAM Through|smsp__inst_executed" "$R/ncu_small.txt" | head -20
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R"/*.partial.jsonl
tar -czf "$OUT/call2.tgz" -C "$R" .
true
