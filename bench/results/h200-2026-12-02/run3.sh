#!/usr/bin/env bash
# H200 call 3: the bench three times (A = landed, C = unchanged mainloop + the same epilogue) for
# medians over repetitions, and the padded-A diagnostic at small M for both.
source .gpu/prelude.sh
export PYTHONPATH=$PWD/.gpu/gemm/tree:$PYTHONPATH
R=${OUT:-/tmp/out}; mkdir -p "$R"; W=$(mktemp -d); L=.gpu/gemm/links
B=.gpu/gemm/tree/bench/gemm_swiglu.py
step() { local t=$1; shift; local f=$1; shift; local s=$SECONDS; timeout "$t" "$@" > "$W/$f" 2>&1; echo "rc=$? ${f} $((SECONDS - s))s" >> "$W/steps.txt"; }
cat .gpu/gemm/COMMIT > "$W/commit.txt"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$W/commit.txt" 2>&1
for i in 1 2 3; do step 200 bench-$i.txt python3 $B $L/A $L/C --json "$W/bench-$i.json"; done
for i in 1 2; do step 60 pad-$i.txt python3 $B $L/A $L/C --shapes 16,128 --pad-a --no-compile --json "$W/pad-$i.json"; done
tar -C "$W" -czf "$R/results.tar.gz" .
cp "$W"/bench-*.txt "$W"/pad-*.txt "$W/steps.txt" "$R/" 2>/dev/null
cat "$W/steps.txt"; for i in 1 2 3; do tail -n 26 "$W/bench-$i.txt" | grep -v "^$"; done; tail -n 8 "$W/pad-2.txt"
