#!/usr/bin/env bash
# H200 call 3 (gemm5): the shipped dispatch checked at M = 1 .. 129 (gs_linked staged for M = 129), the x_rows 64 link alone.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
B="python3 gemm_swiglu_persistent.py --cubins cubins"
(cat COMMIT; sha256sum cubins/*.cubin) > "$R/gpu3.txt"
timeout 90 $B --kernels linked_auto --check-only --check-shapes 1,16,33,48,64,100,128,129 --shapes "" --baselines "" --json "$R/check3_auto.json" > "$R/check3.txt" 2>&1; echo "auto rc=$?"
timeout 60 $B --kernels linked_swapab64:dp:l2none:gb --check-only --check-shapes 1,33,48,63,64 --shapes "" --baselines "" --json "$R/check3_64.json" >> "$R/check3.txt" 2>&1; echo "x64 rc=$?"
grep -c '"ok": true' "$R/check3.txt"; grep -c '"ok": false' "$R/check3.txt"; grep -E "^linked" "$R/check3.txt"
rm -f "$R"/*.partial.jsonl; tar -czf "$OUT/call3.tgz" -C "$R" .
