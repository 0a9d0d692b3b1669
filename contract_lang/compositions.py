"""Compositions that are valid by construction, and realistic one-line edits of any composition.

This is the public fuzzing API of the contract language (``contract_lang.strategies``
holds the *syntactic* strategies: well-formed but not valid ASTs)::

    from hypothesis import given
    from checker.hardware import target
    from contract_lang.compositions import compositions, mutations, Bundle

    @given(compositions(target("sm_90a"), max_stages=3))
    def test_my_tool_accepts(bundle: Bundle) -> None:
        my_tool(bundle.text())            # one stage per block, then the pipeline

    @given(mutations(my_bundle))
    def test_my_tool_never_crashes(mutation) -> None:
        my_tool(mutation.apply(my_bundle).text())

Three families:

* :class:`Bundle` — a composition as ASTs: its pipeline and the stages it uses.
  :meth:`Bundle.text` prints it as one file that ``kernlink.api.check_text`` reads.
* :func:`compositions` / :func:`contracts` — bundles that the checker accepts: every
  role has an entry and a width, warps fit the block and warpgroup roles are
  aligned, register budgets fit the pool, shared memory and tensor memory fit the
  target's capacities with margin, every ring, counter and callable is paired with
  consistent counts and byte totals, every fact has one owner whose value meets
  every consumer's constraint, launch lines agree. Parameterised by the target (any
  object with the fields of ``checker.hardware.TargetSpec``; this module reads no
  table of its own) and by size.
* :func:`edits` / :func:`mutations` / :func:`random_mutation` — the mutation
  catalogue (:data:`MUTATION_KINDS`): one realistic edit of one line (a tile size, a
  width, a depth range, a byte count, an arrival count, a parity, a fact, an
  alignment, a scope, a dropped ``init by``/``fence``/``wait``, a renamed endpoint,
  an element type, a register budget, a cluster shape…). :func:`mutations` draws
  them with Hypothesis (shrinking towards fewer and earlier edits);
  :func:`random_mutation` draws the same catalogue from a seeded
  :class:`random.Random`, which is how ``kernlink fuzz`` stays fast and reproducible.

Every edit is an AST replacement, so a mutant prints to text that parses back.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Protocol

from hypothesis import strategies as st

from contract_lang import ast as A
from contract_lang.expr import BinOp, Expr, Int, Name, Not
from contract_lang.printer import print_file, print_node
from hardware import residency

__all__ = [
    "MUTATION_KINDS",
    "Bundle",
    "Edit",
    "Mutation",
    "TargetLimits",
    "compositions",
    "contracts",
    "edits",
    "mutated_compositions",
    "mutations",
    "random_mutation",
]

# ============================================================================ bundles

@dataclass(frozen=True)
class Bundle:
    """A composition as ASTs: the pipeline and the stages it uses (printing order: stages first)."""

    pipeline: A.Pipeline
    stages: tuple[A.Stage, ...]

    @property
    def units(self) -> tuple[A.Stage | A.Pipeline, ...]:
        """The blocks edits address: every stage, then the pipeline (index ``len(stages)``)."""
        return (*self.stages, self.pipeline)

    def source_file(self, path: str = "<bundle>") -> A.SourceFile:
        return A.SourceFile(path, self.units)

    def text(self) -> str:
        """The whole composition as one file: each stage, then the pipeline."""
        return print_file(self.source_file())

    @classmethod
    def of(cls, units: Sequence[A.Stage | A.Pipeline]) -> Bundle:
        stages = tuple(u for u in units if isinstance(u, A.Stage))
        pipeline = next(u for u in units if isinstance(u, A.Pipeline))
        return cls(pipeline, stages)


# ============================================================================ targets

class TargetLimits(Protocol):
    """The fields of a hardware-table entry the generator reads (``checker.hardware.TargetSpec``)."""

    @property
    def name(self) -> str: ...
    @property
    def features(self) -> frozenset[str]: ...
    @property
    def smem_per_block_optin(self) -> int: ...
    @property
    def mbarrier_size(self) -> int: ...
    @property
    def warp_size(self) -> int: ...
    @property
    def max_warps_per_block(self) -> int: ...
    @property
    def warpgroup_warps(self) -> int: ...
    @property
    def regs_per_sm(self) -> int: ...
    @property
    def regs_per_block(self) -> int: ...
    @property
    def sub_partitions(self) -> int: ...
    @property
    def max_regs_per_thread(self) -> int: ...
    @property
    def reg_alloc_unit_per_warp(self) -> int: ...
    @property
    def reg_warp_rounding(self) -> int: ...
    @property
    def setmaxnreg_min(self) -> int: ...
    @property
    def setmaxnreg_max(self) -> int: ...
    @property
    def setmaxnreg_step(self) -> int: ...
    @property
    def tmem_columns(self) -> int: ...
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
        budgets.append(max((r.regs if r.regs is not None else spec.setmaxnreg_min for r in members),
                           default=spec.setmaxnreg_min))
    return budgets


def _fit_registers(roles: list[_Role], spec: TargetLimits) -> None:
    """Lower the largest budgets until the warpgroups fit the register pool (L-REGS)."""
    warps = _layout(roles, spec.warpgroup_warps)
    pool = _register_pool(spec, warps)
    while residency.register_demand(spec, warps, _group_budgets(roles, spec), spec.warpgroup_warps) > pool:
        top = max((r for r in roles if r.regs is not None and r.regs > spec.setmaxnreg_min),
                  key=lambda r: r.regs or 0, default=None)
        if top is None:
            for role in roles:
                role.regs = None
            return
        assert top.regs is not None
        top.regs -= spec.setmaxnreg_step


@st.composite
def _roles(draw: st.DrawFn, spec: TargetLimits, n_stages: int, needs: Sequence[tuple[str, int, int, bool]]
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
        choices = [v for v in (24, 40, 56, 72, 104, 152, 208, 224, 232, 240)
                   if spec.setmaxnreg_min <= v <= spec.setmaxnreg_max and v % step == 0]
        for role in roles:
            if draw(st.booleans()):
                role.regs = draw(st.sampled_from(choices))
        _fit_registers(roles, spec)
    return roles


_Unit = Literal["per_warp", "per_thread", "per_warpgroup"]
_UNITS: dict[str, _Unit] = {"per_warp": "per_warp", "per_thread": "per_thread",
                                   "per_warpgroup": "per_warpgroup"}


def _count(unit: str, role: _Role) -> A.Count:
    if unit == "one":
        return A.Count((A.CountTerm(1, "one"),))
    return A.Count((A.CountTerm(1, _UNITS[unit], role.name),))


def _unit_for(draw: st.DrawFn, role: _Role, group: int) -> str:
    options = ["per_warp"] + (["per_warpgroup"] if role.warps % group == 0 else [])
    return draw(st.sampled_from(options))


@dataclass
class _Budget:
    """What is left to claim: shared-memory bytes and tensor-memory columns."""

    smem: int
    tmem: int


@st.composite
def _ring(draw: st.DrawFn, spec: TargetLimits, name: str, prod: _Role, cons: _Role,
          plans: list[_StagePlan], budget: _Budget) -> None:
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
    consumer: list[A.RingItem] = [A.RingWait("full"), A.RingProxy("reads", reads),
                                  A.RingArrive("empty", _count(empty_unit, cons))]
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


_SIGNATURES = (A.Signature(("f32",), "f32"), A.Signature(("i32", "i32"), "bool"),
               A.Signature(("u32", "f32"), "f32"), A.Signature((), "u32"))


@st.composite
def _callable(draw: st.DrawFn, index: int, plans: list[_StagePlan], provider: int, caller: _Role) -> None:
    name = f"fn{index}"
    sig = draw(st.sampled_from(_SIGNATURES))
    requires = tuple(draw(st.lists(st.sampled_from(("converged", "full_warps")), unique=True, max_size=2)))
    extra = tuple(g for g in ("converged", "full_warps", "no_early_return")
                  if g not in requires and draw(st.booleans()))
    plans[provider].items.append(A.ExportCallable(name, sig, f"{name}_impl", requires))
    plans[caller.stage].items.append(A.Call(name, sig, f"kl_call_{name}", caller.name, "role",
                                            tuple(sorted(requires + extra))))


def _counter(index: int, plans: list[_StagePlan], prod: _Role, cons: _Role, slots: int) -> None:
    name = f"ready{index}"
    plans[prod.stage].items.append(A.CounterClaim(f"{name}_slots", slots=slots, scope="gpu"))
    plans[prod.stage].items.append(A.Counter(name, "produce", prod.name, scope="gpu",
                                             steps=(A.CounterStep("add", 1),)))
    plans[cons.stage].items.append(A.Counter(name, "consume", cons.name, scope="gpu",
                                             steps=(A.CounterStep("wait_ge", 1),)))


def _tensor(index: int, plans: list[_StagePlan], mma: _Role, epi: _Role, n: int) -> None:
    conn, export = f"acc{index}", f"accumulator{index}"
    mplan, eplan = plans[mma.stage], plans[epi.stage]
    mplan.features.add("wgmma")
    m = 64 * (mma.warps // 4)
    mplan.items.append(A.ExportTensor(
        export, mma.name, elem="f32", tile=(A.Dim("m", m), A.Dim("n", n)), generation="once",
        placement=A.LibraryMap("wgmma_m64nNk16_f32", (("n", n), ("warpgroups", mma.warps // 4))),
        ready=A.EventRef(conn, "ready")))
    scratch = f"scratch{index}"
    eplan.items.append(A.SmemClaim(scratch, bytes=16 * 1024, align=16,
                                   lifetime=A.Lifetime("between", start=A.EventRef(conn, "ready"),
                                                       end=A.EventRef(conn, "done"))))
    demand = A.LayoutMap("regs", (A.MapParam("t", m), A.MapParam("p", 32), A.MapParam("c", n // 32)),
                         ("m", "n"),
                         (A.MapAssign("m", Name("t")),
                          A.MapAssign("n", BinOp("+", BinOp("*", Int(32), Name("c")), Name("p")))))
    eplan.items.append(A.ImportTensor(
        conn, export, epi.name, elem="f32", tile=(A.Dim("m", m), A.Dim("n", n)), chunk=(A.Dim("n", 32),),
        demand=demand, lends=(A.Lend("smem", claim=scratch), A.Lend("regs", regs=32)),
        done=A.EventRef(conn, "done")))


def _params_block(plan: _StagePlan, index: int) -> A.Params:
    fields = [A.ParamField("base", "ptr", 0)]
    offset = 8
    for fld in plan.params:
        fields.append(dataclasses.replace(fld, offset=offset))
        offset += 4
    return A.Params(f"Params{index}", _round_up(offset, 8), 8, tuple(fields))


@st.composite
def compositions(draw: st.DrawFn, target: TargetLimits, *, max_stages: int = 4, max_rings: int = 2,
                 max_facts: int = 2, max_callables: int = 2, launch: bool | None = None) -> Bundle:
    """A composition the checker accepts on ``target``: 1 to ``max_stages`` stages and a pipeline.

    Drawn: roles of 1–8 warps (warpgroup roles aligned), register budgets fitted to the
    pool, mbarrier rings between two roles (bulk-copy rings with expect_tx equal to the
    bytes copied, or generic-proxy rings with arrival counts from the producer's width,
    fenced where the consumer reads through the async proxy), per-slot shared memory
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
    plans = [_StagePlan(f"fz.s{i}", f"1.{draw(st.integers(0, 3))}.{draw(st.integers(0, 9))}")
             for i in range(n_stages)]
    tensor = "wgmma" in spec.features and n_stages >= 2 and draw(st.integers(0, 3)) == 0
    needs: list[tuple[str, int, int, bool]] = []
    if tensor:
        mma_stage = draw(st.integers(0, n_stages - 2))
        needs = [("mma", mma_stage, 8, True), ("epi", draw(st.integers(mma_stage + 1, n_stages - 1)), 4, True)]
    roles = draw(_roles(spec, n_stages, needs))
    for role in roles:
        plan = plans[role.stage]
        plan.items.append(A.Role(role.name, entry=f"{role.name}_main", warps=role.warps, regs=role.regs,
                                 warpgroup=role.warpgroup))
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
            plans[stage].items.append(A.BarrierClaim(
                f"sync{k}", tuple(r.name for r in members), threads if draw(st.booleans()) else None))
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


