"""Compositions that are valid by construction, drawn with Hypothesis against a target's limits.

Parameterised by the target (any object with the fields of ``hardware.targets.TargetSpec``;
this module reads no table of its own) and by size."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from hypothesis import strategies as st

from contract_lang import ast as A
from contract_lang.expr import BinOp, Expr, Int, Name
from fuzzing.compositions.bundle import Bundle
from hardware import residency


class TargetLimits(residency.SmLimits, residency.BlockLimits, Protocol):
    """The fields of a hardware-table entry the generator reads (``hardware.targets.TargetSpec``)."""

    @property
    def features(self) -> frozenset[str]: ...
    @property
    def cluster_portable_max(self) -> int: ...


# ============================================================================ valid by construction
#
# A composition is drawn as a plan (roles, rings, counters, callables, facts, …) whose
# numbers are chosen against the target's capacities, then rendered to stages. Shared
# memory and registers keep a margin so that the joint placement (alignment padding,
# mbarrier arrays) always fits what the checker's lower bounds accept.

_ROLE_BASES = ("load", "math", "epi", "sched", "comm", "act", "store", "softmax")
_SMEM_FILL = 0.7
"""The share of the target's shared memory a generated composition may claim at minimum depth."""


@dataclass
class _Role:
    name: str
    stage: int
    warps: int
    warpgroup: bool
    regs: int | None = None


@dataclass
class _StagePlan:
    name: str
    version: str
    features: set[str] = field(default_factory=set)
    items: list[A.StageItem] = field(default_factory=list)
    params: list[A.ParamField] = field(default_factory=list)


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def _layout(roles: Sequence[_Role], group: int) -> int:
    """Block warps when the roles are packed in order, warpgroup roles aligned (as the checker packs)."""
    starts = _starts(roles, group)
    return starts[-1] + roles[-1].warps if roles else 0


def _starts(roles: Sequence[_Role], group: int) -> list[int]:
    """Each role's first warp: packed in order, a warpgroup role at the next multiple of ``group``."""
    cursor, out = 0, []
    for role in roles:
        start = _round_up(cursor, group) if role.warpgroup else cursor
        out.append(start)
        cursor = start + role.warps
    return out


def _register_pool(spec: TargetLimits, warps: int) -> int:
    """The register pool of the packed block (hardware.residency, as L-REGS and placement)."""
    return residency.register_pool(spec, warps)


