"""The lowered moves of a route: a small per-thread program for each side of the seam.

A ``Program`` is what both ``lower`` (CUDA C++) and ``simulate`` (pure Python) read, so
the simulation checks exactly the moves the generated code performs. Operations run
in every thread of a side, in order; addresses and guards are expressions over ``t``,
the thread's index within its role; register numbers are constants.

- export side (each producer thread, once, at the export's ready event, given ``held``,
  its placement registers): ``Store``, ``Arrive``, ``Sync``.
- import side (each consumer thread, once per chunk ``0, 1, ...`` in order, given
  ``held`` for register routes and filling ``dst``): ``Copy``, ``Shuffle``, ``Load``,
  ``Sync``, ``Arrive``, ``TmemFence``, ``TmemLoad``, ``TmemWait``.

A tensor-memory route orders the consumer's ``tcgen05.ld`` after the producer's writes
the way PTX prescribes for two threads: the producer reaches its ready event once its
MMAs are complete (it waited on their ``tcgen05.commit`` mbarrier), then
``tcgen05.fence::before_thread_sync`` and arrives at the route's barrier; the consumer
syncs that barrier before chunk 0, ``tcgen05.fence::after_thread_sync``, then loads
(``tcgen05.wait::ld`` before the registers are read).

Barrier operands are indices into the route's named barriers (the linker maps them to
IDs); every barrier counts ``barrier_threads`` threads.

Scratch that shares storage with claims live until the ready event (``scratch_aliased``,
decided by placement) is free only once *every* producer thread has reached the event: a
thread calls the export when its own work is done, while others may still read those
claims (a wgmma in flight reads its operand slot). The staging moves then open with a
sync on the route's last barrier on both sides, before the first store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from contract_lang.expr import Expr, Int, Name
from transfer_model import exprs as ex
from transfer_model.library import TCGEN05_SHAPES
from transfer_model.primitives import (
    REGISTER_COPY,
    SMEM_STAGING,
    TMEM_LOAD,
    WARP_SHUFFLE,
    RungResult,
    Seam,
    StagingAddress,
    StagingPlan,
    TmemPlan,
    barrier_threads,
    store_phase,
)
from transfer_model.tensors import RoleThreads, TensorImport

THREAD = Name("t")
"""The role-relative thread index in program expressions."""


@dataclass(frozen=True)
class LaneSource:
    """Which lane a shuffle reads: ``lane ^ value``, ``(lane + value) % 32``, or a table.

    ``lane_table`` is indexed by lane (the same in every warp); ``thread_table`` by the
    consumer's role-relative thread.
    """

    kind: str
    value: int = 0
    table: tuple[int, ...] = ()

    def source(self, lane: int, thread: int) -> int:
        if self.kind == "xor":
            return lane ^ self.value
        if self.kind == "rotate":
            return (lane + self.value) % 32
        if self.kind == "lane_table":
            return self.table[lane]
        return self.table[thread]


@dataclass(frozen=True)
class Copy:
    dst: int
    src: int


@dataclass(frozen=True)
class Shuffle:
    dst: int
    src: int
    lanes: LaneSource


@dataclass(frozen=True)
class Store:
    """Store ``held[src]`` at byte ``addr`` of the shared buffer, when ``when`` is non-zero."""

    src: int
    addr: Expr
    when: Expr | None = None


@dataclass(frozen=True)
class Load:
    dst: int
    addr: Expr


@dataclass(frozen=True)
class Arrive:
    barrier: int


@dataclass(frozen=True)
class Sync:
    barrier: int


@dataclass(frozen=True)
class TmemLoad:
    """``tcgen05.ld.<shape>.x<num>`` into ``dst .. dst + R - 1``; ``bases[w]`` = (lane, col) for consumer warp ``w``."""

    shape: str
    num: int
    dst: int
    bases: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class TmemWait:
    pass


@dataclass(frozen=True)
class TmemFence:
    """``tcgen05.fence::before_thread_sync`` (``before``) or ``::after_thread_sync``."""

    before: bool


Op = Copy | Shuffle | Store | Load | Arrive | Sync | TmemLoad | TmemWait | TmemFence


@dataclass(frozen=True)
class Program:
    route: str
    export_name: str
    import_name: str
    elem: str
    elem_bytes: int
    producer: RoleThreads
    consumer: RoleThreads
    held: int
    regs_per_call: int
    chunks: int
    shared: str  # "scratch" (staging), "buffer" (a shared-memory placement) or ""
    smem_bytes: int
    barriers: int
    barrier_threads: int
    export_ops: tuple[Op, ...]
    import_ops: tuple[tuple[Op, ...], ...]
    scratch_aliased: bool = False


def _unflatten(index: int, params: Sequence[tuple[str, int]]) -> list[int]:
    out = []
    for _, extent in reversed(params):
        out.append(index % extent)
        index //= extent
    return out[::-1]


def demand_slot(imp: TensorImport, thread: int, register: int, chunk: int) -> tuple[int, ...]:
    """The demand's variable values for (role thread, register of the call, chunk)."""
    regs = _unflatten(register, imp.register_params)
    return (thread, *regs, chunk) if imp.chunk else (thread, *regs)


