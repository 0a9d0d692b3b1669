#!/usr/bin/env bash
# H200, issue 29 (helper attn3), third session (no FA4 needed): run2.sh found the committed core K (= WP2)
# 4-11 % slower than main's links in chunked, block-sparse and window/causal 4k. Which lever: P2 (double-buffered
# P alone) and K against L0 on the short-loop variants, alternating (--control), in one process each; and P2's
# correctness and sanitizers, in case P2 replaces K. Outputs in one archive.
set -o pipefail
G=${G:-.gpu/attn3}; R=/tmp/r3; C=$G/c; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
A="python3 $G/bench/attention.py"
step() { echo "$1 rc=$2 t=${SECONDS}s" | tee -a "$R/steps.txt"; }
(cat $G/COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > "$R/gpu.txt" 2>&1
sha256sum $C/*/*.cubin | sed "s|$C/||" > "$R/cubins.txt"
V=causal,window,chunked,softcap,blocksparse10,blocksparse25
for f in P2 K; do
    timeout 80 $A --cubins $C/$f --control $C/L0 --variants $V --timed $V --seqs 4096,16384 --no-check --no-sdpa \
        --json "$R/variants_$f.json" > "$R/variants_$f.txt" 2>&1; step "variants $f" $?
done
ALL=noncausal,causal,window,chunked,softcap,alibi_causal,blocksparse10,paged64_causal,paged16_causal
timeout 60 $A --cubins $C/P2 --check-only --no-sdpa --json "$R/check_all_P2.json" --variants $ALL > "$R/check_all_P2.txt" 2>&1
step "check all P2" $?
SAN="$A --cubins $C/P2 --check-only --no-sdpa --check-shapes 1x2x300 --variants noncausal,causal,window,softcap"
for tool in racecheck synccheck memcheck; do
    timeout 50 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 $SAN > "$R/${tool}_P2.txt" 2>&1
    rc=$?; step "$tool P2 $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/${tool}_P2.txt" | tr '\n' ' ')" $rc
done
rm -f "$R"/*.partial.jsonl
tar -C "$R" -cJf "$OUT/run3.tar.xz" .
cat "$R/steps.txt"
for f in P2 K; do echo "== $f vs L0"; python3 -c "
import json,sys
for r in json.load(open(sys.argv[1])):
    if r.get('kernel')=='ours': print(f\"{r['variant']:14s} {r['seq']:>6} ours {r['ms']:.4f} L0 {r['control_ms']:.4f} ours/L0 {r['vs_control']:.3f} (spread {r['control_spread']:.3f})\")
" "$R/variants_$f.json"; done
