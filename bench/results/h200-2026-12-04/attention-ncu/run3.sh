#!/usr/bin/env bash
# H200, issue 29 (attnperf), third call: the same cubins as run2.sh (new/: the branch's final links,
# base/: main's), timed in rounds (bench/attention.py --rounds 5: ours, base, FA4 and cuDNN back to
# back in every round, ratios of neighbours in time), because single medians of run.sh and run2.sh
# moved by up to 5 % between processes.
set -o pipefail
cd "$(dirname "$0")"
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
step() { echo "$1 rc=$2 t=${SECONDS}s" | tee -a "$R/steps.txt"; }
(cat COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > "$R/gpu.txt" 2>&1
bash bench/gpu/fa4_install.sh ../fa4b /tmp/fa4site /tmp/fa4x/s.so.xz > "$R/fa4_install.txt" 2>&1; step fa4_install $?
V=noncausal,causal,window,softcap
timeout 200 python3 bench/attention.py --cubins new --control base --variants $V --timed $V --seqs 4096,16384 \
    --rounds 5 --fa4 /tmp/fa4site --json "$R/rounds.json" > "$R/rounds.txt" 2>&1; step rounds $?
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R"/*.partial.jsonl
grep -v "^{" "$R/rounds.txt" | grep -v "Warning\|exe_args" | tail -12
