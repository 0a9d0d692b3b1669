#!/usr/bin/env bash
# H200 call 1: every variant's checks, the timing sweep (ours, SDPA cuDNN / flash), FlexAttention
# while the budget lasts; a variant that faults or hangs is skipped and the run resumes (<= 3 x).
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader;
 python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)") > "$R/gpu.txt" 2>&1
FLEX=window@4096,softcap@4096,chunked@4096,window@16384,chunked@16384,softcap@16384,causal@4096
for i in 1 2 3 4; do
    left=$((170 - SECONDS)); [ $left -lt 20 ] && break
    timeout $left python3 attention.py --cubins cubins --json "$R/c1.json" --skip-file "$R/skip.txt" \
        --flex $FLEX --flex-budget-s $((left - 60)) > "$R/c1_$i.txt" 2>&1
    rc=$?; echo "pass $i rc=$rc t=${SECONDS}s" | tee -a "$R/steps.txt"
    [ $rc -ne 3 ] && break
done
[ -f "$R/c1.json" ] || python3 -c "import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))" "$R/c1.partial.jsonl" > "$R/c1.json"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
python3 attention.py --merge "$R/c1.json" | grep -v "^{"
tail -5 "$R"/c1_*.txt | grep -iE "error|Traceback" | head -5
