"""Time the build steps of the reference compositions: pack per component, link per composition.

    python bench/link.py                 # a table per section
    python bench/link.py --json          # the same figures as JSON
    python bench/link.py --repeats 20 --section pack

Each section is a function ``(repeats, workdir) -> list of rows`` registered in
``SECTIONS``; a row is a flat dict of the figures for one item. ``pack`` times
``kernlink pack`` of each reference component: the LTO IR compile, the capture
(a second compile to PTX with the params probe, then reading symbols and
layouts) and the atomic write, reporting the first run (it pays for loading
NVRTC) and the median and minimum of the rest. ``link`` times ``kernlink link``
of each reference composition (hello, ring) from its packages: the check with
placement, then generating the code, compiling it with NVRTC and linking with
nvJitLink (``-lto -verbose``), with the same first / median / minimum.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernlink.api import check  # noqa: E402
from linker.link import link_composition  # noqa: E402
from packing.pack import pack  # noqa: E402
from toolchain.cuda import toolkit_versions  # noqa: E402

EXAMPLES = ROOT / "specs" / "examples"
COMPONENTS = ("hello/provider", "hello/caller", "ring/loader", "ring/reduce")
COMPOSITIONS = ("hello", "ring")

Row = dict[str, object]


def bench_pack(repeats: int, workdir: Path) -> list[Row]:
    rows: list[Row] = []
    for component in COMPONENTS:
        source = EXAMPLES / f"{component}.cu"
        runs = []
        size = 0
        for i in range(repeats + 1):
            start = time.perf_counter()
            result = pack(source, source.with_suffix(".kc"), workdir / f"{Path(component).name}-{i}.kpkg")
            total = time.perf_counter() - start
            runs.append((total, result.seconds))
            size = result.size
        first, rest = runs[0], runs[1:] or runs[:1]
        rows.append(
            {
                "component": component,
                "first_ms": _ms(first[0]),
                "median_ms": _ms(statistics.median(t for t, _ in rest)),
                "min_ms": _ms(min(t for t, _ in rest)),
                "compile_ms": _ms(statistics.median(s["compile"] for _, s in rest)),
                "capture_ms": _ms(statistics.median(s["capture"] for _, s in rest)),
                "write_ms": _ms(statistics.median(s["write"] for _, s in rest)),
                "package_bytes": size,
            }
        )
    return rows


def bench_link(repeats: int, workdir: Path) -> list[Row]:
    rows: list[Row] = []
    for name in COMPOSITIONS:
        folder = workdir / "link" / name
        shutil.copytree(EXAMPLES / name, folder, ignore=shutil.ignore_patterns("build"))
        for component in (c for c in COMPONENTS if c.startswith(name + "/")):
            source = folder / f"{Path(component).name}.cu"
            pack(source, source.with_suffix(".kc"), folder / "build" / f"{source.stem}.kpkg")
        runs = []
        for _ in range(repeats + 1):
            start = time.perf_counter()
            checked = check([folder / f"{name}.kp"])
            placed = checked.downstream.placed if checked.downstream else None
            assert checked.accepted and checked.composition is not None and placed is not None
            checked_at = time.perf_counter()
            out = link_composition(checked.composition, placed)
            assert out.ok and out.cubin is not None, [d.message for d in out.diagnostics]
            runs.append((time.perf_counter() - start, checked_at - start, out))
        first, rest = runs[0], runs[1:] or runs[:1]
        last = rest[-1][2]
        rows.append(
            {
                "composition": name,
                "first_ms": _ms(first[0]),
                "median_ms": _ms(statistics.median(t for t, _, _ in rest)),
                "min_ms": _ms(min(t for t, _, _ in rest)),
                "check_place_ms": _ms(statistics.median(c for _, c, _ in rest)),
                "generate_ms": _ms(statistics.median(o.seconds["generate"] for _, _, o in rest)),
                "nvrtc_ms": _ms(statistics.median(o.seconds["compile"] for _, _, o in rest)),
                "nvjitlink_ms": _ms(statistics.median(o.seconds["link"] for _, _, o in rest)),
                "cubin_bytes": len(last.cubin or b""),
                "registers": last.record.attempts[-1].registers,
            }
        )
    return rows


SECTIONS: dict[str, Callable[[int, Path], list[Row]]] = {"pack": bench_pack, "link": bench_link}


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def environment() -> dict[str, object]:
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "toolkit": toolkit_versions().as_dict(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=10, help="timed runs after the first (default 10)")
    parser.add_argument(
        "--section", choices=sorted(SECTIONS), action="append", help="run only these sections (default: all)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = parser.parse_args(argv)
    results: dict[str, list[Row]] = {}
    with tempfile.TemporaryDirectory(prefix="kernlink-bench-") as tmp:
        for name in args.section or sorted(SECTIONS):
            results[name] = SECTIONS[name](max(args.repeats, 1), Path(tmp))
    if args.json:
        print(
            json.dumps(
                {"environment": environment(), "repeats": args.repeats, "sections": results}, indent=2, sort_keys=True
            )
        )
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=160)
    env = environment()
    console.print(
        f"python {env['python']} on {env['machine']} ({env['cpus']} CPUs), "
        f"toolkit {env['toolkit']}, {args.repeats} timed runs after the first"
    )
    for name, rows in results.items():
        table = Table(title=name, title_justify="left")
        for column in rows[0] if rows else ():
            table.add_column(column, justify="left" if column in ("component", "composition") else "right")
        for row in rows:
            table.add_row(*(str(v) for v in row.values()))
        console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
