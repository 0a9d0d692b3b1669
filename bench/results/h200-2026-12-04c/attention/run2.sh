#!/usr/bin/env bash
# H200, issue 29 (helper attn3), second session: the committed core (K = the eight links of the branch head,
# byte-identical to run.sh's WP2) against main's links (L0), FA4 and cuDNN in interleaved rounds, and the
# variants against FlexAttention and dense causal (run.sh's outputs of these two steps did not come back: one
# call returns at most a few files, so everything here is returned as one archive). Run from the repository
# root after `bash $G/bench/gpu/fa4_install.sh .gpu/fa4b /tmp/fa4site /tmp/fa4x/s.so.xz` (G=.gpu/attn3).
set -o pipefail
G=${G:-.gpu/attn3}; R=/tmp/r2; C=$G/c; rm -rf "$R"; mkdir -p "$R"
export PYTHONUNBUFFERED=1
A="python3 $G/bench/attention.py"
step() { echo "$1 rc=$2 t=${SECONDS}s" | tee -a "$R/steps.txt"; }
(cat $G/COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > "$R/gpu.txt" 2>&1
sha256sum $C/K/*.cubin $C/L0/*.cubin | sed "s|$C/||" > "$R/cubins.txt"
timeout 200 $A --cubins $C/K --control $C/L0 --variants noncausal,causal --timed noncausal,causal \
    --seqs 4096,16384 --rounds 12 --no-check --fa4 /tmp/fa4site --json "$R/rounds2.json" > "$R/rounds2.txt" 2>&1; step rounds2 $?
python3 $G/pick.py "$R/rounds2.json" ours=K control=L0 > "$R/pick2.txt" 2>&1; step pick2 $?
V=causal,window,chunked,softcap,blocksparse10,blocksparse25
timeout 150 $A --cubins $C/K --control $C/L0 --variants $V --timed $V --seqs 4096,16384 --no-check --no-sdpa \
    --flex window@16384,chunked@16384,softcap@16384,window@4096,chunked@4096,softcap@4096 --flex-budget-s 120 \
    --json "$R/variants.json" > "$R/variants.txt" 2>&1; step variants $?
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$R/gpu.txt"
rm -f "$R"/*.partial.jsonl
tar -C "$R" -cJf "$OUT/run2.tar.xz" .
cat "$R/pick2.txt"; cat "$R/steps.txt"; grep -v "^{" "$R/rounds2.txt" | grep -v "Warning\|exe_args" | tail -5
