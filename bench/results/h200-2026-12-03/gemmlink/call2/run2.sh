#!/usr/bin/env bash
# H200 call 2 (gemmlink): racecheck and synccheck kept, memcheck classified, linked vs one-unit timing interleaved.
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
S=$SECONDS
for tool in memcheck racecheck synccheck; do
  timeout 40 compute-sanitizer --tool $tool --print-limit 100 $B --kernels linked:sk:r16 --check-only \
    --check-shapes 48,200 --shapes "" --k 512 --n 1024 --baselines "" > "$R/$tool.txt" 2>&1
  echo "$tool rc=$? $((SECONDS-S))s" >> "$R/steps.txt"; S=$SECONDS
done
timeout 60 python3 parity_time.py 16,512,2048,8192 "$R/parity.json" > "$R/parity.txt" 2>&1; echo "parity rc=$? $((SECONDS-S))s" >> "$R/steps.txt"
cat "$R/steps.txt"; grep -h "SUMMARY" "$R"/*check.txt; grep -c cuGetProcAddress "$R/memcheck.txt"; grep "Program hit\|Invalid\|Race\|hazard" "$R/memcheck.txt" "$R/racecheck.txt" "$R/synccheck.txt" | sort | uniq -c | head; cat "$R/parity.txt"
