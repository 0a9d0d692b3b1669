#!/usr/bin/env bash
# H200, issue 29, lead's final call: the eight linked attention compositions of main after the merges
# (new/: the head's K-release form, core.cuh's address dependence), checked at odd shapes, sanitized,
# and timed in rounds against attnperf's measured form (base/ = .gpu/attnperf/new, fed8c4d), FA4 and
# cuDNN SDPA in one process. Run from the repository root.
set -o pipefail
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
A="python3 bench/attention.py"
F=.gpu/final
step() { echo "$1 rc=$2 t=${SECONDS}s" | tee -a "$R/steps.txt"; }
(cat $F/COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > "$R/gpu.txt" 2>&1
bash bench/gpu/fa4_install.sh .gpu/fa4b /tmp/fa4site /tmp/fa4x/s.so.xz > "$R/fa4_install.txt" 2>&1; step fa4_install $?
timeout 70 $A --cubins $F/new --check-only --no-sdpa --json "$R/check.json" \
    --variants noncausal,causal,window,chunked,softcap,alibi_causal,blocksparse10,paged64_causal,paged16_causal \
    > "$R/check.txt" 2>&1; step check $?
V=noncausal,causal,window,softcap
timeout 200 $A --cubins $F/new --control .gpu/attnperf/new --variants $V --timed $V --seqs 4096,16384 \
    --rounds 5 --no-check --fa4 /tmp/fa4site --json "$R/rounds.json" > "$R/rounds.txt" 2>&1; step rounds $?
SAN="$A --cubins $F/new --check-only --no-sdpa --check-shapes 1x2x300 --variants causal,window,softcap"
for tool in racecheck synccheck; do
    timeout 40 compute-sanitizer --tool $tool --print-limit 20 $SAN > "$R/$tool.txt" 2>&1
    rc=$?; step "$tool $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/$tool.txt" | tr '\n' ' ')" $rc
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R"/*.partial.jsonl
grep -v "^{" "$R/rounds.txt" | grep -v "Warning\|exe_args" | tail -14