def _flat(values: Sequence[int], params: Sequence[tuple[str, int]]) -> int:
    out = 0
    for value, (_, extent) in zip(values, params, strict=True):
        out = out * extent + value
    return out


def build_program(seam: Seam, result: RungResult, *, scratch_aliased: bool = False) -> Program:
    """The moves of a rung that passed.

    ``scratch_aliased``: the staging scratch shares storage with claims live until the
    export's ready event, so the first store waits for every producer thread.
    """
    if not result.passed:
        raise ValueError(f"rung `{result.rung}` did not pass")
    if result.rung == REGISTER_COPY:
        return _program(seam, result.rung, (), _copy_ops(seam))
    if result.rung == WARP_SHUFFLE:
        return _program(seam, result.rung, (), _shuffle_ops(seam))
    if result.rung == TMEM_LOAD:
        assert isinstance(result.plan, TmemPlan)
        same = seam.export.threads == seam.imp.threads
        release: tuple[Op, ...] = (TmemFence(before=True), Sync(0) if same else Arrive(0))
        return _program(
            seam,
            result.rung,
            release,
            _tmem_ops(seam, result.plan, same),
            barriers=1,
            barrier_threads=barrier_threads(seam, result),
        )
    assert result.rung == SMEM_STAGING and isinstance(result.plan, StagingPlan)
    plan = result.plan
    aliased = scratch_aliased and plan.mode != "buffer"
    export_ops, import_ops = _staging_ops(seam, plan, aliased)
    return _program(
        seam,
        result.rung,
        export_ops,
        import_ops,
        shared="buffer" if plan.mode == "buffer" else "scratch",
        smem_bytes=plan.smem_bytes,
        barriers=plan.barriers,
        barrier_threads=barrier_threads(seam, result),
        scratch_aliased=aliased,
    )


def _program(
    seam: Seam,
    route: str,
    export_ops: tuple[Op, ...],
    import_ops: tuple[tuple[Op, ...], ...],
    *,
    shared: str = "",
    smem_bytes: int = 0,
    barriers: int = 0,
    barrier_threads: int = 0,
    scratch_aliased: bool = False,
) -> Program:
    placement = seam.placement
    return Program(
        route=route,
        export_name=seam.export.name,
        import_name=seam.imp.name,
        elem=seam.export.elem,
        elem_bytes=seam.elem_bytes,
        producer=seam.export.threads,
        consumer=seam.imp.threads,
        held=math.prod(e for _, e in placement.params[1:]) if placement.kind == "regs" else 0,
        regs_per_call=seam.regs_per_call,
        chunks=seam.imp.chunks,
        shared=shared,
        smem_bytes=smem_bytes,
        barriers=barriers,
        barrier_threads=barrier_threads,
        export_ops=export_ops,
        import_ops=import_ops,
        scratch_aliased=scratch_aliased,
    )


def _copy_ops(seam: Seam) -> tuple[tuple[Op, ...], ...]:
    imp, placement = seam.imp, seam.placement
    producer_thread = imp.threads.first - seam.export.threads.first
    own = {}
    for r in range(math.prod(e for _, e in placement.params[1:])):
        own[placement.evaluate((producer_thread, *_unflatten(r, placement.params[1:])))] = r
    return tuple(
        tuple(Copy(j, own[seam.demand.evaluate(demand_slot(seam.imp, 0, j, c))]) for j in range(seam.regs_per_call))
        for c in range(imp.chunks)
    )


def _shuffle_ops(seam: Seam) -> tuple[tuple[Op, ...], ...]:
    imp, export, placement = seam.imp, seam.export, seam.placement
    where = placement.inverse
    calls = []
    for c in range(imp.chunks):
        ops: list[Op] = []
        for j in range(seam.regs_per_call):
            sources, registers = [], set()
            for t in range(imp.threads.count):
                slot = where[seam.demand.evaluate(demand_slot(seam.imp, t, j, c))]
                sources.append((export.threads.first + slot[0]) % 32)
                registers.add(_flat(slot[1:], placement.params[1:]))
            (src,) = registers  # proven: one register index per destination register
            lanes = [(imp.threads.first + t) % 32 for t in range(imp.threads.count)]
            selector = _lane_source(lanes, sources)
            if selector.kind == "xor" and selector.value == 0:
                ops.append(Copy(j, src))
            else:
                ops.append(Shuffle(j, src, selector))
        calls.append(tuple(ops))
    return tuple(calls)


