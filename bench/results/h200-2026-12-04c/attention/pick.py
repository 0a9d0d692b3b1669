"""Pick the form to check after the rounds (issue 29, helper attn3): read rounds.json (bench/attention.py --rounds),
compute each form's speed over FA4 per row as the median over rounds of FA4's time / the form's time (neighbours
in one round), print a table and, last, the label of the form with the best non-causal 16k ratio among those
whose other three rows are all >= 0.95 (else the best non-causal 16k ratio). Labels: `ours` = L0, `control` =
the --control folder, the rest as given by --extra.

    python3 pick.py rounds.json [ours=L0 control=W]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main() -> int:
    rows = json.loads(Path(sys.argv[1]).read_text())
    names = dict(a.split("=", 1) for a in sys.argv[2:])
    table: dict[str, dict[str, float]] = {}
    for row in rows:
        if row.get("kernel") != "rounds" or "fa4" not in row["times"]:
            continue
        key = f"{row['variant']}@{row['seq']}"
        fa4 = row["times"]["fa4"]
        for label, ts in row["times"].items():
            if label in ("fa4", "sdpa_cudnn"):
                continue
            ratios = sorted(f / t for f, t in zip(fa4, ts, strict=True))
            table.setdefault(names.get(label, label), {})[key] = statistics.median(ratios)
            table[names.get(label, label)][key + ":range"] = f"{ratios[0]:.3f}..{ratios[-1]:.3f}"  # type: ignore[assignment]
    goal = "noncausal@16384"
    keys = [k for k in next(iter(table.values())) if not k.endswith(":range")]
    for label, r in table.items():
        print(label.ljust(8), "  ".join(f"{k} {r[k]:.3f} ({r[k + ':range']})" for k in keys))
    ok = [lab for lab, r in table.items() if all(r[k] >= 0.95 for k in keys if k != goal)]
    best = max(ok or list(table), key=lambda lab: table[lab][goal])
    print(best)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
