#!/usr/bin/env bash
# H200 call 2: branch-free window / chunked masks (power-of-two chunk) — every variant's checks
# again, timing of the changed variants beside causal / non-causal, SDPA and FlexAttention at 4k /
# 16k; then compute-sanitizer memcheck, racecheck and synccheck at one small shape.
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > "$R/gpu.txt" 2>&1
for i in 1 2 3; do
    left=$((65 - SECONDS)); [ $left -lt 15 ] && break
    timeout $left python3 attention.py --cubins cubins --json "$R/c2.json" --skip-file "$R/skip.txt" \
        --variants noncausal,causal,window,chunked,softcap,alibi_causal,blocksparse10,blocksparse25,paged64_causal,paged16_causal,noncausal_d64,causal_d64,noncausal_s3,causal_s3 \
        --timed noncausal,causal,window,chunked --seqs 4096,16384 \
        --flex window@4096,chunked@4096,window@16384,chunked@16384 --flex-budget-s 50 > "$R/c2_$i.txt" 2>&1
    rc=$?; echo "pass $i rc=$rc t=${SECONDS}s" | tee -a "$R/steps.txt"
    [ $rc -ne 3 ] && break
done
[ -f "$R/c2.json" ] || python3 -c "import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))" "$R/c2.partial.jsonl" > "$R/c2.json"
SAN="python3 attention.py --cubins cubins --check-only --no-sdpa --check-shapes 1x2x300 --variants causal,paged64_causal,blocksparse10"
for tool in memcheck racecheck synccheck; do
    S=$SECONDS
    timeout 24 compute-sanitizer --tool $tool --print-limit 10 $SAN > "$R/$tool.txt" 2>&1
    echo "$tool rc=$? $((SECONDS-S))s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/$tool.txt" | tr '\n' ' ')" | tee -a "$R/steps.txt"
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R/c2.partial.jsonl"
python3 attention.py --merge "$R/c2.json" | grep -v "^{" | grep -v " yes$"
