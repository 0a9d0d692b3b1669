"""Parser benchmark: throughput on a large generated contract, and every file of specs/.

The generated contract has ``--stages`` stages (500 by default) in the shape of the
reference examples: roles, launch, params, claims with lifetimes, a ring side with
its steps, a counter, a call, a tensor export with a closed-form placement map, facts
and constraints, so every part of the grammar and of the AST builder is exercised.
Each measurement is the best of ``--repeat`` runs (the grammar is loaded once before,
and its load time is reported on its own).

    python bench/parse.py                  # table
    python bench/parse.py --json           # one JSON object
    python bench/parse.py --stages 2000    # a larger contract
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contract_lang.parser import parse_text  # noqa: E402
from contract_lang.printer import format_text, print_file  # noqa: E402

Row = dict[str, object]

STAGE = """# stage {i}: a loader and an MMA warpgroup sharing ring kv{i}
stage "bench.s{i}" version "1.{i}.0" {{
    target sm_90a
    requires feature tma, mbarrier, wgmma, setmaxnreg
    role load{i} entry load{i}_main warps 4 regs 40 warpgroup
    role mma{i} entry mma{i}_main warps 8 regs 232 warpgroup
    launch fixed threads 512 blocks_per_sm 1
    params P{i} size 24 align 8 {{
        src: ptr @ 0
        dst: ptr @ 8
        tile_k: u32 @ 16 = fact tile_k{i}
    }}
    claim smem tiles{i} bytes 48KiB align 1024 per_slot kv{i} use tma, swizzle128, wgmma
    claim smem scratch{i} bytes 0x4000 align 128 lifetime between acc{i}.ready acc{i}.done
    claim barrier sync{i} participants load{i}, mma{i}
    ring kv{i} produce by load{i} {{
        depth 2..6
        full init 1 expect_tx 48KiB
        empty init per_warpgroup(mma{i})
        empty wait
        full arrive 1 tx 48KiB
        full copy 16KiB
        full copy 32KiB
        writes async
        init by load{i} fenced
    }}
    counter done{i} produce by mma{i} scope gpu {{
        add 1
    }}
    call scale (f32) -> f32 as kl_call_scale{i} from role mma{i} guarantees converged, full_warps
    export tensor accumulator{i} from role mma{i} {{
        elem f32
        tile m 128 n 256
        generation once
        placement regs(t: 256, r: 128) -> (m, n) {{
            m = 64 * (t / 128) + 16 * ((t / 32) % 4) + (t % 32) / 4 + 8 * ((r / 2) % 2)
            n = 8 * (r / 4) + 2 * (t % 4) + r % 2
        }}
        ready event acc{i}.ready
    }}
    owns fact tile_k{i}: u32 = 64  # the MMA's K step
    uses fact tile_k{i}: u32 as param tile_k
    requires fact tile_k{i} % 16 == 0 and tile_k{i} <= 256
}}
"""


def generated_contract(stages: int) -> str:
    return "\n".join(STAGE.format(i=i) for i in range(stages))


def best_of(repeat: int, run: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def without_gc(run: Callable[[], object]) -> Callable[[], object]:
    """``run`` with the cyclic garbage collector paused: how much of a parse is GC passes."""

    def paused() -> object:
        gc.disable()
        try:
            return run()
        finally:
            gc.enable()

    return paused


def measure(name: str, text: str, repeat: int, kind: str = "any") -> Row:
    source = parse_text(text, name, kind)  # type: ignore[arg-type]
    lines = text.count("\n") + (not text.endswith("\n"))
    parse_s = best_of(repeat, lambda: parse_text(text, name, kind))  # type: ignore[arg-type]
    no_gc_s = best_of(repeat, without_gc(lambda: parse_text(text, name, kind)))  # type: ignore[arg-type]
    print_s = best_of(repeat, lambda: print_file(source))
    format_s = best_of(repeat, lambda: format_text(text, name))
    return {
        "name": name,
        "lines": lines,
        "bytes": len(text.encode()),
        "parse_s": parse_s,
        "lines_per_s": lines / parse_s,
        "parse_no_gc_s": no_gc_s,
        "print_s": print_s,
        "format_s": format_s,
    }


def spec_files() -> list[Path]:
    return sorted(p for p in (ROOT / "specs").rglob("*") if p.suffix in (".kc", ".kp"))


def run(stages: int, repeat: int) -> dict[str, object]:
    start = time.perf_counter()
    parse_text('stage "warm" version "0" {}\n')
    grammar_s = time.perf_counter() - start

    big = measure(f"generated ({stages} stages)", generated_contract(stages), repeat, "contract")
    files = []
    for path in spec_files():
        kind = "contract" if path.suffix == ".kc" else "pipeline"
        files.append(measure(str(path.relative_to(ROOT)), path.read_text(), repeat, kind))
    total_lines = sum(int(str(f["lines"])) for f in files)
    total_parse = sum(float(str(f["parse_s"])) for f in files)
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "grammar_load_s": grammar_s,
        "generated": big,
        "specs": files,
        "specs_total": {
            "files": len(files),
            "lines": total_lines,
            "parse_s": total_parse,
            "lines_per_s": total_lines / total_parse if total_parse else 0.0,
        },
    }


def table(result: dict[str, object]) -> str:
    head = f"{'input':<44} {'lines':>7} {'parse ms':>9} {'lines/s':>9} {'no-GC ms':>9} {'print ms':>9} {'fmt ms':>8}"
    out = [head, "-" * len(head)]

    def row(r: Row) -> str:
        return (
            f"{r['name']!s:<44} {r['lines']:>7} {float(str(r['parse_s'])) * 1e3:>9.2f} "
            f"{float(str(r['lines_per_s'])):>9.0f} {float(str(r['parse_no_gc_s'])) * 1e3:>9.2f} "
            f"{float(str(r['print_s'])) * 1e3:>9.2f} "
            f"{float(str(r['format_s'])) * 1e3:>8.2f}"
        )

    out.append(row(result["generated"]))  # type: ignore[arg-type]
    out.append("")
    for r in result["specs"]:  # type: ignore[attr-defined]
        out.append(row(r))
    total = result["specs_total"]
    assert isinstance(total, dict)
    out.append("-" * len(head))
    out.append(
        f"{'all of specs/ (' + str(total['files']) + ' files)':<44} {total['lines']:>7} "
        f"{total['parse_s'] * 1e3:>9.2f} {total['lines_per_s']:>9.0f}"
    )
    out.append(
        f"grammar load (first parse): {float(str(result['grammar_load_s'])) * 1e3:.1f} ms; "
        f"Python {result['python']} on {result['machine']}; best of the repeats; "
        "no-GC: the same parse with the cyclic garbage collector paused"
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stages", type=int, default=500, help="stages in the generated contract")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (the best is kept)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)
    result = run(args.stages, args.repeat)
    print(json.dumps(result, indent=2) if args.json else table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
