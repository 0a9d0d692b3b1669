#!/usr/bin/env bash
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
(cat .gpu/final7/COMMIT; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) > "$OUT/gpu.txt" 2>&1
timeout 220 python3 -m pytest -o addopts= -m gpu -q -rA -p no:cacheprovider tests \
    --ignore=tests/diagnostics/test_render_json.py --ignore=tests/diagnostics/test_render_sarif.py \
    --ignore=tests/test_import_cycles.py > "$OUT/gpu_suite.txt" 2>&1; echo "suite rc=$?"
tail -2 "$OUT/gpu_suite.txt"
