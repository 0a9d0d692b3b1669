"""In-process check time of the reference compositions and of generated ones.

Prints, for each composition, its handle count, the time of the clause engine alone and
of the whole check (clauses, then placement and routes on accepted compositions), as the
median of several runs. Goal: ≤ 100 ms of clauses for 42 handles.

    python bench/check.py [--repeats N] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

# The repository's packages, not this folder's same-named scripts (bench/placement.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from checker.engine import run_clauses
from kernlink.api import check, compose
from placement.adapter import problem_from

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("hello", "ring", "gemm_swiglu", "attention", "moe4", "cp")


def megakernel(handles: int) -> str:
    """An interpreter with exclusive phases and one stage per phase claiming shared memory.

    Handles: one per claim, two per role (warp offset, registers) and per ring (depth,
    barriers), as the linker emits them.
    """
    phases = max(2, handles // 40)
    roles = 1
    claims = handles - 2 * roles
    lines = [
        'stage "mk.interp" version "1.0.0" {',
        "    target sm_90a",
        "    role sched entry sched_main warps 1",
        f"    phases exclusive {', '.join(f'p{i}' for i in range(phases))}",
        "}",
    ]
    per_phase = [claims // phases + (1 if i < claims % phases else 0) for i in range(phases)]
    for p, count in enumerate(per_phase):
        lines += ["", f'stage "mk.s{p}" version "1.0.0" {{', "    target sm_90a"]
        lines += [
            f"    claim smem c{p}_{k} bytes {1024 * (1 + k % 3)} align 128 lifetime phase p{p}" for k in range(count)
        ]
        lines += ["}"]
    return "\n".join(lines) + "\n"


def _median(fn: object, repeats: int) -> float:
    """Median wall time of cold runs (each check starts with an empty memo: nothing is kept between them)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(paths: list[Path], repeats: int) -> dict[str, object]:
    _, comp = compose(paths)
    assert comp is not None
    handles = problem_from(comp).handle_count
    clauses = _median(lambda: run_clauses(compose(paths)[1]), repeats)  # type: ignore[arg-type]
    full = _median(lambda: check(paths), repeats)
    accepted = check(paths).accepted
    return {
        "handles": handles,
        "clauses_ms": round(clauses * 1000, 1),
        "check_ms": round(full * 1000, 1),
        "accepted": accepted,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows: dict[str, dict[str, object]] = {}
    for name in EXAMPLES:
        rows[name] = measure([ROOT / "specs" / "examples" / name / f"{name}.kp"], args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        for handles in (42, 500):
            path = Path(tmp) / f"generated{handles}.kc"
            path.write_text(megakernel(handles))
            rows[f"generated-{handles}"] = measure([path], args.repeats)
    if args.json:
        json.dump(
            {"benchmark": "check", "repeats": args.repeats, "results": rows}, sys.stdout, indent=2, sort_keys=True
        )
        print()
        return 0
    print(f"{'composition':<16} {'handles':>7} {'clauses ms':>11} {'check ms':>9}  accepted")
    for name, row in rows.items():
        print(f"{name:<16} {row['handles']:>7} {row['clauses_ms']:>11} {row['check_ms']:>9}  {row['accepted']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
