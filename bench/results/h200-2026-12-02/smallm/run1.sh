#!/usr/bin/env bash
# H200 call 1 (smallm): correctness (edge M), sanitizers at M = 16 / 200, bench (new vs base, twice),
# same-cubin whole-tile control, OOB-fill / L2-promotion side experiment, parity, C example, GPU tests, ncu M = 16.
source .gpu/prelude.sh
export PYTHONPATH=$PWD/.gpu/smallm/tree:$PYTHONPATH
R=${OUT:-/tmp/out}; mkdir -p "$R"; W=$(mktemp -d); L=.gpu/smallm/links; T=.gpu/smallm/tree
B=$T/bench/gemm_swiglu.py
step() { local t=$1; shift; local f=$1; shift; local s=$SECONDS; timeout "$t" "$@" > "$W/$f" 2>&1; echo "rc=$? ${f} $((SECONDS - s))s" >> "$W/steps.txt"; }
{ cat .gpu/smallm/COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; cc --version | head -1; } > "$W/commit.txt" 2>&1
step 60 check.txt python3 $B $L/new $L/base --check-only --shapes 1,8,16,48,100,120,127,128,200,320 --k 512 --n 1024
step 90 check-big.txt python3 $B $L/new --check-only --shapes 16,128,512,2048,8192
SAN="compute-sanitizer --report-api-errors no --error-exitcode 3"
for t in racecheck synccheck memcheck; do step 60 san-$t.txt $SAN --tool $t python3 $B $L/new --check-only --shapes 16,200 --k 256 --n 256; done
step 200 bench-1.txt python3 $B $L/new $L/base --json "$W/bench-1.json"
step 60 tile.txt python3 $B $L/new --a-box tile --shapes 16,128 --no-compile --json "$W/tile.json"
step 40 side-default.txt python3 $B $L/base --shapes 16 --no-compile
step 40 side-nan.txt python3 $B $L/base --shapes 16 --no-compile --a-oob-fill nan
for p in none 128; do step 40 side-l2-$p.txt python3 $B $L/base --shapes 16 --no-compile --a-l2-promotion $p; done
step 90 parity.txt python3 $B $L/new --parity $L/new_control --shapes 16,128,512,2048,8192 --rounds 15 --json "$W/parity.json"
INC=$(python3 -c "from kernlink.host_providers import cuda_include; print(cuda_include() or '')"); [ -f "$INC/cuda.h" ] || INC=/usr/local/cuda/include
C=.gpu/smallm/cbuild
step 60 c-build.txt cc -std=c99 -O2 -I$C -I"$INC" $T/specs/examples/gemm_swiglu/host/gemm_host.c $C/provider_gemm_mainloop_mainloop_host.c -lcuda -lm -o /tmp/gemm_host
for s in "16 256 64" "100 512 1024" "300 512 1024"; do step 60 "c-$(echo $s | tr ' ' x).txt" /tmp/gemm_host $s; done
step 200 bench-2.txt python3 $B $L/new $L/base --json "$W/bench-2.json"
step 60 ncu-16.txt ncu --clock-control none -k kl_dispatch -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis python3 $B $L/new --check-only --shapes 16 --no-compile
(cd $T && step 150 pytest-gpu.txt python3 -m pytest -o addopts="" -q -m gpu -p no:cacheprovider tests/link/test_providers.py -k gemm)
grep -H "RACECHECK SUMMARY\|ERROR SUMMARY" "$W"/san-*.txt > "$W/sanitizer-summary.txt"
cat "$W"/c-*x*.txt > "$W/c-example.txt"
tar -C "$W" -czf "$R/results.tar.gz" .
cp "$W/steps.txt" "$W/bench-1.txt" "$W/bench-2.txt" "$W/parity.txt" "$W/check.txt" "$W/sanitizer-summary.txt" "$W/c-example.txt" "$R/" 2>/dev/null
cat "$W/steps.txt" "$W/sanitizer-summary.txt" "$W/c-example.txt"; tail -n 4 "$W/check.txt"; grep -v "^{" "$W/bench-1.txt" | tail -n 30; grep -v "^{" "$W/bench-2.txt" | grep -v "^$" | tail -n 28; tail -n 6 "$W/parity.txt"; for f in tile side-default side-nan side-l2-none side-l2-128; do grep -v "^{" "$W/$f.txt" | tail -n 2; done; tail -n 3 "$W/pytest-gpu.txt"
