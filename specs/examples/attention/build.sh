#!/usr/bin/env bash
# Builds one cubin per composition of attention.cu (sm_90a) into OUTDIR (default: build/), with
# ptxas's resource report beside each (NAME.ptxas.txt). Usage: build.sh [OUTDIR] [NAME ...]
# A NAME is LOAD-MASK-SCORE-dD-sS: LOAD dense | blocksparse | paged, MASK none | causal |
# window | chunked, SCORE none | softcap | alibi, D 64 | 128, S the ring depth; a suffix -vswap
# builds the diagnostic ATTN_VDESC_SWAP (V's descriptor offsets exchanged). Default: the
# compositions bench/attention.py runs (COMPOSITIONS below).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE/build}
shift || true
COMPOSITIONS="dense-none-none-d128-s2 dense-causal-none-d128-s2 dense-none-none-d128-s3 dense-causal-none-d128-s3
dense-window-none-d128-s2 dense-none-softcap-d128-s2 dense-chunked-none-d128-s2 dense-causal-alibi-d128-s2
blocksparse-causal-none-d128-s2 paged-causal-none-d128-s2 dense-none-none-d64-s4 dense-causal-none-d64-s4
dense-none-none-d128-s2-vswap"
NAMES=${*:-$COMPOSITIONS}
NVCC=${NVCC:-nvcc}
mkdir -p "$OUT"
build() {
    local name=$1
    local load mask score d s extra flags=""
    IFS=- read -r load mask score d s extra <<< "$name"
    [ "$extra" = "vswap" ] && flags="-DATTN_VDESC_SWAP"
    "$NVCC" -gencode=arch=compute_90a,code=sm_90a -cubin -O3 -std=c++17 -Xptxas -v \
        -DATTN_LOAD_H="\"load_$load.cuh\"" -DATTN_MASK_H="\"mask_$mask.cuh\"" -DATTN_SCORE_H="\"score_$score.cuh\"" \
        -DATTN_D="${d#d}" -DATTN_STAGES="${s#s}" $flags ${ATTN_EXTRA:-} \
        -o "$OUT/attn_$name.cubin" "$HERE/attention.cu" > "$OUT/attn_$name.ptxas.txt" 2>&1 \
        || { cat "$OUT/attn_$name.ptxas.txt"; return 1; }
    if grep -qE "C75|warning|[1-9][0-9]* bytes spill" "$OUT/attn_$name.ptxas.txt"; then
        echo "$name: ptxas warns or spills:"; grep -E "C75|warning|[1-9][0-9]* bytes spill" "$OUT/attn_$name.ptxas.txt"
    fi
    echo "$name: $(grep -E 'registers|spill' "$OUT/attn_$name.ptxas.txt" | tr -s ' ' | tr '\n' ' ')"
}
for name in $NAMES; do
    build "$name"
done
