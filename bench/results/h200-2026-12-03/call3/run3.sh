#!/usr/bin/env bash
# H200 call 3 (final): correctness + timing sweep + every PyTorch baseline in ONE process, memcheck, ncu at M = 8192.
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > "$R/gpu.txt"
S=$SECONDS
timeout 105 $B --kernels auto,coop256_c2_e0:sk:r16@2048/8192,coop128_c1:sk@16/128 \
  --baselines gemm,eager,static,dynamic,read --clean-flush-shapes 16 \
  --json "$R/bench.json" > "$R/bench.txt" 2>&1; echo "bench rc=$? $((SECONDS-S))s" | tee "$R/steps.txt"; S=$SECONDS
[ -f "$R/bench.json" ] || python3 -c "import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))" "$R/bench.partial.jsonl" > "$R/bench.json"
timeout 35 compute-sanitizer --tool memcheck --print-limit 20 $B --kernels auto,coop128_c1:sk --check-only \
  --check-shapes 48,200 --shapes "" --k 512 --n 1024 --baselines "" > "$R/memcheck.txt" 2>&1; echo "memcheck rc=$? $((SECONDS-S))s" | tee -a "$R/steps.txt"; S=$SECONDS
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R/bench.partial.jsonl"
$B --merge "$R/bench.json" | grep -v " yes  *- " | grep -v "^{"
grep -E "ERROR SUMMARY|error" "$R/memcheck.txt" | tail -3; grep -E "Duration|Throughput|DRAM|SM Busy|Elapsed" "$R/ncu-8192.txt" | head -12
