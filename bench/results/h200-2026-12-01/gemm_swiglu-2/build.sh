#!/usr/bin/env bash
# CPU side: pack and link the gemm_swiglu compositions and their one-unit controls into .gpu/gemm/links
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
K="env PYTHONPATH=$ROOT ${PYTHON:-python3} -m kernlink"
WORK=$(mktemp -d)
cp -r "$ROOT/specs/examples/gemm_swiglu/." "$WORK/"
cd "$WORK"
for c in mainloop mma_sync smem_acc epilogue; do $K pack $c.cu --contract $c.kc -o build/$c.kpkg >/dev/null 2>&1; done
OUTL="$ROOT/.gpu/gemm/links"
rm -rf "$OUTL"; mkdir -p "$OUTL"
for pair in wgmma:gemm_swiglu mma_sync:gemm_swiglu_mma_sync smem_acc:gemm_swiglu_smem_acc; do
    name=${pair%%:*}; kp=${pair#*:}
    $K link $kp.kp -o "$OUTL/$name" --color never > "$OUTL/$name.link.txt" 2>&1
    $K parity $kp.kp -o "$WORK/parity-$name" --color never > "$OUTL/$name.parity.txt" 2>&1 || true
    mkdir -p "$OUTL/${name}_control"
    cp "$OUTL/$name/link.json" "$OUTL/${name}_control/link.json"
    cp "$WORK/parity-$name/control.cubin" "$OUTL/${name}_control/kernel.cubin"
done
echo "$WORK"
