#!/usr/bin/env bash
# H200, issue 29 (helper attn3): the linked core's levers against FA4 and cuDNN in interleaved rounds, then the
# best form's checks, sanitizers, variants against FlexAttention and ncu. Run from the repository root after
# `bash $G/bench/gpu/fa4_install.sh .gpu/fa4b /tmp/fa4site /tmp/fa4x/s.so.xz` (G=.gpu/attn3, the staged files).
# Cubin folders under $G/c/ (each: the eight links of `kernlink build X.kp`, staged as attn_<composition>.*):
# L0 = main's core; W = FA4's wait order (K's full wait before taking the turn, V's between the S and PV
# issues); P2 = P double-buffered (packed to bf16 inside the softmax into the buffer the in-flight PV does not
# read; loop unrolled by two); WP2 = W + P2; WR = W + O's rescale between the S and PV issues (pinned behind
# V's wait); WRP2 = WR + P2; D3 = main's core with the dense load's K/V rings 3 deep; WRP2D3 = WRP2 + D3.
set -o pipefail
G=${G:-.gpu/attn3}; R=${OUT:-/tmp/out}; C=$G/c; mkdir -p "$R"
export PYTHONUNBUFFERED=1
A="python3 $G/bench/attention.py"
step() { echo "$1 rc=$2 t=${SECONDS}s" | tee -a "$R/steps.txt"; }
(cat $G/COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > "$R/gpu.txt" 2>&1
EX=""; for f in P2 WP2 WR WRP2 D3 WRP2D3; do EX="$EX --extra $f=$C/$f"; done
timeout 240 $A --cubins $C/L0 --control $C/W $EX --variants noncausal,causal --timed noncausal,causal \
    --seqs 4096,16384 --rounds 10 --no-check --fa4 /tmp/fa4site --json "$R/rounds.json" > "$R/rounds.txt" 2>&1; step rounds $?
python3 $G/pick.py "$R/rounds.json" ours=L0 control=W > "$R/pick.txt" 2>&1; step pick $?
B=$(tail -1 "$R/pick.txt"); [ -d "$C/$B" ] || B=L0
echo "best $B" | tee -a "$R/steps.txt"
ALL=noncausal,causal,window,chunked,softcap,alibi_causal,blocksparse10,paged64_causal,paged16_causal
timeout 60 $A --cubins $C/$B --check-only --no-sdpa --json "$R/check_all_$B.json" --variants $ALL > "$R/check_all_$B.txt" 2>&1
step "check all $B" $?
SAN="$A --cubins $C/$B --check-only --no-sdpa --check-shapes 1x2x300 --variants noncausal,causal,window,softcap"
for tool in racecheck synccheck memcheck; do
    timeout 50 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 $SAN > "$R/${tool}_$B.txt" 2>&1
    rc=$?; step "$tool $B $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/${tool}_$B.txt" | tr '\n' ' ')" $rc
done
V=causal,window,chunked,softcap,blocksparse10,blocksparse25
if [ "$B" != L0 ]; then
    timeout 130 $A --cubins $C/$B --control $C/L0 --variants $V --timed $V --seqs 4096,16384 --no-check --no-sdpa \
        --flex window@16384,chunked@16384,softcap@16384,window@4096,chunked@4096,softcap@4096 --flex-budget-s 110 \
        --json "$R/variants.json" > "$R/variants.txt" 2>&1; step variants $?
fi
timeout 80 ncu --profile-from-start off --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --section InstructionStats --section SourceCounters -f -o "$R/prof" \
    $A --cubins $C/$B --control $C/L0 --variants noncausal --no-sdpa --fa4 /tmp/fa4site --profile noncausal@16384 \
    > "$R/ncu_run.txt" 2>&1; step ncu $?
ncu -i "$R/prof.ncu-rep" --page details --print-details all > "$R/ncu_details.txt" 2>&1
ncu -i "$R/prof.ncu-rep" --page source --print-source sass --csv > "$R/ncu_source.csv" 2>&1; step ncu_export $?
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R"/*.partial.jsonl
(cd "$R" && xz -9 -T4 ncu_source.csv prof.ncu-rep 2>/dev/null)
cat "$R/pick.txt"; tail -3 "$R/steps.txt"
