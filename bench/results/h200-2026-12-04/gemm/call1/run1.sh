#!/usr/bin/env bash
# H200 call 1 (smallm): the linked small-M path (checks, bench with levers, parity timing, sanitizers, ncu).
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
B="python3 gemm_swiglu_persistent.py --cubins cubins"
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader; python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; sha256sum cubins/*.cubin) > "$R/gpu.txt" 2>&1
S=$SECONDS; T0=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s" | tee -a "$R/steps.txt"; S=$SECONDS; }
# 1. correctness: the linked small-M path (dp, sk, with the prefetch) and its one-unit twin, M 16 48 100 128,
#    at K 4096 N 28672 and at odd K 960 (15 k-steps) N 1280 (10 tiles)
K1="linked_small:dp,linked_small:sk,linked_small:dp:pf8,coop128_c1:dp,coop128_c1:sk,linked_auto"
{ timeout 40 $B --kernels $K1 --check-only --check-shapes 16,48,100,128 --shapes "" --baselines "" --json "$R/check_a.json";
  timeout 20 $B --kernels $K1 --check-only --check-shapes 16,48,100,128 --shapes "" --baselines "" --k 960 --n 1280 --json "$R/check_b.json"; } > "$R/check.txt" 2>&1; step check $?
# 2. bench: the dispatching linked kernel, the one-unit twins, the small-M levers, every fast baseline, one process
SM="@16/128"
K2="linked_auto,coop128_c1:dp$SM,linked_small:sk$SM,linked_small:dp:p0$SM,linked_small:dp:l2none$SM,linked_small:dp:l2b128$SM,linked_small:dp:pf4$SM,linked_small:dp:pf8$SM,linked_small:dp:pf16$SM,linked_small:sk:g66$SM,linked_small:sk:g100$SM,coop256_c2:sk:r16@512/2048/8192"
timeout 170 $B --kernels "$K2" --check-shapes "" --baselines gemm,eager,static,dynamic,read --clean-flush-shapes 16,128 \
  --json "$R/bench.json" > "$R/bench.txt" 2>&1; step bench $?
[ -f "$R/bench.json" ] || python3 -c "import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))" "$R/bench.partial.jsonl" > "$R/bench.json"
# 3. linked / one-unit, interleaved (small: dp and sk at 16 48 128; cluster kernel at 2048)
timeout 45 python3 parity_time.py 16,48,128,2048 "$R/parity.json" linked_small:dp@16/48/128 coop128_c1:dp linked_small:sk@16/128 coop128_c1:sk linked:sk:r16@2048 coop256_c2:sk:r16 > "$R/parity.txt" 2>&1; step parity $?
# 4. sanitizers on the linked small-M kernel, stream-K at K 512 N 1024 (8 tiles over 132 CTAs: all fix-up) and dp
for tool in memcheck racecheck synccheck; do
  timeout 25 compute-sanitizer --tool $tool --print-limit 100 $B --kernels linked_small:sk,linked_small:dp --check-only \
    --check-shapes 48,100 --shapes "" --k 512 --n 1024 --baselines "" > "$R/$tool.txt" 2>&1; step $tool $?
done
# 5. ncu: M 16 small kernel vs cuBLAS; M 2048 linked vs one-unit cluster kernel
if [ $((SECONDS-T0)) -lt 300 ]; then
  timeout 60 ncu --clock-control none -k regex:'kl_dispatch|gemm|nvjet|xmma|gs_' --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --metrics dram__bytes_read.sum,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum,lts__t_bytes.sum python3 ncu_target.py small > "$R/ncu_small.txt" 2>&1; step ncu_small $?
fi
if [ $((SECONDS-T0)) -lt 330 ]; then
  timeout 45 ncu --clock-control none -k regex:'kl_dispatch|gs_' --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --metrics dram__bytes_read.sum,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum,lts__t_bytes.sum python3 ncu_target.py big > "$R/ncu_2048.txt" 2>&1; step ncu_2048 $?
fi
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R"/*.partial.jsonl
$B --merge "$R/bench.json" | tail -8
cat "$R/parity.txt"; grep -h "SUMMARY" "$R"/*check.txt; grep -c '"ok": false' "$R"/check_*.json "$R/bench.json"; tail -3 "$R/check.txt"
