"""Lowering: CUDA C++ device code for a route's moves.

Each route becomes two ``extern "C" __device__`` functions (the linker's default
symbols are shown; both can be renamed):

- ``void kl_export_<export>(const T* held)`` — called once by every producer thread at
  the export's ready event with its placement registers (``held[r]``, flattened
  row-major). Staging stores them to scratch and arrives at the route's barrier;
  register routes leave the values where they are; a tensor-memory route fences the
  producer's tcgen05 writes (``tcgen05.fence::before_thread_sync``) and arrives.
- ``void kl_import_<import>(const T* held, T* dst, int chunk)`` — called by every
  consumer thread once per chunk, ``chunk = 0, 1, ...`` in order (``0`` when unchunked),
  filling ``dst[0 .. regs_per_call - 1]``. ``held`` is the calling thread's producer
  registers, read by register routes (copy, shuffle), which exist only when the consumer
  runs on the producer's own threads; other routes ignore it (pass ``nullptr``).

``T`` is the element's bit type: ``unsigned int`` for 4-byte elements, ``unsigned short``
for 2-byte ones (pass ``float`` fragments through ``reinterpret_cast``). Every move is a
bit copy — register moves, ``__shfl_sync`` of a 32-bit word (2-byte values are widened
to the word and truncated back), ``st/ld.shared.b32``/``.b16``, ``tcgen05.ld .b32`` — and
nothing is converted. Thread indices come from ``threadIdx.x`` (1-D blocks).

Barriers are the non-aligned ``barrier.sync``/``barrier.arrive`` (the import may be
called from divergent code); the generated staging code runs clean under
compute-sanitizer's racecheck, synccheck and memcheck on an H200.

Link-time constants (``LinkConstants``) fold into the code: the shared-memory address
of the scratch (or of a shared-memory placement), the named-barrier IDs, and the
tensor-memory address of the tile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contract_lang.expr import BinOp, Expr, Int, Name, Not
from transfer_model import exprs as ex
from transfer_model.library import TCGEN05_SHAPES
from transfer_model.program import (
    THREAD,
    Arrive,
    Copy,
    LaneSource,
    Load,
    Op,
    Program,
    Shuffle,
    Store,
    Sync,
    TmemFence,
    TmemLoad,
    TmemWait,
)

HW_BARRIERS = 16
"""Named barriers per CTA (specs/hardware.md §4); ID 0 belongs to ``__syncthreads``."""


@dataclass(frozen=True)
class LinkConstants:
    """Values the linker solved: shared-memory address, barrier IDs, tensor-memory address."""

    smem_addr: int | None = None
    barrier_ids: tuple[int, ...] = ()
    tmem_addr: int | None = None


def symbol(name: str) -> str:
    """A C identifier made from a contract name."""
    return re.sub(r"\W", "_", name)


def export_symbol(program: Program) -> str:
    return f"kl_export_{symbol(program.export_name)}"


def import_symbol(program: Program) -> str:
    return f"kl_import_{symbol(program.import_name)}"


def _check_constants(program: Program, constants: LinkConstants) -> None:
    if program.shared and constants.smem_addr is None:
        raise ValueError(f"route `{program.route}` needs the shared-memory address")
    if program.shared and constants.smem_addr is not None and constants.smem_addr % program.elem_bytes:
        raise ValueError(f"shared-memory address {constants.smem_addr} is not aligned to {program.elem_bytes}")
    if len(constants.barrier_ids) != program.barriers:
        raise ValueError(
            f"route `{program.route}` needs {program.barriers} barrier IDs, got {len(constants.barrier_ids)}"
        )
    if any(not 1 <= b < HW_BARRIERS for b in constants.barrier_ids):
        raise ValueError(f"barrier IDs must be in 1..{HW_BARRIERS - 1}: {constants.barrier_ids}")
    if program.route == "tmem-load" and constants.tmem_addr is None:
        raise ValueError("a tensor-memory route needs the tile's tensor-memory address")


class _CExpr:
    """Renders program expressions over ``t`` as C, unsigned unless a node may be negative."""

    def __init__(self, threads: int, helpers: set[str]) -> None:
        self.threads = threads
        self.helpers = helpers

    def render(self, expr: Expr) -> str:
        table = ex.BoundsTable({THREAD.id: (0, self.threads - 1)})
        table.of(expr)
        if table.lo >= 0:
            return self._text(expr, signed=False)
        return f"(unsigned)({self._text(expr, signed=True)})"

    def _text(self, node: Expr, signed: bool) -> str:
        if isinstance(node, Int):
            return f"{node.value}" if signed else f"{node.value}u"
        if isinstance(node, Name):
            return "(int)t" if signed else "t"
        if isinstance(node, Not):
            return f"(!{self._text(node.operand, signed)})"
        assert isinstance(node, BinOp)
        a, b = self._text(node.left, signed), self._text(node.right, signed)
        if signed and node.op in ("/", "%"):
            helper = "kl_floordiv" if node.op == "/" else "kl_floormod"
            self.helpers.add(helper)
            return f"{helper}({a}, {b})"
        op = {"and": "&&", "or": "||"}.get(node.op, node.op)
        return f"({a} {op} {b})"


_HELPERS: dict[str, str] = {
    "kl_st_b32": """static __device__ __forceinline__ void kl_st_b32(unsigned addr, unsigned v) {
    asm volatile("st.shared.b32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}""",
    "kl_ld_b32": """static __device__ __forceinline__ unsigned kl_ld_b32(unsigned addr) {
    unsigned v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
    return v;
}""",
    "kl_st_b16": """static __device__ __forceinline__ void kl_st_b16(unsigned addr, unsigned short v) {
    asm volatile("st.shared.b16 [%0], %1;" :: "r"(addr), "h"(v) : "memory");
}""",
    "kl_ld_b16": """static __device__ __forceinline__ unsigned short kl_ld_b16(unsigned addr) {
    unsigned short v;
    asm volatile("ld.shared.b16 %0, [%1];" : "=h"(v) : "r"(addr) : "memory");
    return v;
}""",
    "kl_floordiv": """static __device__ __forceinline__ int kl_floordiv(int a, int b) {
    return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}""",
    "kl_floormod": """static __device__ __forceinline__ int kl_floormod(int a, int b) {
    return a - b * (a / b - ((a % b != 0) && ((a < 0) != (b < 0))));
}""",
}
"""Helpers by name, each emitted once per translation unit (guarded) and only when used."""


def _helper(name: str) -> str:
    guard = f"KL_HELPER_{name.upper()}"
    return f"#ifndef {guard}\n#define {guard}\n{_HELPERS[name]}\n#endif"


def lower(
    program: Program,
    constants: LinkConstants | None = None,
    *,
    export_name: str | None = None,
    import_name: str | None = None,
) -> str:
    """CUDA C++ source defining the route's export and import functions."""
    constants = constants or LinkConstants()
    _check_constants(program, constants)
    return _Lowering(
        program, constants, export_name or export_symbol(program), import_name or import_symbol(program)
    ).source()


@dataclass(frozen=True)
class Moves:
    """A route's stores and loads alone, for a caller that orders them itself (a ring-fed hand-off,
    ``linker/ring_fed.py``): the export's lines, each chunk's lines, and the helpers and tables they use."""

    export: tuple[str, ...]
    chunks: tuple[tuple[str, ...], ...]
    preamble: tuple[str, ...]


def lower_moves(
    program: Program, export_ops: tuple[Op, ...], import_ops: tuple[tuple[Op, ...], ...], *, base: str, name: str
) -> Moves:
    """The C lines of ``export_ops`` and of each call of ``import_ops`` (stores and loads), every shared
    address offset by the C expression ``base`` (a variable the caller defines) instead of a constant;
    ``name`` (the import's symbol) names the tables a shuffle would need."""
    low = _Lowering(program, LinkConstants(), "", name, base=base)
    export = low._ops(export_ops, program.producer.count)
    chunks = tuple(tuple(low._ops(ops, program.consumer.count)) for ops in import_ops)
    preamble = (*(_helper(n) for n in _HELPERS if n in low.helpers), *low.tables)
    return Moves(tuple(export), chunks, preamble)


class _Lowering:
    def __init__(
        self, program: Program, constants: LinkConstants, export_name: str, import_name: str, base: str | None = None
    ) -> None:
        self.p = program
        self.k = constants
        self.base = base if base is not None else f"{constants.smem_addr or 0}u"
        self.export_name = export_name
        self.import_name = import_name
        self.ctype = "unsigned int" if program.elem_bytes == 4 else "unsigned short"
        self.bits = 8 * program.elem_bytes
        self.tables: list[str] = []
        self.helpers: set[str] = set()

    def source(self) -> str:
        p = self.p
        export_body = self._ops(p.export_ops, p.producer.count)
        calls = [self._ops(ops, p.consumer.count) for ops in p.import_ops]
        lines = [
            f"// kernlink transfer: `{p.export_name}` -> `{p.import_name}`, route {p.route}",
            f"// export: CTA threads {p.producer.first}..{p.producer.end - 1} call {self.export_name}(held) "
            "once, at the ready event",
            f"// import: CTA threads {p.consumer.first}..{p.consumer.end - 1} call {self.import_name}(held, dst, "
            f"chunk) for chunk 0..{p.chunks - 1} in order; {p.regs_per_call} registers per call",
            f"// elements move as {self.bits}-bit words and are never converted",
            *(_helper(name) for name in _HELPERS if name in self.helpers),
            *self.tables,
            "",
            f'extern "C" __device__ void {self.export_name}(const {self.ctype}* held) {{',
            f"    const unsigned t = threadIdx.x - {p.producer.first}u;",
            "    (void)t;",
            "    (void)held;",
            *export_body,
            "}",
            "",
            f'extern "C" __device__ void {self.import_name}(const {self.ctype}* held, {self.ctype}* dst, int chunk) {{',
            f"    const unsigned t = threadIdx.x - {p.consumer.first}u;",
            "    const unsigned lane = threadIdx.x % 32u;",
            "    (void)t;",
            "    (void)lane;",
            "    (void)held;",
            "    (void)chunk;",
        ]
        if p.chunks == 1:
            lines += calls[0]
        else:
            lines.append("    switch (chunk) {")
            for c, body in enumerate(calls):
                lines.append(f"    case {c}: {{")
                lines += ["    " + line for line in body]
                lines += ["        break;", "    }"]
            lines += ["    default:", "        break;", "    }"]
        lines += ["}", ""]
        return "\n".join(lines)

    def _ops(self, ops: tuple[Op, ...], threads: int) -> list[str]:
        c = _CExpr(threads, self.helpers)
        out: list[str] = []
        for op in ops:
            out += self._op(op, c)
        return out

    def _barrier(self, index: int) -> int:
        return self.k.barrier_ids[index]

    def _op(self, op: Op, c: _CExpr) -> list[str]:
        p = self.p
        base = self.base
        if isinstance(op, Copy):
            return [f"    dst[{op.dst}] = held[{op.src}];"]
        if isinstance(op, Shuffle):
            value = f"held[{op.src}]" if p.elem_bytes == 4 else f"(unsigned)held[{op.src}]"
            call = self._shuffle(op.lanes, value, len(self.tables))
            cast = "" if p.elem_bytes == 4 else "(unsigned short)"
            return [f"    dst[{op.dst}] = {cast}{call};"]
        if isinstance(op, Store):
            self.helpers.add(f"kl_st_b{self.bits}")
            store = f"kl_st_b{self.bits}({base} + {c.render(op.addr)}, held[{op.src}]);"
            if op.when is None:
                return [f"    {store}"]
            return [f"    if ({c.render(op.when)}) {store}"]
        if isinstance(op, Load):
            self.helpers.add(f"kl_ld_b{self.bits}")
            return [f"    dst[{op.dst}] = kl_ld_b{self.bits}({base} + {c.render(op.addr)});"]
        if isinstance(op, Arrive):
            barrier = f"barrier.arrive {self._barrier(op.barrier)}, {p.barrier_threads};"
            return [f'    asm volatile("{barrier}" ::: "memory");']
        if isinstance(op, Sync):
            barrier = f"barrier.sync {self._barrier(op.barrier)}, {p.barrier_threads};"
            return [f'    asm volatile("{barrier}" ::: "memory");']
        if isinstance(op, TmemLoad):
            return self._tmem(op)
        if isinstance(op, TmemFence):
            fence = "before_thread_sync" if op.before else "after_thread_sync"
            return [f'    asm volatile("tcgen05.fence::{fence};" ::: "memory");']
        assert isinstance(op, TmemWait)
        return ['    asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");']

    def _shuffle(self, lanes: LaneSource, value: str, index: int) -> str:
        mask = "0xffffffffu"
        if lanes.kind == "xor":
            return f"__shfl_xor_sync({mask}, {value}, {lanes.value})"
        if lanes.kind == "rotate":
            return f"__shfl_sync({mask}, {value}, (lane + {lanes.value}u) & 31u)"
        name = f"kl_lanes_{symbol(self.import_name)}_{index}"
        entries = ", ".join(str(v) for v in lanes.table)
        self.tables.append(f"static __constant__ unsigned char {name}[{len(lanes.table)}] = {{{entries}}};")
        return f"__shfl_sync({mask}, {value}, {name}[{'lane' if lanes.kind == 'lane_table' else 't'}])"

    def _tmem(self, op: TmemLoad) -> list[str]:
        info = TCGEN05_SHAPES[op.shape]
        regs = info.registers(op.num)
        base = self.k.tmem_addr or 0
        addrs = [base + (lane << 16) + col for lane, col in op.bases]
        step = addrs[1] - addrs[0] if len(addrs) > 1 else 0
        if all(a == addrs[0] + step * w for w, a in enumerate(addrs)):
            # affine in the consumer's warp (the usual one lane quadrant per warp): an immediate
            address = f"{addrs[0]}u + {step}u * (t / 32u)" if step else f"{addrs[0]}u"
        else:
            name = f"kl_taddr_{symbol(self.import_name)}_{len(self.tables)}"
            self.tables.append(
                f"static __constant__ unsigned {name}[{len(addrs)}] = {{{', '.join(f'{a}u' for a in addrs)}}};"
            )
            address = f"{name}[t / 32u]"
        outs = ", ".join(f"%{i}" for i in range(regs))
        operands = ", ".join(f'"=r"(dst[{op.dst + i}])' for i in range(regs))
        split = f", {op.num}" if op.shape == "16x32bx2" else ""
        asm = f"tcgen05.ld.sync.aligned.{op.shape}.x{op.num}.b32 {{{outs}}}, [%{regs}]{split};"
        return [f'    asm volatile("{asm}" : {operands} : "r"({address}) : "memory");']
