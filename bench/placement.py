"""Placement benchmark: solve time, proof status and footprint against the greedy baseline.

Problems of 4, 12, 42, 100, 200 and 500 handles (every claim, ring depth, ring mbarrier
array, role offset and role register budget is a handle) are generated from a fixed
seed as realistic mixes on sm_100a: a warp-specialised GEMM core (producer, MMA and
epilogue warpgroups, an operand ring whose depth the solver chooses, an accumulator in
tensor memory handed to the epilogue through `acc.ready`/`acc.done`) and, from 42
handles on, a megakernel interpreter whose mutually exclusive phases each claim
scratch shared memory, sometimes tensor memory, a named barrier and counter slots.

    python bench/placement.py            # table
    python bench/placement.py --json     # one JSON object per size, for tools
    python bench/placement.py --sizes 1000 2000 4000 --check 1000 2000 4000 --rings 64

Goals: 42 handles in at most 1 s, proven optimal; 4000 handles (placement, and a whole
check with ``--check``) in at most 5 s of CPU; the mixed family at 1000 handles decided
(placed, or a proven conflict), never E-SOLVER-BUDGET. A problem without a placement
prints its verdict (the diagnostic codes) instead of a row.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from diagnostics.model import DiagnosticError
from hardware.targets import target
from placement import (
    DEFAULT_RLIMIT,
    DOMAINS,
    KERNEL,
    BarrierClaim,
    Capacities,
    Connection,
    CounterClaim,
    Domain,
    Interval,
    Phase,
    Problem,
    Ring,
    Role,
    SmemClaim,
    Timeline,
    TmemClaim,
    greedy,
    solve,
    verify,
)

SIZES = (4, 12, 42, 100, 200, 500)
FAMILIES = ("megakernel", "mixed")
KIB = 1024


def capacities() -> Capacities:
    spec = target("sm_100a")
    assert spec is not None
    return Capacities.from_target(spec, counter_slots=1024)


def generate(handles: int, family: str = "megakernel", seed: int = 0) -> Problem:
    """A deterministic problem with exactly ``handles`` handles.

    ``megakernel``: every interpreter phase excludes every other. ``mixed``: phases are
    exclusive only in random pairs (95 %), half the phase claims live between events
    instead, and phases claim only shared memory and counters.
    """
    rng = random.Random(seed * 1000 + handles)
    caps = capacities()
    until_ready, after_ready = Interval("acc", None, "ready"), Interval("acc", "ready", "done")
    roles: list[Role] = []
    smem: list[SmemClaim] = []
    rings: list[Ring] = []
    tmem: list[TmemClaim] = []
    barriers: list[BarrierClaim] = []
    counters: list[CounterClaim] = []
    phases: list[str] = []

    def count() -> int:
        claims = len(smem) + len(tmem) + len(barriers) + len(counters)
        return claims + 2 * len(rings) + 2 * len(roles)

    roles.append(Role("gemm.mainloop", "mma", 8, True, 168))
    smem.append(SmemClaim("gemm.mainloop", "bias", 2 * KIB, 128))
    if handles >= 12:
        roles += [Role("gemm.mainloop", "producer", 4, True, 40), Role("gemm.epilogue", "store", 4, True, 72)]
        rings.append(Ring("gemm.mainloop", "kv", 2, 8))
        smem += [
            SmemClaim("gemm.mainloop", "a_tile", 16 * KIB, 1024, until_ready, "kv"),
            SmemClaim("gemm.mainloop", "b_tile", 16 * KIB, 1024, until_ready, "kv"),
        ]
        tmem.append(TmemClaim("gemm.mainloop", "acc", 256, until_ready))
    if handles >= 42:
        smem.append(SmemClaim("gemm.epilogue", "staging", 32 * KIB, 128, after_ready))
        barriers.append(BarrierClaim("gemm.epilogue", "store_sync", 128))
        roles.append(Role("mk.interp", "sched", 1))
        rings.append(Ring("mk.interp", "instr", 2, 4))
        smem.append(SmemClaim("mk.interp", "instr_buf", 256, 128, KERNEL, "instr"))
        counters.append(CounterClaim("mk.interp", "progress", 4))
    room: dict[str, int] = {}
    shared = family == "megakernel"
    while count() < handles:
        left = handles - count()
        if not phases or sum(room.values()) == 0 or rng.random() < 0.2:
            phases.append(f"op{len(phases):03}")
            room = {
                "smem": rng.randint(2, 5),
                "tmem": rng.randint(0, 2) if shared else 0,
                "barrier": rng.randint(0, 2) if shared else 0,
                "counter": rng.randint(0, 1),
            }
        owner, life = f"mk.{phases[-1]}", Phase(phases[-1])
        kind = "smem" if left == 1 else rng.choice([k for k, v in room.items() if v] or ["smem"])
        room[kind] = max(0, room[kind] - 1)
        n = len(smem) + len(tmem) + len(barriers) + len(counters)
        if kind == "smem":
            sizes = (2, 4, 8, 16, 24) if shared else (1, 2, 2, 4, 6)
            smem.append(
                SmemClaim(owner, f"scratch{n}", rng.choice(sizes) * KIB // 2, rng.choice((128, 128, 1024)), life)
            )
        elif kind == "tmem":
            tmem.append(TmemClaim(owner, f"cols{n}", rng.choice((32, 64, 100, 128)), life))
        elif kind == "barrier":
            barriers.append(BarrierClaim(owner, f"bar{n}", 128, life))
        else:
            counters.append(CounterClaim(owner, f"cnt{n}", rng.randint(1, 8), life))
    connections = [Connection("acc", ("ready", "done"))]
    if family == "mixed":
        # phases only pairwise exclusive at random, and event lifetimes on three more
        # connections: the clique bound is no longer tight and proofs need the solver
        pairs = [(a, b) for i, a in enumerate(phases) for b in phases[i + 1 :]]
        exclusive = tuple(p for p in pairs if rng.random() < 0.95)
        connections += [Connection(f"t{k}", ("a", "b", "c")) for k in range(3)]
        events = [
            Interval(f"t{k}", s, e)
            for k in range(3)
            for s, e in ((None, "a"), ("a", "b"), ("b", "c"), ("a", "c"), ("c", None))
        ]
        smem = [
            replace(c, lifetime=rng.choice(events)) if isinstance(c.lifetime, Phase) and rng.random() < 0.5 else c
            for c in smem
        ]
    else:
        exclusive = (tuple(phases),) if len(phases) > 1 else ()
    timeline = Timeline(phases=tuple(phases), exclusive=exclusive, connections=tuple(connections))
    return Problem(
        caps,
        smem=tuple(smem),
        rings=tuple(rings),
        tmem=tuple(tmem),
        barriers=tuple(barriers),
        counters=tuple(counters),
        roles=tuple(roles),
        timeline=timeline,
    )


def run(handles: int, family: str, rlimit: int) -> dict[str, Any]:
    problem = generate(handles, family)
    assert problem.handle_count == handles
    start, cpu = time.perf_counter(), time.process_time()
    try:
        placement = solve(problem, rlimit=rlimit)
    except DiagnosticError as err:
        # no placement: the verdict (a proven conflict, or E-SOLVER-BUDGET) is the result
        return {
            "family": family,
            "handles": handles,
            "claims": None,
            "seconds": round(time.perf_counter() - start, 3),
            "cpu_seconds": round(time.process_time() - cpu, 3),
            "verdict": ",".join(d.code for d in err.diagnostics),
        }
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    assert verify(problem, placement) == []
    depths = {r.name: r.depth for r in placement.rings}
    row: dict[str, Any] = {
        "family": family,
        "handles": handles,
        "claims": len(placement.slots),
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu_seconds, 3),
        "verdict": "placed",
        "optimal": placement.optimal,
        "canonical": placement.canonical,
        "checks": placement.checks,
        "rlimit_used": placement.rlimit_used,
        "ring_depths": placement.objective.ring_depths,
        "smem_bytes": placement.use(Domain.SMEM).used,
    }
    for order in ("lexical", "size"):
        baseline = greedy(problem, order, depths)
        key = f"greedy_{order}"
        if baseline is None:
            row[f"{key}_smem_bytes"] = None
        else:
            assert verify(problem, baseline) == []
            row[f"{key}_smem_bytes"] = baseline.use(Domain.SMEM).used
            row[f"{key}_worse_domains"] = sum(baseline.use(d).end > placement.use(d).end for d in DOMAINS)
        own = greedy(problem, order)
        row[f"{key}_own_depths"] = None if own is None else own.objective.ring_depths
        row[f"{key}_own_smem_bytes"] = None if own is None else own.use(Domain.SMEM).used
    return row


def contract(handles: int) -> str:
    """A megakernel contract of ``handles`` handles: one role, one claim per exclusive phase.

    The shape that made a whole check super-linear (every phase a lifetime of its own).
    """
    claims = handles - 2  # the role's warp offset and register budget
    lines = [
        'stage "mk.interp" version "1.0.0" {',
        "    target sm_90a",
        "    role sched entry sched_main warps 1",
        f"    phases exclusive {', '.join(f'p{i}' for i in range(claims))}",
        "}",
        "",
        'stage "mk.ops" version "1.0.0" {',
        "    target sm_90a",
    ]
    lines += [f"    claim smem c{k} bytes {1024 * (1 + k % 3)} align 128 lifetime phase p{k}" for k in range(claims)]
    return "\n".join([*lines, "}", ""])


def run_check(handles: int) -> dict[str, Any]:
    """CPU time of one in-process `kernlink check` (clauses, placement, routes) of :func:`contract`."""
    from kernlink.api import check

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"mk{handles}.kc"
        path.write_text(contract(handles))
        start, cpu = time.perf_counter(), time.process_time()
        result = check([path])
        return {
            "family": "check",
            "handles": handles,
            "accepted": result.accepted,
            "seconds": round(time.perf_counter() - start, 3),
            "cpu_seconds": round(time.process_time() - cpu, 3),
        }


def run_rings(count: int) -> dict[str, Any]:
    """CPU time of placing ``count`` equal rings (1 KiB slots, depth 2..4) that cannot all be deepest."""
    spec = target("sm_90a")
    assert spec is not None
    caps = Capacities.from_target(spec, counter_slots=64)
    smem = tuple(SmemClaim("r", f"st{k:02}", KIB, 128, KERNEL, f"q{k:02}") for k in range(count))
    rings = tuple(Ring("r", f"q{k:02}", 2, 4) for k in range(count))
    start, cpu = time.perf_counter(), time.process_time()
    placement = solve(Problem(caps, smem=smem, rings=rings))
    return {
        "family": "rings",
        "rings": count,
        "seconds": round(time.perf_counter() - start, 3),
        "cpu_seconds": round(time.process_time() - cpu, 3),
        "optimal": placement.optimal,
        "ring_depths": placement.objective.ring_depths,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON lines")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--families", nargs="*", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--rlimit", type=int, default=DEFAULT_RLIMIT)
    parser.add_argument(
        "--check",
        type=int,
        nargs="*",
        default=[],
        metavar="HANDLES",
        help="also time `kernlink check` of a generated contract of these handle counts",
    )
    parser.add_argument(
        "--rings",
        type=int,
        nargs="*",
        default=[],
        metavar="COUNT",
        help="also time the placement of this many equal rings",
    )
    args = parser.parse_args(argv)
    for family in args.families if args.sizes else ():
        rows = [run(n, family, args.rlimit) for n in args.sizes]
        if args.json:
            for row in rows:
                print(json.dumps(row, sort_keys=True))
        else:
            print(f"family: {family}")
            _table(rows)
    for count in args.rings:
        row = run_rings(count)
        if args.json:
            print(json.dumps(row, sort_keys=True))
        else:
            print(
                f"placement of {count} equal rings: optimal {row['optimal']}, depth sum {row['ring_depths']}, "
                f"{row['seconds']:.3f} s, {row['cpu_seconds']:.3f} s of CPU"
            )
    for handles in args.check:
        row = run_check(handles)
        if args.json:
            print(json.dumps(row, sort_keys=True))
        else:
            print(
                f"check of a {handles}-handle contract (one claim per exclusive phase): accepted "
                f"{row['accepted']}, {row['seconds']:.3f} s, {row['cpu_seconds']:.3f} s of CPU"
            )
    return 0


def _table(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'handles':>7} {'claims':>6} {'time s':>7} {'cpu s':>7} {'optimal':>7} {'canon':>5} "
        f"{'checks':>6} {'depths':>6} {'smem B':>7}  {'greedy at solver depths B':>25}  "
        f"{'greedy own depths (sum: B)':>27}"
    )
    print(head)
    for r in rows:
        if r["verdict"] != "placed":
            print(
                f"{r['handles']:>7} {'-':>6} {r['seconds']:>7.3f} {r['cpu_seconds']:>7.3f}  "
                f"no placement: {r['verdict']}"
            )
            continue
        same = " / ".join(
            "fails" if r[f"greedy_{o}_smem_bytes"] is None else str(r[f"greedy_{o}_smem_bytes"])
            for o in ("lexical", "size")
        )
        own = " / ".join(
            f"{r[f'greedy_{o}_own_depths']}: {r[f'greedy_{o}_own_smem_bytes']}" for o in ("lexical", "size")
        )
        print(
            f"{r['handles']:>7} {r['claims']:>6} {r['seconds']:>7.3f} {r['cpu_seconds']:>7.3f} "
            f"{r['optimal']!s:>7} "
            f"{r['canonical']!s:>5} {r['checks']:>6} {r['ring_depths']:>6} "
            f"{r['smem_bytes']:>7}  {same:>25}  {own:>27}"
        )
    print("greedy columns: lexical / size order\n")


if __name__ == "__main__":
    raise SystemExit(main())