def _render(draw: st.DrawFn, spec: TargetLimits, plans: list[_StagePlan], roles: list[_Role],
            launch_stated: bool | None) -> Bundle:
    warps = _layout(roles, spec.warpgroup_warps)
    threads = warps * spec.warp_size
    modes = {True: ("stages", "pipeline", "both"), False: ("none",), None: ("none", "stages", "pipeline", "both")}
    launch_mode = draw(st.sampled_from(modes[launch_stated]))
    blocks = 1 if draw(st.booleans()) else None
    # blocks that wait on a gpu-scope counter need every block resident (L-LAUNCH)
    waits = any(isinstance(it, A.Counter) and it.side == "consume" and it.scope == "gpu"
                for plan in plans for it in plan.items)
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
        requirement = draw(st.sampled_from((f"^{major}.0", f"^{major}.{minor}", f"={plan.version}",
                                            f">={major}.0")))
        items.append(A.Use(plan.name, requirement))
    if launch_mode in ("pipeline", "both") and roles:
        items.append(launch)
    if cluster == "pipeline":
        items.append(A.PipelineCluster(A.ClusterShape(2, 1, 1)))
    return Bundle(A.Pipeline(f"fz.pipeline{len(plans)}", tuple(items)), tuple(stages))


def contracts(target: TargetLimits, *, max_rings: int = 2) -> st.SearchStrategy[A.Stage]:
    """One stage that the checker accepts alone (as the implicit pipeline of its file)."""
    return compositions(target, max_stages=1, max_rings=max_rings).map(lambda b: b.stages[0])


