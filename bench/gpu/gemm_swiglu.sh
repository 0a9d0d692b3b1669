#!/usr/bin/env bash
# On the H200: the linked gemm_swiglu kernels (link folders given as arguments, each holding
# kernel.cubin and link.json from `kernlink link`) checked and timed by bench/gemm_swiglu.py,
# then compute-sanitizer (memcheck, racecheck, synccheck) at a small shape. Each step runs
# under `timeout`, so a kernel that hangs costs one step, not the call. $OUT receives
# bench.txt, bench.json and every log in gemm-swiglu-logs.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
FINAL=${OUT:-/tmp/gemm-swiglu}
OUT=$(mktemp -d)
mkdir -p "$FINAL"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
for link in "$@"; do
    name=$(basename "$link")
    cuobjdump -sass "$link/kernel.cubin" > "$OUT/$name-sass.txt" 2>&1
    echo "== $name: correctness at small and odd shapes"
    timeout 120 "$PY" bench/gemm_swiglu.py "$link" --check-only --shapes 16,200,384 --k 512 --n 1024 \
        2>&1 | tee "$OUT/$name-check.txt" || status=1
done
echo "== bench: every kernel side by side with torch.matmul + silu*up"
timeout 400 "$PY" bench/gemm_swiglu.py "$@" --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt" || status=1
for link in "$@"; do
    name=$(basename "$link")
    for tool in memcheck racecheck synccheck; do
        echo "== $name: compute-sanitizer $tool"
        timeout 150 compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 3 "$PY" bench/gemm_swiglu.py "$link" \
            --check-only --shapes 200 --k 256 --n 256 > "$OUT/$name-sanitizer-$tool.txt" 2>&1 || status=1
        tail -3 "$OUT/$name-sanitizer-$tool.txt"
    done
done
cp "$OUT/bench.txt" "$OUT/bench.json" "$FINAL/" 2>/dev/null
tar -C "$OUT" -czf "$FINAL/gemm-swiglu-logs.tar.gz" .
exit $status
