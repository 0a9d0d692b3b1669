#!/usr/bin/env bash
# H200 call 2 (gemm4): the link without the cluster (gs_linked_c1) checked (odd M, small grids),
# sanitized, timed against its one-unit twin; the policy word above M = 512; the new linked_auto in
# rotating do_bench rounds against every baseline; ncu of policy 0 vs 3 at M = 640.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader;
 python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; sha256sum cubins/*.cubin) > "$R/gpu.txt" 2>&1
S=$SECONDS; T0=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s total $((SECONDS-T0))s" | tee -a "$R/steps.txt"; S=$SECONDS; tar -czf "$OUT/call2.tgz" -C "$R" . 2>/dev/null; }
# 1. checks at odd M: the dispatch and every mode of the c1 link (full size; K 960 / N 1280 on 6 CTAs)
{ timeout 60 $B --kernels linked_auto,linked_c1:sk:r16,linked_c1:dp:r16:p3,linked_c1:sk2:r16,linked_c1:sk:r16:p3 --check-only \
    --check-shapes 16,48,200,320,384,448,640,1000 --shapes "" --baselines "" --json "$R/check_a.json";
  timeout 40 $B --kernels linked_c1:sk:g6,linked_c1:sk2:g6,linked_c1:dp:g6,linked_auto --check-only --check-shapes 16,48,200,320,384,448,1000 \
    --shapes "" --baselines "" --k 960 --n 1280 --json "$R/check_b.json"; } > "$R/check.txt" 2>&1; step check $?
grep -c '"ok": true' "$R/check.txt"; grep '"ok": false' "$R/check.txt" | head -5
# 2. sanitizers on the c1 link's stream-K modes (K 512, N 1024: 6 CTAs, a data-parallel wave and splits)
for tool in memcheck racecheck synccheck; do
  timeout 40 compute-sanitizer --tool $tool --report-api-errors no --print-limit 50 $B --kernels linked_c1:sk:g6,linked_c1:sk2:g6 --check-only \
    --check-shapes 48,384 --shapes "" --k 512 --n 1024 --baselines "" > "$R/$tool.txt" 2>&1; step $tool $?
  grep -E "ERROR SUMMARY|hazards displayed" "$R/$tool.txt"
done
# 3. interleaved A/B: the c1 link vs its one-unit twin; policy 3 vs 0 above 512
timeout 100 python3 ab_time.py 384,640,2048 "$R/ab_c1.json" linked_c1:dp:r16:p3@384 coop256_c1:dp:r16:p3 linked_c1:sk:r16:p3@640 coop256_c1:sk:r16:p3 \
  linked_c1:sk:r16@2048 coop256_c1:sk:r16 > "$R/ab_c1.txt" 2>&1; step ab_c1 $?
timeout 100 python3 ab_time.py 768,1024,1536,2048,4096,8192 "$R/ab_p3.json" linked:sk:r16:p3 linked:sk:r16 > "$R/ab_p3.txt" 2>&1; step ab_p3 $?
cat "$R/ab_c1.txt" "$R/ab_p3.txt" | grep '^{' | cut -c1-330
# 4. the table in rotating rounds: the new linked_auto and the candidates, every baseline
timeout 260 python3 table_rounds.py 320,384,448,512,640,768,896,1024,1152 "$R/table_mid.json" 4 linked_auto linked:sk:r16:p3 linked:sk:r16@512/640/768/896/1024/1152 \
  linked_c1:dp:r16:p3 linked_c1:sk:r16:p3 linked_c1:sk:r16@640/768/896/1024/1152 coop256_c1:dp:r16:p3@320/384 > "$R/table_mid.txt" 2>&1; step table_mid $?
grep '^{' "$R/table_mid.txt" | cut -c1-1500
timeout 100 python3 table_rounds.py 2048,8192 "$R/table_big.json" 3 linked_auto linked:sk:r16:p3 linked_c1:sk:r16 linked_c1:sk:r16:p3 > "$R/table_big.txt" 2>&1; step table_big $?
grep '^{' "$R/table_big.txt" | cut -c1-1200
# 5. ncu at M = 640: the cluster link with policy 0 and 3, the c1 link with 3: L2 hit rate, DRAM bytes
timeout 60 ncu --clock-control none -k regex:'kl_dispatch|nvjet' --section SpeedOfLight \
  --metrics gpu__time_duration.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum \
  python3 ncu_target.py 640 linked:sk:r16 linked:sk:r16:p3 linked_c1:sk:r16:p3 > "$R/ncu640.txt" 2>&1; step ncu640 $?
grep -E "kl_dispatch|nvjet|gpu__time|pipe_tensor|hit_rate|dram__bytes|srcunit" "$R/ncu640.txt" | head -30
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R"/*.partial.jsonl
tar -czf "$OUT/call2.tgz" -C "$R" .; true
