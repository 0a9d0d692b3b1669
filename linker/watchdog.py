"""The contract-keyed hang recorder: bounded waits that write a ledger and trap (``--watchdog``).

The linker owns three kinds of waits a component reaches through handles: the counter
waits (``P_C_counter_wait(slot, target)``, :mod:`linker.counters`), the ring waits
(``P_R_full_wait(slot, parity)`` / ``P_R_empty_wait(slot, parity)``, an
``mbarrier.try_wait.parity`` loop on slot ``slot``'s barrier) and the two waits inside a
ring-fed hand-off's tensor handles (:mod:`linker.ring_fed`). Each such wait is a *site*,
numbered in the order the generated code defines them.

Without ``--watchdog`` every wait spins until it succeeds, and nothing of this module
reaches the generated code (:func:`ring_wait_lines` with ``watchdog=None`` is the plain
loop). With ``--watchdog=CYCLES`` each wait reads ``clock64()`` when it starts; once it
has spun ``CYCLES`` cycles it calls ``kl_watchdog_fire``, which appends one entry to the
ledger and executes ``trap``. The ledger is host memory mapped into the device (it
survives the trap, which leaves the context unusable); the launch helper allocates it
and stores its device address in the generated global ``kl_watchdog_ledger`` before the
launch (a null pointer only traps). Layout, 32-bit words:

- word 1: the capacity (words 0, 2, 3 unused);
- from word 4, ``CAPACITY`` entries of ``ENTRY_WORDS`` words: ``MAGIC`` once complete,
  block x, thread, site, slot, expected (a count, or a parity), seen (the counter word,
  or the low word of the mbarrier's state), cycles waited (low, high), one unused word.

An entry's index comes from ``atomicAdd`` on ``kl_watchdog_next``, a device global the
launch helper zeroes (atomics on mapped host memory are not portable over PCIe); its
``MAGIC`` word is stored last, after a system fence. A wait that times out once the ledger
is full records nothing and does not trap either: it sleeps until a recorded wait's trap
ends the launch (when hundreds of threads time out together, an early trap from one that
found no room would otherwise cut every entry short, and the ledger would decode to nothing).

``kernlink run`` decodes the ledger against ``link.json``'s ``watchdog`` section — each
site's stage, item, which barrier, handle and contract line — and the dispatch's role
ranges (which role the waiting thread runs) into ``E-HANG`` diagnostics
(:func:`decode_ledger`).
"""

from __future__ import annotations

import argparse
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from checker.handles import HandleKind, HandleSpec
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code
from linker.counters import ARRAY, CounterArray, CounterSlots, WaitRenderer, counter_functions
from linker.handles import Solved, handle_value
from package.abi import tensor_symbol

if TYPE_CHECKING:
    from analysis.link_inputs import LinkInputs
    from diagnostics.span import Span

LEDGER = "kl_watchdog_ledger"
FIRE = "kl_watchdog_fire"
#: Cycles a wait spins before it records itself (about 1 s at the H200's 1.98 GHz).
DEFAULT_CYCLES = 2_000_000_000
CURSOR = "kl_watchdog_next"
CAPACITY = 64
HEADER_WORDS = 4
ENTRY_WORDS = 10
#: An entry's first word once the rest is written ("KLWD").
MAGIC = 0x4B4C5744
LEDGER_BYTES = 4 * (HEADER_WORDS + CAPACITY * ENTRY_WORDS)
RING_WAITS = frozenset({"ring_full_wait", "ring_empty_wait"})


@dataclass(frozen=True)
class Site:
    """One watched wait: the handle a component calls and the contract item it waits on."""

    id: int
    symbol: str
    kind: str  # counter_wait | ring_full_wait | ring_empty_wait
    stage: str
    item: str
    where: str  # "file:line" of the contract item
    detail: str  # the counter's word and scope, or the ring's barrier address

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "symbol": self.symbol,
            "kind": self.kind,
            "stage": self.stage,
            "item": self.item,
            "where": self.where,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Watchdog:
    """``--watchdog``'s bound and the sites the generated code watches."""

    cycles: int
    sites: tuple[Site, ...]

    def site(self, symbol: str) -> Site:
        return next(s for s in self.sites if s.symbol == symbol)

    def as_json(self) -> dict[str, object]:
        return {
            "cycles": self.cycles,
            "ledger": LEDGER,
            "ledger_bytes": LEDGER_BYTES,
            "capacity": CAPACITY,
            "header_words": HEADER_WORDS,
            "entry_words": ENTRY_WORDS,
            "entry": [
                "magic",
                "block",
                "thread",
                "site",
                "slot",
                "expected",
                "seen",
                "cycles_lo",
                "cycles_hi",
                "unused",
            ],
            "sites": [s.as_json() for s in self.sites],
        }


