"""Counters: the kernel's counter array, the counter handles, and the reset rule.

A counter (``claim counter C slots N`` / ``counter C produce|consume by R``) is a
monotonically increasing 32-bit word in global memory (specs/language.md §9.1). The
linker gives the dispatch kernel one array of them, ``kl_counters``: a ``__device__``
global the generated translation unit defines (``extern "C"``, so the host finds it
under that name). Its layout:

- each ``claim counter`` at the slot the placement chose (``Domain.COUNTER``), its
  ``slots`` consecutive words;
- each counter that only endpoints name (no stage claims it) one more word, after
  the claims, in pipeline order; every endpoint of that name reads the same word.

An endpoint named like a claim reads the claim's slots (the claim of its own stage,
else the one stage that claims the name). Handles (specs/handles.md, "Counters"):

- ``P_C_counter`` → the index of the first slot (folded to an immediate);
- ``P_C_counter_ptr`` → ``&kl_counters[index]``: a relocated constant, no call left;
- ``P_C_counter_add(slot, n)`` → ``red.release.<scope>.global.add.u32`` on slot
  ``index + slot``;
- ``P_C_counter_wait(slot, target)`` → spins with ``ld.acquire.<scope>.global.u32``
  until the word reaches ``target`` (unsigned compare). With ``--watchdog`` the spin
  is bounded (:mod:`linker.watchdog`).

``<scope>`` is the counter's declared scope (``cta``, ``cluster``, ``gpu``, ``sys``): the
widest any of its items states, ``gpu`` when none does.

**Reset.** A counter counts from zero in every launch: the launch helper
(``kernlink run``, :func:`runtime.run.run_linked`) zeroes ``kl_counters`` before each
launch (``cuModuleGetGlobal`` + ``cuMemsetD32``); a host that launches ``kernel.cubin``
itself must do the same. The link map states this rule with the array's symbol and
size (:data:`RESET_RULE`). Nothing in the kernel resets a counter: a persistent grid
has no point after which every block is done reading it.

Counters in another GPU's memory or in host memory (``space peer`` / ``space host``)
and counters of a communication ``domain`` need host-side allocation the launch helper
does not do: ``E-UNSUPPORTED`` (:func:`unsupported_counters`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from checker.clauses import l_link
from checker.handles import HandleSpec
from diagnostics.model import Diagnostic
from placement.problem import Domain
from placement.result import Placement

if TYPE_CHECKING:
    from analysis.link_inputs import CounterUse, LinkInputs

#: The generated ``__device__`` array every counter lives in (``extern "C"``: the host reads it by name).
ARRAY = "kl_counters"
#: How counts are kept from leaking from one launch into the next (the link map records it).
RESET_RULE = (
    f"`{ARRAY}` is zeroed before every launch by the launch helper (`kernlink run`, "
    f"`run_linked`: cuModuleGetGlobal(`{ARRAY}`) + cuMemsetD32); a host that launches kernel.cubin "
    "itself must zero it the same way before each launch"
)
#: Counter handles that are functions the generated code defines, not constants.
FUNCTION_KINDS = frozenset({"counter_ptr", "counter_add", "counter_wait"})
#: Memory scopes from narrowest to widest (PTX ``.cta`` … ``.sys``).
SCOPES = ("cta", "cluster", "gpu", "sys")
DEFAULT_SCOPE = "gpu"


@dataclass(frozen=True)
class CounterSlots:
    """One counter's words in ``kl_counters``: ``[index, index + slots)``."""

    name: str
    index: int
    slots: int
    scope: str
    owner: str  # the claiming stage, or "" for a counter only endpoints name
    users: tuple[str, ...]  # "stage role R produce|consume", "stage claim"
    why: str

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "index": self.index,
            "slots": self.slots,
            "scope": self.scope,
            "owner": self.owner,
            "users": list(self.users),
            "why": self.why,
        }


