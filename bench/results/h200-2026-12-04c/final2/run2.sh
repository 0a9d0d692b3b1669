#!/usr/bin/env bash
# Window and softcap against FA4 with the committed core (rounds); the GEMM's candidates in (256, 512].
set -o pipefail
G=.gpu/attn3; C=$G/c; R=/tmp/rf2; rm -rf $R; mkdir -p $R; T0=$SECONDS
step() { echo "$1 rc=$2 total $((SECONDS-T0))s" | tee -a "$R/steps.txt"; }
bash $G/bench/gpu/fa4_install.sh .gpu/fa4b /tmp/fa4site /tmp/fa4x/s.so.xz > $R/fa4_install.txt 2>&1 || { cat $R/fa4_install.txt; exit 3; }
export PYTHONUNBUFFERED=1
(cat .gpu/final/COMMIT; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader) > $R/gpu.txt 2>&1
timeout 200 python3 $G/bench/attention.py --cubins $C/K --variants window,softcap --timed window,softcap \
    --seqs 4096,16384 --rounds 8 --no-check --fa4 /tmp/fa4site --json $R/variants_rounds.json > $R/variants_rounds.txt 2>&1; step attn $?
python3 - $R/variants_rounds.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    if r.get("kernel") == "rounds":
        print(r["variant"], r["seq"], {k: round(v, 4) for k, v in r["ms"].items()}, {k: round(1 / v["median"], 3) for k, v in r["ours_over"].items()})
PY
cd .gpu/gemm3 && sha256sum cubins/*.cubin >> $R/gpu.txt
timeout 240 python3 table_rounds.py 320,384,448 $R/gemm_table.json 3 linked_auto linked:dp:r16:p3@320/384/448 linked:sk2:r16:p3@320/384/448 \
    linked:sk:r4:p3@320/384/448 linked_small:sk:r4@320/384/448 linked_small:dp@320/384/448 > $R/gemm_table.txt 2>&1; step gemm $?
grep '^{"m"' $R/gemm_table.txt | cut -c1-900
tar -C $R -cJf $OUT/run2.tar.xz .
