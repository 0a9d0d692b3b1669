#!/usr/bin/env bash
# Final call: the whole GPU suite at main's tree, then gemm3's M = 256/384/512 confirmation in rotating rounds.
set -o pipefail
R=$OUT; T0=$SECONDS
step() { echo "$1 rc=$2 total $((SECONDS-T0))s" | tee -a "$R/steps.txt"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
(git log -1 --format=%H 2>/dev/null || cat .gpu/final/COMMIT; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader;
 python3 -c "import torch,triton;print(torch.__version__,triton.__version__)") > "$R/gpu.txt" 2>&1
timeout 300 python3 -m pytest -o addopts= -m gpu -q -rA -p no:cacheprovider tests \
    --ignore=tests/diagnostics/test_render_json.py --ignore=tests/diagnostics/test_render_sarif.py \
    --ignore=tests/test_import_cycles.py > "$R/gpu_suite.txt" 2>&1; step suite $?
tail -3 "$R/gpu_suite.txt"
cd .gpu/gemm3 && sha256sum cubins/*.cubin >> "$R/gpu.txt"
timeout 200 python3 table_rounds.py 256,384,512 "$R/table.json" 5 linked_auto linked:sk:r16@256/384/512 > "$R/table.txt" 2>&1; step table $?
grep '^{' "$R/table.txt" | cut -c1-600
