"""Mutants checked per second by ``kernlink fuzz`` on the reference compositions.

    python bench/fuzz.py                         # ring, 1000 mutants, every clause, jobs = CPUs
    python bench/fuzz.py --examples 2000 --all   # every reference composition
    python bench/fuzz.py --json
    python bench/fuzz.py --names ring,attention --jobs 1 --examples 300 --json
    KERNLINK_BENCH_ROOT=../old python bench/fuzz.py --names ring   # the tree at ../old, same flags

Each row is one campaign (fixed seed, so every run checks the same mutants): the
mutants checked, the wall time and mutants per second, with every clause and with the
SMT-decided clauses skipped (``--ignore`` of L-ASSUME and the protocol model's
clauses), which shows where the time goes. Worker start-up is included in the wall
time; loading the composition is not. The machine's load average is printed because
other processes on a 2-core machine halve the figure; with ``--jobs 1`` the campaign runs
in this process, and its CPU seconds (and mutants per CPU-second) are less sensitive to
that load than the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

# KERNLINK_BENCH_ROOT measures another tree (e.g. a worktree of an earlier commit) with these flags
ROOT = Path(os.environ.get("KERNLINK_BENCH_ROOT") or Path(__file__).resolve().parents[1]).resolve()
sys.path.insert(0, str(ROOT))

from checker.engine import by_code, selected  # noqa: E402
from fuzzing.campaign import Campaign, default_jobs  # noqa: E402
from fuzzing.subject import load_subject  # noqa: E402

EXAMPLES = ROOT / "specs" / "examples"
NAMES = ("ring", "gemm_swiglu", "attention", "moe4", "cp", "hello")
SMT_CLAUSES = ("L-ASSUME", "L-ARRIVE", "L-TXBYTES", "L-PARITY", "L-RACE", "L-DEADLOCK")


def bench(name: str, examples: int, jobs: int, seed: int, ignore: tuple[str, ...]) -> dict[str, object]:
    subject = load_subject([str(EXAMPLES / name / f"{name}.kp")])
    known = set(by_code())
    clauses = selected(None, [c for c in ignore if c in known] or None)
    campaign = Campaign(subject, seed, max_edits=2, clauses=clauses)
    start, cpu = time.perf_counter(), time.process_time()
    report = campaign.run(examples=examples, jobs=jobs)
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu
    status = {s: sum(o.classification.status == s for o in report.outcomes) for s in ("rejected", "accepted", "bug")}
    return {
        "composition": name,
        "clauses": "all" if not ignore else "no SMT",
        "jobs": jobs,
        "mutants": len(report.outcomes),
        "seconds": round(wall, 2),
        "mutants_per_s": round(len(report.outcomes) / wall, 1),
        **(
            {"cpu_seconds": round(cpu, 2), "mutants_per_cpu_s": round(len(report.outcomes) / cpu, 1)}
            if jobs == 1
            else {}
        ),
        **status,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=default_jobs())
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--all", action="store_true", help="every reference composition, not only ring")
    parser.add_argument("--names", help="comma-separated reference compositions (default: ring)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    names = NAMES if args.all else tuple(args.names.split(",")) if args.names else ("ring",)
    for name in names:
        for ignore in ((), SMT_CLAUSES):
            rows.append(bench(name, args.examples, args.jobs, args.seed, ignore))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    if args.json:
        print(
            json.dumps(
                {"machine": platform.machine(), "cpus": os.cpu_count(), "load": round(load, 2), "rows": rows}, indent=2
            )
        )
        return 0
    print(
        f"kernlink fuzz throughput — {os.cpu_count()} CPUs, {platform.python_implementation()} "
        f"{platform.python_version()}, load average {load:.2f}"
    )
    header = (
        "composition",
        "clauses",
        "jobs",
        "mutants",
        "seconds",
        "mutants_per_s",
        "cpu_seconds",
        "mutants_per_cpu_s",
        "rejected",
        "accepted",
        "bug",
    )
    widths = [max(len(h), *(len(str(r.get(h, "-"))) for r in rows)) for h in header]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for row in rows:
        print("  ".join(str(row.get(h, "-")).ljust(w) for h, w in zip(header, widths, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