# ============================================================================ mutations

@dataclass(frozen=True)
class Edit:
    """One realistic edit: replace (or, with ``item=None``, drop) item ``index`` of unit ``unit``.

    ``index == -1`` edits the block's header: ``item`` is then the unit with its new name
    or version (its items are ignored). ``before``/``after`` are the edited line's text
    (``after`` is empty for a dropped line) and ``where`` the block line holding it
    (``ring kv produce by load``), empty for a line of the stage itself.
    """

    kind: str
    unit: int
    index: int
    item: A.Node | None
    before: str
    after: str
    where: str = ""

    def describe(self, bundle: Bundle) -> str:
        unit = bundle.units[self.unit]
        head = f"stage `{unit.name}`" if isinstance(unit, A.Stage) else f"pipeline `{unit.name}`"
        if self.where:
            head += f", {self.where}"
        return f"{head}: `{self.before}` → `{self.after}`" if self.after else f"{head}: drop `{self.before}`"


@dataclass(frozen=True)
class Mutation:
    """One or more edits of one composition, applied together (later edits of one item win)."""

    edits: tuple[Edit, ...]

    @property
    def kind(self) -> str:
        """The kind of the first edit: how the campaign tables a mutant."""
        return self.edits[0].kind if self.edits else "none"

    def apply(self, bundle: Bundle) -> Bundle:
        return Bundle.of(apply_edits(bundle.units, self.edits))

    def changed_units(self) -> tuple[int, ...]:
        return tuple(sorted({e.unit for e in self.edits}))

    def describe(self, bundle: Bundle) -> str:
        return "; ".join(e.describe(bundle) for e in self.edits)


def apply_edits(units: Sequence[A.Stage | A.Pipeline], chosen: Sequence[Edit]) -> tuple[A.Stage | A.Pipeline, ...]:
    """The units with the edits applied; edits address the original items' indices."""
    out = list(units)
    for u in sorted({e.unit for e in chosen}):
        unit = units[u]
        items: list[object] = list(unit.items)
        header: A.Stage | A.Pipeline = unit
        for edit in chosen:
            if edit.unit != u:
                continue
            if edit.index < 0:
                assert isinstance(edit.item, (A.Stage, A.Pipeline))
                header = edit.item
            else:
                items[edit.index] = edit.item
        kept = tuple(it for it in items if it is not None)
        out[u] = dataclasses.replace(header, items=kept)  # type: ignore[arg-type]
    return tuple(out)


