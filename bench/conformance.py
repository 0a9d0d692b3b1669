"""Conformance benchmark: PTX lines analysed per second, and the time the analysis adds to `kernlink pack`.

Components: the reference examples (hello, ring) and every component of the
conformance fixtures (tests/conformance/cases), each packed as `kernlink pack` does.

- **throughput**: the analysis alone (parse, fixed point, facts, checks) over each
  package's PTX, best of ``--repeat`` runs, as PTX lines per second;
- **pack share**: for each component, the best of ``--repeat`` builds: the seconds of
  the ``conform`` step (analysis of the PTX pack already compiled) against the whole
  build (compile to LTO IR, compile to PTX and capture, conform), and the cost of
  ``-lineinfo`` (the PTX compile with and without it). The goal is under 20%.

    python bench/conformance.py            # table
    python bench/conformance.py --json     # one JSON object
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checker.conformance import check, derive  # noqa: E402
from packing import layout  # noqa: E402
from packing.pack import build, choose_stage  # noqa: E402
from toolchain.cuda import stable_cwd  # noqa: E402
from toolchain.symbols import compile_ptx  # noqa: E402


def components() -> list[tuple[str, Path, Path]]:
    found = []
    for name in ("hello/caller", "hello/provider", "ring/loader", "ring/reduce"):
        cu = ROOT / "specs" / "examples" / f"{name}.cu"
        found.append((name, cu, cu.with_suffix(".kc")))
    for case in sorted((ROOT / "tests" / "conformance" / "cases").iterdir()):
        for variant in ("fail", "pass"):
            found.append((f"{case.name}/{variant}", case / f"{variant}.cu", case / "stage.kc"))
    return found


def _best(repeat: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure(repeat: int) -> dict[str, Any]:
    rows = []
    total_lines = total_analysis = total_conform = total_build = total_lineinfo = 0.0
    for name, cu, kc in components():
        builds = [build(cu, kc) for _ in range(repeat)]
        best = min(builds, key=lambda b: sum(b.seconds.values()))
        ptx = best.ptx or ""
        lines = ptx.count("\n") + 1
        stage = best.stage
        analysis = _best(repeat, lambda: check(stage, derive(ptx)))  # noqa: B023
        text = cu.read_text()
        probe = text + "\n" + layout.probe_source(layout.params_blocks(choose_stage(kc, None)))

        def ptx_compile(extra: tuple[str, ...], source: str = probe, path: Path = cu, arch: str = best.target) -> None:
            with stable_cwd():
                compile_ptx(source, path.name, arch=arch, include_dirs=[path.parent.resolve()], extra_options=extra)

        with_info = _best(repeat, lambda: ptx_compile(("-lineinfo",)))
        without = _best(repeat, lambda: ptx_compile(()))
        whole = sum(best.seconds.values())
        rows.append(
            {
                "component": name,
                "ptx_lines": lines,
                "analysis_s": analysis,
                "lines_per_s": lines / analysis if analysis else 0.0,
                "conform_s": best.seconds["conform"],
                "build_s": whole,
                "lineinfo_s": with_info - without,
                "share": (best.seconds["conform"] + max(with_info - without, 0.0)) / whole,
            }
        )
        total_lines += lines
        total_analysis += analysis
        total_conform += best.seconds["conform"]
        total_build += whole
        total_lineinfo += max(with_info - without, 0.0)
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "repeat": repeat,
        "components": rows,
        "ptx_lines": int(total_lines),
        "lines_per_s": total_lines / total_analysis,
        "conform_s": total_conform,
        "lineinfo_s": total_lineinfo,
        "build_s": total_build,
        "share_of_pack": (total_conform + total_lineinfo) / total_build,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.repeat)
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
        return 0
    print(
        f"{'component':28} {'PTX lines':>9} {'lines/s':>10} {'conform ms':>10} {'lineinfo ms':>11} "
        f"{'build ms':>9} {'share':>6}"
    )
    for r in result["components"]:
        print(
            f"{r['component']:28} {r['ptx_lines']:>9} {r['lines_per_s']:>10.0f} {1e3 * r['conform_s']:>10.2f} "
            f"{1e3 * r['lineinfo_s']:>11.2f} {1e3 * r['build_s']:>9.1f} {100 * r['share']:>5.1f}%"
        )
    print(
        f"\nall: {result['ptx_lines']} PTX lines analysed at {result['lines_per_s']:.0f} lines/s; the analysis "
        f"adds {1e3 * result['conform_s']:.1f} ms and -lineinfo {1e3 * result['lineinfo_s']:.1f} ms to "
        f"{1e3 * result['build_s']:.1f} ms of pack builds: {100 * result['share_of_pack']:.1f}% (goal < 20%)"
    )
    print(f"python {result['python']} on {result['machine']}; best of {result['repeat']} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