def _group_budgets(roles: Sequence[_Role], spec: TargetLimits) -> list[int]:
    group = spec.warpgroup_warps
    starts = _starts(roles, group)
    warps = _layout(roles, group)
    budgets = []
    for index in range(_round_up(warps, group) // group):
        lo, hi = index * group, (index + 1) * group
        members = [r for r, s in zip(roles, starts, strict=True) if s < hi and s + r.warps > lo]
        budgets.append(
            max((r.regs if r.regs is not None else spec.setmaxnreg_min for r in members), default=spec.setmaxnreg_min)
        )
    return budgets


def _fit_registers(roles: list[_Role], spec: TargetLimits) -> None:
    """Lower the largest budgets until the warpgroups fit the register pool (L-REGS)."""
    warps = _layout(roles, spec.warpgroup_warps)
    pool = _register_pool(spec, warps)
    while residency.register_demand(spec, warps, _group_budgets(roles, spec), spec.warpgroup_warps) > pool:
        top = max(
            (r for r in roles if r.regs is not None and r.regs > spec.setmaxnreg_min),
            key=lambda r: r.regs or 0,
            default=None,
        )
        if top is None:
            for role in roles:
                role.regs = None
            return
        assert top.regs is not None
        top.regs -= spec.setmaxnreg_step


@st.composite
def _roles(
    draw: st.DrawFn, spec: TargetLimits, n_stages: int, needs: Sequence[tuple[str, int, int, bool]]
) -> list[_Role]:
    """Roles per stage: the required ones (name, stage, warps, warpgroup) plus 0–2 drawn ones per stage."""
    group = spec.warpgroup_warps
    limit = min(spec.max_warps_per_block, 24)
    roles: list[_Role] = []
    counter = 0

    def add(stage: int, warps: int, warpgroup: bool, base: str | None = None) -> bool:
        nonlocal counter
        name = f"{base or _ROLE_BASES[counter % len(_ROLE_BASES)]}{counter}"
        trial = [*roles, _Role(name, stage, warps, warpgroup)]
        trial.sort(key=lambda r: r.stage)
        if _layout(trial, group) > limit:
            return False
        roles[:] = trial
        counter += 1
        return True

    for base, stage, warps, warpgroup in needs:
        add(stage, warps, warpgroup, base)
    for stage in range(n_stages):
        for _ in range(draw(st.integers(0 if any(r.stage == stage for r in roles) else 1, 2))):
            width = draw(st.sampled_from((1, 2, 4, 4, 8)))
            add(stage, width, width % group == 0 and (width == 8 or draw(st.booleans())))
    # Register budgets only where the block is whole warpgroups (every group's setmaxnreg
    # runs on four warps, as in production kernels).
    if "setmaxnreg" in spec.features and _layout(roles, group) % group == 0 and draw(st.booleans()):
        step = spec.setmaxnreg_step
        choices = [
            v
            for v in (24, 40, 56, 72, 104, 152, 208, 224, 232, 240)
            if spec.setmaxnreg_min <= v <= spec.setmaxnreg_max and v % step == 0
        ]
        for role in roles:
            if draw(st.booleans()):
                role.regs = draw(st.sampled_from(choices))
        _fit_registers(roles, spec)
    return roles


_Unit = Literal["per_warp", "per_thread", "per_warpgroup"]
COUNT_UNITS: dict[str, _Unit] = {"per_warp": "per_warp", "per_thread": "per_thread", "per_warpgroup": "per_warpgroup"}


def _count(unit: str, role: _Role) -> A.Count:
    if unit == "one":
        return A.Count((A.CountTerm(1, "one"),))
    return A.Count((A.CountTerm(1, COUNT_UNITS[unit], role.name),))


def _unit_for(draw: st.DrawFn, role: _Role, group: int) -> str:
    options = ["per_warp"] + (["per_warpgroup"] if role.warps % group == 0 else [])
    return draw(st.sampled_from(options))


@dataclass
class _Budget:
    """What is left to claim: shared-memory bytes and tensor-memory columns."""

    smem: int
    tmem: int


@st.composite
def _ring(
    draw: st.DrawFn, spec: TargetLimits, name: str, prod: _Role, cons: _Role, plans: list[_StagePlan], budget: _Budget
) -> None:
    group = spec.warpgroup_warps
    asynchronous = "cp_async_bulk" in spec.features and draw(st.booleans())
    lo = draw(st.integers(1, 3))
    hi = lo + draw(st.integers(0, 4))
    sizes = [k * 1024 for k in (4, 8, 16, 32, 48, 64)]
    align = draw(st.sampled_from((128, 1024)))
    fits = [b for b in sizes if (_round_up(b, align) + 2 * spec.mbarrier_size) * lo <= budget.smem]
    if not fits:
        return
    slot = draw(st.sampled_from(fits))
    budget.smem -= (_round_up(slot, align) + 2 * spec.mbarrier_size) * lo + align
    pplan, cplan = plans[prod.stage], plans[cons.stage]
    empty_unit = _unit_for(draw, cons, group)
    reads: Literal["generic", "async"] = draw(st.sampled_from(("generic", "async")))
    uses: tuple[str, ...] = ("bulk_copy",) if asynchronous else ()
    if asynchronous and "tma" in spec.features and draw(st.booleans()):
        uses = ("tma",) + (("swizzle128",) if align == 1024 and draw(st.booleans()) else ())
        pplan.features.add("tma")
    pplan.items.append(A.SmemClaim(f"{name}_slot", bytes=slot, align=align, per_slot=name, uses=uses))
    depth = A.RingDepth(lo, hi)
    producer: list[A.RingItem] = [depth]
    if asynchronous:
        pplan.features.update(("mbarrier", "cp_async_bulk"))
        producer.append(A.RingBarrierInit("full", _count("one", prod), slot))
        producer.append(A.RingBarrierInit("empty", _count(empty_unit, cons)))
        producer.append(A.RingWait("empty"))
        producer.append(A.RingArrive("full", _count("one", prod), tx=slot))
        split = draw(st.sampled_from((0, 1, 2))) if slot >= 8 * 1024 else 1
        if split == 1:
            producer.append(A.RingCopy("full", slot))
        elif split == 2:
            first = slot // 2 // 1024 * 1024
            producer += [A.RingCopy("full", first), A.RingCopy("full", slot - first)]
        producer.append(A.RingProxy("writes", "async"))
        producer.append(A.RingInitBy(prod.name, fenced=True))
    else:
        pplan.features.add("mbarrier")
        full_unit = _unit_for(draw, prod, group)
        producer.append(A.RingBarrierInit("full", _count(full_unit, prod)))
        producer.append(A.RingBarrierInit("empty", _count(empty_unit, cons)))
        producer.append(A.RingWait("empty"))
        producer.append(A.RingArrive("full", _count(full_unit, prod)))
        producer.append(A.RingProxy("writes", "generic"))
        if reads == "async":
            producer.append(A.RingFence())
        producer.append(A.RingInitBy(prod.name, fenced=draw(st.booleans())))
    cplan.features.add("mbarrier")
    consumer: list[A.RingItem] = [
        A.RingWait("full"),
        A.RingProxy("reads", reads),
        *([A.RingFence()] if asynchronous and reads == "generic" else []),  # generic reads, then async refills
        A.RingArrive("empty", _count(empty_unit, cons)),
    ]
    pplan.items.append(A.Ring(name, "produce", prod.name, tuple(producer)))
    cplan.items.append(A.Ring(name, "consume", cons.name, tuple(consumer)))


@st.composite
def _fact(draw: st.DrawFn, index: int, plans: list[_StagePlan], owner: int, user: int) -> None:
    name = f"tile_{'kmn'[index % 3]}{index // 3 or ''}"
    value = draw(st.sampled_from((64, 128, 256, 512, 8192)))
    modulus = draw(st.sampled_from([m for m in (16, 32, 64) if value % m == 0]))
    how = draw(st.sampled_from(("param", "param", "assume")))
    if how == "param" and draw(st.booleans()):
        owned = A.FactValue("set", (value, value * 2))
    else:
        owned = A.FactValue("exact", (value,))
    plans[owner].items.append(A.OwnsFact(name, "u32", owned))
    consumer = plans[user]
    if how == "param":
        param = f"{name}_p"
        consumer.params.append(A.ParamField(param, "u32", 0, name))
        consumer.items.append(A.UsesFact(name, "u32", param))
    else:
        consumer.items.append(A.AssumesFact(name, "u32", value))
    if draw(st.booleans()):
        expr: Expr = BinOp("==", BinOp("%", Name(name), Int(modulus)), Int(0))
        if draw(st.booleans()):
            expr = BinOp("and", expr, BinOp("<=", Name(name), Int(max(owned.values) * 2)))
        consumer.items.append(A.RequiresFact(expr))


_SIGNATURES = (
    A.Signature(("f32",), "f32"),
    A.Signature(("i32", "i32"), "bool"),
    A.Signature(("u32", "f32"), "f32"),
    A.Signature((), "u32"),
)


@st.composite
def _callable(draw: st.DrawFn, index: int, plans: list[_StagePlan], provider: int, caller: _Role) -> None:
    name = f"fn{index}"
    sig = draw(st.sampled_from(_SIGNATURES))
    requires = tuple(draw(st.lists(st.sampled_from(("converged", "full_warps")), unique=True, max_size=2)))
    extra = tuple(
        g for g in ("converged", "full_warps", "no_early_return") if g not in requires and draw(st.booleans())
    )
    plans[provider].items.append(A.ExportCallable(name, sig, f"{name}_impl", requires))
    plans[caller.stage].items.append(
        A.Call(name, sig, f"kl_call_{name}", caller.name, "role", tuple(sorted(requires + extra)))
    )


def _counter(index: int, plans: list[_StagePlan], prod: _Role, cons: _Role, slots: int) -> None:
    name = f"ready{index}"
    plans[prod.stage].items.append(A.CounterClaim(f"{name}_slots", slots=slots, scope="gpu"))
    plans[prod.stage].items.append(A.Counter(name, "produce", prod.name, scope="gpu", steps=(A.CounterStep("add", 1),)))
    plans[cons.stage].items.append(
        A.Counter(name, "consume", cons.name, scope="gpu", steps=(A.CounterStep("wait_ge", 1),))
    )


def _tensor(index: int, plans: list[_StagePlan], mma: _Role, epi: _Role, n: int) -> None:
    conn, export = f"acc{index}", f"accumulator{index}"
    mplan, eplan = plans[mma.stage], plans[epi.stage]
    mplan.features.add("wgmma")
    m = 64 * (mma.warps // 4)
    mplan.items.append(
        A.ExportTensor(
            export,
            mma.name,
            elem="f32",
            tile=(A.Dim("m", m), A.Dim("n", n)),
            generation="once",
            placement=A.LibraryMap("wgmma_m64nNk16_f32", (("n", n), ("warpgroups", mma.warps // 4))),
            ready=A.EventRef(conn, "ready"),
        )
    )
    scratch = f"scratch{index}"
    eplan.items.append(
        A.SmemClaim(
            scratch,
            bytes=16 * 1024,
            align=16,
            lifetime=A.Lifetime("between", start=A.EventRef(conn, "ready"), end=A.EventRef(conn, "done")),
        )
    )
    demand = A.LayoutMap(
        "regs",
        (A.MapParam("t", m), A.MapParam("p", 32), A.MapParam("c", n // 32)),
        ("m", "n"),
        (A.MapAssign("m", Name("t")), A.MapAssign("n", BinOp("+", BinOp("*", Int(32), Name("c")), Name("p")))),
    )
    eplan.items.append(
        A.ImportTensor(
            conn,
            export,
            epi.name,
            elem="f32",
            tile=(A.Dim("m", m), A.Dim("n", n)),
            chunk=(A.Dim("n", 32),),
            demand=demand,
            lends=(A.Lend("smem", claim=scratch), A.Lend("regs", regs=32)),
            done=A.EventRef(conn, "done"),
        )
    )


def _params_block(plan: _StagePlan, index: int) -> A.Params:
    fields = [A.ParamField("base", "ptr", 0)]
    offset = 8
    for fld in plan.params:
        fields.append(dataclasses.replace(fld, offset=offset))
        offset += 4
    return A.Params(f"Params{index}", _round_up(offset, 8), 8, tuple(fields))


@st.composite
def compositions(
    draw: st.DrawFn,
    target: TargetLimits,
    *,
    max_stages: int = 4,
    max_rings: int = 2,
    max_facts: int = 2,
    max_callables: int = 2,
    launch: bool | None = None,
) -> Bundle:
    """A composition the checker accepts on ``target``: 1 to ``max_stages`` stages and a pipeline.

    Drawn: roles of 1–8 warps (warpgroup roles aligned), register budgets fitted to the
    pool, mbarrier rings between two roles (bulk-copy rings with expect_tx equal to the
    bytes copied, or generic-proxy rings with arrival counts from the producer's width,
    fenced where the consumer reads through the async proxy, or reads generically what the
    async proxy refills), per-slot shared memory
    within the target's capacity at the minimum depth, counters, named barriers,
    callables with matching signatures and sufficient call-site guarantees, facts
    (owned once, consumed as parameters or compiled-in assumptions, constrained by
    ``requires fact`` that the owner's values meet), a wgmma accumulator hand-off where
    the target has wgmma, tensor-memory claims where it has tensor memory, and agreeing
    launch and cluster lines. ``launch`` True states the block size (``launch fixed threads
    N`` on stages, the pipeline or both), False leaves it to the linker, None draws either.
    """
    spec = target
    n_stages = draw(st.integers(1, max_stages))
    plans = [_StagePlan(f"fz.s{i}", f"1.{draw(st.integers(0, 3))}.{draw(st.integers(0, 9))}") for i in range(n_stages)]
    tensor = "wgmma" in spec.features and n_stages >= 2 and draw(st.integers(0, 3)) == 0
    needs: list[tuple[str, int, int, bool]] = []
    if tensor:
        mma_stage = draw(st.integers(0, n_stages - 2))
        needs = [("mma", mma_stage, 8, True), ("epi", draw(st.integers(mma_stage + 1, n_stages - 1)), 4, True)]
    roles = draw(_roles(spec, n_stages, needs))
    for role in roles:
        plan = plans[role.stage]
        plan.items.append(
            A.Role(role.name, entry=f"{role.name}_main", warps=role.warps, regs=role.regs, warpgroup=role.warpgroup)
        )
        if role.regs is not None:
            plan.features.add("setmaxnreg")
    budget = _Budget(int(spec.smem_per_block_optin * _SMEM_FILL), spec.tmem_columns)
    if tensor:
        mma = next(r for r in roles if r.name == "mma0")
        epi = next(r for r in roles if r.name == "epi1")
        _tensor(0, plans, mma, epi, draw(st.sampled_from((64, 128, 256))))
        budget.smem -= 16 * 1024 + 16
    if len(roles) >= 2:
        for k in range(draw(st.integers(0, max_rings))):
            prod, cons = draw(st.permutations(roles))[:2]
            draw(_ring(spec, f"q{k}", prod, cons, plans, budget))
        if draw(st.integers(0, 3)) == 0:
            prod, cons = draw(st.permutations(roles))[:2]
            _counter(0, plans, prod, cons, draw(st.sampled_from((1, 8, 64))))
        for k in range(draw(st.integers(0, 2))):
            members = draw(st.lists(st.sampled_from(roles), min_size=1, max_size=3, unique_by=lambda r: r.name))
            stage = members[0].stage
            threads = sum(r.warps for r in members) * spec.warp_size
            plans[stage].items.append(
                A.BarrierClaim(f"sync{k}", tuple(r.name for r in members), threads if draw(st.booleans()) else None)
            )
    for k in range(draw(st.integers(0, max_facts))):
        draw(_fact(k, plans, draw(st.integers(0, n_stages - 1)), draw(st.integers(0, n_stages - 1))))
    for k in range(draw(st.integers(0, max_callables))):
        draw(_callable(k, plans, draw(st.integers(0, n_stages - 1)), draw(st.sampled_from(roles))))
    if spec.tmem_columns and "tmem" in spec.features:
        for k in range(draw(st.integers(0, 2))):
            columns = draw(st.sampled_from((32, 64, 128, 256)))
            if columns <= budget.tmem:
                budget.tmem -= columns
                owner = draw(st.integers(0, n_stages - 1))
                plans[owner].items.append(A.TmemClaim(f"tacc{k}", columns=columns))
                plans[owner].features.update(("tmem", "tcgen05"))
    return _render(draw, spec, plans, roles, launch)


def _render(
    draw: st.DrawFn, spec: TargetLimits, plans: list[_StagePlan], roles: list[_Role], launch_stated: bool | None
) -> Bundle:
    warps = _layout(roles, spec.warpgroup_warps)
    threads = warps * spec.warp_size
    modes = {True: ("stages", "pipeline", "both"), False: ("none",), None: ("none", "stages", "pipeline", "both")}
    launch_mode = draw(st.sampled_from(modes[launch_stated]))
    blocks = 1 if draw(st.booleans()) else None
    # blocks that wait on a gpu-scope counter need every block resident (L-LAUNCH)
    waits = any(
        isinstance(it, A.Counter) and it.side == "consume" and it.scope == "gpu" for plan in plans for it in plan.items
    )
    launch = A.Launch("fixed", threads=threads, blocks_per_sm=blocks, resident=waits)
    cluster = draw(st.sampled_from(("none", "stages", "pipeline"))) if spec.cluster_portable_max >= 2 else "none"
    stages: list[A.Stage] = []
    for index, plan in enumerate(plans):
        head: list[A.StageItem] = [A.Target(spec.name)]
        features = sorted(plan.features & set(spec.features))
        if features:
            head.append(A.Features(tuple(features)))
        role_items = [it for it in plan.items if isinstance(it, A.Role)]
        rest = [it for it in plan.items if not isinstance(it, A.Role)]
        head.extend(role_items)
        if launch_mode in ("stages", "both") and role_items:
            head.append(launch)
        if plan.params or (role_items and draw(st.booleans())):
            head.append(_params_block(plan, index))
        if cluster != "none":
            head.append(A.Cluster((A.ClusterShape(1, 1, 1), A.ClusterShape(2, 1, 1))))
        stages.append(A.Stage(plan.name, plan.version, (*head, *rest)))
    items: list[A.PipelineItem] = [A.Target(spec.name)]
    for plan in plans:
        major, minor, _ = plan.version.split(".")
        requirement = draw(st.sampled_from((f"^{major}.0", f"^{major}.{minor}", f"={plan.version}", f">={major}.0")))
        items.append(A.Use(plan.name, requirement))
    if launch_mode in ("pipeline", "both") and roles:
        items.append(launch)
    if cluster == "pipeline":
        items.append(A.PipelineCluster(A.ClusterShape(2, 1, 1)))
    return Bundle(A.Pipeline(f"fz.pipeline{len(plans)}", tuple(items)), tuple(stages))


def contracts(target: TargetLimits, *, max_rings: int = 2) -> st.SearchStrategy[A.Stage]:
    """One stage that the checker accepts alone (as the implicit pipeline of its file)."""
    return compositions(target, max_stages=1, max_rings=max_rings).map(lambda b: b.stages[0])
