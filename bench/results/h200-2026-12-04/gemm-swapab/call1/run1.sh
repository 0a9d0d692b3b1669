#!/usr/bin/env bash
# H200 call 1 (swapab): the linked swap-AB small-M path: a probe, checks, the bench at small M, sanitizers, ncu.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader; python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; sha256sum cubins/*.cubin) > "$R/gpu.txt" 2>&1
S=$SECONDS; T0=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s" | tee -a "$R/steps.txt"; S=$SECONDS; }
# 0. probe: error patterns on small problems
timeout 30 python3 probe.py linked_swapab > "$R/probe.txt" 2>&1; step probe $?
cat "$R/probe.txt"
# 1. correctness: both swap-AB links and the three-way linked dispatch, M 1 7 16 17 31 32 33 64 128
#    (32/33: the dispatch's boundary), K 4096 N 28672; and at odd K 960 (15 k-steps) N 1280 (10 tiles)
K1="linked_swapab:dp,linked_swapab16:dp,linked_auto"
{ timeout 50 $B --kernels $K1 --check-only --check-shapes 1,7,16,17,31,32,33,64,128 --shapes "" --baselines "" --json "$R/check_a.json";
  timeout 25 $B --kernels $K1 --check-only --check-shapes 1,7,16,32 --shapes "" --baselines "" --k 960 --n 1280 --json "$R/check_b.json"; } > "$R/check.txt" 2>&1; step check $?
grep -c '"ok": false' "$R"/check_*.json; grep -v "^{" "$R/check.txt" | grep -E "NO|yes" | head -40
# 2. bench: the linked dispatch, the swap-AB levers, the small-M link it replaces, every fast baseline, one process
K2="linked_auto,linked_swapab16:dp@16,linked_swapab:dp:l2b128@16/32,linked_swapab:dp:l2none@16/32,linked_small:dp@16/32"
timeout 150 $B --kernels "$K2" --check-shapes "" --shapes 16,32,64,128 --baselines gemm,eager,static,dynamic,read --clean-flush-shapes 16 \
  --json "$R/bench.json" > "$R/bench.txt" 2>&1; step bench $?
[ -f "$R/bench.json" ] || python3 -c "import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))" "$R/bench.partial.jsonl" > "$R/bench.json"
$B --merge "$R/bench.json" | tail -6
# 3. sanitizers on the linked swap-AB kernel at K 512 N 1024 (8 tiles), M 7 16 32
for tool in memcheck synccheck racecheck; do
  if [ $((SECONDS-T0)) -lt 330 ]; then
    timeout 30 compute-sanitizer --tool $tool --report-api-errors no --print-limit 100 $B --kernels linked_swapab:dp --check-only \
      --check-shapes 7,16,32 --shapes "" --k 512 --n 1024 --baselines "" > "$R/$tool.txt" 2>&1; step $tool $?
    grep -h "SUMMARY\|hazard" "$R/$tool.txt" | tail -2
  fi
done
# 4. ncu at M = 16: swap-AB (32 and 16 rows), the small-M link, cuBLAS
if [ $((SECONDS-T0)) -lt 360 ]; then
  timeout 60 ncu --clock-control none -k regex:'kl_dispatch|nvjet|xmma|sm90|gemm' --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum,lts__t_bytes.sum \
    python3 ncu_target.py > "$R/ncu_small.txt" 2>&1; step ncu_small $?
  grep -E "kl_dispatch|nvjet|xmma|dram__bytes_read|Duration|DRAM Through|smsp__inst_executed" "$R/ncu_small.txt" | head -40
fi
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R"/*.partial.jsonl
tar -czf "$OUT/call1.tgz" -C "$R" .
cp "$R/bench.txt" "$R/steps.txt" "$OUT/" 2>/dev/null
true