@dataclass(frozen=True)
class Watched:
    """A wait the generated code bounds: the function it sits in, which wait, and the contract line."""

    symbol: str
    kind: str  # counter_wait | ring_full_wait | ring_empty_wait
    stage: str
    item: str
    span: Span | None
    detail: str

    @staticmethod
    def of(spec: HandleSpec, detail: str) -> Watched:
        """A wait handle a component's object reads (its contract item binds it)."""
        return Watched(spec.symbol, spec.kind, spec.stage, spec.item, spec.node.span if spec.node else None, detail)


def plan_watchdog(cycles: int, waits: Sequence[Watched]) -> Watchdog:
    """Sites for the watched waits, numbered in the order the generated code defines them."""
    sites = []
    for i, w in enumerate(waits):
        where = f"{w.span.file}:{w.span.line}" if w.span is not None else w.stage
        sites.append(Site(i, w.symbol, w.kind, w.stage, w.item, where, w.detail))
    return Watchdog(cycles, tuple(sites))


def prelude_lines(wd: Watchdog) -> list[str]:
    """The ledger pointer, the entry cursor and the function a timed-out wait calls."""
    return [
        f"// Watchdog (--watchdog={wd.cycles}): a wait that spins {wd.cycles} cycles appends one entry to the "
        "host-mapped ledger",
        f"// `{LEDGER}` (set by the launch helper, with `{CURSOR}` zeroed) and traps; link.map's watchdog section "
        "lists the sites.",
        'extern "C" {',
        f"__device__ unsigned* {LEDGER};",
        f"__device__ unsigned {CURSOR};",
        f"__device__ __noinline__ void {FIRE}(unsigned site, unsigned slot, unsigned expected, unsigned seen, "
        "unsigned long long waited) {",
        f"    volatile unsigned* ledger = {LEDGER};",
        "    if (ledger != nullptr) {",
        f"        const unsigned entry = atomicAdd(&{CURSOR}, 1u);  // device memory: no atomics on host memory",
        f"        if (entry < {CAPACITY}u) {{",
        f"            volatile unsigned* w = ledger + {HEADER_WORDS}u + {ENTRY_WORDS}u * entry;",
        "            w[1] = blockIdx.x; w[2] = threadIdx.x; w[3] = site; w[4] = slot;",
        "            w[5] = expected; w[6] = seen; w[7] = static_cast<unsigned>(waited);",
        "            w[8] = static_cast<unsigned>(waited >> 32);",
        "            __threadfence_system();",
        f"            w[0] = {MAGIC}u;  // the entry is complete",
        "        } else {",
        "            for (;;) __nanosleep(1000000u);  // no room: a recorded wait's trap ends the launch",
        "        }",
        "        __threadfence_system();",
        "    }",
        '    asm volatile("trap;");',
        "}",
        '}  // extern "C"',
    ]


def bounded_loop(wd: Watchdog, symbol: str, test: list[str], seen: str, expected: str) -> list[str]:
    """A spin that runs ``test`` (which sets ``done``) until it holds, firing after ``wd.cycles``."""
    site = wd.site(symbol)
    return [
        "    const long long kl_start = clock64();",
        "    for (;;) {",
        *("    " + line for line in test),
        "        if (done) break;",
        "        const long long kl_waited = clock64() - kl_start;",
        f"        if (kl_waited > {wd.cycles}ll) {{",
        f"            {FIRE}({site.id}u, slot, {expected}, {seen}, static_cast<unsigned long long>(kl_waited));",
        "        }",
        "    }",
    ]


