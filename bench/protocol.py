"""Protocol-model benchmark: model size and solve time against ring count and depth.

Two topologies, every ring correct (the expensive case: every query must be proved
unsat), rings 1–8 × depth 2–8, bound ``2 * depth + 1`` iterations:

* ``operands``: one loader role fills all rings for one MMA role (the loader runs
  ``empty wait`` / ``arrive.expect_tx`` / copy per ring, the MMA role ``full wait`` /
  read per ring, then releases every ring);
* ``pipeline``: a chain of ``rings + 1`` roles, ring ``k`` from role ``k`` to role ``k+1``.

    python bench/protocol.py                       # table
    python bench/protocol.py --json                # one JSON object per row
    python bench/protocol.py --rings 8 --depths 8  # one cell
    python bench/protocol.py --examples            # `kernlink check` of every example, CPU time
    python bench/protocol.py --bounded             # the bounded model alone (the fallback)

``--examples`` times the whole check (clauses, placement, routes) of every composition
under ``specs/examples/`` and of the protocol corpus, cold (a fresh memo each run), as the
median of ``--repeats`` runs of this process's CPU time (the machine's load moves wall time).

Goal: the reference ring (1 ring, depth <= 8) well under 1 s; 8 rings at depth 8
within a few seconds.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checker.protocol import Protocol, ProtocolBuilder, check_protocol  # noqa: E402

TILE = 16 * 1024
Row = dict[str, object]


def operands(rings: int, depth: int) -> Protocol:
    b = ProtocolBuilder("operands.kc")
    b.role("load", 1)
    b.role("mma", 8)
    for k in range(rings):
        b.ring(
            f"op{k}",
            depth=depth,
            producer="load",
            consumer="mma",
            full_init=1,
            empty_init=8,
            full_tx=TILE,
            init_by=["load"],
        )
    for k in range(rings):
        b.produce(f"op{k}")
    for k in range(rings):
        b.consume(f"op{k}")
    return b.build()


def pipeline(rings: int, depth: int) -> Protocol:
    b = ProtocolBuilder("pipeline.kc")
    for k in range(rings + 1):
        b.role(f"s{k}", 4)
    for k in range(rings):
        b.ring(
            f"q{k}",
            depth=depth,
            producer=f"s{k}",
            consumer=f"s{k + 1}",
            full_init=1,
            empty_init=4,
            full_tx=TILE,
            init_by=[f"s{k}"],
        )
    for k in range(rings):
        b.produce(f"q{k}")
        b.consume(f"q{k}")
    return b.build()


TOPOLOGIES = {"operands": operands, "pipeline": pipeline}


def run(topology: str, rings: int, depth: int, repeats: int, bounded: bool = False) -> Row:
    protocol = TOPOLOGIES[topology](rings, depth)
    bound = protocol.default_bound() if bounded else None
    best = None
    for _ in range(repeats):
        verdict = check_protocol(protocol, bound=bound)
        if best is None or verdict.stats.seconds < best.stats.seconds:
            best = verdict
    assert best is not None
    stats = best.stats
    return {
        "topology": topology,
        "rings": rings,
        "depth": depth,
        "bound": stats.bound,
        "events": stats.events,
        "assertions": stats.assertions,
        "variables": stats.variables,
        "checks": stats.checks,
        "build_s": round(stats.build_seconds, 4),
        "solve_s": round(stats.seconds - stats.build_seconds, 4),
        "total_s": round(stats.seconds, 4),
        "status": best.status.value,
        "argument": _argument(best),
    }


def _argument(verdict: object) -> str:
    """Which argument decided the verdict: every depth and trip count, or a bounded unrolling."""
    coverage = getattr(verdict, "coverage", None)
    return "bounded" if coverage is None or not coverage.parametric else "parametric"


def compositions() -> list[tuple[str, list[Path]]]:
    """Every example composition (its `.kp` files) and every corpus contract."""
    out = [(p.stem, [p]) for p in sorted((ROOT / "specs" / "examples").rglob("*.kp"))]
    corpus = ROOT / "tests" / "checker" / "protocol" / "corpus"
    return out + [(f"corpus/{p.stem}", [p]) for p in sorted(corpus.glob("*.kc"))]


def check_cpu(paths: list[Path], repeats: int) -> Row:
    """The median CPU seconds of a cold `kernlink check` of ``paths``, and its verdict."""
    from kernlink.api import check

    times = []
    accepted = False
    for _ in range(repeats):
        start = time.process_time()
        accepted = check(paths).accepted
        times.append(time.process_time() - start)
    return {"cpu_s": round(statistics.median(times), 3), "accepted": accepted}


COLUMNS = (
    "topology",
    "rings",
    "depth",
    "bound",
    "events",
    "assertions",
    "variables",
    "checks",
    "build_s",
    "solve_s",
    "total_s",
    "status",
    "argument",
)


def examples(repeats: int, as_json: bool) -> int:
    rows = [{"composition": name, **check_cpu(paths, repeats)} for name, paths in compositions()]
    if as_json:
        for row in rows:
            print(json.dumps(row))
        return 0
    print(f"# `kernlink check`, cold, median CPU seconds of {repeats} runs")
    for row in rows:
        print(f"{row['composition']:<36} {row['cpu_s']:>8}  accepted={row['accepted']}")
    print(f"# total {round(sum(float(str(r['cpu_s'])) for r in rows), 3)} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per row")
    parser.add_argument("--rings", type=int, nargs="*", default=list(range(1, 9)))
    parser.add_argument("--depths", type=int, nargs="*", default=list(range(2, 9)))
    parser.add_argument("--topology", choices=[*TOPOLOGIES, "all"], default="all")
    parser.add_argument("--repeats", type=int, default=1, help="best of N runs per cell (median with --examples)")
    parser.add_argument("--examples", action="store_true", help="time `kernlink check` of every example instead")
    parser.add_argument("--bounded", action="store_true", help="the bounded model alone, at its default bound")
    args = parser.parse_args(argv)
    if args.examples:
        return examples(args.repeats, args.json)
    topologies = list(TOPOLOGIES) if args.topology == "all" else [args.topology]
    rows = [run(t, r, d, args.repeats, args.bounded) for t in topologies for r in args.rings for d in args.depths]
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    print(
        f"# protocol model, {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}; times in seconds (best of {args.repeats})"
    )
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in COLUMNS}
    print("  ".join(c.rjust(widths[c]) for c in COLUMNS))
    for row in rows:
        print("  ".join(str(row[c]).rjust(widths[c]) for c in COLUMNS))
    worst = max(rows, key=lambda r: float(str(r["total_s"])))
    print(f"# slowest: {worst['topology']} rings={worst['rings']} depth={worst['depth']} {worst['total_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
