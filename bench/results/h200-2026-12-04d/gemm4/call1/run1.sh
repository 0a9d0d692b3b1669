#!/usr/bin/env bash
# H200 call 1 (gemm4): ping-pong vs cooperative vs the cluster link at M = 8192 / 2048 (interleaved A/B),
# ncu (duration, tensor pipe, warp stalls) at M = 8192, every candidate at M = 320 / 384 / 448 / 640 in
# rotating do_bench rounds.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader;
 python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; sha256sum cubins/*.cubin) > "$R/gpu.txt" 2>&1
S=$SECONDS; T0=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s total $((SECONDS-T0))s" | tee -a "$R/steps.txt"; S=$SECONDS; }
# 1. A/B at 8192 and 2048
L=linked:sk:r16; C=coop256_c2:sk:r16; P=pp128_c2:dp:r16
timeout 90 python3 ab_time.py 8192,2048 "$R/ab_big.json" $P $C $L $C $P $L pp128_c2:dp:r8 $L > "$R/ab_big.txt" 2>&1; step ab_big $?
cut -c1-400 "$R/ab_big.txt"
# 2. ncu at 8192: linked, ping-pong, cuBLAS: duration, tensor pipe, warp-state stalls
timeout 120 ncu --clock-control none -k regex:'kl_dispatch|gs_pp128|nvjet' --section SpeedOfLight --section WarpStateStats \
  --metrics gpu__time_duration.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_tensor_op_gmma.sum \
  --export "$R/ncu8192" python3 ncu_target.py 8192 $L $P > "$R/ncu_run.txt" 2>&1; step ncu $?
ncu --import "$R/ncu8192.ncu-rep" --page raw --csv > "$R/ncu8192_raw.csv" 2>&1
ncu --import "$R/ncu8192.ncu-rep" --page details > "$R/ncu8192_details.txt" 2>&1
grep -E "kl_dispatch|gs_pp|nvjet|Duration|pipe_tensor|Stall|Warp Cycles" "$R/ncu8192_details.txt" | head -40
# 3. M = 320 / 384 / 448 (and 640): every candidate, rotating rounds with every baseline
H=@320/384/448/640
timeout 330 python3 table_rounds.py 320,384,448,640 "$R/table.json" 4 linked_auto linked:sk:r16$H linked:sk:r16:p3$H \
  linked:sk2:r16:p3$H linked:dp:r16:p3$H linked_small:sk:r4@320/384/448 linked_small:dp@320/384/448 \
  coop256_c2:sk:r16:p3@320/384/448 coop256_c1:sk:r16$H coop256_c1:sk:r16:p3$H coop256_c1:sk2:r16$H coop256_c1:sk2:r16:p3$H \
  coop256_c1:dp:r16:p3$H pp128_c1:dp:r16@320/384/448 pp128_c2:dp:r16@320/384/448 > "$R/table.txt" 2>&1; step table $?
grep '^{' "$R/table.txt" | cut -c1-1500
tail -3 "$R/table.txt" | cut -c1-300
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
tar -czf "$OUT/call1.tgz" -C "$R" .; true