def counter_wait(wd: Watchdog) -> WaitRenderer:
    """The watched body of a counter wait: acquire loads of the word until it reaches ``target``."""

    def lines(spec: HandleSpec, counter: CounterSlots) -> list[str]:
        load = (
            f'    asm volatile("ld.acquire.{counter.scope}.global.u32 %0, [%1];" : "=r"(seen) : "l"(word) : "memory");'
        )
        return [
            f"    const unsigned* word = &{ARRAY}[{counter.index}u + slot];",
            "    unsigned seen;",
            *bounded_loop(wd, spec.symbol, [load, "    const bool done = seen >= target;"], "seen", "target"),
        ]

    return lines


#: One probe of an mbarrier's phase: ``ok`` = 1 once the phase of parity ``parity`` of the barrier at
#: shared address ``bar`` has completed (every generated ring wait spins on it).
TRY_WAIT_PARITY = (
    'asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; '
    'selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(bar), "r"(parity) : "memory");'
)


def ring_wait_lines(wd: Watchdog | None, symbol: str, address: int) -> list[str]:
    """The body of a ring wait: ``mbarrier.try_wait.parity`` on slot ``slot``'s barrier until it passes
    (``slot`` and ``parity`` in scope; with ``wd``, bounded as the site of ``symbol``)."""
    head = [
        f"    const unsigned bar = {address}u + 8u * slot;  // shared address of slot `slot`'s mbarrier",
        "    unsigned ok;",
    ]
    probe = f"    {TRY_WAIT_PARITY}"
    if wd is None:
        return [*head, "    do {", "    " + probe, "    } while (!ok);"]
    peek = '    if (!done) asm volatile("ld.shared.u32 %0, [%1];" : "=r"(state) : "r"(bar) : "memory");'
    return [
        *head,
        "    unsigned state = 0u;",
        *bounded_loop(wd, symbol, [probe, "    const bool done = ok != 0u;", peek], "state", "parity"),
    ]


def ring_wait_specs(inputs: LinkInputs) -> list[HandleSpec]:
    """The ring wait handles the components' objects read, in pipeline order."""
    found: dict[str, HandleSpec] = {}
    for stage in inputs.stages:
        for spec in stage.handles:
            if spec.kind in RING_WAITS:
                found.setdefault(spec.symbol, spec)
    return list(found.values())


@dataclass(frozen=True)
class Waits:
    """What the wait handles add to the generated code: the plan (None without ``--watchdog``) and the lines."""

    watchdog: Watchdog | None
    prelude: tuple[str, ...]  # the ledger and the fire function, before every watched wait
    lines: tuple[str, ...]  # the ring wait functions
    counter_wait: WaitRenderer | None


def plan_waits(inputs: LinkInputs, solved: Solved, counters: CounterArray, cycles: int | None) -> Waits:
    """The ring wait functions, and with ``cycles`` the watchdog over them and the counter waits."""
    rings = ring_wait_specs(inputs)
    addresses = {}
    for spec in rings:
        bar: HandleKind = "ring_full_bar" if spec.kind == "ring_full_wait" else "ring_empty_bar"
        addresses[spec.symbol] = solved.smem_base + handle_value(replace(spec, kind=bar), solved).value
    wd = None
    if cycles is not None:
        waits: list[Watched] = []
        for spec in counter_functions(inputs):
            found = counters.find(spec.stage, spec.item)
            if spec.kind == "counter_wait" and found is not None:
                waits.append(Watched.of(spec, f"`{ARRAY}[{found.index} + slot]`, scope {found.scope}"))
        for spec in rings:
            which = "full" if spec.kind == "ring_full_wait" else "empty"
            detail = f"{which} mbarrier of slot i at shared address {addresses[spec.symbol]} + 8i"
            waits.append(Watched.of(spec, detail))
        waits += ring_fed_waits(inputs, solved)
        wd = plan_watchdog(cycles, waits)
    lines: list[str] = []
    if rings:
        lines += [
            "// Ring waits: each spins on slot `slot`'s barrier until the phase of parity `parity` completes.",
            'extern "C" {',
        ]
        for spec in rings:
            lines += [
                f"__device__ void {spec.symbol}(unsigned slot, unsigned parity) {{  // {spec.stage}: ring "
                f"`{spec.item}`",
                *ring_wait_lines(wd, spec.symbol, addresses[spec.symbol]),
                "}",
            ]
        lines.append('}  // extern "C"')
    if wd is None or not wd.sites:
        return Waits(None, (), tuple(lines), None)
    return Waits(wd, tuple(prelude_lines(wd)), tuple(lines), counter_wait(wd))


