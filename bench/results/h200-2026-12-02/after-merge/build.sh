#!/usr/bin/env bash
# CPU side, from the merged main: pack and link gemm_swiglu's three sm_90a pairings and their
# one-unit controls, and the ring, into .gpu/final/links (carried to the H200 by run.sh's call).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
K="env PYTHONPATH=$ROOT ${PYTHON:-$ROOT/.venv/bin/python} -m kernlink"
WORK=$(mktemp -d)
OUTL="$ROOT/.gpu/final/links"
rm -rf "$OUTL"; mkdir -p "$OUTL"
cp -r "$ROOT/specs/examples/gemm_swiglu/." "$WORK/"
cd "$WORK"
for c in mainloop mma_sync smem_acc epilogue; do $K pack $c.cu --contract $c.kc -o build/$c.kpkg > "$OUTL/pack-$c.txt" 2>&1; done
for pair in wgmma:gemm_swiglu mma_sync:gemm_swiglu_mma_sync smem_acc:gemm_swiglu_smem_acc; do
    name=${pair%%:*}; kp=${pair#*:}
    $K link $kp.kp -o "$OUTL/$name" --color never > "$OUTL/$name.link.txt" 2>&1
    $K parity $kp.kp -o "$WORK/parity-$name" --color never > "$OUTL/$name.parity.txt" 2>&1 || true
    mkdir -p "$OUTL/${name}_control"
    cp "$OUTL/$name/link.json" "$OUTL/${name}_control/link.json"
    cp "$WORK/parity-$name/control.cubin" "$OUTL/${name}_control/kernel.cubin"
done
R=$(mktemp -d); cp -r "$ROOT/specs/examples/ring/." "$R/"; cd "$R"
for c in loader reduce; do $K pack $c.cu --contract $c.kc -o build/$c.kpkg > "$OUTL/pack-ring-$c.txt" 2>&1; done
$K link ring.kp -o "$OUTL/ring" --color never > "$OUTL/ring.link.txt" 2>&1
git -C "$ROOT" rev-parse --short HEAD > "$OUTL/COMMIT"
