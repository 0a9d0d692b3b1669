#!/usr/bin/env bash
# H200 call 2 (gemm3): the policy-word levers at M = 512 (interleaved A/B), the table in rotating
# do_bench rounds with every baseline and the M = 512 candidates in one process, checks of the
# candidate at odd M.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader;
 python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; sha256sum cubins/*.cubin) > "$R/gpu.txt" 2>&1
S=$SECONDS; T0=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s total $((SECONDS-T0))s" | tee -a "$R/steps.txt"; S=$SECONDS; }
L=linked:sk:r16
timeout 40 python3 ab_time.py 512 "$R/ab512.json" linked:sk2:r16:p3 $L linked:sk2:r16:p1 $L linked:sk2:r16:p2 $L linked:sk:r16:p1 $L \
  linked:sk2:r16:p3 linked:sk:r16:p3 > "$R/ab512.txt" 2>&1; step ab512 $?
cut -c1-330 "$R/ab512.txt"
timeout 30 $B --kernels linked:sk2:r16:p3,linked:sk2:r16:p1 --check-only --check-shapes 200,384,512,1000 --shapes "" --baselines "" --json "$R/check.json" > "$R/check.txt" 2>&1; step check $?
grep -c '"ok": true' "$R/check.txt"; grep '"ok": false' "$R/check.txt" | head -3
timeout 330 python3 table_rounds.py 16,128,512,2048,8192 "$R/table.json" 3 linked_auto linked:sk2:r16:p3@512 linked:sk:r16:p3@512 \
  linked:sk2:r16@512 linked:sk2:r16:p1@512 > "$R/table.txt" 2>&1; step table $?
grep '^{' "$R/table.txt" | cut -c1-900
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
tar -czf "$OUT/call2.tgz" -C "$R" .; true