MUTATION_KINDS: Mapping[str, str] = MappingProxyType({
    "target": "retarget a stage or the pipeline to another architecture",
    "feature": "require a feature the stage did not, or drop one it did",
    "version": "bump a stage's major version or a use line's requirement",
    "role-warps": "widen or narrow a role by a warp, double or halve it, or zero it",
    "role-regs": "change a register budget by a step, off the step, out of range, or add/drop it",
    "role-warpgroup": "mark a role as a warpgroup role or unmark it",
    "role-name": "rename a role where it is declared (its users keep the old name)",
    "launch": "change the launched threads by a warp, the grid kind, or blocks per SM",
    "params": "move a params field, change its type, or shrink the struct",
    "smem-bytes": "change a shared-memory claim's size (halve, double, +16, +1)",
    "smem-align": "change a shared-memory alignment (halve, double, not a power of two)",
    "smem-use": "add a use with a stricter alignment (swizzle128, tma) or drop the uses",
    "lifetime": "change a claim's lifetime (kernel ↔ an event interval, swap events, a phase)",
    "per-slot": "detach a claim from its ring or attach it to another name",
    "tmem-columns": "change a tensor-memory claim's columns",
    "barrier": "change a named barrier's thread count or drop a participant",
    "counter-slots": "change a counter claim's slots",
    "ring-depth": "change a ring's depth range (shift, widen, empty, start at 0) or add one to a side",
    "expect-tx": "change or drop a barrier's expected transaction bytes",
    "tx-bytes": "change or drop the bytes an arrive.expect_tx announces",
    "copy-bytes": "change the bytes an async copy completes, or drop the copy",
    "arrival-count": "change an init or arrive count: constant ±1, ×2, another unit or role",
    "parity": "state or flip a wait's first parity",
    "drop-init": "drop a ring's `init by` line",
    "drop-fence": "drop a `fence proxy_async` line or the `fenced` of an `init by`",
    "drop-wait": "drop a ring or counter wait",
    "drop-arrive": "drop a ring arrive",
    "proxy": "switch a ring side between the generic and the async proxy",
    "init-role": "initialize a ring's barriers from another role",
    "scope": "change or add a ring, counter or counter-claim scope",
    "counter-space": "change a counter's memory space or domain",
    "rename-endpoint": "rename one endpoint of a ring, counter or rendezvous",
    "endpoint-side": "turn a consumer endpoint into a producer or back",
    "endpoint-role": "move a ring or counter endpoint to another role",
    "signature": "change a parameter or result type of a call or export",
    "guarantee": "drop a call-site guarantee, or require one more of the callers",
    "rename-callable": "rename a call or an export",
    "elem-type": "swap a tensor's element type",
    "tile-extent": "change a tensor tile or chunk extent",
    "generation": "change a tensor's generation or ready/done event",
    "fact-value": "change a fact's owned value, compiled-in assumption, or a constraint's constant",
    "fact-type": "change a fact's declared type on one side",
    "fact-name": "rename a fact on one side",
    "phases": "change an interpreter's phase mode or drop a phase",
    "cluster-shape": "change an accepted or launched cluster shape",
    "views": "drop or change a communication domain's views",
    "buffer-bytes": "change a buffer's or a caller-provided buffer's size",
})
"""Every mutation kind, by the name the campaign report uses."""

_TARGETS = ("sm_90", "sm_90a", "sm_100a", "sm_120a")
_SCALARS = ("u32", "i32", "u64", "u16", "f32")


