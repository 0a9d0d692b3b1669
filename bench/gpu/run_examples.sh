#!/usr/bin/env bash
# On the H200: the GPU tests of the linked examples (hello, ring, ring re-solved for two
# blocks per SM) and of the linked tensor connections (tests/link/test_tensor_link.py:
# register copy, warp shuffle, staging by tile and by chunk), then compute-sanitizer
# memcheck, racecheck and synccheck on ring (and memcheck on hello), and racecheck,
# synccheck and memcheck on the two staging routes, every output under $OUT. Run from anywhere:
#
#     bash bench/gpu/run_examples.sh
#
# Needs python3 with cuda-bindings (the image has it) and kernlink's pure-Python deps
# (lark, z3-solver, networkx, pyelftools, hypothesis, rich, pytest): wheels in .whl/ at
# the repository root are installed offline first. Exit status: 0 when every step passed.
set -uo pipefail
# cuda-bindings probes driver entry points with cuGetProcAddress at import; the ones this
# driver lacks return CUDA_ERROR_INVALID_VALUE, which memcheck reports as host API errors.
# They are not the kernels' doing: device-side checks only.
SAN="compute-sanitizer --report-api-errors no --error-exitcode 99"
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kernlink-gpu}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" KERNLINK_CACHE="$OUT/cache"
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

if [ -d .whl ]; then
    step install "$PY" -m pip install --no-index --find-links .whl lark z3-solver networkx pyelftools \
        hypothesis rich pytest
fi
step environment "$PY" -c "
import sys, lark, z3, networkx, elftools, hypothesis, rich, pytest
from cuda.bindings import nvrtc, nvjitlink, driver
from toolchain.cuda import toolkit_versions
print(sys.version); print('z3', z3.get_version_string()); print('toolkit', toolkit_versions().as_dict())
print('driver', driver.cuDriverGetVersion())"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
if ! grep -q "environment: exit 0" "$summary"; then
    echo "python3 lacks kernlink's dependencies: see $OUT/environment.txt" | tee -a "$summary"
    exit 1
fi

step pytest-gpu "$PY" -m pytest -o addopts= -p no:cacheprovider -v -m gpu tests/link
step ring-plain "$PY" bench/gpu/run_one.py ring --out "$OUT/ring-plain" --tiles 37 --blocks 4
for tool in memcheck racecheck synccheck; do
    step "sanitizer-ring-$tool" $SAN --tool "$tool" \
        "$PY" bench/gpu/run_one.py ring --out "$OUT/ring-$tool" --tiles 8 --blocks 2
done
step sanitizer-hello-memcheck $SAN --tool memcheck \
    "$PY" bench/gpu/run_one.py hello --out "$OUT/hello-memcheck" --n 1000 --blocks 3
for case in staging staging-chunk; do
    for tool in racecheck synccheck memcheck; do
        step "sanitizer-$case-$tool" $SAN --tool "$tool" \
            "$PY" bench/gpu/run_tensor.py "$case" --out "$OUT/$case-$tool" --blocks 2
    done
done
echo "all steps passed: $([ "$status" -eq 0 ] && echo yes || echo no)" | tee -a "$summary"
exit "$status"
