#!/usr/bin/env bash
# FlashAttention 4 (CuTe DSL) into a site folder on the device, for `bench/attention.py --fa4 SITE`.
#   fa4_install.sh WHEELS SITE [IR_XZ]
# WHEELS holds the wheels (flash-attn-4, nvidia-cutlass-dsl, -libs-base, -libs-core, quack-kernels,
# apache-tvm-ffi, torch-c-dlpack-ext, einops, protobuf) and, because nvidia-cutlass-dsl-libs-cu13's
# wheel (92 MB) is over what one device call carries, that wheel's files in WHEELS/skel/ without its
# two shared objects, which travel xz-compressed: WHEELS/r.so.xz (libcute_dsl_runtime.so) and
# IR_XZ (the 50 MB _cutlass_ir extension; default WHEELS/s.so.xz), copied to the device by an
# earlier call on the same machine.
set -euo pipefail
W=$(cd "$1" && pwd); S=$2; IR=${3:-$W/s.so.xz}
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target "$S" "$W"/*.whl
cp -r "$W"/skel/. "$S"/
LIBS="$S"/nvidia_cutlass_dsl
xz -dc "$IR" > "$LIBS"/dsl_packages/cutlass/_mlir/_mlir_libs/_cutlass_ir.cu13.cpython-312-x86_64-linux-gnu.so
xz -dc "$W"/r.so.xz > "$LIBS"/cu13/lib/libcute_dsl_runtime.so
chmod +x "$LIBS"/dsl_packages/cutlass/_mlir/_mlir_libs/*.so "$LIBS"/cu13/lib/libcute_dsl_runtime.so
echo "fa4 installed in $S"