@dataclass(frozen=True)
class CounterArray:
    """The kernel's counter array; ``size`` words (0 when the composition has no counter)."""

    counters: tuple[CounterSlots, ...]
    size: int

    @property
    def symbol(self) -> str:
        return ARRAY

    def find(self, stage: str, name: str) -> CounterSlots | None:
        """The slots ``stage`` reads for counter ``name``: its own claim, else the name's one claim or word."""
        own = next((c for c in self.counters if c.name == name and c.owner == stage), None)
        if own is not None:
            return own
        named = [c for c in self.counters if c.name == name]
        return named[0] if len(named) == 1 else None

    def as_json(self) -> dict[str, object]:
        return {
            "symbol": ARRAY,
            "words": self.size,
            "bytes": 4 * self.size,
            "reset": RESET_RULE,
            "counters": [c.as_json() for c in self.counters],
        }


#: The body of a counter wait handle (``slot`` and ``target`` in scope): :func:`plain_wait`, or the watchdog's.
WaitRenderer = Callable[[HandleSpec, CounterSlots], list[str]]


class UnplacedCounter(Exception):
    """A counter handle whose counter the array does not hold."""


def unsupported_counters(inputs: LinkInputs) -> tuple[list[l_link.Unsupported], list[Diagnostic]]:
    """Counters the single-GPU launch helper cannot back with memory (``E-UNSUPPORTED``, one per
    counter at its first endpoint), and the endpoints whose counter two stages claim (L-LINK)."""
    out: list[l_link.Unsupported] = []
    refused: set[str] = set()
    endpoints = [c for c in inputs.counters if not c.claim]
    for c in endpoints:
        if c.name in refused:
            continue
        if c.space in ("peer", "host"):
            out.append(l_link.Unsupported("counter-space", c.stage, c.name, c.span, c.space))
        elif c.domain is not None:
            out.append(l_link.Unsupported("counter-domain", c.stage, c.name, c.span, c.domain))
        else:
            continue
        refused.add(c.name)
    claimed: dict[str, list[str]] = {}
    for claim in inputs.counters:
        if claim.claim:
            claimed.setdefault(claim.name, []).append(claim.stage)
    ambiguous = []
    for endpoint in endpoints:
        owners = claimed.get(endpoint.name, [])
        if len(owners) > 1 and endpoint.stage not in owners:
            ambiguous.append(l_link.counter_ambiguous(endpoint.name, endpoint.stage, owners, endpoint.span))
    return out, ambiguous


def plan_counters(inputs: LinkInputs, placement: Placement) -> CounterArray:
    """The counter array of a placed composition (deterministic: placement order, then pipeline order)."""
    items: list[CounterSlots] = []
    claims = {(c.stage, c.name): c for c in inputs.counters if c.claim}
    endpoints = [c for c in inputs.counters if not c.claim]
    end = 0
    for slot in sorted((s for s in placement.slots if s.domain is Domain.COUNTER), key=lambda s: s.offset):
        owned = claims.get((slot.owner, slot.name))
        if owned is None:
            continue
        scopes = [owned.scope] + [e.scope for e in endpoints if e.name == slot.name]
        users = [f"{slot.owner} claim"] + [_endpoint(e) for e in endpoints if e.name == slot.name]
        items.append(
            CounterSlots(
                slot.name,
                slot.offset,
                slot.size,
                _widest(scopes),
                slot.owner,
                tuple(users),
                f"claim of `{slot.owner}`, {slot.size} slot(s): {slot.why}",
            )
        )
        end = max(end, slot.offset + slot.size)
    claimed = {name for _, name in claims}
    unclaimed: dict[str, list[CounterUse]] = {}
    for endpoint in endpoints:
        if endpoint.name not in claimed:
            unclaimed.setdefault(endpoint.name, []).append(endpoint)
    for name, named in unclaimed.items():
        items.append(
            CounterSlots(
                name,
                end,
                1,
                _widest([e.scope for e in named]),
                "",
                tuple(_endpoint(e) for e in named),
                "named by endpoints only: one word after the claims, shared by every endpoint",
            )
        )
        end += 1
    return CounterArray(tuple(items), end)


