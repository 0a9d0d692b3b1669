#!/usr/bin/env bash
# H200: the floor of an M <= 128 kernel (the fastest read of W) under do_bench's write flush and a read
# flush, ncu of the flush's write-back, and linked_auto at M = 16 / 128 against every path in rotating rounds.
set -o pipefail
cd "$(dirname "$0")"
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader;
 python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; sha256sum cubins/*.cubin) > "$R/gpu.txt" 2>&1
S=$SECONDS
step() { echo "$1 rc=$2 $((SECONDS-S))s" | tee -a "$R/steps.txt"; S=$SECONDS; cp "$R"/* "$OUT"/ 2>/dev/null; }
timeout 150 python3 weight_read_floor.py --json "$R/floor.json" > "$R/floor.txt" 2>&1; step floor $?
tail -4 "$R/floor.txt"
for f in zero read; do
  timeout 60 ncu --cache-control none --clock-control none --replay-mode application -k regex:_read_w --launch-skip 1 --launch-count 1 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum python3 weight_read_floor.py --once $f > "$R/ncu_$f.txt" 2>&1; step ncu_$f $?
  grep -E "gpu__time|dram__bytes" "$R/ncu_$f.txt"
done
timeout 330 python3 table_rounds.py 16,128 "$R/table_small.json" 3 linked_auto > "$R/table_small.txt" 2>&1; step table_small $?
grep '^{' "$R/table_small.txt" | cut -c1-900
