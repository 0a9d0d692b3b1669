#!/usr/bin/env bash
# moe4 on the H200 (issue 17). Two parts:
#
#   bash bench/gpu/moe4.sh build     # on any machine with the CUDA toolkit (nvrtc, nvJitLink): pack and link
#   bash bench/gpu/moe4.sh run       # on the GPU (PyTorch, compute-sanitizer): run what `build` made
#
# `build` writes $WORK/stale (moe4 plain and under --watchdog, and each of the five one-constant upgrades
# linked three ways: old, kernlink relink, nvJitLink symbol link) and $WORK/small (moe4 at 64 tokens);
# WORK defaults to build/moe4 (ignored by git).
# `run` checks moe4 against PyTorch (8 blocks, every SM; 64 tokens at 4 blocks), runs memcheck on the
# small plain link, classifies the study (bench/stale_facts.py --run), re-runs bench/stale_handoff.py,
# and runs memcheck over each symbol link. Outputs under $OUT (summary.txt lists each step's exit status).
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
W=${WORK:-build/moe4}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [ "${1:-}" = build ]; then
    "$PY" bench/stale_facts.py --build $W/stale --grid 8 && \
    "$PY" bench/stale_facts.py --build $W/small --tokens 64 --no-cases --grid 4
    exit $?
fi
OUT=${OUT:-/tmp/moe4-gpu}; mkdir -p "$OUT"
S=$OUT/summary.txt
{ echo "tree commit: $(git rev-parse HEAD 2>/dev/null || cat COMMIT)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$S" 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1; echo "$name: exit $? ($((SECONDS - t0)) s)" >> "$S"; }
SAN="compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99"
step stale_facts 120 "$PY" bench/stale_facts.py --run $W/stale --grid 8 --json "$OUT/stale_facts.json"
step small 25 "$PY" bench/stale_facts.py --run $W/small --grid 4
step sanitizer-memcheck 45 $SAN "$PY" -m kernlink run $W/small/moe4/plain --args $W/small/moe4/plain/args.json \
    --color never
step stale_handoff 80 "$PY" bench/stale_handoff.py --out "${TMPDIR:-/tmp}/stale_handoff" --grid 8 --tiles 4 \
    --json "$OUT/stale_handoff.json"
for d in $W/stale/*/symbol; do
    echo "=== $d" >> "$OUT/sanitizer-symbol.txt"; t0=$SECONDS
    timeout 22 $SAN "$PY" -m kernlink run "$d" --args "$d/args.json" --color never >> "$OUT/sanitizer-symbol.txt" 2>&1
    echo "sanitizer $d: exit $? ($((SECONDS - t0)) s)" >> "$S"
done
cat "$S"
