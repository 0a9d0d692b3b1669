#!/usr/bin/env bash
# CPU: pack and link gemm_swiglu variants (wgmma producer + epilogue) and their one-unit controls
# into .gpu/gemm/links/<name>. Usage: build.sh NAME SRCDIR  (SRCDIR: a copy of specs/examples/gemm_swiglu)
set -euo pipefail
NAME=$1; SRC=$(cd "$2" && pwd)
# TREE: the kernlink tree to build with (default: this repository); PYTHON: its interpreter;
# OUTL: where the links go (default: $TREE/.gpu/gemm/links, carried to the device)
TREE=${TREE:-$(git -C "$(dirname "$0")" rev-parse --show-toplevel)}
PYTHON=${PYTHON:-python3}
K="env PYTHONPATH=$TREE $PYTHON -m kernlink"
OUTL=${OUTL:-$TREE/.gpu/gemm/links}
mkdir -p "$OUTL"; rm -rf "$OUTL/$NAME" "$OUTL/${NAME}_control"
WORK=$(mktemp -d); cp -r "$SRC/." "$WORK/"; cd "$WORK"
for c in mainloop epilogue; do $K pack $c.cu --contract $c.kc -o build/$c.kpkg > "$OUTL/$NAME.pack-$c.txt" 2>&1; done
$K link gemm_swiglu.kp -o "$OUTL/$NAME" --color never > "$OUTL/$NAME.link.txt" 2>&1
$K parity gemm_swiglu.kp -o "$WORK/parity" --color never > "$OUTL/$NAME.parity.txt" 2>&1 || true
mkdir -p "$OUTL/${NAME}_control"
cp "$OUTL/$NAME/link.json" "$OUTL/${NAME}_control/link.json"
cp "$WORK/parity/control.cubin" "$OUTL/${NAME}_control/kernel.cubin"
echo "$NAME: $(tail -1 "$OUTL/$NAME.link.txt")"
