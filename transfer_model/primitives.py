"""Hardware-primitive models: which thread ends up holding which value, as SMT checks.

Each rung of the route ladder is a primitive with a precise delivery semantics. For
a consumer slot ``(t', j, c)`` (thread, register of the call, chunk) the demand names an
element ``e = D(t', j, c)``; the placement holds ``e`` at the unique producer slot ``s``
with ``P(s) = e`` (both maps are exact, L-MAP). Every check below asks Z3 for a consumer
slot where the primitive would deliver something other than ``e``; ``UNSAT`` proves
exact delivery for every element, a model is the witness.

- **tensor-memory load** (``tcgen05.ld``, sm_100a, tmem placements): per call each
  consumer warp issues ``J / R`` loads of one shape and ``.num`` (``R`` registers each,
  instruction ``i`` filling registers ``i*R .. i*R+R-1``); thread ``T`` of the warp gets in
  register ``j'`` of a load the tensor-memory cell ``base + frag(T, j')`` (library
  fragments, specs/hardware.md §6.2). The base of each load is the cell of the element its
  lane 0, register 0 wants. Checks: *fragment* (every register gets its element from
  that base) and *lane-quadrant* (warp ``q = warp % 4`` may only touch lanes
  ``32q .. 32q+31``; a 16-lane shape starts at lane ``32q`` or ``32q + 16``).
- **direct register copy** (same hardware thread): consumer register ``j`` of chunk ``c``
  is producer register ``src(j, c)``. Checks: *same-thread* (the element is held by the
  consumer's own hardware thread) and *register-index* (one register index per
  destination register, the same in every thread: registers are compile-time names).
- **warp shuffle** (``shfl.sync.idx.b32``, specs/hardware.md §8.1): per destination register one
  shuffle in which every lane sends its register ``src(j, c)`` and reads the value of a
  per-lane source lane of its own warp. Checks: *same-warp* (the element is held by a
  lane of the consumer's own hardware warp) and *register-index* (as above: a single
  source register index per destination register suffices).
- **shared-memory staging**: producer threads store each element to scratch at a
  closed-form address, named barriers over exactly the producer and consumer threads
  order the stores before the loads, each consumer thread loads its elements. Whole
  tile (scratch = tile bytes, one barrier: producers arrive after all their stores,
  consumers sync before their first load) when the consumer lends that much;
  otherwise, for a chunked import by a disjoint role, per chunk (scratch = chunk bytes,
  two barriers both sides sync: "full" between the stores and the loads of chunk ``k``,
  "empty" between the loads of chunk ``k`` and the stores of chunk ``k + 1``). Either
  way the staged rows are padded by one word when the lent scratch holds it
  (``StagingAddress``: no bank conflicts for a row-per-thread import). A
  shared-memory placement is loaded in place (no stores, no scratch). Checks:
  *threads* (the roles coincide or are disjoint), *scratch* (the consumer lends shared
  memory), *bounds*, *race* (two elements on overlapping addresses are never live at
  once: no address is written twice before it is read, none is rewritten before its
  load), *order* (every load follows the barrier phase after its element's store),
  *scratch-size* (need ≤ lent; L-SCRATCH).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from contract_lang.expr import Expr, Int, Name
from solver import Witnessed
from transfer_model import exprs as ex
from transfer_model.library import TCGEN05_SHAPES, tcgen05_ld_fragment
from transfer_model.maps import REGS, SMEM, TMEM, point_text, row_major, tile_size
from transfer_model.smt import DEFAULT_RLIMIT, Query, solve
from transfer_model.tensors import ELEM_BYTES, Lends, TensorExport, TensorImport

TMEM_LOAD = "tmem-load"
REGISTER_COPY = "register-copy"
WARP_SHUFFLE = "warp-shuffle"
SMEM_STAGING = "smem-staging"
LADDER = (TMEM_LOAD, REGISTER_COPY, WARP_SHUFFLE, SMEM_STAGING)
"""The route ladder, cheapest first."""

RUNG_TITLES = {
    TMEM_LOAD: "tensor-memory load",
    REGISTER_COPY: "direct register copy",
    WARP_SHUFFLE: "warp shuffle",
    SMEM_STAGING: "shared-memory staging",
}

TMEM_ELEM_BYTES = 4
"""tcgen05.ld moves 32-bit cells; 16-bit elements would need ``.pack::16b`` (not modeled)."""


@dataclass(frozen=True)
class Witness:
    """A consumer slot where a rung fails, and the element it demands."""

    thread: int
    chunk: int
    register: int
    element: tuple[int, ...]
    element_names: tuple[str, ...]

    def text(self) -> str:
        return (
            f"element `{point_text(self.element_names, self.element)}` for thread {self.thread}, "
            f"register {self.register} of chunk {self.chunk}"
        )


@dataclass(frozen=True)
class TmemPlan:
    shape: str
    num: int
    loads_per_call: int


@dataclass(frozen=True)
class StagingPlan:
    """``mode``: ``tile`` (whole tile, one barrier), ``chunk`` (per chunk, two) or ``buffer`` (smem placement).

    ``pad``: elements added after every row of the staged block (its last dimension), one
    32-bit word's worth when the lent scratch holds them, else 0 (``StagingAddress``).
    """

    mode: str
    smem_bytes: int
    barriers: int
    same_threads: bool
    pad: int = 0


Plan = TmemPlan | StagingPlan | None


@dataclass(frozen=True)
class RungResult:
    """The verdict of one rung: passed (with its plan), or the first failing check."""

    rung: str
    passed: bool
    check: str = ""
    reason: str = ""
    witness: Witness | None = None
    plan: Plan = None
    needed: int = 0
    lent: int = 0

    @property
    def title(self) -> str:
        return RUNG_TITLES[self.rung]


def _fail(rung: str, check: str, reason: str, witness: Witness | None = None, **kw: int) -> RungResult:
    return RungResult(rung, False, check, reason, witness, None, **kw)


class Seam:
    """One export/import pair, with the variables and shared queries of the rung checks.

    Query variables: ``c.*`` a consumer slot (the demand's variables), ``p.*`` and ``q.*``
    producer slots (the placement's variables), ``e.*``/``f.*`` tile elements.
    """

    def __init__(self, export: TensorExport, imp: TensorImport, rlimit: int = DEFAULT_RLIMIT) -> None:
        self.export = export
        self.imp = imp
        self.rlimit = rlimit
        self.placement = export.placement
        self.demand = imp.demand
        self.dims = tuple(n for n, _ in export.tile)
        self.elem_bytes = ELEM_BYTES.get(export.elem, 0)
        self.c_params, self.c_out = self.demand.renamed("c.")
        self.c_thread: Expr = Name("c." + self.demand.thread[0])
        self.c_chunk: Expr = Name("c." + self.demand.params[-1][0]) if imp.chunk else Int(0)
        self.c_reg = row_major(imp.register_params, "c.")
        self.regs_per_call = math.prod(e for _, e in imp.register_params)
        self._register_index: RungResult | None = None

    # -- helpers -------------------------------------------------------------------

    def solve(self, params: Sequence[tuple[str, int]], assertions: Sequence[Expr]) -> Witnessed:
        return solve(Query(tuple(params), tuple(assertions)), self.rlimit)

    def producer(self, prefix: str) -> tuple[tuple[tuple[str, int], ...], tuple[Expr, ...]]:
        return self.placement.renamed(prefix)

    def holds(self, p_out: Sequence[Expr], element: Sequence[Expr]) -> list[Expr]:
        return [ex.compare("==", a, b) for a, b in zip(p_out, element, strict=True)]

    def p_reg(self, prefix: str) -> Expr:
        return row_major(self.placement.params[1:], prefix)

    def witness(self, answer: Witnessed) -> Witness:
        values = dict(answer.witness)
        slot = tuple(values["c." + n] for n in self.demand.names)
        element = self.demand.evaluate(slot)
        register = ex.compile_function([n for n, _ in self.c_params], [self.c_reg, self.c_chunk])(
            *(values[n] for n, _ in self.c_params)
        )
        return Witness(slot[0], register[1], register[0], element, self.dims)

    def unknown(self, rung: str, check: str, answer: Witnessed) -> RungResult:
        return _fail(rung, check, f"the solver could not decide the {check} check ({answer.verdict.reason})")

    # -- shared check --------------------------------------------------------------

    def register_index(self, rung: str) -> RungResult:
        """One source register index per destination register, in every consumer thread."""
        if self._register_index is None:
            self._register_index = self._register_index_query()
        result = self._register_index
        return RungResult(rung, result.passed, result.check, result.reason, result.witness)

    def _register_index_query(self) -> RungResult:
        pp, po = self.producer("p.")
        qp, qo = self.producer("q.")
        other = Name("c2." + self.demand.thread[0])
        d2 = self.demand.at({n: (other if i == 0 else Name("c." + n)) for i, n in enumerate(self.demand.names)})
        params = [*self.c_params, ("c2." + self.demand.thread[0], self.demand.thread[1]), *pp, *qp]
        assertions = [
            *self.holds(po, self.c_out),
            *self.holds(qo, d2),
            ex.compare("!=", self.p_reg("p."), self.p_reg("q.")),
        ]
        answer = self.solve(params, assertions)
        if answer.verdict.unknown:
            return self.unknown("", "register-index", answer)
        if answer.verdict.unsat:
            return RungResult("", True)
        values = dict(answer.witness)
        w = self.witness(answer)
        reg = ex.compile_function([n for n, _ in pp], [self.p_reg("p.")])
        r1 = reg(*(values[n] for n, _ in pp))[0]
        r2 = reg(*(values["q." + n[2:]] for n, _ in pp))[0]
        t2 = values["c2." + self.demand.thread[0]]
        return _fail(
            "",
            "register-index",
            f"destination register {w.register} of chunk {w.chunk} takes producer register {r1} "
            f"in thread {w.thread} but register {r2} in thread {t2}; one instruction names one "
            f"register index in every thread",
            w,
        )


# ---------------------------------------------------------------------------------------
# rungs


def tmem_load(seam: Seam, target_has_tmem: bool) -> RungResult:
    rung = TMEM_LOAD
    if seam.placement.kind != TMEM:
        return _fail(rung, "applicable", f"the placement of `{seam.export.name}` is not in tensor memory")
    if not target_has_tmem:
        return _fail(rung, "applicable", "the target has no tensor memory")
    if seam.elem_bytes != TMEM_ELEM_BYTES:
        return _fail(rung, "applicable", "tensor-memory loads are modeled for 4-byte elements only")
    candidates = []
    for index, (shape, info) in enumerate(TCGEN05_SHAPES.items()):
        for num in info.nums():
            regs = info.registers(num)
            if seam.regs_per_call % regs == 0:
                candidates.append((seam.regs_per_call // regs, index, shape, num))
    if not candidates:
        return _fail(rung, "fragment", f"no tcgen05.ld shape loads {seam.regs_per_call} registers per call")
    candidates.sort()
    failures: list[tuple[str, RungResult]] = []
    for loads, _, shape, num in candidates:
        result = _tmem_candidate(seam, shape, num)
        if result.passed:
            return RungResult(rung, True, plan=TmemPlan(shape, num, loads))
        if result.check == "unknown":
            return result
        failures.append((shape, result))
    # Report the canonical one-lane-per-thread load when it was a candidate.
    shown = next((f for shape, f in failures if shape == "32x32b"), failures[0][1])
    return RungResult(
        rung,
        False,
        shown.check,
        f"{shown.reason} (none of {len(candidates)} shape and `.num` choices delivers the demand)",
        shown.witness,
    )


def _tmem_candidate(seam: Seam, shape: str, num: int) -> RungResult:
    rung = TMEM_LOAD
    info = TCGEN05_SHAPES[shape]
    regs = info.registers(num)
    frag = tcgen05_ld_fragment(shape, num)
    c_t = seam.c_thread
    lane_in_warp = ex.mod(c_t, Int(32))
    j_in_load = ex.mod(seam.c_reg, Int(regs))
    first_reg = ex.mul(Int(regs), ex.div(seam.c_reg, Int(regs)))
    # The demand slot of lane 0, register 0 of the same load: its cell is the load's base.
    ref: dict[str, Expr] = {seam.demand.thread[0]: ex.mul(Int(32), ex.div(c_t, Int(32)))}
    stride = 1
    for name, extent in reversed(seam.imp.register_params):
        ref[name] = ex.mod(ex.div(first_reg, Int(stride)), Int(extent))
        stride *= extent
    if seam.imp.chunk:
        ref[seam.demand.params[-1][0]] = seam.c_chunk
    ref_element = seam.demand.at({n: ref.get(n, Name("c." + n)) for n in seam.demand.names})
    pp, po = seam.producer("p.")
    qp, qo = seam.producer("q.")
    (p_lane, p_col), (q_lane, q_col) = (Name(n) for n, _ in pp), (Name(n) for n, _ in qp)
    lane_off, col_off = frag.at({"T": lane_in_warp, "j": j_in_load})
    params = [*seam.c_params, *pp, *qp]
    located = [*seam.holds(po, seam.c_out), *seam.holds(qo, ref_element)]
    wrong = ex.disj(
        [
            ex.compare("!=", p_lane, ex.add(q_lane, lane_off)),
            ex.compare("!=", p_col, ex.add(q_col, col_off)),
        ]
    )
    answer = seam.solve(params, [*located, wrong])
    if answer.verdict.unknown:
        return _fail(
            rung, "unknown", f"the solver could not decide `tcgen05.ld.{shape}.x{num}` ({answer.verdict.reason})"
        )
    if answer.verdict.sat:
        w = seam.witness(answer)
        cell = (answer.value(p_lane.id), answer.value(p_col.id))
        base = (answer.value(q_lane.id), answer.value(q_col.id))
        return _fail(
            rung,
            "fragment",
            f"`tcgen05.ld.{shape}.x{num}` based at lane {base[0]}, column {base[1]} does not bring "
            f"{w.text()} from tensor-memory lane {cell[0]}, column {cell[1]}",
            w,
        )
    warp = ex.div(ex.add(Int(seam.imp.threads.first), c_t), Int(32))
    outside = ex.disj(
        [
            ex.compare("!=", ex.div(q_lane, Int(32)), ex.mod(warp, Int(4))),
            ex.compare("!=", ex.mod(q_lane, Int(info.lanes)), Int(0)),
        ]
    )
    answer = seam.solve(params, [*located, outside])
    if answer.verdict.unknown:
        return _fail(rung, "unknown", f"the solver could not decide the lane quadrant ({answer.verdict.reason})")
    if answer.verdict.sat:
        w = seam.witness(answer)
        cta_warp = (seam.imp.threads.first + w.thread) // 32
        lane = answer.value(q_lane.id)
        return _fail(
            rung,
            "lane-quadrant",
            f"`tcgen05.ld.{shape}.x{num}` for {w.text()} starts at lane {lane}, but warp {cta_warp} "
            f"may only read lanes {32 * (cta_warp % 4)}..{32 * (cta_warp % 4) + 31}"
            + (f" from a multiple of {info.lanes}" if info.lanes < 32 else ""),
            w,
        )
    return RungResult(rung, True)


def register_copy(seam: Seam) -> RungResult:
    rung = REGISTER_COPY
    if seam.placement.kind != REGS:
        return _fail(rung, "applicable", f"the placement of `{seam.export.name}` is not in registers")
    pp, po = seam.producer("p.")
    p_thread = ex.add(Int(seam.export.threads.first), Name(pp[0][0]))
    c_thread = ex.add(Int(seam.imp.threads.first), seam.c_thread)
    answer = seam.solve([*seam.c_params, *pp], [*seam.holds(po, seam.c_out), ex.compare("!=", p_thread, c_thread)])
    if answer.verdict.unknown:
        return seam.unknown(rung, "same-thread", answer)
    if answer.verdict.sat:
        w = seam.witness(answer)
        holder = seam.export.threads.first + answer.value(pp[0][0])
        return _fail(
            rung,
            "same-thread",
            f"{w.text()} (CTA thread {seam.imp.threads.first + w.thread}) is held by CTA thread {holder}",
            w,
        )
    return seam.register_index(rung)


def warp_shuffle(seam: Seam) -> RungResult:
    rung = WARP_SHUFFLE
    if seam.placement.kind != REGS:
        return _fail(rung, "applicable", f"the placement of `{seam.export.name}` is not in registers")
    pp, po = seam.producer("p.")
    p_warp = ex.div(ex.add(Int(seam.export.threads.first), Name(pp[0][0])), Int(32))
    c_warp = ex.div(ex.add(Int(seam.imp.threads.first), seam.c_thread), Int(32))
    answer = seam.solve([*seam.c_params, *pp], [*seam.holds(po, seam.c_out), ex.compare("!=", p_warp, c_warp)])
    if answer.verdict.unknown:
        return seam.unknown(rung, "same-warp", answer)
    if answer.verdict.sat:
        w = seam.witness(answer)
        holder = seam.export.threads.first + answer.value(pp[0][0])
        return _fail(
            rung,
            "same-warp",
            f"{w.text()} (warp {(seam.imp.threads.first + w.thread) // 32}) is held by CTA thread "
            f"{holder} in warp {holder // 32}",
            w,
        )
    return seam.register_index(rung)


def smem_staging(seam: Seam, lends: Lends) -> RungResult:
    rung = SMEM_STAGING
    kind = seam.placement.kind
    if kind == TMEM:
        return _fail(
            rung,
            "applicable",
            "staging stores from registers or loads a shared-memory placement; this placement is in tensor memory",
        )
    producer, consumer = seam.export.threads, seam.imp.threads
    same = producer == consumer
    if not same and producer.overlaps(consumer):
        return _fail(
            rung,
            "threads",
            f"producer threads {producer.first}..{producer.end - 1} and consumer "
            f"threads {consumer.first}..{consumer.end - 1} overlap without coinciding",
        )
    eb = seam.elem_bytes
    tile_bytes = tile_size(seam.export.tile) * eb
    chunk = seam.imp.chunk
    if kind == SMEM:
        plan = StagingPlan("buffer", 0, 0 if same else 1, same)
    else:
        if lends.smem_bytes is None:
            return _fail(rung, "scratch", f"role `{seam.imp.role}` lends no shared memory for staging")
        chunk_bytes = tile_bytes // seam.imp.chunks
        if lends.smem_bytes >= tile_bytes or chunk is None or same:
            plan = StagingPlan("tile", tile_bytes, 1, same)
        else:
            plan = StagingPlan("chunk", chunk_bytes, 2, same)
        plan = _padded(seam, plan, lends.smem_bytes)
    address = StagingAddress(seam, plan.mode, plan.pad)
    if plan.mode != "buffer":
        e_params = tuple(("e." + n, x) for n, x in seam.export.tile)
        answer = seam.solve(e_params, [ex.compare(">", ex.add(address("e."), Int(eb)), Int(plan.smem_bytes))])
        if not answer.verdict.unsat:
            return (
                seam.unknown(rung, "bounds", answer)
                if answer.verdict.unknown
                else _fail(rung, "bounds", f"a scratch address passes the {plan.smem_bytes} bytes staging needs")
            )
    race = _race(seam, plan, address)
    if race is not None:
        return race
    if plan.mode == "chunk":
        order = _order(seam)
        if order is not None:
            return order
    if plan.mode != "buffer" and lends.smem_bytes is not None and plan.smem_bytes > lends.smem_bytes:
        return _fail(
            rung,
            "scratch-size",
            f"staging needs {plan.smem_bytes} bytes of shared memory but role `{seam.imp.role}` "
            f"lends {lends.smem_bytes}",
            needed=plan.smem_bytes,
            lent=lends.smem_bytes,
        )
    return RungResult(rung, True, plan=plan)


def _padded(seam: Seam, plan: StagingPlan, lent: int) -> StagingPlan:
    """The plan with one word of padding after every row, when the lent scratch holds it.

    Rows of ``n`` 4-byte elements, ``n`` a multiple of 32, start in one bank: a consumer
    thread that loads its own row column by column (a row-per-thread demand) then meets
    all its warp's loads in one bank, 32-way. One word more per row shifts each row by a
    bank, and the addresses stay a register plus an immediate.
    """
    dims = seam.export.tile
    if plan.mode == "buffer" or len(dims) < 2:
        return plan
    pad = max(1, 4 // seam.elem_bytes)
    rows = plan.smem_bytes // seam.elem_bytes // _last_extent(seam, plan.mode)
    padded = plan.smem_bytes + rows * pad * seam.elem_bytes
    return dataclasses.replace(plan, smem_bytes=padded, pad=pad) if padded <= lent else plan


def _last_extent(seam: Seam, mode: str) -> int:
    """The extent of the staged block's last dimension (the chunk size when chunking splits it)."""
    name, extent = seam.export.tile[-1]
    chunk = seam.imp.chunk
    return chunk.size if mode == "chunk" and chunk is not None and chunk.dim == name else extent


class StagingAddress:
    """The byte address of an element from the scratch (or placement buffer) base, per staging mode.

    ``tile``: row-major linear index times the element size. ``chunk``: the same within
    one chunk (the chunked coordinate taken modulo the chunk size). Either with ``pad``
    elements after every row (the last dimension's extent taken as ``extent + pad``).
    ``buffer``: the shared-memory placement's own address map.
    """

    def __init__(self, seam: Seam, mode: str, pad: int = 0) -> None:
        self.seam = seam
        self.mode = mode
        self.pad = pad

    def __call__(self, prefix: str) -> Expr:
        return self.of(tuple(Name(prefix + n) for n in self.seam.dims))

    def of(self, element: Sequence[Expr]) -> Expr:
        seam = self.seam
        if self.mode == "buffer":
            return seam.placement.at(dict(zip(seam.placement.names, element, strict=True)))[0]
        chunk = seam.imp.chunk
        linear: Expr = Int(0)
        last = len(seam.export.tile) - 1
        for i, ((name, extent), coord) in enumerate(zip(seam.export.tile, element, strict=True)):
            if self.mode == "chunk" and chunk is not None and name == chunk.dim:
                extent, coord = chunk.size, ex.mod(coord, Int(chunk.size))
            linear = ex.add(ex.mul(linear, Int(extent + (self.pad if i == last else 0))), coord)
        return ex.mul(Int(seam.elem_bytes), linear)


def store_phase(seam: Seam, mode: str, element: Sequence[Expr]) -> Expr:
    """Barrier phase in which the producer stores an element (its chunk in ``chunk`` mode)."""
    chunk = seam.imp.chunk
    if mode != "chunk" or chunk is None:
        return Int(0)
    return ex.div(element[seam.dims.index(chunk.dim)], Int(chunk.size))


def _race(seam: Seam, plan: StagingPlan, address: StagingAddress) -> RungResult | None:
    rung = SMEM_STAGING
    eb = seam.elem_bytes
    e = tuple(Name("e." + n) for n in seam.dims)
    f = tuple(Name("f." + n) for n in seam.dims)
    params: list[tuple[str, int]] = [(f"{p}.{n}", x) for p in "ef" for n, x in seam.export.tile]
    assertions: list[Expr] = [
        ex.disj([ex.compare("!=", a, b) for a, b in zip(e, f, strict=True)]),
        ex.compare("<", address.of(e), ex.add(address.of(f), Int(eb))),
        ex.compare("<", address.of(f), ex.add(address.of(e), Int(eb))),
    ]
    if plan.mode == "chunk":
        # Lifetimes [store phase, load call] of the two elements on one address must not overlap.
        c_params, c_out = seam.c_params, seam.c_out
        d_params, d_out = seam.demand.renamed("d.")
        params += [*c_params, *d_params]
        assertions += seam.holds(c_out, e) + seam.holds(d_out, f)
        d_chunk = Name("d." + seam.demand.params[-1][0])
        assertions.append(
            ex.negate(
                ex.disj(
                    [
                        ex.compare("<", seam.c_chunk, store_phase(seam, plan.mode, f)),
                        ex.compare("<", d_chunk, store_phase(seam, plan.mode, e)),
                    ]
                )
            )
        )
    answer = seam.solve(params, assertions)
    if answer.verdict.unknown:
        return seam.unknown(rung, "race", answer)
    if answer.verdict.unsat:
        return None
    ea = tuple(answer.value("e." + n) for n in seam.dims)
    fa = tuple(answer.value("f." + n) for n in seam.dims)
    calc = ex.compile_function([n for n, _ in params], [address.of(e), address.of(f)])
    addr = calc(*(answer.value(n) for n, _ in params))
    return _fail(
        rung,
        "race",
        f"elements `{point_text(seam.dims, ea)}` and `{point_text(seam.dims, fa)}` share scratch "
        f"bytes at {addr[0]} and {addr[1]} while both are live",
    )


def _order(seam: Seam) -> RungResult | None:
    rung = SMEM_STAGING
    early = ex.compare(">", store_phase(seam, "chunk", seam.c_out), seam.c_chunk)
    answer = seam.solve(seam.c_params, [early])
    if answer.verdict.unknown:
        return seam.unknown(rung, "order", answer)
    if answer.verdict.unsat:
        return None
    w = seam.witness(answer)
    return _fail(rung, "order", f"{w.text()} would be loaded before the barrier phase of its store", w)


def barrier_threads(seam: Seam, result: RungResult) -> int:
    """Threads a route's named barriers count: the exporting role's, and the importing role's when it
    is another (a tensor-memory route orders its loads with one barrier; a staging route with its plan's)."""
    plan = result.plan
    if isinstance(plan, TmemPlan):
        same = seam.export.threads == seam.imp.threads
    elif isinstance(plan, StagingPlan) and plan.barriers:
        same = plan.same_threads
    else:
        return 0
    return seam.export.threads.count + (0 if same else seam.imp.threads.count)
