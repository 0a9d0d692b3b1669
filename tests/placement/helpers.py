"""Shared fixtures for placement tests: capacities, reference problems, Hypothesis strategies
and exhaustive (brute-force) oracles written independently of the solver."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from hypothesis import strategies as st

from diagnostics.span import Span
from hardware.targets import target
from placement import (
    KERNEL,
    BarrierClaim,
    Capacities,
    Connection,
    CounterClaim,
    Interval,
    Lifetime,
    Phase,
    Problem,
    Ring,
    Role,
    SmemClaim,
    Timeline,
    TmemClaim,
)


def caps(name: str = "sm_90a", counter_slots: int = 64) -> Capacities:
    spec = target(name)
    assert spec is not None
    return Capacities.from_target(spec, counter_slots=counter_slots)


def span(line: int, file: str = "test.kc") -> Span:
    return Span(file, line, 5, line, 20)


ACC = Timeline(connections=(Connection("acc", ("ready", "done")),))


def gemm_swiglu(name: str = "sm_90a") -> Problem:
    """The reference composition specs/examples/gemm_swiglu as a placement problem."""
    return Problem(
        caps(name),
        smem=(
            SmemClaim(
                "gemm.mainloop",
                "operands",
                48 * 1024,
                1024,
                Interval("acc", None, "ready"),
                "kv",
                span(20, "mainloop.kc"),
            ),
            SmemClaim(
                "swiglu.epilogue",
                "scratch",
                16 * 1024,
                16,
                Interval("acc", "ready", "done"),
                None,
                span(11, "epilogue.kc"),
            ),
        ),
        rings=(Ring("gemm.mainloop", "kv", 2, 4, span=span(22, "mainloop.kc")),),
        roles=(
            Role("gemm.mainloop", "producer", 4, True, 24, span(6, "mainloop.kc")),
            Role("gemm.mainloop", "mma", 8, True, 208, span(7, "mainloop.kc")),
            Role("swiglu.epilogue", "epilogue", 4, True, 72, span(5, "epilogue.kc")),
        ),
        barriers=(BarrierClaim("swiglu.epilogue", "sync", 128, span=span(12, "epilogue.kc")),),
        timeline=ACC,
        block_warps=16,
    )


# ----------------------------------------------------------------- tiny capacities

TINY = Capacities(
    target="tiny",
    smem_per_block_optin=160,
    smem_reserved_per_block=16,
    smem_user_base=16,
    smem_alloc_granularity=16,
    mbarrier_size=8,
    mbarrier_align=8,
    named_barriers_per_cta=4,
    syncthreads_barrier_id=0,
    tmem_columns=128,
    tmem_min_alloc_columns=32,
    counter_slots=6,
    warp_size=32,
    max_warps_per_block=8,
    warpgroup_warps=4,
    regs_per_sm=8192,
    regs_per_block=8192,
    sub_partitions=4,
    max_regs_per_thread=255,
    reg_alloc_unit_per_warp=256,
    reg_warp_rounding=4,
    setmaxnreg_min=24,
    setmaxnreg_max=96,
    setmaxnreg_step=8,
)
"""Small enough for exhaustive enumeration: 160 B of shared memory, 3 barrier IDs, 8 warps."""

TINY_TIMELINE = Timeline(
    phases=("p", "q", "r"), exclusive=(("p", "q"),), connections=(Connection("acc", ("ready", "done")),)
)
LIFETIMES: tuple[Lifetime, ...] = (
    KERNEL,
    Phase("p"),
    Phase("q"),
    Phase("r"),
    Interval("acc", None, "ready"),
    Interval("acc", "ready", "done"),
    Interval("acc", "ready", None),
)


@st.composite
def storage_problems(draw: st.DrawFn, max_smem: int = 3) -> Problem:
    """Random tiny storage problems: ≤ 4 shared-memory items (a ring counts its mbarriers)."""
    lifetimes = st.sampled_from(LIFETIMES)
    rings: list[Ring] = []
    smem: list[SmemClaim] = []
    if draw(st.booleans()):
        lo = draw(st.integers(1, 2))
        rings.append(Ring("a", "r0", lo, draw(st.integers(lo, 3)), draw(lifetimes)))
        smem.append(
            SmemClaim(
                draw(st.sampled_from("ab")),
                "slot",
                8 * draw(st.integers(1, 4)),
                draw(st.sampled_from((8, 16, 32))),
                draw(lifetimes),
                "r0",
            )
        )
    for i in range(draw(st.integers(0, max_smem - len(smem)))):
        smem.append(
            SmemClaim(
                draw(st.sampled_from("ab")),
                f"c{i}",
                8 * draw(st.integers(1, 8)),
                draw(st.sampled_from((8, 16, 32, 64))),
                draw(lifetimes),
            )
        )
    tmem = [
        TmemClaim("a", f"t{i}", draw(st.sampled_from((16, 32, 40, 64, 100))), draw(lifetimes))
        for i in range(draw(st.integers(0, 3)))
    ]
    barriers = [
        BarrierClaim(draw(st.sampled_from("ab")), f"n{i}", 128, draw(lifetimes)) for i in range(draw(st.integers(0, 4)))
    ]
    counters = [
        CounterClaim("b", f"k{i}", draw(st.integers(1, 3)), draw(lifetimes)) for i in range(draw(st.integers(0, 3)))
    ]
    return Problem(
        TINY,
        smem=tuple(smem),
        rings=tuple(rings),
        tmem=tuple(tmem),
        barriers=tuple(barriers),
        counters=tuple(counters),
        timeline=TINY_TIMELINE,
    )


@st.composite
def role_problems(draw: st.DrawFn, max_roles: int = 3) -> Problem:
    """Random tiny warp/register problems (8 warps, setmaxnreg 24..96, 8192 registers)."""
    roles = []
    for i in range(draw(st.integers(1, max_roles))):
        wg = draw(st.booleans())
        warps = 4 if wg else draw(st.integers(1, 3))
        regs = draw(st.one_of(st.none(), st.sampled_from((24, 32, 40, 56, 64, 96))))
        roles.append(Role(draw(st.sampled_from("ab")), f"r{i}", warps, wg, regs))
    block = draw(st.one_of(st.none(), st.none(), st.integers(4, 8), st.integers(1, 8)))
    return Problem(TINY, roles=tuple(roles), block_warps=block, allow_idle_warps=draw(st.booleans()))


# ----------------------------------------------------------------- brute-force oracles


def _pow2(value: int) -> int:
    size = 1
    while size < value:
        size *= 2
    return size


def brute_items(
    problem: Problem,
    domain: str,
    depths: dict[str, int],
) -> list[tuple[str, str, int, int, Lifetime]]:
    """(owner, name, size, align, lifetime) of one domain, sorted by (owner, name)."""
    c = problem.capacities
    out = []
    if domain == "smem":
        for s in problem.smem:
            size = s.bytes if s.per_slot_ring is None else -(-s.bytes // s.align) * s.align * depths[s.per_slot_ring]
            out.append((s.owner, s.name, size, s.align, s.lifetime))
        for r in problem.rings:
            out.append(
                (r.owner, f"{r.name}.mbarriers", 2 * c.mbarrier_size * depths[r.name], c.mbarrier_align, r.lifetime)
            )
    elif domain == "tmem":
        for t in problem.tmem:
            a = _pow2(max(t.columns, c.tmem_min_alloc_columns))
            out.append((t.owner, t.name, a, a, t.lifetime))
    elif domain == "barrier":
        out = [(b.owner, b.name, 1, 1, b.lifetime) for b in problem.barriers]
    else:
        out = [(k.owner, k.name, k.slots, 1, k.lifetime) for k in problem.counters]
    return sorted(out, key=lambda x: (x[0], x[1]))


def brute_range(problem: Problem, domain: str) -> tuple[int, int]:
    c = problem.capacities
    return {
        "smem": (c.smem_user_base, c.smem_user_base + c.smem_per_block_optin),
        "tmem": (0, c.tmem_columns),
        "barrier": (1, c.named_barriers_per_cta),
        "counter": (0, c.counter_slots),
    }[domain]


def _packings(
    items: list[tuple[str, str, int, int, Lifetime]], lo: int, hi: int, timeline: Timeline
) -> Iterator[tuple[int, ...]]:
    """Every placement, bases in lexicographic order (DFS, ascending bases)."""
    n = len(items)
    bases: list[int] = []

    def rec(k: int) -> Iterator[tuple[int, ...]]:
        if k == n:
            yield tuple(bases)
            return
        _, _, size, align, life = items[k]
        start = -(-lo // align) * align
        for b in range(start, hi - size + 1, align):
            ok = all(
                not (b < bases[j] + items[j][2] and bases[j] < b + size) or not timeline.co_live(life, items[j][4])
                for j in range(k)
            )
            if ok:
                bases.append(b)
                yield from rec(k + 1)
                bases.pop()

    yield from rec(0)


def brute_storage(
    problem: Problem,
    domain: str,
) -> tuple[dict[str, int], int, tuple[int, ...]] | None:
    """The lexicographic optimum of one domain by enumeration: (depths, end, bases) or None.

    Depths: largest sum, then smallest maximum, then each ring deepest in name order; then
    the smallest end; then the lexicographically smallest bases, items taken by decreasing
    alignment, decreasing size, then (owner, name). Bases are returned in (owner, name) order.
    """
    lo, hi = brute_range(problem, domain)
    rings = problem.rings if domain == "smem" else ()
    names = [r.name for r in rings]
    vectors = list(itertools.product(*[range(r.depth_min, (r.depth_max or r.depth_min) + 1) for r in rings]))
    vectors.sort(key=lambda v: (-sum(v), max(v, default=0), [-x for x in v]))
    for vec in vectors:
        depths = dict(zip(names, vec, strict=True))
        named = brute_items(problem, domain, depths)
        rank = sorted(range(len(named)), key=lambda k: (-named[k][3], -named[k][2], k))
        items = [named[k] for k in rank]
        best_end = None
        best_bases: tuple[int, ...] | None = None
        for bases in _packings(items, lo, hi, problem.timeline):
            end = max((b + it[2] for b, it in zip(bases, items, strict=True)), default=lo)
            if best_end is None or end < best_end:
                best_end, best_bases = end, bases
        if best_end is not None and best_bases is not None:
            for bases in _packings(items, lo, best_end, problem.timeline):
                by_name = [0] * len(items)
                for pos, k in enumerate(rank):
                    by_name[k] = bases[pos]
                return depths, best_end, tuple(by_name)
    return None


def brute_warps(problem: Problem) -> tuple[object, ...] | None:
    """The lexicographic optimum of the warps and registers by enumeration, or None.

    Returns (objective key, offsets, block warps, group budgets, role budgets).
    """
    c = problem.capacities
    g = c.warpgroup_warps
    roles = problem.roles
    needs = [-(-max(r.regs or 0, c.setmaxnreg_min) // c.setmaxnreg_step) * c.setmaxnreg_step for r in roles]
    budgets = list(range(c.setmaxnreg_min, c.setmaxnreg_max + 1, c.setmaxnreg_step))
    total = sum(r.warps for r in roles)
    widths = [problem.block_warps] if problem.block_warps else range(1, c.max_warps_per_block + 1)
    best: tuple[object, ...] | None = None
    for w in widths:
        if not problem.allow_idle_warps and w != total:
            continue
        pool = c.register_pool(w)
        ngroups = -(-w // g)
        ranges = [range(0, w - r.warps + 1, g if r.warpgroup else 1) for r in roles]
        for offs in itertools.product(*ranges):
            cells = [x for o, r in zip(offs, roles, strict=True) for x in range(o, o + r.warps)]
            if len(set(cells)) != len(cells):
                continue
            if any(offs[i] + roles[i].warps > offs[i + 1] for i in range(len(roles) - 1)):
                continue  # roles keep their declaration order
            touch = [
                [k for k in range(ngroups) if o < g * (k + 1) and o + r.warps > g * k]
                for o, r in zip(offs, roles, strict=True)
            ]
            for bvec in itertools.product(budgets, repeat=ngroups):
                if any(bvec[k] < n for t, n in zip(touch, needs, strict=True) for k in t):
                    continue
                used = sum(b * c.warp_size * min(g, w - g * k) for k, b in enumerate(bvec))
                if used > pool:
                    continue
                rb = [min(bvec[k] for k in t) for t in touch]
                disposal = sum(r.warps * b for r, b in zip(roles, rb, strict=True))
                head = min(b - n for b, n in zip(rb, needs, strict=True))
                # registers come first only when some role declares `regs` (placement/_warps.py)
                first = (-disposal, -head) if any(r.regs is not None for r in roles) else (0, 0)
                key = (*first, w, offs, [-b for b in rb], list(bvec))
                if best is None or key < best[0]:  # type: ignore[operator]
                    best = (key, offs, w, bvec, tuple(rb))
    return best
