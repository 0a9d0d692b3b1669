#!/usr/bin/env bash
# H200, issue 29 (attnperf), second call: the final state of the branch (new/: the eight linked
# compositions with the softmax-overlap fix and the one-compare window mask, main's tile order)
# against main's links (base/), FlashAttention 4 and cuDNN SDPA in one process (and new against
# base once more, for the spread between processes); correctness of
# every new composition; ncu of the new kernels on the three shapes (base and FA4 were profiled by
# run.sh with the same binaries); racecheck and synccheck at a small shape.
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
A="python3 bench/attention.py"
step() { echo "$1 rc=$2 t=${SECONDS}s" | tee -a "$R/steps.txt"; }
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > "$R/gpu.txt" 2>&1
bash bench/gpu/fa4_install.sh ../fa4b /tmp/fa4site /tmp/fa4x/s.so.xz > "$R/fa4_install.txt" 2>&1; step fa4_install $?
V=noncausal,causal,window,softcap
timeout 120 $A --cubins new --control base --variants $V --timed $V --seqs 4096,16384 --no-check \
    --fa4 /tmp/fa4site --json "$R/time.json" > "$R/time.txt" 2>&1; step time $?
timeout 45 $A --cubins new --control base --variants noncausal,causal,window --timed noncausal,causal,window \
    --seqs 4096,16384 --no-check --no-sdpa --json "$R/time_b.json" > "$R/time_b.txt" 2>&1; step time_b $?
timeout 60 $A --cubins new --check-only --no-sdpa --json "$R/check.json" \
    --variants noncausal,causal,window,chunked,softcap,alibi_causal,blocksparse10,paged64_causal,paged16_causal \
    > "$R/check.txt" 2>&1; step check $?
NCU_SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
--section InstructionStats --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section SourceCounters"
timeout 80 ncu --profile-from-start off $NCU_SECTIONS -f -o "$R/prof" \
    $A --cubins new --variants noncausal,causal,window --no-sdpa \
    --profile noncausal@16384,causal@4096,window@4096 > "$R/ncu_run.txt" 2>&1; step ncu $?
ncu -i "$R/prof.ncu-rep" --page details --print-details all > "$R/ncu_details.txt" 2>&1
ncu -i "$R/prof.ncu-rep" --page raw --csv > "$R/ncu_raw.csv" 2>&1
ncu -i "$R/prof.ncu-rep" --page source --print-source sass --csv > "$R/ncu_source.csv" 2>&1; step ncu_export $?
SAN="$A --cubins new --check-only --no-sdpa --check-shapes 1x2x300 --variants causal,window,softcap"
for tool in racecheck synccheck; do
    timeout 40 compute-sanitizer --tool $tool --print-limit 20 $SAN > "$R/$tool.txt" 2>&1
    rc=$?; step "$tool $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/$tool.txt" | tr '\n' ' ')" $rc
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R"/*.partial.jsonl
cd "$R" || exit 1
tar -cJf ncu.tar.xz prof.ncu-rep ncu_raw.csv ncu_source.csv && rm -f prof.ncu-rep ncu_raw.csv ncu_source.csv
tar -cJf rest.tar.xz --exclude ncu.tar.xz --exclude rest.tar.xz --exclude steps.txt ./* && \
    find . -maxdepth 1 -type f ! -name ncu.tar.xz ! -name rest.tar.xz ! -name steps.txt ! -name time.txt -delete
grep -v "^{" time.txt | grep -v "Warning\|exe_args" | tail -24
