#!/usr/bin/env bash
# The committed core (attn3's K = main's links): correctness of every composition at odd lengths, and the sanitizers.
set -o pipefail
G=.gpu/attn3; C=$G/c; R=/tmp/rf3; rm -rf $R; mkdir -p $R; T0=$SECONDS
step() { echo "$1 rc=$2 total $((SECONDS-T0))s" | tee -a "$R/steps.txt"; }
export PYTHONUNBUFFERED=1
(cat .gpu/final/COMMIT; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) > $R/gpu.txt 2>&1
sha256sum $C/K/*.cubin | sed "s|$C/||" > $R/cubins.txt
A="python3 $G/bench/attention.py --cubins $C/K"
ALL=noncausal,causal,window,chunked,softcap,alibi_causal,blocksparse10,paged64_causal,paged16_causal
timeout 90 $A --check-only --no-sdpa --json $R/check_all.json --variants $ALL > $R/check_all.txt 2>&1; step "check all" $?
SAN="$A --check-only --no-sdpa --check-shapes 1x2x300 --variants noncausal,causal,window,softcap,chunked,alibi_causal,blocksparse10,paged16_causal"
for tool in racecheck synccheck memcheck; do
    timeout 70 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 $SAN > $R/${tool}.txt 2>&1
    rc=$?; step "$tool $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${tool}.txt | tr '\n' ' ')" $rc
done
rm -f $R/*.partial.jsonl
tar -C $R -cJf $OUT/run3.tar.xz .
grep -c '"ok": true' $R/check_all.json; grep -c '"ok": false' $R/check_all.json