def ring_fed_waits(inputs: LinkInputs, solved: Solved) -> list[Watched]:
    """The two waits of each generated ring-fed hand-off (:mod:`linker.ring_fed`): the export's on
    ``empty`` and the import's on ``full``, in the functions the hand-off defines."""
    out = []
    for h in inputs.ring_fed.hand_offs:
        imp = next((t for t in inputs.tensor_imports if t.export == h.export), None)
        if imp is None:
            continue  # refused before generation: a hand-off serves exactly one import
        sides = (
            (tensor_symbol(h.export_stage, h.export, "export"), h.producer),
            (tensor_symbol(imp.stage, imp.name, "import"), h.consumer),
        )
        for symbol, side in sides:
            kind: HandleKind = "ring_full_bar" if side.wait == "full" else "ring_empty_bar"
            bar = solved.smem_base + handle_value(HandleSpec("", kind, h.export_stage, h.ring), solved).value
            detail = f"{side.wait} mbarrier of slot g % depth at shared address {bar} + 8·slot (ring-fed generation g)"
            out.append(Watched(symbol, f"ring_{side.wait}_wait", h.export_stage, h.ring, side.wait_span, detail))
    return out


# ----------------------------------------------------------------- decoding


@dataclass(frozen=True)
class Entry:
    block: int
    thread: int
    site: int
    slot: int
    expected: int
    seen: int
    cycles: int


