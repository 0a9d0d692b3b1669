"""The link audit: the constants that reached the linked code are the link map's.

After LTO every handle is folded into an immediate, so the linked PTX (nvJitLink
``-ptx``) shows the numbers the kernel will really use. The audit reads them with
the conformance analysis (checker/conformance, the shared-memory base counting as
offset 0) and proves, against the link record (``link.json``):

- **named barriers**: every ``bar``/``barrier`` ID is 0 or one the map assigned (a
  barrier claim's or rendezvous' ID handle, a tensor route's barrier), and a literal
  thread count is the map's for that ID (the block's for barrier 0);
- **register budgets**: the ``setmaxnreg`` operands are exactly the map's groups'
  (direction and budget);
- **ring barriers and depths**: the ``mbarrier.init`` sites initialise exactly the
  map's barriers — ``depth`` full and ``depth`` empty barriers of each ring, 8 bytes
  apart from the map's offsets — with the map's arrival counts;
- **dynamic shared memory**: every constant shared-memory offset lies below the
  map's dynamic size; ``.maxntid`` is the map's block size;
- **the cubin**: its SHA-256 is the one the map records, its kernel is the map's,
  with the map's thread bound and no static shared memory.

A disagreement is an ``L-LINK`` error carrying both values. A site whose constant
the analysis cannot see (a barrier ID computed at run time, an init loop the
compiler kept) is an ``I-AUDIT`` note (an error with ``strict``): unknown is never a
pass. ``kernlink link`` runs the audit on every link; ``kernlink audit DIR`` re-runs
it on a link's output directory.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from diagnostics.model import Diagnostic, Label, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code
from linker.cubin import read_cubin
from package.codefacts.ptx import Function, parse
from package.codefacts.values import Env, Val, analyse

CODE = Code.L_LINK
NOTE_CODE = Code.I_AUDIT
_BARRIER = re.compile(r"^(bar|barrier)(\.cta)?\.(sync|arrive|red)")


@dataclass(frozen=True)
class Audited:
    """What the audit proved (for the CLI's summary) and what it found."""

    proved: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


def audit(
    record: Mapping[str, Any],
    cubin: bytes | None,
    ptx: str,
    *,
    ptx_name: str = "kernel.ptx",
    map_name: str = "link.json",
    strict: bool = False,
) -> Audited:
    """Audit a link: its record (``link.json``'s object), cubin bytes and linked PTX."""
    proved: list[str] = []
    diags: list[Diagnostic] = []
    dispatch = record.get("dispatch") or {}
    generated = record.get("generated") or {}
    kernel = str(dispatch.get("kernel", "kl_dispatch"))
    lines = ptx.split("\n")

    def problem(message: str, line: int | None, *notes: str) -> None:
        diags.append(_diag(CODE, Severity.ERROR, message, ptx_name, map_name, lines, line, notes))

    def undecided(message: str, line: int | None) -> None:
        diags.append(
            _diag(
                CODE if strict else NOTE_CODE,
                Severity.ERROR if strict else Severity.NOTE,
                message,
                ptx_name,
                map_name,
                lines,
                line,
                ("the audit could not prove this site; it is not a pass",),
            )
        )

    module = parse(ptx)
    entry = module.function(kernel)
    if entry is None:
        problem(f"the linked PTX defines no kernel `{kernel}`", None)
        return Audited((), tuple(diags))
    smem = frozenset(d.name for d in module.shared if d.dynamic)
    envs = [
        (fn, analyse(fn, handle_names=frozenset(), smem_names=smem, entry_like=False, smem_offsets=True))
        for fn in module.functions
    ]
    for name, values, line in entry.directives:
        threads = int(dispatch.get("threads", 0))
        if name in ("maxntid", "reqntid") and _product(values) != threads:
            problem(
                f"the linked kernel carries `.{name} {', '.join(map(str, values))}`; the map launches "
                f"{threads} threads",
                line,
            )
    proved.append("block size")
    proved += _barriers(envs, dispatch, generated, problem, undecided)
    proved += _setmaxnreg(envs, dispatch, problem)
    proved += _mbarriers(envs, generated, problem, undecided)
    proved += _smem_bounds(envs, dispatch, problem)
    if cubin is not None:
        proved += _cubin(record, cubin, kernel, int(dispatch.get("threads", 0)), problem)
    return Audited(tuple(proved), tuple(diags))


def _product(values: tuple[int, ...]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _diag(
    code: str,
    severity: Severity,
    message: str,
    ptx_name: str,
    map_name: str,
    lines: list[str],
    line: int | None,
    notes: tuple[str, ...],
) -> Diagnostic:
    labels: tuple[Label, ...] = ()
    if line is not None and 0 < line <= len(lines):
        labels = (Label(Span(ptx_name, line, 1, line, max(len(lines[line - 1]), 1) + 1), "in the linked code"),)
    return Diagnostic(
        code,
        message,
        severity=severity,
        labels=labels,
        notes=(*notes, f"the link map: `{map_name}`"),
        helps=(
            "relink with `kernlink link`; if the audit still fails, report it: the linked code and the map disagree",
        )
        if severity is Severity.ERROR
        else (),
    )


def _sites(envs: list[tuple[Function, Env]], test: Any) -> Iterator[tuple[Function, Env, Any]]:
    for fn, env in envs:
        for ins in fn.body:
            if test(ins):
                yield fn, env, ins


def _barriers(
    envs: list[tuple[Function, Env]],
    dispatch: Mapping[str, Any],
    generated: Mapping[str, Any],
    problem: Any,
    undecided: Any,
) -> list[str]:
    threads: dict[int, set[int]] = {0: {int(dispatch.get("threads", 0))}}
    ids: dict[tuple[str, str], int] = {}
    counts: dict[tuple[str, str], int] = {}
    for h in generated.get("handles", []):
        key = (str(h.get("stage")), str(h.get("item")))
        if h.get("kind") == "bar_id":
            ids[key] = int(h["value"])
        elif h.get("kind") == "bar_threads":
            counts[key] = int(h["value"])
    for key, bid in ids.items():
        threads.setdefault(bid, set())
        if key in counts:
            threads[bid].add(counts[key])
    for t in generated.get("transfers", []):
        for bid in t.get("barrier_ids", []) or []:
            threads.setdefault(int(bid), set()).add(int(t.get("barrier_threads", 0)))
    for _fn, env, ins in _sites(envs, lambda i: _BARRIER.match(i.opcode) is not None):
        red = 1 if ".red" in ins.opcode else 0
        if len(ins.operands) <= red:
            continue
        ident = env.operand(ins.operands[red])
        if not ident.is_const or ident.const is None:
            undecided(f"the ID of `{ins.opcode}` in the linked code is not a constant", ins.line)
            continue
        if ident.const not in threads:
            assigned = ", ".join(str(i) for i in sorted(threads)) or "none"
            problem(f"the linked code syncs on named barrier {ident.const}; the map assigns {assigned}", ins.line)
            continue
        if red == 0 and len(ins.operands) > 1:
            count = env.operand(ins.operands[1])
            want = threads[ident.const]
            if count.is_const and want and count.const not in want:
                problem(
                    f"the linked code syncs {count.const} threads on barrier {ident.const}; the map says "
                    f"{' or '.join(map(str, sorted(want)))}",
                    ins.line,
                )
            elif not count.is_const:
                undecided(f"the thread count of `{ins.opcode}` on barrier {ident.const} is not a constant", ins.line)
    return ["named-barrier IDs and thread counts"]


def _setmaxnreg(envs: list[tuple[Function, Env]], dispatch: Mapping[str, Any], problem: Any) -> list[str]:
    want = {(str(g["op"]), int(g["budget"])) for g in dispatch.get("groups", []) if g.get("op")}
    seen: set[tuple[str, int]] = set()
    for _fn, env, ins in _sites(envs, lambda i: i.opcode.startswith("setmaxnreg")):
        op = "inc" if ".inc" in ins.opcode else "dec"
        val = env.operand(ins.operands[0]) if ins.operands else Val(unknown=True)
        if not val.is_const or val.const is None:
            problem(f"`{ins.opcode}` in the linked code has no constant operand", ins.line)
            continue
        seen.add((op, val.const))
        if (op, val.const) not in want:
            listed = ", ".join(f"{o} {b}" for o, b in sorted(want)) or "none"
            problem(f"the linked code runs `setmaxnreg.{op} {val.const}`; the map's budgets are {listed}", ins.line)
    for op, budget in sorted(want - seen):
        problem(f"the map sets a warpgroup's budget with `setmaxnreg.{op} {budget}`; the linked code never does", None)
    return ["register budgets (setmaxnreg operands)"]


def _mbarriers(
    envs: list[tuple[Function, Env]], generated: Mapping[str, Any], problem: Any, undecided: Any
) -> list[str]:
    rings: dict[tuple[str, str], dict[str, int]] = {}
    for h in generated.get("handles", []):
        kind = str(h.get("kind"))
        if kind in ("ring_full_bar", "ring_empty_bar", "ring_depth", "ring_full_count", "ring_empty_count"):
            rings.setdefault((str(h.get("stage")), str(h.get("item"))), {})[kind] = int(h["value"])
    expected: dict[int, tuple[str, int | None]] = {}
    counted: dict[tuple[int, int], dict[str, int]] = {}
    for _key, v in sorted(rings.items()):
        if "ring_full_bar" in v and "ring_empty_bar" in v and "ring_depth" in v:
            counted.setdefault((v["ring_full_bar"], v["ring_empty_bar"]), {}).update(v)
    for (full, empty), v in sorted(counted.items()):
        for i in range(v["ring_depth"]):
            expected[full + 8 * i] = (f"full barrier of slot {i} (depth {v['ring_depth']})", v.get("ring_full_count"))
            expected[empty + 8 * i] = (
                f"empty barrier of slot {i} (depth {v['ring_depth']})",
                v.get("ring_empty_count"),
            )
    # a stage's own mbarrier (e.g. the one a tcgen05.commit arrives on) lives at the start of
    # one of its shared-memory claims, addressed through the claim's handle; its arrival
    # count is the stage's own business (the ring protocol does not cover it)
    claims = {int(h["value"]) for h in generated.get("handles", []) if h.get("kind") == "smem"}
    seen: set[int] = set()
    complete = True
    for _fn, env, ins in _sites(envs, lambda i: i.opcode.startswith("mbarrier.init")):
        addr = env.address(ins.operands[0]) if ins.operands else Val(unknown=True)
        if addr.const is None or addr.unknown or addr.origins != frozenset({"smem"}):
            undecided(f"`{ins.opcode}` initialises a barrier whose offset is not a constant", ins.line)
            complete = False
            continue
        offset = addr.const
        seen.add(offset)
        if offset not in expected and offset in claims:
            continue
        if offset not in expected:
            problem(
                f"the linked code initialises an mbarrier at offset {offset}; the map places no ring "
                f"barrier there{_beyond(offset, rings)}",
                ins.line,
            )
            continue
        what, want = expected[offset]
        count = env.operand(ins.operands[1]) if len(ins.operands) > 1 else Val(unknown=True)
        if want is not None and count.is_const and count.const != want:
            problem(
                f"the linked code initialises the {what} at offset {offset} with {count.const} arrivals; "
                f"the map says {want}",
                ins.line,
            )
    if complete:
        for offset in sorted(set(expected) - seen):
            problem(
                f"the map places the {expected[offset][0]} at offset {offset}; the linked code never initialises it",
                None,
            )
    return ["ring barrier offsets, depths and arrival counts (other mbarriers: at a claim's first byte)"]


def _beyond(offset: int, rings: dict[tuple[str, str], dict[str, int]]) -> str:
    """Where an unexpected barrier offset falls: a slot past a ring's mapped depth (both depths in words)."""
    found: list[tuple[int, str, str, int]] = []
    for (_stage, ring), v in sorted(rings.items()):
        for kind in ("ring_full_bar", "ring_empty_bar"):
            base, depth = v.get(kind), v.get("ring_depth")
            if base is None or depth is None or offset < base or (offset - base) % 8:
                continue
            slot = (offset - base) // 8
            if depth <= slot < 256:
                found.append((slot, "full" if kind == "ring_full_bar" else "empty", ring, depth))
    if not found:
        return ""
    slot, which, ring, depth = min(found)  # the nearest base explains it
    return (
        f" (it is the {which} barrier of slot {slot} of ring `{ring}`: the code runs at least depth "
        f"{slot + 1}, the map's depth is {depth})"
    )


def _smem_bounds(envs: list[tuple[Function, Env]], dispatch: Mapping[str, Any], problem: Any) -> list[str]:
    size = int(dispatch.get("dynamic_smem", 0))
    for _fn, env, ins in _sites(envs, lambda i: i.has("shared") or i.opcode.startswith("mbarrier")):
        addr_text = next((o for o in ins.operands if o.startswith("[")), None)
        if addr_text is None:
            continue
        addr = env.address(addr_text)
        if (
            addr.const is not None
            and not addr.unknown
            and addr.origins == frozenset({"smem"})
            and (addr.const < 0 or addr.const >= size)
        ):
            problem(
                f"the linked code addresses shared memory at offset {addr.const}; the map's dynamic shared "
                f"memory is {size} bytes",
                ins.line,
            )
    return ["dynamic shared-memory size"]


def _cubin(record: Mapping[str, Any], cubin: bytes, kernel: str, threads: int, problem: Any) -> list[str]:
    want = (record.get("cubin") or {}).get("sha256")
    got = hashlib.sha256(cubin).hexdigest()
    if want != got:
        problem(f"`kernel.cubin` has SHA-256 {got[:16]}…; the map records {str(want)[:16]}…", None)
    try:
        info = read_cubin(cubin)
    except Exception as err:  # a tampered cubin may not even be ELF
        problem(f"`kernel.cubin` cannot be read: {err}", None)
        return []
    k = info.kernel(kernel)
    if k is None:
        problem(f"`kernel.cubin` has no kernel `{kernel}`; it has {', '.join(info.kernel_names) or 'none'}", None)
        return []
    if k.max_threads is not None and _product(k.max_threads) != threads:
        problem(f"the cubin bounds `{kernel}` to {_product(k.max_threads)} threads; the map launches {threads}", None)
    if k.static_smem:
        problem(f"the cubin gives `{kernel}` {k.static_smem} B of static shared memory; the map has none", None)
    return ["cubin hash, kernel, thread bound and static shared memory"]
