#!/usr/bin/env bash
# H200, issue 29 (helper attn2): the levers against FA4 and cuDNN in rounds, the candidate core's checks and
# sanitizers, and the variants against FlexAttention / dense causal. Run from the repository root after
# `bash $G/bench/gpu/fa4_install.sh .gpu/fa4b /tmp/fa4site /tmp/fa4x/s.so.xz` (G=.gpu/attn2, the staged tree).
# Cubin folders under $G/c/: L0 = the eight links of the branch base (core.cuh as on main), Lp1 / Lp1t = the
# links with core.cuh's P packing before O's rescale (p1) and also 4-way max / sum reductions (p1t);
# O1 = attention.cu (one consumer body, run-time warpgroup index), O2 = attention.cu with the body
# specialised per warpgroup (two copies, as the link has), O1u = O1 with the index made warp-uniform
# (__shfl_sync of lane 0, so the wgmma descriptors live in uniform registers), O1up1 / O1up1t = O1u with p1 / p1t.
set -o pipefail
G=${G:-.gpu/attn2}; R=${OUT:-/tmp/out}; C=$G/c; mkdir -p "$R"
export PYTHONUNBUFFERED=1
A="python3 $G/bench/attention.py"
step() { echo "$1 rc=$2 t=${SECONDS}s" | tee -a "$R/steps.txt"; }
(cat $G/COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > "$R/gpu.txt" 2>&1
ALL=noncausal,causal,window,chunked,softcap,alibi_causal,blocksparse10,paged64_causal,paged16_causal
timeout 60 $A --cubins $C/Lp1t --check-only --no-sdpa --json "$R/check_Lp1t.json" --variants $ALL > "$R/check_Lp1t.txt" 2>&1
step "check Lp1t" $?
for f in Lp1 O1up1t; do
    timeout 30 $A --cubins $C/$f --check-only --no-sdpa --variants noncausal,causal > "$R/check_$f.txt" 2>&1; step "check $f" $?
done
timeout 200 $A --cubins $C/L0 --control $C/O2 --extra O1=$C/O1 --extra O1u=$C/O1u --extra O1up1=$C/O1up1 \
    --extra O1up1t=$C/O1up1t --extra Lp1=$C/Lp1 --extra Lp1t=$C/Lp1t --variants noncausal,causal --timed noncausal,causal --seqs 4096,16384 \
    --rounds 6 --no-check --fa4 /tmp/fa4site --json "$R/rounds.json" > "$R/rounds.txt" 2>&1; step rounds $?
V=causal,window,chunked,softcap,blocksparse10,blocksparse25
timeout 130 $A --cubins $C/Lp1t --control $C/L0 --variants $V --timed $V --seqs 4096,16384 --no-check --no-sdpa \
    --flex window@16384,chunked@16384,softcap@16384,window@4096,chunked@4096,softcap@4096 --flex-budget-s 110 \
    --json "$R/variants.json" > "$R/variants.txt" 2>&1; step variants $?
for f in Lp1t O1up1t; do
    vs=causal,window,softcap; [ $f = O1up1t ] && vs=noncausal,causal
    SAN="$A --cubins $C/$f --check-only --no-sdpa --check-shapes 1x2x300 --variants $vs"
    for tool in racecheck synccheck; do
        timeout 35 compute-sanitizer --tool $tool --print-limit 20 $SAN > "$R/${tool}_$f.txt" 2>&1
        rc=$?; step "$tool $f $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/${tool}_$f.txt" | tr '\n' ' ')" $rc
    done
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R"/*.partial.jsonl
[ -n "${TAR:-}" ] && tar -C "$R" -czf "$TAR" .
grep -v "^{" "$R/rounds.txt" | grep -v "Warning\|exe_args" | tail -6