def _nums(value: int, *, zero: bool = False) -> list[int]:
    """Realistic neighbours of a size: halve, double, +16, −16, +1 (positive, distinct, ≠ value)."""
    out: list[int] = []
    for v in (value // 2, value * 2, value + 16, value - 16, value + 1):
        if (v > 0 or (zero and v == 0)) and v != value and v not in out:
            out.append(v)
    return out


def _counts(count: A.Count, roles: Sequence[str]) -> list[A.Count]:
    out: list[A.Count] = []
    for i, term in enumerate(count.terms):
        repl: list[A.CountTerm] = []
        if term.unit == "one":
            repl += [A.CountTerm(v, "one") for v in (term.coef + 1, term.coef - 1, term.coef * 2)
                     if v >= 0 and v != term.coef]
        else:
            repl.append(A.CountTerm(term.coef * 2, term.unit, term.role))
            repl += [A.CountTerm(term.coef, u, term.role) for u in _UNITS.values() if u != term.unit]
            repl += [A.CountTerm(term.coef, term.unit, r) for r in roles if r != term.role][:2]
            repl.append(A.CountTerm(1, "one"))
        out += [A.Count((*count.terms[:i], t, *count.terms[i + 1:])) for t in repl]
    return out


def _line(item: A.Node) -> str:
    """One-line text of an item (the header line of a block item)."""
    if isinstance(item, A.Stage):
        return print_node(A.Stage(item.name, item.version)).splitlines()[0].removesuffix(" {}")
    if isinstance(item, A.Pipeline):
        return print_node(A.Pipeline(item.name)).splitlines()[0].removesuffix(" {}")
    text = print_node(A.Stage("_", "_", (item,)))  # type: ignore[arg-type]
    return text.splitlines()[1].strip().removesuffix(" {")


def _ring_line(item: A.RingItem) -> str:
    from contract_lang.printer import ring_item_line

    return ring_item_line(item)


class _Sites:
    """Collects the edits of one bundle, in a deterministic order."""

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self.found: list[Edit] = []
        self.roles = tuple(r.name for s in bundle.stages for r in s.roles)

    def add(self, kind: str, unit: int, index: int, old: A.Node, new: A.Node | None) -> None:
        if new == old:
            return
        self.found.append(Edit(kind, unit, index, new, _line(old), "" if new is None else _line(new)))

    def inner(self, kind: str, unit: int, index: int, new_item: A.Node, where: str, before: str,
              after: str) -> None:
        """An edit of one line inside a block item (a ring step, a params field)."""
        self.found.append(Edit(kind, unit, index, new_item, before, after, where))

    def ring_item(self, kind: str, unit: int, index: int, ring: A.Ring, j: int,
                  new: A.RingItem | None) -> None:
        old = ring.items[j]
        if new == old:
            return
        items = ring.items[:j] + ((new,) if new is not None else ()) + ring.items[j + 1:]
        self.inner(kind, unit, index, dataclasses.replace(ring, items=items), _ring_head(ring),
                   _ring_line(old), "" if new is None else _ring_line(new))


def _ring_head(ring: A.Ring) -> str:
    return f"ring {ring.name} {ring.side} by {ring.role}"


def edits(bundle: Bundle) -> tuple[Edit, ...]:
    """Every single edit the catalogue offers for this composition, in a fixed order."""
    sites = _Sites(bundle)
    for u, unit in enumerate(bundle.units):
        if isinstance(unit, A.Stage):
            major = unit.version.split(".")[0]
            if major.isdigit():
                bumped = f"{int(major) + 1}.0.0"
                sites.add("version", u, -1, unit, dataclasses.replace(unit, version=bumped))
        for i, item in enumerate(unit.items):
            _item_edits(sites, u, i, item)
    return tuple(sites.found)


def _item_edits(s: _Sites, u: int, i: int, item: object) -> None:
    add = s.add
    if isinstance(item, A.Target):
        for name in _TARGETS:
            add("target", u, i, item, A.Target(name))
    elif isinstance(item, A.Features):
        extra = next(f for f in ("tcgen05", "wgmma", "multimem") if f not in item.names)
        add("feature", u, i, item, A.Features((*item.names, extra)))
        if len(item.names) > 1:
            add("feature", u, i, item, A.Features(item.names[1:]))
    elif isinstance(item, A.Role):
        _role_edits(s, u, i, item)
    elif isinstance(item, A.Launch):
        rep = dataclasses.replace
        if item.threads is not None:
            for t in (item.threads + 32, item.threads - 32, item.threads * 2, item.threads + 16):
                if t > 0:
                    add("launch", u, i, item, rep(item, threads=t))
        add("launch", u, i, item, rep(item, kind="persistent" if item.kind == "fixed" else "fixed"))
        add("launch", u, i, item, rep(item, blocks_per_sm=(item.blocks_per_sm or 1) + 1))
    elif isinstance(item, A.Params):
        _params_edits(s, u, i, item)
    elif isinstance(item, A.SmemClaim):
        _smem_edits(s, u, i, item)
    elif isinstance(item, A.TmemClaim) and item.columns is not None:
        for c in (*_nums(item.columns), 48, 1024):
            add("tmem-columns", u, i, item, dataclasses.replace(item, columns=c))
    elif isinstance(item, A.BarrierClaim):
        threads = item.threads or 128
        for t in (threads + 32, threads - 32, threads + 16):
            if t > 0:
                add("barrier", u, i, item, dataclasses.replace(item, threads=t))
        if len(item.participants) > 1:
            add("barrier", u, i, item, dataclasses.replace(item, participants=item.participants[1:]))
    elif isinstance(item, A.CounterClaim):
        if item.slots is not None:
            for v in (item.slots + 1, item.slots * 2, item.slots * 1024):
                add("counter-slots", u, i, item, dataclasses.replace(item, slots=v))
        for scope in A.SCOPES:
            add("scope", u, i, item, dataclasses.replace(item, scope=scope))
    elif isinstance(item, A.Ring):
        _ring_edits(s, u, i, item)
    elif isinstance(item, A.Counter):
        _counter_edits(s, u, i, item)
    elif isinstance(item, A.Rendezvous):
        add("rename-endpoint", u, i, item, dataclasses.replace(item, name=item.name + "_x"))
        add("barrier", u, i, item, dataclasses.replace(item, threads=(item.threads or 128) + 32))
    elif isinstance(item, (A.ExportCallable, A.Call)):
        _callable_edits(s, u, i, item)
    elif isinstance(item, (A.ExportTensor, A.ImportTensor)):
        _tensor_edits(s, u, i, item)
    elif isinstance(item, (A.OwnsFact, A.UsesFact, A.AssumesFact, A.RequiresFact)):
        _fact_edits(s, u, i, item)
    elif isinstance(item, A.Phases):
        add("phases", u, i, item, dataclasses.replace(
            item, mode="concurrent" if item.mode == "exclusive" else "exclusive"))
        if len(item.names) > 1:
            add("phases", u, i, item, dataclasses.replace(item, names=item.names[:-1]))
    elif isinstance(item, A.AssumesPhases):
        add("phases", u, i, item, A.AssumesPhases((*item.names, "combine_x")))
    elif isinstance(item, A.Cluster):
        _cluster_edits(s, u, i, item)
    elif isinstance(item, A.PipelineCluster):
        for shape in _shapes(item.shape):
            add("cluster-shape", u, i, item, A.PipelineCluster(shape))
    elif isinstance(item, (A.Domain, A.ProvidesDomain)):
        other = tuple(v for v in A.VIEWS if v not in item.views)
        if other:
            add("views", u, i, item, dataclasses.replace(item, views=(*item.views, other[0])))
        if len(item.views) > 1:
            add("views", u, i, item, dataclasses.replace(item, views=item.views[1:]))
        add("views", u, i, item, dataclasses.replace(item, name=item.name + "_x"))
    elif isinstance(item, (A.Buffer, A.ProvidesBuffer)):
        for v in (item.bytes // 2, item.bytes * 2, item.bytes + 1):
            if v > 0:
                add("buffer-bytes", u, i, item, dataclasses.replace(item, bytes=v))
        if isinstance(item, A.Buffer) and item.views:
            add("views", u, i, item, dataclasses.replace(item, views=("multicast",)))
    elif isinstance(item, A.Use):
        for req in _bumped_requirements(item.requirement):
            add("version", u, i, item, dataclasses.replace(item, requirement=req))


def _role_edits(s: _Sites, u: int, i: int, item: A.Role) -> None:
    rep = dataclasses.replace
    if item.warps is not None:
        for w in (item.warps + 1, item.warps - 1, item.warps * 2, item.warps // 2, 0):
            if w >= 0:
                s.add("role-warps", u, i, item, rep(item, warps=w))
    if item.regs is not None:
        for r in (item.regs + 8, item.regs - 8, item.regs + 4, item.regs * 2):
            if r > 0:
                s.add("role-regs", u, i, item, rep(item, regs=r))
        s.add("role-regs", u, i, item, rep(item, regs=None))
    else:
        s.add("role-regs", u, i, item, rep(item, regs=240))
    s.add("role-warpgroup", u, i, item, rep(item, warpgroup=not item.warpgroup))
    s.add("role-name", u, i, item, rep(item, name=item.name + "_x"))


def _params_edits(s: _Sites, u: int, i: int, item: A.Params) -> None:
    rep = dataclasses.replace
    where = f"params {item.name}"
    for j, fld in enumerate(item.fields):
        for new in (rep(fld, offset=fld.offset + 4), rep(fld, type="u64" if fld.type != "u64" else "u32")):
            fields = (*item.fields[:j], new, *item.fields[j + 1:])
            s.inner("params", u, i, rep(item, fields=fields), where, _field_line(fld), _field_line(new))
    if item.size > item.align:
        s.add("params", u, i, item, rep(item, size=item.size - item.align))


def _field_line(fld: A.ParamField) -> str:
    return f"{fld.name}: {fld.type} @ {fld.offset}" + (f" = fact {fld.fact}" if fld.fact else "")


def _smem_edits(s: _Sites, u: int, i: int, item: A.SmemClaim) -> None:
    rep = dataclasses.replace
    if item.bytes is not None:
        for b in _nums(item.bytes):
            s.add("smem-bytes", u, i, item, rep(item, bytes=b))
    align = item.align or 16
    for a in (align // 2, align * 2, align + align // 2):
        if a > 0:
            s.add("smem-align", u, i, item, rep(item, align=a))
    for use in ("swizzle128", "tma"):
        if use not in item.uses:
            s.add("smem-use", u, i, item, rep(item, uses=(*item.uses, use)))
    if item.uses:
        s.add("smem-use", u, i, item, rep(item, uses=()))
    life = item.lifetime
    if life.kind == "between" and life.start is not None and life.end is not None:
        s.add("lifetime", u, i, item, rep(item, lifetime=A.Lifetime("between", start=life.end, end=life.start)))
        s.add("lifetime", u, i, item, rep(item, lifetime=A.KERNEL_LIFETIME))
        s.add("lifetime", u, i, item, rep(item, lifetime=A.Lifetime("until", end=life.end)))
    elif life.kind == "kernel":
        events = [str(e) for e in _events(s.bundle)]
        if events:
            conn, _, _ = events[0].partition(".")
            s.add("lifetime", u, i, item, rep(item, lifetime=A.Lifetime(
                "between", start=A.EventRef(conn, "ready"), end=A.EventRef(conn, "done"))))
        s.add("lifetime", u, i, item, rep(item, lifetime=A.Lifetime("phase", phase="main")))
    else:
        s.add("lifetime", u, i, item, rep(item, lifetime=A.KERNEL_LIFETIME))
    if item.per_slot is not None:
        s.add("per-slot", u, i, item, rep(item, per_slot=None))
        s.add("per-slot", u, i, item, rep(item, per_slot=item.per_slot + "_x"))


def _events(bundle: Bundle) -> list[A.EventRef]:
    found = []
    for stage in bundle.stages:
        for item in stage.items:
            if isinstance(item, A.ExportTensor) and item.ready is not None:
                found.append(item.ready)
    return found


def _ring_edits(s: _Sites, u: int, i: int, ring: A.Ring) -> None:
    rep = dataclasses.replace
    s.add("rename-endpoint", u, i, ring, rep(ring, name=ring.name + "_x"))
    s.add("endpoint-side", u, i, ring, rep(ring, side="consume" if ring.side == "produce" else "produce"))
    for other in s.roles:
        if other != ring.role:
            s.add("endpoint-role", u, i, ring, rep(ring, role=other))
            break
    if ring.depth is None:
        hi = next((d.hi for st_ in s.bundle.stages for r in st_.rings if r.name == ring.name
                   and r.depth is not None for d in (r.depth,)), 1)
        s.inner("ring-depth", u, i, rep(ring, items=(A.RingDepth(hi + 1, hi + 1), *ring.items)),
                "", _ring_head(ring), f"{_ring_head(ring)} {{ depth {hi + 1} … }}")
    if ring.scope is None:
        s.inner("scope", u, i, rep(ring, items=(*ring.items, A.RingScope("cluster"))),
                "", _ring_head(ring), f"{_ring_head(ring)} {{ … scope cluster }}")
    for j, it in enumerate(ring.items):
        ri = s.ring_item
        if isinstance(it, A.RingDepth):
            for lo, hi in ((it.lo + 1, it.hi), (it.lo, it.hi + 2), (it.hi + 1, it.hi + 1), (0, it.hi),
                           (it.hi, it.lo), (1, 1), (it.lo * 8, it.hi * 8)):
                ri("ring-depth", u, i, ring, j, A.RingDepth(lo, hi))
        elif isinstance(it, A.RingBarrierInit):
            for count in _counts(it.count, s.roles):
                ri("arrival-count", u, i, ring, j, rep(it, count=count))
            if it.expect_tx is not None:
                for v in _nums(it.expect_tx):
                    ri("expect-tx", u, i, ring, j, rep(it, expect_tx=v))
                ri("expect-tx", u, i, ring, j, rep(it, expect_tx=None))
        elif isinstance(it, A.RingWait):
            for parity in (0, 1):
                ri("parity", u, i, ring, j, rep(it, parity=parity))
            ri("drop-wait", u, i, ring, j, None)
        elif isinstance(it, A.RingArrive):
            for count in _counts(it.count, s.roles):
                ri("arrival-count", u, i, ring, j, rep(it, count=count))
            if it.tx is not None:
                for v in _nums(it.tx):
                    ri("tx-bytes", u, i, ring, j, rep(it, tx=v))
                ri("tx-bytes", u, i, ring, j, rep(it, tx=None))
            ri("drop-arrive", u, i, ring, j, None)
        elif isinstance(it, A.RingCopy):
            for v in _nums(it.bytes):
                ri("copy-bytes", u, i, ring, j, rep(it, bytes=v))
            ri("copy-bytes", u, i, ring, j, None)
        elif isinstance(it, A.RingInitBy):
            ri("drop-init", u, i, ring, j, None)
            if it.fenced:
                ri("drop-fence", u, i, ring, j, rep(it, fenced=False))
            for other in s.roles:
                if other != it.role:
                    ri("init-role", u, i, ring, j, rep(it, role=other))
                    break
        elif isinstance(it, A.RingScope):
            for scope in A.SCOPES:
                ri("scope", u, i, ring, j, A.RingScope(scope))
        elif isinstance(it, A.RingProxy):
            ri("proxy", u, i, ring, j, rep(it, proxy="generic" if it.proxy == "async" else "async"))
        elif isinstance(it, A.RingFence):
            ri("drop-fence", u, i, ring, j, None)


def _counter_edits(s: _Sites, u: int, i: int, item: A.Counter) -> None:
    rep = dataclasses.replace
    s.add("rename-endpoint", u, i, item, rep(item, name=item.name + "_x"))
    s.add("endpoint-side", u, i, item, rep(item, side="consume" if item.side == "produce" else "produce"))
    for other in s.roles:
        if other != item.role:
            s.add("endpoint-role", u, i, item, rep(item, role=other))
            break
    for scope in A.SCOPES:
        s.add("scope", u, i, item, rep(item, scope=scope))
    for space in A.COUNTER_SPACES:
        s.add("counter-space", u, i, item, rep(item, space=space))
    if item.domain is not None:
        s.add("counter-space", u, i, item, rep(item, domain=None))
    for j, step in enumerate(item.steps):
        if step.op == "wait_ge":
            s.add("drop-wait", u, i, item, rep(item, steps=item.steps[:j] + item.steps[j + 1:]))


def _callable_edits(s: _Sites, u: int, i: int, item: A.ExportCallable | A.Call) -> None:
    rep = dataclasses.replace
    sig = item.signature
    for j, p in enumerate(sig.params):
        for t in _SCALARS:
            if t != p:
                s.add("signature", u, i, item, rep(item, signature=A.Signature(
                    (*sig.params[:j], t, *sig.params[j + 1:]), sig.result)))
                break
    s.add("signature", u, i, item, rep(item, signature=A.Signature((*sig.params, "u32"), sig.result)))
    s.add("signature", u, i, item, rep(item, signature=A.Signature(
        sig.params, "f64" if sig.result != "f64" else "f32")))
    s.add("rename-callable", u, i, item, rep(item, name=item.name + "_x"))
    if isinstance(item, A.Call):
        for j in range(len(item.guarantees)):
            s.add("guarantee", u, i, item, rep(item, guarantees=item.guarantees[:j] + item.guarantees[j + 1:]))
    else:
        for g in A.GUARANTEES:
            if g not in item.requires:
                s.add("guarantee", u, i, item, rep(item, requires=(*item.requires, g)))
                break


def _tensor_edits(s: _Sites, u: int, i: int, item: A.ExportTensor | A.ImportTensor) -> None:
    rep = dataclasses.replace
    if item.elem is not None:
        for e in ("bf16", "f16", "f32"):
            if e != item.elem:
                s.add("elem-type", u, i, item, rep(item, elem=e))
                break
    for j, dim in enumerate(item.tile):
        for v in (dim.extent * 2, dim.extent // 2):
            if v > 0:
                tile = (*item.tile[:j], rep(dim, extent=v), *item.tile[j + 1:])
                s.add("tile-extent", u, i, item, rep(item, tile=tile))
    if isinstance(item, A.ImportTensor):
        for j, dim in enumerate(item.chunk):
            chunk = (*item.chunk[:j], rep(dim, extent=dim.extent * 2), *item.chunk[j + 1:])
            s.add("tile-extent", u, i, item, rep(item, chunk=chunk))
        if item.done is not None:
            s.add("generation", u, i, item, rep(item, done=A.EventRef(item.done.connection, "ready")))
    else:
        s.add("generation", u, i, item, rep(item, generation="persistent" if item.generation == "once" else "once"))
        if item.ready is not None:
            s.add("generation", u, i, item, rep(item, ready=A.EventRef(item.ready.connection + "_x",
                                                                          item.ready.event)))


def _fact_edits(s: _Sites, u: int, i: int, item: A.OwnsFact | A.UsesFact | A.AssumesFact | A.RequiresFact) -> None:
    rep = dataclasses.replace
    if isinstance(item, A.RequiresFact):
        for expr in _expr_variants(item.expr):
            s.add("fact-value", u, i, item, A.RequiresFact(expr))
        return
    for t in _SCALARS:
        if t != item.type:
            s.add("fact-type", u, i, item, rep(item, type=t))
            break
    if isinstance(item, A.OwnsFact):
        values = item.value.values
        top = max(values)
        for v in (top + 1, top * 2, top // 2):
            if v > 0:
                s.add("fact-value", u, i, item, rep(item, value=A.FactValue("exact", (v,))))
        s.add("fact-value", u, i, item, rep(item, value=A.FactValue("range", (min(values) // 2, top * 2))))
        s.add("fact-value", u, i, item, rep(item, value=A.FactValue("set", (*values, top + 8))))
    elif isinstance(item, A.AssumesFact):
        for v in (item.value + 1, item.value * 2, item.value // 2):
            s.add("fact-value", u, i, item, rep(item, value=v))
    if not isinstance(item, A.OwnsFact):
        s.add("fact-name", u, i, item, rep(item, name=item.name + "_x"))


def _expr_variants(expr: Expr) -> Iterator[Expr]:
    """The expression with one integer literal changed (+1, ×2, ÷2), leaves in order."""
    if isinstance(expr, Int):
        for v in (expr.value + 1, expr.value * 2, expr.value // 2):
            if v != expr.value:
                yield Int(v)
    elif isinstance(expr, BinOp):
        for left in _expr_variants(expr.left):
            yield BinOp(expr.op, left, expr.right)
        for right in _expr_variants(expr.right):
            yield BinOp(expr.op, expr.left, right)
    elif isinstance(expr, Not):
        for inner in _expr_variants(expr.operand):
            yield Not(inner)


def _shapes(shape: A.ClusterShape) -> list[A.ClusterShape]:
    return [s for s in (A.ClusterShape(shape.x * 2, shape.y, shape.z), A.ClusterShape(shape.x, shape.y * 2, shape.z),
                        A.ClusterShape(4, 4, 2), A.ClusterShape(1, 1, 1)) if s != shape]


def _cluster_edits(s: _Sites, u: int, i: int, item: A.Cluster) -> None:
    for j, shape in enumerate(item.shapes):
        for new in _shapes(shape)[:2]:
            s.add("cluster-shape", u, i, item, A.Cluster((*item.shapes[:j], new, *item.shapes[j + 1:])))
    if len(item.shapes) > 1:
        s.add("cluster-shape", u, i, item, A.Cluster(item.shapes[:-1]))


def _bumped_requirements(req: str) -> list[str]:
    op = req[: len(req) - len(req.lstrip("^~=<>"))]
    version = req[len(op):]
    parts = version.split(".")
    if not parts or not parts[0].isdigit():
        return []
    major = int(parts[0])
    return [f"{op}{major + 1}.0", f"{op}{major}.99", f">{version}" if op != ">" else f"<{version}"]


# ------------------------------------------------------------------ drawing mutations

def _by_kind(catalogue: Sequence[Edit]) -> dict[str, list[Edit]]:
    found: dict[str, list[Edit]] = {}
    for edit in catalogue:
        found.setdefault(edit.kind, []).append(edit)
    return found


def random_mutation(bundle: Bundle, rng: random.Random, *, min_edits: int = 1, max_edits: int = 1,
                    kinds: Sequence[str] | None = None, catalogue: Sequence[Edit] | None = None) -> Mutation:
    """Draw a mutation from the catalogue with ``rng``: a kind uniformly, then one of its edits.

    ``min_edits`` to ``max_edits`` edits, each of a different line. ``catalogue`` may pass
    ``edits(bundle)`` computed once; ``kinds`` restricts the kinds drawn.
    """
    table = _by_kind(catalogue if catalogue is not None else edits(bundle))
    names = sorted(k for k in table if kinds is None or k in kinds)
    if not names:
        return Mutation(())
    chosen: list[Edit] = []
    used: set[tuple[int, int]] = set()
    for _ in range(rng.randint(min_edits, max(min_edits, max_edits))):
        pool = [e for e in table[rng.choice(names)] if (e.unit, e.index) not in used]
        if not pool:
            continue
        edit = rng.choice(pool)
        used.add((edit.unit, edit.index))
        chosen.append(edit)
    return Mutation(tuple(chosen))


def mutations(bundle: Bundle, *, max_edits: int = 1, kinds: Sequence[str] | None = None
              ) -> st.SearchStrategy[Mutation]:
    """Mutations of ``bundle`` drawn from the catalogue: a kind, then one of its edits (shrinks to
    earlier kinds and edits, and to fewer edits)."""
    table = _by_kind(edits(bundle))
    names = sorted(k for k in table if kinds is None or k in kinds)
    if not names:
        return st.just(Mutation(()))
    one = st.sampled_from(names).flatmap(lambda k: st.sampled_from(table[k]))
    return st.lists(one, min_size=1, max_size=max_edits,
                    unique_by=lambda e: (e.unit, e.index)).map(lambda es: Mutation(tuple(es)))


def mutated_compositions(target: TargetLimits, *, max_edits: int = 1, max_stages: int = 3,
                         launch: bool | None = None) -> st.SearchStrategy[tuple[Bundle, Mutation]]:
    """A valid composition (see :func:`compositions`) and a mutation of it."""
    return compositions(target, max_stages=max_stages, launch=launch).flatmap(
        lambda b: st.tuples(st.just(b), mutations(b, max_edits=max_edits)))
