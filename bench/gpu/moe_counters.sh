#!/usr/bin/env bash
# On the H200: counters and the watchdog (issue 17 items 1 and 4). Runs the GPU tests of
# tests/moe (the counter hand-off at 8 and 132 blocks, twice per module so the reset between
# launches is exercised; a consumer with a stale count that the watchdog turns into a decoded
# E-HANG), then compute-sanitizer memcheck, racecheck and synccheck on the hand-off at 4 blocks,
# keeps the decoded hang of `kernlink run`, and runs bench/stale_handoff.py (three one-constant
# upgrades: symbol link vs kernlink relink). Outputs under $OUT:
#
#     bash bench/gpu/moe_counters.sh
#
# Needs kernlink's pure-Python dependencies importable (see bench/gpu/run_examples.sh).
set -uo pipefail
SAN="compute-sanitizer --report-api-errors no --error-exitcode 99"
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kernlink-gpu}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" KERNLINK_CACHE="${TMPDIR:-/tmp}/kernlink-cache"
summary="$OUT/summary.txt"
: > "$summary"
status=0
step() {  # step NAME COMMAND...: run, keep its output in $OUT/NAME.txt, record the exit status
    local name=$1; shift
    "$@" > "$OUT/$name.txt" 2>&1
    local rc=$?
    echo "$name: exit $rc" | tee -a "$summary"
    [ "$rc" -eq 0 ] || status=1
}
work=$(mktemp -d)
step pytest-gpu "$PY" -m pytest -o addopts= -p no:cacheprovider -v -m gpu tests/moe
# the hand-off linked once (plain) and once with a stale consumer count under the watchdog
"$PY" -c "
import json, sys
from pathlib import Path
from kernlink.api import link
from tests.moe.test_counters import build_handoff
root = Path(sys.argv[1])
assert link([build_handoff(root / 'plain')], root / 'plain-out').ok
stale = {'cons.cu': {'ready_counter_wait(k, gridDim.x * params->adds)': 'ready_counter_wait(k, gridDim.x * params->adds + 1)'}}
assert link([build_handoff(root / 'stale', stale)], root / 'stale-out', watchdog=20_000_000).ok
grid, tiles = 4, 4
(root / 'args.json').write_text(json.dumps({'grid': grid, 'values': {'tiles': tiles}, 'buffers': {
    'data': {'bytes': tiles * grid * 128}, 'out': {'bytes': tiles * grid * 128 + 8 * grid, 'output': 'out.bin'}}}))
" "$work" > "$work/build.txt" 2>&1
echo "build: exit $?" | tee -a "$summary"
for tool in memcheck racecheck synccheck; do
    step "sanitizer-$tool" $SAN --tool "$tool" "$PY" -m kernlink run "$work/plain-out" --args "$work/args.json"
done
"$PY" -m kernlink run "$work/stale-out" --args "$work/args.json" --color never > "$OUT/hang.txt" 2>&1
echo "hang (expected to fail with E-HANG): exit $?" | tee -a "$summary"
grep -q "error\[E-HANG\]" "$OUT/hang.txt" || status=1
# the stale-upgrade study on the hand-off: symbol link vs kernlink relink of one owner's fact change
step stale_handoff "$PY" bench/stale_handoff.py --out "$work/stale" --grid 8 --tiles 4 --json "$OUT/stale_handoff.json"
exit $status