def counter_index(array: CounterArray, stage: str, name: str) -> tuple[int, str]:
    """The value of ``P_C_counter`` for ``stage``'s counter ``name``, with the reason."""
    found = array.find(stage, name)
    if found is None:
        raise UnplacedCounter(f"counter `{name}` of `{stage}` has no slot in `{ARRAY}`")
    return found.index, f"counter `{name}`: `{ARRAY}[{found.index}]`, {found.slots} slot(s), scope {found.scope}"


def render_counters(
    array: CounterArray, functions: Sequence[HandleSpec], wait_lines: WaitRenderer | None = None
) -> list[str]:
    """The counter array and the counter function handles the components read (``wait_lines``: the
    watchdog's bounded wait body, :mod:`linker.watchdog`; None: :func:`plain_wait`)."""
    if array.size == 0:
        return []
    out = [
        "// Counters: the kernel's counter array (one 32-bit word per slot) and the counter handles.",
        f"// Reset: {RESET_RULE}.",
        'extern "C" {',
        f"__device__ __align__(128) unsigned {ARRAY}[{array.size}];",
    ]
    for c in array.counters:
        out.append(f"//   [{c.index}, {c.index + c.slots}) `{c.name}`, scope {c.scope}: {', '.join(c.users)}")
    render_wait = wait_lines or plain_wait
    for spec in functions:
        found = array.find(spec.stage, spec.item)
        if found is None:
            raise UnplacedCounter(f"counter `{spec.item}` of `{spec.stage}` has no slot in `{ARRAY}`")
        at = f"&{ARRAY}[{found.index}u + slot]"
        note = f"// {spec.stage}: counter `{found.name}` at [{found.index}], scope {found.scope}"
        if spec.kind == "counter_ptr":
            out.append(f"__device__ unsigned* {spec.symbol}() {{ return &{ARRAY}[{found.index}u]; }}  {note}")
        elif spec.kind == "counter_add":
            out += [
                f"__device__ void {spec.symbol}(unsigned slot, unsigned n) {{  {note}",
                f'    asm volatile("red.release.{found.scope}.global.add.u32 [%0], %1;" :: "l"({at}), "r"(n) '
                ': "memory");',
                "}",
            ]
        else:
            out += [
                f"__device__ void {spec.symbol}(unsigned slot, unsigned target) {{  {note}",
                *render_wait(spec, found),
                "}",
            ]
    out.append('}  // extern "C"')
    return out


def plain_wait(spec: HandleSpec, counter: CounterSlots) -> list[str]:
    """An unbounded acquire spin until the word reaches ``target``."""
    return [
        f"    const unsigned* word = &{ARRAY}[{counter.index}u + slot];",
        "    unsigned seen;",
        "    do {",
        f'        asm volatile("ld.acquire.{counter.scope}.global.u32 %0, [%1];" : "=r"(seen) : "l"(word) : "memory");',
        "    } while (seen < target);",
    ]


def _widest(scopes: Sequence[str | None]) -> str:
    known = [s for s in scopes if s in SCOPES]
    return max(known, key=SCOPES.index) if known else DEFAULT_SCOPE


def _endpoint(c: CounterUse) -> str:
    return f"{c.stage} role `{c.role}` {c.side}s"


def counter_functions(inputs: LinkInputs) -> list[HandleSpec]:
    """The counter function handles (address, add, wait) the components' objects read, in pipeline order."""
    found: dict[str, HandleSpec] = {}
    for stage in inputs.stages:
        for spec in stage.handles:
            if spec.kind in FUNCTION_KINDS:
                found.setdefault(spec.symbol, spec)
    return list(found.values())
