"""CPU time of whole `kernlink` processes: start-up (`--version`) and a small check.

    python bench/cli_latency.py            # a table
    python bench/cli_latency.py --json     # the same figures as JSON

Each command runs ``--repeats`` times in a fresh process; the figure is the child's user +
system CPU time (``resource.getrusage(RUSAGE_CHILDREN)`` differences), median and minimum.
Goals (issue 19): ``--version`` ≤ 0.15 s, ``check specs/examples/hello/hello.kp`` ≤ 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "kernlink --version": ["--version"],
    "kernlink check hello.kp": ["check", "specs/examples/hello/hello.kp", "--color", "never"],
    "kernlink check ring.kp": ["check", "specs/examples/ring/ring.kp", "--color", "never"],
    "kernlink explain L-PAIR": ["explain", "L-PAIR"],
}


def cpu_of(args: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "kernlink", *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cpu_of(["--version"])  # warm the grammar cache and the file system
    rows = []
    for name, argv in COMMANDS.items():
        times = [cpu_of(argv) for _ in range(args.repeats)]
        rows.append({"command": name, "median_cpu_s": statistics.median(times), "min_cpu_s": min(times)})
    if args.json:
        print(json.dumps({"repeats": args.repeats, "rows": rows}, indent=2))
    else:
        print(f"{'command':28} {'median CPU s':>13} {'min CPU s':>10}")
        for r in rows:
            print(f"{r['command']:28} {r['median_cpu_s']:13.3f} {r['min_cpu_s']:10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