def read_ledger(data: bytes) -> list[Entry]:
    """The complete entries a ledger holds, in entry order."""
    words = struct.unpack(f"<{len(data) // 4}I", data[: len(data) // 4 * 4])
    out = []
    for start in range(HEADER_WORDS, len(words) - ENTRY_WORDS + 1, ENTRY_WORDS):
        w = words[start : start + ENTRY_WORDS]
        if w[0] == MAGIC:
            out.append(Entry(w[1], w[2], w[3], w[4], w[5], w[6], w[7] | (w[8] << 32)))
    return out


def decode_ledger(link_map: Mapping[str, Any], data: bytes) -> list[Diagnostic]:
    """``E-HANG`` diagnostics naming the waiting role, the contract item and its line.

    Entries that agree on the site, the waiting role, the slot, the expected and the seen
    value (the same wait, stuck the same way, in several blocks or threads) make one
    diagnostic that lists the blocks and threads: one mistake, one diagnostic.
    """
    wd = link_map.get("watchdog") or {}
    sites = {int(s["id"]): s for s in wd.get("sites", [])}
    roles = link_map.get("dispatch", {}).get("roles", [])
    counters = {c["name"]: c for c in (link_map.get("counters") or {}).get("counters", [])}

    def role_of(thread: int) -> int:
        warp = thread // 32
        return next(
            (i for i, r in enumerate(roles) if r["first_warp"] <= warp < r["first_warp"] + r["warps"]), -1 - warp
        )

    groups: dict[tuple[int, int, int, int, int], list[Entry]] = {}
    for e in read_ledger(data):
        groups.setdefault((e.site, role_of(e.thread), e.slot, e.expected, e.seen), []).append(e)
    out = []
    for (site_id, role_index, slot, expected, seen), entries in groups.items():
        site = sites.get(site_id)
        role = roles[role_index] if role_index >= 0 else None
        who = f"role `{role['role']}` of `{role['stage']}`" if role else f"warp {-1 - role_index} (no role)"
        blocks = sorted({e.block for e in entries})
        threads = sorted({e.thread for e in entries})
        thread = (
            f"thread {threads[0]}"
            if len(threads) == 1
            else f"{len(threads)} threads ({', '.join(map(str, threads[:4]))}{', …' if len(threads) > 4 else ''})"
        )
        where = (
            f"block {blocks[0]}"
            if len(blocks) == 1
            else f"{len(blocks)} blocks ({', '.join(map(str, blocks[:8]))}{', …' if len(blocks) > 8 else ''})"
        )
        if site is None:
            out.append(
                Diagnostic(
                    Code.E_HANG,
                    f"{where}, {thread} ({who}) timed out at unknown site {site_id}",
                    helps=("link again: link.json and kernel.cubin come from different links",),
                )
            )
            continue
        waited = max(e.cycles for e in entries)
        notes = [
            f"{site['where']}: {site['stage']} `{site['item']}` ({site['detail']}), through `{site['symbol']}`",
            f"waited up to {waited} cycles (the bound is {wd.get('cycles')})",
        ]
        if site["kind"] == "counter_wait":
            what = f"counter `{site['item']}` slot {slot}: {who} waits for >= {expected}, last saw {seen}"
            users = counters.get(site["item"], {}).get("users", [])
            producers = [u for u in users if u.endswith("produces")]
            notes.append(f"producers: {', '.join(producers) or 'none in this kernel'}")
            helps = (
                "check that the producers add as often as this wait expects: a changed fact (a tile size, a "
                "count) the two sides compiled differently leaves the counter short",
            )
        else:
            which = "full" if site["kind"] == "ring_full_wait" else "empty"
            what = (
                f"ring `{site['item']}` slot {slot}, parity {expected}: {who} waits `{which}` "
                f"(mbarrier state word 0x{seen:08x})"
            )
            helps = (
                f"check that the other side of ring `{site['item']}` arrives on `{which}` for every slot and "
                "phase this side waits on",
            )
        out.append(Diagnostic(Code.E_HANG, f"{where}, {thread} hung: {what}", notes=tuple(notes), helps=helps))
    return out


def add_watchdog_argument(parser: argparse.ArgumentParser) -> None:
    """``--watchdog[=CYCLES]`` on ``kernlink link``."""

    def cycles(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"`{text}` is not a number of cycles") from None
        if not 0 < value < 1 << 62:
            raise argparse.ArgumentTypeError(f"the bound must be between 1 and 2^62 cycles, not {value}")
        return value

    parser.add_argument(
        "--watchdog",
        nargs="?",
        const=DEFAULT_CYCLES,
        type=cycles,
        metavar="CYCLES",
        help="bound every wait the linker generates (counter and ring waits) to CYCLES cycles "
        f"(default {DEFAULT_CYCLES}); a wait that times out records a ledger entry and traps, "
        "and `kernlink run` decodes it",
    )


class HostLedger:
    """The ledger in host memory mapped into the device: it outlives a trap, which kills the context."""

    def __init__(self, module: Any) -> None:
        import ctypes

        from cuda.bindings import driver

        self._ctypes = ctypes
        err, self.host = driver.cuMemHostAlloc(LEDGER_BYTES, driver.CU_MEMHOSTALLOC_DEVICEMAP)
        _ok(err, "cuMemHostAlloc")
        header = struct.pack("<4I", 0, CAPACITY, 0, 0) + bytes(LEDGER_BYTES - 4 * HEADER_WORDS)  # no entry yet
        ctypes.memmove(int(self.host), header, LEDGER_BYTES)
        err, device = driver.cuMemHostGetDevicePointer(self.host, 0)
        _ok(err, "cuMemHostGetDevicePointer")
        err, address, _size = driver.cuModuleGetGlobal(module, LEDGER.encode())
        _ok(err, f"cuModuleGetGlobal(`{LEDGER}`)")
        (err,) = driver.cuMemcpyHtoD(address, struct.pack("<Q", int(device)), 8)
        _ok(err, f"cuMemcpyHtoD(`{LEDGER}`)")
        err, cursor, _size = driver.cuModuleGetGlobal(module, CURSOR.encode())
        _ok(err, f"cuModuleGetGlobal(`{CURSOR}`)")
        (err,) = driver.cuMemsetD32(cursor, 0, 1)
        _ok(err, f"cuMemsetD32(`{CURSOR}`)")

    def read(self) -> bytes:
        return self._ctypes.string_at(int(self.host), LEDGER_BYTES)

    def close(self) -> None:
        """Free the ledger (after a trap the context may refuse; the memory then goes with the process)."""
        from cuda.bindings import driver

        driver.cuMemFreeHost(self.host)


def _ok(err: Any, call: str) -> None:
    from cuda.bindings import driver

    if err != driver.CUresult.CUDA_SUCCESS:
        from diagnostics.model import DiagnosticError

        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_CUDA, f"`{call}` failed: {err}", helps=("the watchdog's ledger needs mapped host memory",)
                )
            ]
        )
