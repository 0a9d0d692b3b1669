#!/usr/bin/env bash
# The committed core (attn3's K = main's attention links) at every timed length, against FA4 and cuDNN, in rounds.
set -o pipefail
G=.gpu/attn3; C=$G/c; R=/tmp/rf; rm -rf $R; mkdir -p $R
bash $G/bench/gpu/fa4_install.sh .gpu/fa4b /tmp/fa4site /tmp/fa4x/s.so.xz > $R/fa4_install.txt 2>&1 || { cat $R/fa4_install.txt; exit 3; }
export PYTHONUNBUFFERED=1
(cat .gpu/final/COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > $R/gpu.txt 2>&1
sha256sum $C/K/*.cubin | sed "s|$C/||" > $R/cubins.txt
timeout 300 python3 $G/bench/attention.py --cubins $C/K --variants noncausal,causal --timed noncausal,causal \
    --seqs 1024,4096,8192,16384 --rounds 8 --no-check --fa4 /tmp/fa4site --json $R/rounds.json > $R/rounds.txt 2>&1; echo "rounds rc=$?"
python3 - $R/rounds.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    if r.get("kernel") == "rounds":
        print(r["variant"], r["seq"], {k: round(v, 4) for k, v in r["ms"].items()}, json.dumps(r["ours_over"]))
PY
tar -C $R -cJf $OUT/attn.tar.xz .
