#!/usr/bin/env bash
# FlashAttention 4 (CuTe DSL) into $1 (default /tmp/fa4site): the wheels, plus nvidia-cutlass-dsl-libs-cu13
# whose two shared objects travel xz-compressed (the wheel is 92 MB, over one call's 64 MiB).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
S=${1:-/tmp/fa4site}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$S" "$HERE"/*.whl
cp -r "$HERE"/skel/. "$S"/
xz -dc "${FA4_IR_XZ:-$HERE/../fa4a/s.so.xz}" > "$S"/nvidia_cutlass_dsl/dsl_packages/cutlass/_mlir/_mlir_libs/_cutlass_ir.cu13.cpython-312-x86_64-linux-gnu.so
xz -dc "$HERE"/r.so.xz > "$S"/nvidia_cutlass_dsl/cu13/lib/libcute_dsl_runtime.so
chmod +x "$S"/nvidia_cutlass_dsl/dsl_packages/cutlass/_mlir/_mlir_libs/*.so "$S"/nvidia_cutlass_dsl/cu13/lib/libcute_dsl_runtime.so
echo "fa4 installed in $S"
