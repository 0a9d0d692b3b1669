#!/usr/bin/env bash
# CPU: pack and link gemm_swiglu variants (wgmma producer + epilogue) and their one-unit controls
# into .gpu/gemm/links/<name>. Usage: build.sh NAME SRCDIR  (SRCDIR: a copy of specs/examples/gemm_swiglu)
set -euo pipefail
NAME=$1; SRC=$(cd "$2" && pwd)
WT=/work/wt/smallm
K="env PYTHONPATH=$WT /work/main/.venv/bin/python -m kernlink"
OUTL=/work/main/.gpu/smallm/links
mkdir -p "$OUTL"; rm -rf "$OUTL/$NAME" "$OUTL/${NAME}_control"
WORK=$(mktemp -d); cp -r "$SRC/." "$WORK/"; cd "$WORK"
for c in mainloop epilogue; do $K pack $c.cu --contract $c.kc -o build/$c.kpkg > "$OUTL/$NAME.pack-$c.txt" 2>&1; done
$K link gemm_swiglu.kp -o "$OUTL/$NAME" --color never > "$OUTL/$NAME.link.txt" 2>&1
$K parity gemm_swiglu.kp -o "$WORK/parity" --color never > "$OUTL/$NAME.parity.txt" 2>&1 || true
mkdir -p "$OUTL/${NAME}_control"
cp "$OUTL/$NAME/link.json" "$OUTL/${NAME}_control/link.json"
cp "$WORK/parity/control.cubin" "$OUTL/${NAME}_control/kernel.cubin"
echo "$NAME: $(tail -1 "$OUTL/$NAME.link.txt")"
