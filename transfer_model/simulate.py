"""A pure-Python simulation of a route's lowered moves.

It executes a ``Program`` on a model machine independent of the SMT checks: per-thread
register files (the producer's ``held`` values come from evaluating the placement),
lock-step warps, ``shfl.sync`` reading a snapshot of the source lanes, tensor memory
with the lane-quadrant rule, shared memory with a happens-before race detector, and
named barriers with phases. Tensor memory holds the tile from the producer's writes,
which each producer warp makes visible only by ``tcgen05.fence::before_thread_sync``
before a barrier, and a consumer warp sees only through ``::after_thread_sync`` after
one; a ``tcgen05.ld`` not so ordered after every producer warp's fence is an error.
Scratch that aliases claims live until the ready event
(``Program.scratch_aliased``) starts out read by every producer warp up to its export
call, so a store not ordered after every producer warp's call is a race. Warps run
until they block at a barrier, in round-robin order; vector clocks joined at barrier
phases decide happens-before, so a verdict does not depend on the schedule. Every
violation (a race, a load before its store is ordered, a lane or cell out of bounds,
a deadlock, a register left unwritten) raises ``SimulationError``; otherwise
``simulate`` returns what each consumer thread holds after each call, to compare with
``expected``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from transfer_model import exprs as ex
from transfer_model.library import TCGEN05_SHAPES, tcgen05_ld_fragment
from transfer_model.maps import LayoutMap
from transfer_model.program import (
    THREAD,
    Arrive,
    Copy,
    Load,
    Op,
    Program,
    Shuffle,
    Store,
    Sync,
    TmemFence,
    TmemLoad,
    TmemWait,
    demand_slot,
)
from transfer_model.tensors import TensorExport, TensorImport

Element = tuple[int, ...]
Delivery = dict[tuple[int, int, int], Element]
"""(consumer role thread, chunk, register) → element held after the call."""

_BUFFER_WRITER = -1
"""Pseudo-warp that wrote a shared-memory placement before the export."""

_ALIAS_WRITER = -2
"""Pseudo-warp owning aliased scratch before the ready event (its contents are no element)."""


class SimulationError(Exception):
    """The moves do not execute correctly; the message says where."""


def expected(imp: TensorImport) -> Delivery:
    """What the demand asks every consumer thread to hold after every call."""
    out: Delivery = {}
    regs = 1
    for _, extent in imp.register_params:
        regs *= extent
    for t in range(imp.threads.count):
        for c in range(imp.chunks):
            for j in range(regs):
                out[(t, c, j)] = imp.demand.evaluate(demand_slot(imp, t, j, c))
    return out


@dataclass
class _Cell:
    value: Element
    writer: int
    time: int
    reads: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class _Barrier:
    warps: int
    phase: int = 0
    arrived: set[int] = field(default_factory=set)
    clock: dict[int, int] = field(default_factory=dict)
    completed: dict[int, dict[int, int]] = field(default_factory=dict)


def _join(a: dict[int, int], b: dict[int, int]) -> None:
    for k, v in b.items():
        if a.get(k, 0) < v:
            a[k] = v


class _Machine:
    def __init__(self, program: Program, export: TensorExport) -> None:
        self.p = program
        self.held: dict[int, list[Element]] = {}
        self.tmem: dict[tuple[int, int], Element] = {}
        self.smem: dict[int, _Cell] = {}
        placement = export.placement
        if placement.kind == "regs":
            self._load_registers(placement, export.threads.first)
        elif placement.kind == "tmem":
            self.tmem = {(slot[0], slot[1]): image for slot, image in placement.items()}
        else:
            for element, (address,) in placement.items():
                self.smem[address] = _Cell(element, _BUFFER_WRITER, 1)
        if program.scratch_aliased and program.shared == "scratch":
            # Every producer warp may use the aliased claims until its own export call (time 1).
            uses = [(w, 1) for w in program.producer.warps]
            for address in range(0, program.smem_bytes, program.elem_bytes):
                self.smem[address] = _Cell((), _ALIAS_WRITER, 0, list(uses))
        self.barriers = [_Barrier(program.barrier_threads // 32) for _ in range(program.barriers)]
        self.clock: dict[int, dict[int, int]] = {}
        self.delivery: Delivery = {}
        self.functions: dict[int, Callable[..., tuple[int, ...]]] = {}
        self.dst: dict[int, list[Element | None]] = {}
        self.pending: dict[int, dict[int, Element]] = {}
        self.released: dict[int, int] = {}  # producer warp -> its clock at its before-fence
        self.acquired: dict[int, dict[int, int]] = {}  # consumer warp -> its clock at its after-fence

    def _load_registers(self, placement: LayoutMap, first: int) -> None:
        held = placement.size // placement.thread[1]
        for slot, image in placement.items():
            regs = self.held.setdefault(first + slot[0], [(-1,)] * held)
            flat = 0
            for value, (_, extent) in zip(slot[1:], placement.params[1:], strict=True):
                flat = flat * extent + value
            regs[flat] = image

    # -- scheduling ------------------------------------------------------------------

    def run(self) -> Delivery:
        p = self.p
        programs: dict[int, list[tuple[int, Op | None]]] = {}
        for w in p.producer.warps:
            programs.setdefault(w, []).extend((-1, op) for op in p.export_ops)
        for w in p.consumer.warps:
            steps = programs.setdefault(w, [])
            for c, ops in enumerate(p.import_ops):
                steps.extend((c, op) for op in ops)
                steps.append((c, None))  # end of call c
        for w in programs:
            self.clock[w] = {w: 1, _BUFFER_WRITER: 1} if w in p.producer.warps else {w: 0}
        pc = dict.fromkeys(programs, 0)
        waiting: dict[int, tuple[int, int]] = {}
        while any(pc[w] < len(programs[w]) for w in programs):
            progress = False
            for w, steps in programs.items():
                while pc[w] < len(steps):
                    chunk, op = steps[pc[w]]
                    if isinstance(op, Sync):
                        if w not in waiting:
                            waiting[w] = (op.barrier, self._arrive(w, op.barrier))
                        barrier, phase = waiting[w]
                        if self.barriers[barrier].phase <= phase:
                            break
                        _join(self.clock[w], self.barriers[barrier].completed[phase])
                        del waiting[w]
                    elif op is None:
                        self._end_call(w, chunk)
                    else:
                        self._execute(w, chunk, op)
                    pc[w] += 1
                    progress = True
            if not progress:
                stuck = ", ".join(f"warp {w} at barrier {b} phase {ph}" for w, (b, ph) in sorted(waiting.items()))
                raise SimulationError(f"deadlock: {stuck}")
        return self.delivery

    def _arrive(self, warp: int, index: int) -> int:
        barrier = self.barriers[index]
        if warp in barrier.arrived:
            raise SimulationError(f"warp {warp} arrives twice at barrier {index} in phase {barrier.phase}")
        self.clock[warp][warp] += 1
        barrier.arrived.add(warp)
        _join(barrier.clock, self.clock[warp])
        phase = barrier.phase
        if len(barrier.arrived) == barrier.warps:
            barrier.completed[phase] = barrier.clock
            barrier.phase += 1
            barrier.arrived = set()
            barrier.clock = {}
        return phase

    # -- operations ------------------------------------------------------------------

    def _lanes(self, warp: int) -> Iterable[tuple[int, int]]:
        """(lane, CTA thread) of a warp."""
        return ((lane, 32 * warp + lane) for lane in range(32))

    def _execute(self, warp: int, chunk: int, op: Op) -> None:
        p = self.p
        if isinstance(op, Arrive):
            self._arrive(warp, op.barrier)
            return
        if isinstance(op, (Store, Load)):
            self._memory(warp, op)
            return
        if isinstance(op, TmemWait):
            for _, thread in self._lanes(warp):
                for j, value in self.pending.pop(thread, {}).items():
                    self._dst(thread)[j] = value
            return
        if isinstance(op, TmemLoad):
            self._tmem_load(warp, op)
            return
        if isinstance(op, TmemFence):
            if op.before:
                self.clock[warp][warp] += 1
                self.released[warp] = self.clock[warp][warp]
            else:
                self.acquired[warp] = dict(self.clock[warp])
            return
        for lane, thread in self._lanes(warp):
            if isinstance(op, Copy):
                source = thread
            else:
                assert isinstance(op, Shuffle)
                source = 32 * warp + op.lanes.source(lane, thread - p.consumer.first)
            if source not in self.held:
                raise SimulationError(
                    f"thread {thread} reads register {op.src} of thread {source}, which holds no producer registers"
                )
            self._dst(thread)[op.dst] = self.held[source][op.src]

    def _dst(self, thread: int) -> list[Element | None]:
        return self.dst.setdefault(thread, [None] * self.p.regs_per_call)

    def _end_call(self, warp: int, chunk: int) -> None:
        for _, thread in self._lanes(warp):
            if self.pending.get(thread):
                raise SimulationError(f"thread {thread} ends call {chunk} with tcgen05.ld results not waited for")
            regs = self.dst.pop(thread, [None] * self.p.regs_per_call)
            for j, value in enumerate(regs):
                if value is None:
                    raise SimulationError(f"thread {thread} ends call {chunk} without register {j}")
                self.delivery[(thread - self.p.consumer.first, chunk, j)] = value

    def _memory(self, warp: int, op: Store | Load) -> None:
        p = self.p
        consumer_side = isinstance(op, Load)
        first = p.consumer.first if consumer_side else p.producer.first
        function = self._compiled(op)
        self.clock[warp][warp] += 1
        now = self.clock[warp][warp]
        for _, thread in self._lanes(warp):
            values = function(thread - first)
            if isinstance(op, Store) and len(values) == 2 and not values[1]:
                continue
            address = values[0]
            if (
                address % p.elem_bytes
                or address < 0
                or (p.shared == "scratch" and address + p.elem_bytes > p.smem_bytes)
            ):
                raise SimulationError(
                    f"thread {thread} accesses shared byte {address}, outside the "
                    f"{p.smem_bytes}-byte scratch or misaligned"
                )
            if isinstance(op, Store):
                self._write(warp, thread, address, self.held[thread][op.src], now)
            else:
                self._dst(thread)[op.dst] = self._read(warp, thread, address, now)

    def _compiled(self, op: Store | Load) -> Callable[..., tuple[int, ...]]:
        key = id(op)
        if key not in self.functions:
            exprs = [op.addr] if isinstance(op, Load) or op.when is None else [op.addr, op.when]
            self.functions[key] = ex.compile_function([THREAD.id], exprs)
        return self.functions[key]

    def _ordered(self, warp: int, writer: int, time: int) -> bool:
        return writer == warp or self.clock[warp].get(writer, 0) >= time

    def _write(self, warp: int, thread: int, address: int, value: Element, now: int) -> None:
        cell = self.smem.get(address)
        if cell is not None:
            if not cell.reads:
                raise SimulationError(f"thread {thread} overwrites shared byte {address} before {cell.value} was read")
            for reader, time in cell.reads:
                if not self._ordered(warp, reader, time):
                    still = "use the claims it aliases" if cell.writer == _ALIAS_WRITER else "be reading it"
                    raise SimulationError(
                        f"thread {thread} overwrites shared byte {address} while warp {reader} may still {still}"
                    )
        self.smem[address] = _Cell(value, warp, now)

    def _read(self, warp: int, thread: int, address: int, now: int) -> Element:
        cell = self.smem.get(address)
        if cell is None or cell.writer == _ALIAS_WRITER:
            raise SimulationError(f"thread {thread} loads shared byte {address}, which nothing stored")
        if not self._ordered(warp, cell.writer, cell.time):
            raise SimulationError(
                f"thread {thread} loads shared byte {address} without a barrier after warp {cell.writer}'s store"
            )
        cell.reads.append((warp, now))
        return cell.value

    def _tmem_ordered(self, warp: int) -> None:
        """Raise unless every producer warp's tensor-memory writes are ordered before this warp's loads."""
        seen = self.acquired.get(warp)
        for writer in self.p.producer.warps:
            if writer == warp:
                continue
            released = self.released.get(writer)
            if released is None:
                raise SimulationError(
                    f"warp {warp} loads tensor memory that producer warp {writer} wrote "
                    "without `tcgen05.fence::before_thread_sync`"
                )
            if seen is None or seen.get(writer, 0) < released:
                raise SimulationError(
                    f"warp {warp}'s tcgen05.ld is not ordered after producer warp {writer}'s "
                    "writes (a barrier, then `tcgen05.fence::after_thread_sync`)"
                )

    def _tmem_load(self, warp: int, op: TmemLoad) -> None:
        p = self.p
        self._tmem_ordered(warp)
        info = TCGEN05_SHAPES[op.shape]
        fragment = tcgen05_ld_fragment(op.shape, op.num)
        base_lane, base_col = op.bases[warp - p.consumer.first // 32]
        quadrant = warp % 4
        if base_lane // 32 != quadrant or base_lane % info.lanes:
            raise SimulationError(
                f"warp {warp} loads tensor memory from lane {base_lane}, outside its quadrant "
                f"{32 * quadrant}..{32 * quadrant + 31} or misaligned"
            )
        for (lane_in_warp, j), (lane, col) in fragment.items():
            cell = (base_lane + lane, base_col + col)
            if cell[0] // 32 != quadrant:
                raise SimulationError(f"warp {warp} reads tensor-memory lane {cell[0]} outside its quadrant")
            if cell not in self.tmem:
                raise SimulationError(
                    f"warp {warp} reads tensor-memory lane {cell[0]}, column {cell[1]}, outside the tile"
                )
            self.pending.setdefault(32 * warp + lane_in_warp, {})[op.dst + j] = self.tmem[cell]


def simulate(program: Program, export: TensorExport) -> Delivery:
    """Run the moves; what every consumer thread holds after each call (raises ``SimulationError``)."""
    return _Machine(program, export).run()