def _lane_source(lanes: Sequence[int], sources: Sequence[int]) -> LaneSource:
    k = lanes[0] ^ sources[0]
    if all(s == lane ^ k for lane, s in zip(lanes, sources, strict=True)):
        return LaneSource("xor", k)
    k = (sources[0] - lanes[0]) % 32
    if all(s == (lane + k) % 32 for lane, s in zip(lanes, sources, strict=True)):
        return LaneSource("rotate", k)
    by_lane: dict[int, int] = {}
    if all(by_lane.setdefault(lane, s) == s for lane, s in zip(lanes, sources, strict=True)):
        return LaneSource("lane_table", table=tuple(by_lane[lane] for lane in range(32)))
    return LaneSource("thread_table", table=tuple(sources))


def _tmem_ops(seam: Seam, plan: TmemPlan, same: bool) -> tuple[tuple[Op, ...], ...]:
    where = seam.placement.inverse
    regs = TCGEN05_SHAPES[plan.shape].registers(plan.num)
    calls = []
    for c in range(seam.imp.chunks):
        # chunk 0 acquires the producer's writes (the producer's own threads synced already)
        ops: list[Op] = [] if c or same else [Sync(0)]
        if c == 0:
            ops.append(TmemFence(before=False))
        for i in range(plan.loads_per_call):
            bases = tuple(
                where[seam.demand.evaluate(demand_slot(seam.imp, 32 * w, i * regs, c))]
                for w in range(seam.imp.threads.count // 32)
            )
            ops.append(TmemLoad(plan.shape, plan.num, i * regs, tuple((b[0], b[1]) for b in bases)))
        ops.append(TmemWait())
        calls.append(tuple(ops))
    return tuple(calls)


def _staging_ops(seam: Seam, plan: StagingPlan, aliased: bool) -> tuple[tuple[Op, ...], tuple[tuple[Op, ...], ...]]:
    imp, placement = seam.imp, seam.placement
    address = StagingAddress(seam, plan.mode, plan.pad)
    # Aliased scratch: every producer thread has reached the ready event before any stores.
    # A disjoint consumer syncs the last barrier once more too, so its phases stay paired.
    free: tuple[Op, ...] = (Sync(plan.barriers - 1),) if aliased else ()
    export_ops: list[Op] = list(free)
    import_free = () if plan.same_threads else free
    if plan.mode != "buffer":
        stores = []
        for r in range(math.prod(e for _, e in placement.params[1:])):
            registers: list[Expr] = [THREAD, *(Int(v) for v in _unflatten(r, placement.params[1:]))]
            element = placement.at(dict(zip(placement.names, registers, strict=True)))
            phase = store_phase(seam, plan.mode, element)
            phase_of = ex.compile_function([THREAD.id], [phase])
            seen = {phase_of(t)[0] for t in range(seam.export.threads.count)}
            stores.append((r, address.of(element), Int(seen.pop()) if len(seen) == 1 else phase))
        phases = range(imp.chunks) if plan.mode == "chunk" else range(1)
        for k in phases:
            if k > 0:
                export_ops.append(Sync(1))
            for r, addr, phase in stores:
                if isinstance(phase, Int):
                    if phase.value == k:
                        export_ops.append(Store(r, addr))
                else:
                    export_ops.append(Store(r, addr, ex.compare("==", phase, Int(k))))
            if plan.mode == "chunk":
                export_ops.append(Sync(0))
            elif not plan.same_threads:
                export_ops.append(Arrive(0))
    elif not plan.same_threads:
        export_ops.append(Arrive(0))
    calls = []
    for c in range(imp.chunks):
        ops: list[Op] = list(import_free) if c == 0 else []
        if plan.mode == "chunk" or c == 0:
            ops.append(Sync(0))
        for j in range(seam.regs_per_call):
            slot = demand_slot(seam.imp, 0, j, c)
            at: dict[str, Expr] = {n: Int(v) for n, v in zip(seam.demand.names, slot, strict=True)}
            at[seam.demand.thread[0]] = THREAD
            ops.append(Load(j, address.of(seam.demand.at(at))))
        if plan.mode == "chunk" and c < imp.chunks - 1:
            ops.append(Sync(1))
        calls.append(tuple(ops))
    return tuple(export_ops), tuple(calls)
