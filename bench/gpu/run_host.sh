#!/usr/bin/env bash
# On the H200: the host side of a linked kernel — the Python session (launch, CUDA-graph
# replay) and the C example through kernel.h on the ring — then the launch-overhead bench.
# Outputs under $OUT: host-tests.txt, session.json, session.txt. Run from anywhere:
#
#     bash bench/gpu/run_host.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kernlink-host}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" KERNLINK_CACHE="$OUT/cache"
status=0
"$PY" -m pytest -o addopts= -p no:cacheprovider -v -m gpu tests/session tests/link/test_host_header.py \
    > "$OUT/host-tests.txt" 2>&1 || status=1
tail -3 "$OUT/host-tests.txt"
"$PY" bench/session.py --json > "$OUT/session.json" 2> "$OUT/session-err.txt" || status=1
"$PY" bench/session.py > "$OUT/session.txt" 2>> "$OUT/session-err.txt" || status=1
cat "$OUT/session.txt" "$OUT/session-err.txt"
exit $status
