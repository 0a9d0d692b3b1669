#!/usr/bin/env bash
# H200 call 1 (gemm3): M = 512 levers (interleaved A/B), the ring-fed link timed against linked_auto at
# the five M, checks at odd M, the full table with every baseline in one process, sanitizers on the
# changed scheduler's modes, ncu (tensor pipe) at M = 512 and 2048.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader;
 python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; sha256sum cubins/*.cubin ringfed/kernel.cubin) > "$R/gpu.txt" 2>&1
S=$SECONDS; T0=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s total $((SECONDS-T0))s" | tee -a "$R/steps.txt"; S=$SECONDS; }
# 1. A/B at M = 512 (and the hybrid stream-K at 2048 / 8192)
L=linked:sk:r16
timeout 60 python3 ab_time.py 512 "$R/ab512.json" linked:sk2:r16 $L linked:sk:r16:p3 $L linked:sk:r16:l2b128 $L linked:sk:r16:l2none $L \
  linked:sk2:r16:p3 $L $L coop256_c2:sk:r16 coop256_c2:sk2:r16 coop256_c2:sk:r16 coop256_c1:sk:r16 coop256_c2:sk:r16 \
  pp128_c2:dp:r16 coop256_c2:sk:r16 > "$R/ab512.txt" 2>&1; step ab512 $?
timeout 40 python3 ab_time.py 2048,8192 "$R/ab_big.json" linked:sk2:r16 $L > "$R/ab_big.txt" 2>&1; step ab_big $?
cat "$R/ab512.txt" "$R/ab_big.txt" | cut -c1-400
# 2. the ring-fed link against linked_auto, five M
timeout 90 python3 ringfed_time.py ringfed 16,128,512,2048,8192 "$R/ringfed.json" > "$R/ringfed.txt" 2>&1; step ringfed $?
cut -c1-600 "$R/ringfed.txt"
# 3. checks at odd M: the dispatch and the hybrid stream-K (full size and K 960 / N 1280 with 3 clusters)
{ timeout 60 $B --kernels linked_auto,linked:sk2:r16,linked:sk:r16 --check-only --check-shapes 16,48,200,384,1000 --shapes "" --baselines "" --json "$R/check_a.json";
  timeout 30 $B --kernels linked:sk2:g6,linked:sk:g6,linked_auto --check-only --check-shapes 16,48,200,384,1000 --shapes "" --baselines "" --k 960 --n 1280 --json "$R/check_b.json"; } > "$R/check.txt" 2>&1; step check $?
grep -c '"ok": true' "$R/check.txt"; grep '"ok": false' "$R/check.txt" | head -5
# 4. the table: linked_auto, the M = 512 candidates, every baseline (max-autotune last, within the budget)
timeout 200 $B --kernels "linked_auto,linked:sk2:r16@512/2048/8192,linked:sk:r16:p3@512,linked:sk2:r16:p3@512" --check-shapes "" \
  --baselines gemm,eager,static,dynamic,autotune --budget-s 150 --json "$R/bench.json" > "$R/bench.txt" 2>&1; step bench $?
[ -f "$R/bench.json" ] || python3 -c "import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))" "$R/bench.partial.jsonl" > "$R/bench.json"
$B --merge "$R/bench.json" | tail -6
# 5. sanitizers on the cluster link's stream-K modes (K 512, N 1024; 3 clusters: dp wave, 2-way splits)
for tool in memcheck racecheck synccheck; do
  timeout 40 compute-sanitizer --tool $tool --report-api-errors no --print-limit 50 $B --kernels linked:sk2:g6,linked:sk:g6 --check-only \
    --check-shapes 48,384 --shapes "" --k 512 --n 1024 --baselines "" > "$R/$tool.txt" 2>&1; step $tool $?
  grep -E "ERROR SUMMARY|hazards displayed" "$R/$tool.txt"
done
# 6. ncu: tensor pipe and duration, ring-fed vs linked_auto vs cuBLAS at M = 512 and 2048
MET=$(ncu --query-metrics --chip gh100 2>/dev/null | awk '{print $1}' | grep -E '^sm__pipe_tensor(_op_gmma)?_cycles_active$' | sed 's/$/.avg.pct_of_peak_sustained_elapsed/' | paste -sd, -)
echo "tensor metrics: $MET" | tee "$R/ncu.txt"
timeout 60 ncu --clock-control none -k regex:'kl_dispatch|nvjet' --section SpeedOfLight \
  --metrics gpu__time_duration.sum,${MET:-sm__inst_executed.sum},sm__inst_executed_pipe_tensor_op_gmma.sum python3 ncu_target.py 512,2048 ringfed >> "$R/ncu.txt" 2>&1; step ncu $?
grep -E "kl_dispatch|nvjet|Duration|pipe_tensor|gpu__time|M [0-9]" "$R/ncu.txt" | head -40
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R"/*.partial.jsonl
tar -czf "$OUT/call1.tgz" -C "$R" .; true
