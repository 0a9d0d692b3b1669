#!/usr/bin/env bash
# On the H200: `kernlink parity` with interleaved timing for every composition `kernlink link`
# can run today (hello, ring, the four tensor routes of tests/link/tensor_cases.py), then the
# GPU tests of tests/parity. Run from anywhere:
#
#     bash bench/gpu/run_parity.sh            # ROUNDS=60 REPS=20 WARMUP=10 by default
#
# Needs python3 with cuda-bindings and kernlink's pure-Python dependencies (lark, z3-solver,
# networkx, pyelftools, rich; the caller installs wheels). What comes back (in $OUT):
#   parity-summary.txt   every case's report as text (tables, timing), then each step's exit status
#   parity.json          every case's parity.json, by case
#   parity-results.tar.gz  the whole work folder (links, controls, SASS, args), without inputs
# Exit status: 0 when every case is proved and timed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.."
FINAL=${OUT:-/tmp/kernlink-parity}
PY=${PYTHON:-python3}
ROUNDS=${ROUNDS:-60}; REPS=${REPS:-20}; WARMUP=${WARMUP:-10}
WORK=$(mktemp -d)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" KERNLINK_CACHE="$WORK/cache" PYTHONUNBUFFERED=1
mkdir -p "$FINAL"
summary="$WORK/summary.txt"
status=0
{
    echo "kernlink parity on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
    echo "rounds $ROUNDS, launches per measurement $REPS, warm-ups $WARMUP; disassembler: $(command -v nvdisasm || echo none)"
    "$PY" -c "from toolchain.cuda import toolkit_versions; print('toolkit', toolkit_versions().as_dict())"
} > "$summary" 2>&1
if ! "$PY" bench/gpu/parity_cases.py "$WORK/cases" > "$WORK/cases.txt" 2>&1; then
    cat "$WORK/cases.txt" >> "$summary"; cp "$summary" "$FINAL/parity-summary.txt"; cat "$summary"; exit 1
fi
while IFS=$'\t' read -r name pipeline args; do
    echo "== $name: kernlink parity ${pipeline#"$WORK"/} -o out/$name --args ${args#"$WORK"/} --rounds $ROUNDS --reps $REPS --warmup $WARMUP" >> "$summary"
    "$PY" -m kernlink parity "$pipeline" -o "$WORK/out/$name" --args "$args" --rounds "$ROUNDS" \
        --reps "$REPS" --warmup "$WARMUP" --color never >> "$summary" 2>&1
    rc=$?
    echo "$name: exit $rc" >> "$summary"
    [ "$rc" -eq 0 ] || status=1
done < "$WORK/cases/cases.tsv"
"$PY" -m pytest -o addopts= -p no:cacheprovider -q -m gpu tests/parity > "$WORK/pytest-gpu-parity.txt" 2>&1
rc=$?; echo "pytest -m gpu tests/parity: exit $rc ($(tail -1 "$WORK/pytest-gpu-parity.txt"))" >> "$summary"
[ "$rc" -eq 0 ] || status=1
"$PY" - "$WORK/out" "$FINAL/parity.json" >> "$summary" 2>&1 <<'PYEOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
reports = {d.name: json.loads((d / "parity.json").read_text()) for d in sorted(out.iterdir()) if (d / "parity.json").is_file()}
Path(sys.argv[2]).write_text(json.dumps(reports, indent=2, sort_keys=True) + "\n")
print("== per case")
for name, r in reports.items():
    t = r.get("timing")
    rep = r.get("report", {})
    line = f"{name}: verdict {rep.get('verdict')}, folded {rep.get('folded')}"
    if t:
        line += (f"; ratio {t['ratio']['median']:.5f} [{t['ratio']['low']:.5f}, {t['ratio']['high']:.5f}]"
                 f", null {t['null']['median']:.5f} [{t['null']['low']:.5f}, {t['null']['high']:.5f}]"
                 f", linked {t['ms']['linked']*1000:.2f} us")
    print(line)
PYEOF
echo "all proved and timed: $([ "$status" -eq 0 ] && echo yes || echo no)" >> "$summary"
cp "$summary" "$FINAL/parity-summary.txt"
tar -C "$WORK" --exclude='*.bin' --exclude=cache -czf "$FINAL/parity-results.tar.gz" .
cat "$summary"
exit "$status"
