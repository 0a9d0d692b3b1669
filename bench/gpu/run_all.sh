#!/usr/bin/env bash
# On the H200, everything that needs the GPU, in one call (the device time is scarce):
#   1. the linked examples and their compute-sanitizer runs (bench/gpu/run_examples.sh);
#   2. the accumulator read-back (mma.sync m16n8k16, wgmma m64nNk16) compared with the
#      data the CPU tests check the library maps against;
#   3. the generated tensor routes on the GPU (tests/transfer_model, -m gpu) and
#      compute-sanitizer racecheck/synccheck on a staging route.
# Outputs go to a scratch folder and come back as one archive plus the summary:
#     $OUT/summary.txt  $OUT/gpu-results.tar.gz
set -uo pipefail
cd "$(dirname "$0")/../.."
FINAL=${OUT:-/tmp/kernlink-final}
WORK=$(mktemp -d)
export OUT="$WORK/examples"
mkdir -p "$OUT" "$FINAL"
PY=${PYTHON:-python3}
status=0
bash bench/gpu/run_examples.sh || status=1
T="$WORK/transfer"; mkdir -p "$T"
{
    echo "== accumulator read-back"
    nvcc -std=c++17 -arch=sm_90a -o "$T/readback" transfer_model/cuda/readback.cu && "$T/readback" > "$T/readback.json" \
        && "$PY" -c "
import json, sys
new = json.load(open('$T/readback.json')); old = json.load(open('tests/transfer_model/data/accumulator_readback.json'))
same = new == old
print('read-back identical to tests/transfer_model/data/accumulator_readback.json:', same)
sys.exit(0 if same else 1)"
} > "$T/readback.txt" 2>&1 || status=1
"$PY" -m pytest -o addopts= -p no:cacheprovider -v -m gpu tests/transfer_model > "$T/pytest-transfer-gpu.txt" 2>&1 || status=1
# compute-sanitizer on every generated shuffle and staging route of the lowering tests
"$PY" - "$T" > "$T/sanitizer-routes-build.txt" 2>&1 <<'PYEOF' || status=1
import sys
from pathlib import Path
from tests.transfer.harness import harness_source
from tests.transfer.test_route_lowering import CASES, SEAMS
out = Path(sys.argv[1])
for name, program in sorted(CASES.items()):
    if program.route in ("warp-shuffle", "smem-staging"):
        export, imp, _, _ = SEAMS[name]
        (out / f"route_{name}.cu").write_text(harness_source(name, program, export, imp))
        print(name, program.route)
PYEOF
for src in "$T"/route_*.cu; do
    bin="${src%.cu}"
    nvcc -std=c++17 -arch=sm_90a -o "$bin" "$src" >> "$T/sanitizer-routes.txt" 2>&1 || status=1
    for tool in racecheck synccheck memcheck; do
        echo "== $tool $(basename "$bin")" >> "$T/sanitizer-routes.txt"
        compute-sanitizer --tool "$tool" --error-exitcode 99 "$bin" >> "$T/sanitizer-routes.txt" 2>&1 || status=1
    done
done
{
    echo "status of every step:"; cat "$OUT/summary.txt" 2>/dev/null
    echo "readback: $(tail -1 "$T/readback.txt")"
    echo "transfer gpu tests: $(tail -1 "$T/pytest-transfer-gpu.txt")"
    echo "route sanitizer runs: $(grep -c '^== ' "$T/sanitizer-routes.txt") runs, $(grep -c 'ERROR SUMMARY: 0 errors' "$T/sanitizer-routes.txt") with 0 errors, $(grep -c 'RACECHECK SUMMARY: 0 hazards' "$T/sanitizer-routes.txt") racecheck clean"
    echo "all passed: $([ "$status" -eq 0 ] && echo yes || echo no)"
} > "$FINAL/summary.txt"
tar -C "$WORK" -czf "$FINAL/gpu-results.tar.gz" .
cat "$FINAL/summary.txt"
exit "$status"
