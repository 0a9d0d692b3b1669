#!/usr/bin/env bash
# H200, issue 29 (attnlink2): the eight LINKED compositions (linked/, kernlink build) against their
# one-unit builds (onu/, build.sh): checks of every linked variant, linked / one-unit timing in one
# process (vs_control; control_spread = the one-unit's own spread, the null interval), SDPA and
# FlexAttention at 4k / 16k, then compute-sanitizer on the linked cubins at one small shape.
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > "$R/gpu.txt" 2>&1
V=noncausal,causal,window,chunked,softcap,alibi_causal,blocksparse10,blocksparse25,paged64_causal,paged16_causal
for i in 1 2 3; do
    left=$((250 - SECONDS)); [ $left -lt 20 ] && break
    timeout $left python3 attention.py --cubins linked --control onu --json "$R/r.json" --skip-file "$R/skip.txt" \
        --variants $V --timed $V --seqs 4096,16384 \
        --flex causal@4096,window@4096,softcap@4096,chunked@4096,window@16384,chunked@16384 --flex-budget-s 170 > "$R/r_$i.txt" 2>&1
    rc=$?; echo "pass $i rc=$rc t=${SECONDS}s" | tee -a "$R/steps.txt"
    [ $rc -ne 3 ] && break
done
[ -f "$R/r.json" ] || python3 -c "import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))" "$R/r.partial.jsonl" > "$R/r.json"
SAN="python3 attention.py --cubins linked --check-only --no-sdpa --check-shapes 1x2x300 --variants causal,window,softcap,paged64_causal,blocksparse10"
for tool in memcheck racecheck synccheck; do
    S=$SECONDS
    timeout 40 compute-sanitizer --tool $tool --print-limit 40 $SAN > "$R/$tool.txt" 2>&1
    echo "$tool rc=$? $((SECONDS-S))s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/$tool.txt" | tr '\n' ' ')" | tee -a "$R/steps.txt"
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R/r.partial.jsonl"
python3 attention.py --merge "$R/r.json" | grep -v "^{" | grep -v " yes$"
python3 -c "
import json,sys
for r in json.load(open(sys.argv[1])):
    if 'vs_control' in r: print(f\"{r['variant']:<16} {r['seq']:>6} linked {r['ms']:.4f} one-unit {r['control_ms']:.4f} ratio {r['vs_control']:.4f} spread {r['control_spread']:.4f}\")
" "$R/r.json"
