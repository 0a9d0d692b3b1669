#!/usr/bin/env bash
# Builds one cubin per kernel of gemm_swiglu_persistent.cu (sm_90a) into OUTDIR (default: build/),
# with ptxas's resource report beside each (NAME.ptxas.txt). Usage: build.sh [OUTDIR] [NAME ...]
# NAMEs: coop256_c1 coop256_c2 coop128_c1 coop128k2_c1 pp128_c1 pp128_c2 (default: all), each
# optionally suffixed _eN to build it with the epilogue arithmetic GS_EPI=N (epilogue.cuh; the
# default, without a suffix, is GS_EPI=1).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE/build}
shift || true
NAMES=${*:-coop256_c1 coop256_c2 coop128_c1 coop128k2_c1 pp128_c1 pp128_c2}
NVCC=${NVCC:-nvcc}
mkdir -p "$OUT"
for name in $NAMES; do
    kernel=${name%_e[0-9]}
    epi=1
    [ "$kernel" != "$name" ] && epi=${name##*_e}
    "$NVCC" -gencode=arch=compute_90a,code=sm_90a -cubin -O3 -std=c++17 -Xptxas -v \
        -DGS_ONLY_"$kernel" -DGS_EPI="$epi" -o "$OUT/gs_$name.cubin" "$HERE/gemm_swiglu_persistent.cu" > "$OUT/gs_$name.ptxas.txt" 2>&1 \
        || { cat "$OUT/gs_$name.ptxas.txt"; exit 1; }
    if grep -q "C75" "$OUT/gs_$name.ptxas.txt"; then
        echo "$name: ptxas warns:"; grep "C75" "$OUT/gs_$name.ptxas.txt"
    fi
    echo "$name: $(grep -E 'registers|spill' "$OUT/gs_$name.ptxas.txt" | tr -s ' ' | tr '\n' ' ')"
done
