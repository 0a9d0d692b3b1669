"""Time route checks per tile size (64x64 to 128x256).

    python bench/routes.py                # a table
    python bench/routes.py --json         # the same figures as JSON
    python bench/routes.py --repeats 10

For each tile M x N the producer is the wgmma m64nNk16 f32 accumulator of M / 64
warpgroups (the contract sketch's placement at 128 x 256) and each scenario is one
import of it:

- ``staging``: a separate epilogue role of M threads, one row per thread, in chunks of
  32 columns, lending one chunk of scratch (the sketch's import);
- ``copy``: the producer's own role demanding its own layout;
- ``shuffle``: the producer's role demanding its layout with lanes rotated by 4;
- ``rejected``: the epilogue lending no shared memory (L-ROUTE after all four rungs).

``check`` is ``select_route`` (identity, both L-MAP proofs, the ladder up to the
chosen rung), the figure the issue asks for; ``lower`` is building the moves and the
CUDA source of the chosen route. Each is the median of ``--repeats`` runs after one
warm-up run.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import z3  # noqa: E402

from contract_lang.expr import BinOp, Int, Name  # noqa: E402
from transfer_model.library import wgmma_m64nNk16_f32  # noqa: E402
from transfer_model.lower import LinkConstants, lower  # noqa: E402
from transfer_model.maps import REGS, Chunk, LayoutMap  # noqa: E402
from transfer_model.program import build_program  # noqa: E402
from transfer_model.routes import Route, RouteResult, select_route  # noqa: E402
from transfer_model.tensors import Lends, RoleThreads, TensorExport, TensorImport  # noqa: E402

TILES = ((64, 64), (64, 128), (128, 128), (128, 256))
Row = dict[str, object]


def _seams(m: int, n: int) -> dict[str, tuple[TensorExport, TensorImport, Lends]]:
    tile = (("m", m), ("n", n))
    placement = wgmma_m64nNk16_f32(n, m // 64)
    producer = RoleThreads(0, placement.thread[1])
    export = TensorExport("accumulator", "mma", "f32", tile, placement, producer)
    rows = LayoutMap(
        REGS,
        (("t", m), ("p", 32), ("c", n // 32)),
        ("m", "n"),
        (Name("t"), BinOp("+", BinOp("*", Int(32), Name("c")), Name("p"))),
    )
    epilogue = RoleThreads(producer.end, m)
    chunk = Chunk("n", 32)
    rotate = BinOp(
        "+", BinOp("*", Int(32), BinOp("/", Name("t"), Int(32))), BinOp("%", BinOp("+", Name("t"), Int(4)), Int(32))
    )
    rotated = LayoutMap(REGS, placement.params, placement.outputs, placement.at({"t": rotate}))
    return {
        "staging": (
            export,
            TensorImport("acc", "accumulator", "epilogue", "f32", tile, rows, epilogue, chunk),
            Lends(m * 32 * 4),
        ),
        "copy": (export, TensorImport("acc", "accumulator", "mma", "f32", tile, placement, producer), Lends()),
        "shuffle": (export, TensorImport("acc", "accumulator", "mma", "f32", tile, rotated, producer), Lends()),
        "rejected": (
            export,
            TensorImport("acc", "accumulator", "epilogue", "f32", tile, rows, epilogue, chunk),
            Lends(),
        ),
    }


def _median_ms(repeats: int, action: Callable[[], object]) -> float:
    action()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def bench(repeats: int) -> list[Row]:
    rows: list[Row] = []
    for m, n in TILES:
        for scenario, (export, imp, lends) in _seams(m, n).items():

            def check(export: TensorExport = export, imp: TensorImport = imp, lends: Lends = lends) -> RouteResult:
                return select_route(export, imp, lends, target_has_tmem=False)

            result = check()
            route = result.route
            row: Row = {
                "tile": f"{m}x{n}",
                "scenario": scenario,
                "route": route.rung if route else result.diagnostics[0].code,
                "check_ms": round(_median_ms(repeats, check), 2),
                "lower_ms": None,
                "source_lines": None,
            }
            if route is not None:
                constants = LinkConstants(
                    smem_addr=1024 if route.needs_smem_address else None,
                    barrier_ids=tuple(range(1, 1 + route.barriers)),
                )

                def build(route: Route = route, constants: LinkConstants = constants) -> str:
                    return lower(build_program(route.seam, route.result), constants)

                row["lower_ms"] = round(_median_ms(repeats, build), 2)
                row["source_lines"] = len(build().splitlines())
            rows.append(row)
    return rows


def _table(rows: list[Row]) -> str:
    header = f"{'tile':<9} {'scenario':<9} {'route':<14} {'check ms':>9} {'lower ms':>9} {'CUDA lines':>10}"
    lines = [header, "-" * len(header)]
    for r in rows:
        lower_ms = "-" if r["lower_ms"] is None else f"{r['lower_ms']:.1f}"
        source = "-" if r["source_lines"] is None else str(r["source_lines"])
        lines.append(
            f"{r['tile']:<9} {r['scenario']:<9} {r['route']:<14} {r['check_ms']:>9.1f} {lower_ms:>9} {source:>10}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    rows = bench(args.repeats)
    if args.json:
        print(
            json.dumps(
                {
                    "machine": {
                        "python": platform.python_version(),
                        "z3": z3.get_version_string(),
                        "processor": platform.processor() or platform.machine(),
                    },
                    "repeats": args.repeats,
                    "rows": rows,
                },
                indent=2,
            )
        )
    else:
        print(_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
