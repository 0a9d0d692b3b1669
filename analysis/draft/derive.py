"""A contract drafted from compiled code: every item the code shows, every value it cannot decide noted.

What the code decides (specs/draft.md has the table):

- the target (``.target``) and the features its instructions need;
- the roles: each role entry (a ``(params, smem)`` device function) and its name, from the
  ``kl_<stage>_<role>_warp0`` handle it reads; ``warpgroup`` where it runs ``wgmma``;
- the params struct of each entry, as the compiler laid it out (its debug information);
- each ring the code reads handles of, which side each role takes (a role that waits on
  the empty barrier and arrives on or copies into the full one produces; one that waits on
  the full barrier and releases the empty one consumes), the waits, the transaction bytes
  of its ``arrive.expect_tx``, the bytes of its bulk copies, the proxy its slots are written
  and read through, who initialises it and whether the init is fenced;
- the shared-memory claims it reads handles of, whether they are per slot, the bytes a
  constant-size copy (or the tensor copies that fill a slot) fills (8 for one mbarrier at its
  offset 0, where the code reaches it in no other way), and the uses its
  instructions show (bulk copy, TMA, ldmatrix, generic loads and stores, mbarriers, and the
  matrix descriptors of ``wgmma``/``tcgen05.mma`` with their swizzle), with the alignment
  where the code encodes it (a descriptor's swizzle, an mbarrier);
- named barriers (``bar.sync`` on a ``_bar_id`` handle) and who syncs on them;
- counters (a ``_counter_add`` or ``_counter_wait`` call and its constant amount);
- tensor exports and imports (an export made at most once per run: ``generation once``; the
  placement of an export of the one tensor-memory accumulator its role's ``tcgen05.mma`` writes),
  call trampolines and exported device functions, with the PTX types of their arguments
  where those are unambiguous, and ``converged, full_warps`` for a call every thread of the
  role makes together;
- a consumer's ``fence proxy_async`` before it releases slots it read generically;
- the arrival counts of the stage's own roles (:mod:`analysis.draft.threads`);
- for a one-unit kernel (a ``.entry``): a role per thread range its warp-index branches give a
  ``setmaxnreg`` (with that budget), the launch from its directives, literal named barriers,
  its mbarrier init counts and its ``.shared`` variables.

Everything else — a role's width and register budget, the launch, ring depths, arrival
counts a handle supplies, alignments, lifetimes, layout maps, facts' values — the
composition or its author decides: each is an :class:`~analysis.draft.model.Undecided`
with the PTX line that shows the item.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from analysis.draft.code import (
    TOOLKIT,
    Code,
    FunctionCode,
    Handle,
    Site,
    one_mbarrier,
    parse_handle,
    read,
    stage_prefix,
)
from analysis.draft.compose import CodeView, Composition, compose
from analysis.draft.model import Draft, Key, Layouts, StructLayout, Undecided
from analysis.draft.threads import ranges
from checker.storage import needed_alignment
from contract_lang import ast as A
from contract_lang.expr import Name
from hardware.targets import target as target_spec
from package.codefacts import derive
from package.codefacts.facts import longest_chain

#: The sites whose address is an mbarrier (a claim they address is `use mbarrier`).
_MBARRIER_OPS = ("init", "wait", "arrive", "expect", "credit")
#: PTX argument types with one contract type each (``b32`` could be ``u32``, ``i32`` or ``f32``).
_PTX_TYPES = {"f32": "f32", "f64": "f64", "u32": "u32", "s32": "i32", "u16": "u16"}
_PLACEHOLDER_TYPES = {"b32": "u32", "b64": "u64", "b16": "u16", "b8": "u8"}


def draft(
    ptx: str,
    *,
    layouts: Layouts | None = None,
    name: str | None = None,
    version: str | None = None,
    fallback_name: str = "component",
    ignore: frozenset[str] = frozenset(),
    composition: Composition | None = None,
) -> Draft:
    """The draft of the component whose PTX is ``ptx`` (module docstring).

    ``layouts``: the params structs the compiler laid out; ``name`` / ``version``: the stage's,
    when the author gives them (else placeholders, undecided); ``ignore``: functions to leave
    out (a params probe); ``composition``: the pipeline and its other stages, for what they decide
    (:mod:`analysis.draft.compose`).
    """
    built = _Builder(read(ptx, ignore=ignore), layouts or Layouts(), name, version, fallback_name)
    drafted = built.build()
    if composition is None:
        return drafted
    stage, notes, composed = compose(
        drafted.stage, drafted.undecided, composition, built.view(), built.sanitized, fallback_name
    )
    return Draft(stage, notes, composed)


@dataclass
class _Builder:
    code: Code
    layouts: Layouts
    name: str | None
    version: str | None
    fallback_name: str
    items: list[A.StageItem] = field(default_factory=list)
    notes: list[Undecided] = field(default_factory=list)

    # ------------------------------------------------------------------ the module's handles and functions

    def __post_init__(self) -> None:
        externs = self.code.externs
        names = [n for n in externs if n.startswith("kl_")]
        self.prefix = stage_prefix(names) or ""
        self.handles: dict[str, Handle] = {}
        for symbol in names:
            parsed = (
                parse_handle(symbol[len(self.prefix) :]) if self.prefix and symbol.startswith(self.prefix) else None
            )
            if parsed is not None:
                self.handles[symbol] = Handle(symbol, *parsed)
        self.rings = sorted({h.item for h in self.handles.values() if h.kind == "ring"})
        for symbol, h in list(self.handles.items()):  # `P_R_<claim>_smem`: slot storage of ring R
            ring = next((r for r in self.rings if h.kind == "smem" and h.item.startswith(r + "_")), None)
            if ring is not None:
                self.handles[symbol] = Handle(symbol, "ring-slot", ring, h.item[len(ring) + 1 :])
        self.sanitized = self.prefix[3:-1]
        self.hooks: dict[str, str] = {}  # init hook -> ring
        self.entries: list[str] = []
        self.exports: list[str] = []
        for fn in self.code.functions:
            decl = self.code.defined.get(fn.name)
            if decl is None or fn.name.startswith("kl_"):
                continue
            proto = decl.prototype
            ring = next((r for r in self.rings if fn.name == f"{self.sanitized}_{r}_init"), None)
            if ring is not None:
                self.hooks[fn.name] = ring
            elif proto.kind == "func" and proto.params == ("b64", "b64") and not proto.returns:
                self.entries.append(fn.name)
            elif proto.kind == "func":
                self.exports.append(fn.name)
        self.role_of: dict[str, str] = {}
        self.role_named: dict[str, bool] = {}
        warp0 = {h.symbol: h.item for h in self.handles.values() if h.kind == "role" and h.what == "warp0"}
        unclaimed = set(warp0.values())
        for entry in self.entries:
            found = sorted({warp0[c] for c in self._calls(entry) if c in warp0})
            if len(found) == 1:
                self.role_of[entry], self.role_named[entry] = found[0], True
                unclaimed.discard(found[0])
        for entry in self.entries:
            if entry not in self.role_of:
                lone = len(self.entries) - len(self.role_of) == 1 and len(unclaimed) == 1
                self.role_of[entry] = unclaimed.pop() if lone else _role_guess(entry)
                self.role_named[entry] = lone

    def _reach(self, fn: str) -> list[FunctionCode]:
        """``fn`` and every defined function it calls, transitively (what runs when it runs)."""
        seen: list[FunctionCode] = []
        todo = [fn]
        while todo:
            found = self.code.function(todo.pop())
            if found is None or found in seen:
                continue
            seen.append(found)
            todo.extend(c for c in found.calls if c in self.code.defined)
        return seen

    def _calls(self, fn: str) -> set[str]:
        return {c for f in self._reach(fn) for c in f.calls}

    def _sites(self, fn: str, *ops: str) -> list[Site]:
        return [s for f in self._reach(fn) for s in f.sites if not ops or s.op in ops]

    def _opcodes(self, fn: str) -> set[str]:
        return {o for f in self._reach(fn) for o in f.opcodes}

    def _handle(self, kind: str, item: str, what: str) -> str | None:
        return next(
            (h.symbol for h in self.handles.values() if (h.kind, h.item, h.what) == (kind, item, what)),
            None,
        )

    def _line(self, symbol: str | None) -> int:
        return self.code.line_of(symbol) if symbol else 0

    def undecided(self, key: Key, why: str, line: int, anchor: int | None = None) -> None:
        self.notes.append(Undecided(key, why, line, len(self.items) if anchor is None else anchor))

    def add(self, item: A.StageItem) -> int:
        self.items.append(item)
        return len(self.items) - 1

    # ------------------------------------------------------------------ the stage

    def build(self) -> Draft:
        name = self.name or (self.sanitized or self.fallback_name)
        if self.name is None:
            said = f" (its handles read `{self.prefix}…`, where `.` and `-` read as `_`)" if self.prefix else ""
            self.undecided(("stage", "name"), f"the stage's name{said}", 0)
        if self.version is None:
            self.undecided(("stage", "version"), "the stage's version", 0)
        if self.code.target is not None:
            self.add(A.Target(self.code.target))
        features = self._features()
        if features:
            self.add(A.Features(features))
        self._roles()
        self._kernels()
        self._params()
        self._claims()
        self._barriers()
        self._rings()
        self._counters()
        self._callables()
        self._tensors()
        self._facts()
        return Draft(A.Stage(name, self.version or "0.0.0", tuple(self.items)), tuple(self.notes))

    def view(self) -> CodeView:
        """What the composition pass reads of the code (analysis/draft/compose.py)."""
        modes: dict[str, frozenset[str]] = {}
        for name in sorted({h.item for h in self.handles.values() if h.kind == "barrier"}):
            bar_id = self._handle("barrier", name, "bar_id")
            modes[name] = frozenset(
                s.detail for e in self.entries for s in self._sites(e, "bar") if bar_id in s.handles
            )
        facts = frozenset(h.item for h in self.handles.values() if h.kind == "fact")
        ring_slots: dict[tuple[str, str], int] = {}  # (ring, claim) of each `P_R_<claim>_smem`/`_stride` read
        for h in sorted(self.handles.values(), key=lambda h: h.symbol):
            if h.kind == "ring-slot":
                ring_slots.setdefault((h.item, h.what), self._line(h.symbol))
        return CodeView(modes, facts, self._indexed_counters(), ring_slots)

    def _indexed_counters(self) -> dict[str, int]:
        """Each counter whose add or wait handle the code calls at a slot other than 0 (a run-time index or
        another constant), with the PTX line of the first such call: it needs a claim of several slots."""
        found: dict[str, int] = {}
        for name in sorted({h.item for h in self.handles.values() if h.kind == "counter"}):
            symbols = {self._handle("counter", name, what) for what in ("counter_add", "counter_wait")} - {None}
            calls = [s for e in self.entries for s in self._sites(e, "call") if s.detail in symbols]
            indexed = sorted(s.line for s in calls if not s.args or s.args[0] != 0)
            if indexed:
                found[name] = indexed[0]
        return found

    def _features(self) -> tuple[str, ...]:
        ops = {o for f in self.code.functions for o in f.opcodes}
        found: set[str] = set()
        checks: tuple[tuple[str, Callable[[str], bool]], ...] = (
            ("mbarrier", lambda o: o.startswith("mbarrier.")),
            ("tma", lambda o: o.startswith("cp.async.bulk.tensor")),
            ("tma_multicast", lambda o: o.startswith("cp.async.bulk.tensor") and "multicast" in o),
            ("cp_async_bulk", lambda o: o.startswith(("cp.async.bulk.", "cp.reduce.async.bulk")) and "tensor" not in o),
            ("wgmma", lambda o: o.startswith("wgmma.")),
            ("setmaxnreg", lambda o: o.startswith("setmaxnreg")),
            ("tcgen05", lambda o: o.startswith("tcgen05.")),
            # tcgen05.mma's accumulator is always in tensor memory
            ("tmem", lambda o: o.startswith(("tcgen05.alloc", "tcgen05.ld", "tcgen05.st", "tcgen05.mma"))),
            ("mma_sync", lambda o: o.startswith("mma.sync")),
            ("ldmatrix", lambda o: o.startswith("ldmatrix")),
            ("stmatrix", lambda o: o.startswith("stmatrix")),
            ("clusters", lambda o: o.startswith("barrier.cluster")),
            ("dsmem", lambda o: o.startswith("mapa")),
            ("multimem", lambda o: o.startswith("multimem.")),
        )
        for feature, test in checks:
            if any(test(o) for o in ops):
                found.add(feature)
        return tuple(f for f in A.FEATURES if f in found)

    # ------------------------------------------------------------------ roles and params

    def _roles(self) -> None:
        for entry in self.entries:
            role = self.role_of[entry]
            line = self._line(entry)
            if not self.role_named[entry]:
                self.undecided(("role", role, "name"), f"the name of the role entered at `{entry}`", line)
            ops = self._opcodes(entry)
            warpgroup = any(o.startswith("wgmma.") for o in ops)
            # a placeholder width (the least a role of its kind has), so that the arrivals its guards select
            # check against its own code
            self.undecided(("role", role, "warps"), f"role `{role}`'s width in warps", line)
            regs = self._handle("role", role, "regs")
            budget = f" (it reads `{regs}`)" if regs else ""
            self.undecided(("role", role, "regs"), f"role `{role}`'s register budget{budget}", line)
            if not warpgroup:
                self.undecided(("role", role, "warpgroup"), f"whether role `{role}` is warpgroup-aligned", line)
            self.add(A.Role(role, entry, 4 if warpgroup else 1, warpgroup=warpgroup))
        if self.entries:
            self.undecided(
                ("launch", "kind"),
                "the launch (kind, threads, blocks_per_sm): the composition's block, not this component's code",
                0,
            )

    def _kernels(self) -> None:
        """A one-unit kernel (``.entry``): its roles are the thread ranges its warp-index branches give each
        ``setmaxnreg``; its launch its directives; its named barriers and mbarrier inits their literals."""
        for fn in self.code.functions:
            if fn.kind != ".entry" or self.entries:
                continue
            parsed = self.code.module.function(fn.name)
            if parsed is None:
                continue
            line = self._line(fn.name)
            directives = {name: values for name, values, _ in parsed.directives}
            bounds = directives.get("reqntid") or directives.get("maxntid")
            threads = 1
            for v in bounds or (0,):
                threads *= v
            blocks = (directives.get("minnctapersm") or (None,))[0]
            budgets = [s for s in fn.sites if s.op == "setmaxnreg"]
            bars = [s for s in fn.sites if s.op == "bar" and s.value not in (None, 0)]
            found = ranges(parsed, self.code.ptx_lines, {s.line for s in (*budgets, *bars)}, threads)
            roles: dict[tuple[int, int], A.Role] = {}
            for site in budgets:
                span = found.get(site.line)
                if span is None or site.value is None:
                    self.undecided(("role", "?", "regs"), f"which threads run `setmaxnreg {site.value}`", site.line)
                    continue
                lo, hi = span
                name = f"wg{lo // 128}" if lo % 128 == 0 else f"warps{lo // 32}"
                aligned = lo % 128 == 0 and (hi - lo) % 128 == 0
                roles.setdefault(span, A.Role(name, None, (hi - lo) // 32, site.value, aligned))
            if not budgets and threads > 1:
                roles[(0, threads)] = A.Role("main", None, threads // 32, None, threads % 128 == 0)
            for span, role in sorted(roles.items()):
                self.undecided(
                    ("role", role.name, "name"),
                    f"the role of threads {span[0]}..{span[1] - 1} of `{fn.name}`: its name, and its code as an entry "
                    "`(const Params*, unsigned char* smem)`",
                    line,
                )
                self.add(role)
            if bounds:
                self.undecided(("launch", "kind"), "whether the launch is `fixed` or `persistent`", line)
                self.add(A.Launch("fixed", threads, blocks))
            for bar_id in sorted({s.value for s in bars if s.value is not None}):
                sites = [s for s in bars if s.value == bar_id]
                counts = {s.args[0] for s in sites if s.args}
                count = counts.pop() if len(counts) == 1 and None not in counts else None
                spans = [found.get(s.line) for s in sites]
                members = tuple(
                    r.name
                    for span, r in sorted(roles.items())
                    if any(x and span[0] <= x[0] and x[1] <= span[1] for x in spans)
                )
                self.undecided(
                    ("claim barrier", f"bar{bar_id}", "kind"),
                    f"named barrier {bar_id}: a literal ID; a component reads it from its claim's `_bar_id()` handle",
                    sites[0].line,
                )
                self.add(A.BarrierClaim(f"bar{bar_id}", members, count))
            for count in sorted({s.value for s in fn.sites if s.op == "init" and s.value is not None}):
                at = next(s.line for s in fn.sites if s.op == "init" and s.value == count)
                self.undecided(
                    ("ring", "?", "init"),
                    f"mbarriers initialised with {count} arrivals: a ring's `full init` or `empty init`",
                    at,
                )
            computed = [s for s in fn.sites if s.op == "bar" and s.value is None and not s.handles]
            if computed:
                self.undecided(
                    ("claim barrier", "?", "id"),
                    f"named barriers whose IDs the code computes ({len(computed)} sites, the first here)",
                    computed[0].line,
                )
            self._shared()

    def _shared(self) -> None:
        for decl in self.code.module.shared:
            align = re.search(r"\.align\s+(\d+)", self.code.ptx_lines[decl.line - 1])
            nbytes = None if decl.dynamic else decl.size
            if decl.dynamic:
                self.undecided(
                    ("claim smem", _plain(decl.name), "bytes"), f"the bytes of `{_plain(decl.name)}`", decl.line
                )
            self.add(A.SmemClaim(_plain(decl.name), nbytes, int(align.group(1)) if align else None))

    def _params(self) -> None:
        structs: dict[str, StructLayout] = {}
        kernels = [f.name for f in self.code.functions if f.kind == ".entry"] if not self.entries else []
        for fn in [*self.entries, *self.hooks, *kernels]:
            layout = self.layouts.of_entry(fn)
            if layout is not None:
                structs.setdefault(layout.name, layout)
            elif fn in self.entries and not structs:
                self.undecided(
                    ("params",), f"the params struct `{fn}` reads: the compiler gave no layout", self._line(fn)
                )
        for layout in structs.values():
            fields = []
            for f in layout.fields:
                if f.name.startswith("kl_"):
                    continue  # the padding `kernlink header` adds
                if f.type is None:
                    self._untyped(layout.name, f.name, f.size)
                fields.append(A.ParamField(f.name, f.type or _PLACEHOLDER_TYPES.get(f"b{8 * f.size}", "u8"), f.offset))
            self.undecided(("params", layout.name, "facts"), f"which fields of `{layout.name}` a fact fills", 0)
            self.add(A.Params(layout.name, layout.size, layout.align, tuple(fields)))

    def _untyped(self, struct: str, name: str, size: int) -> None:
        """A field with no contract scalar type; one of an inline tensor map's 128 bytes where the code
        copies tensors, with the first tensor copy's line (the language has no field type for it yet)."""
        why, line = f"the type of field `{name}`", 0
        copies = [k for k, row in enumerate(self.code.ptx_lines, start=1) if "cp.async.bulk.tensor" in row]
        if size == 128 and copies:
            why += " (128 bytes, an inline `CUtensorMap`'s size; the code's first tensor copy is here)"
            line = copies[0]
        self.undecided(("params", struct, name, "type"), why, line)

    # ------------------------------------------------------------------ claims

    def _claims(self) -> None:
        claims = sorted({h.item for h in self.handles.values() if h.kind == "smem"})
        for claim in claims:
            smem = self._handle("smem", claim, "smem")
            line = self._line(smem)
            stride = self._handle("smem", claim, "stride")
            per_slot = None
            if stride is not None:
                if len(self.rings) == 1:
                    per_slot = self.rings[0]
                else:
                    self.undecided(("claim smem", claim, "per_slot"), f"the ring whose slots `{claim}` holds", line)
            symbols = {s for s in (smem, stride) if s}
            copies = [s for e in self._all() for s in self._sites(e, "copy") if s.extra & symbols]
            tensor = [s for e in self._all() for s in self._sites(e, "tensor-copy") if s.extra & symbols]
            access = [s for e in self._all() for s in self._sites(e, "smem") if s.handles & symbols]
            descs = [s for e in self._all() for s in self._sites(e, "desc") if s.handles & symbols]
            barriers = [s for e in self._all() for s in self._sites(e, *_MBARRIER_OPS) if s.handles & symbols]
            sized = [s.value for s in copies if s.value is not None]
            nbytes = max(sized) if sized and len(sized) == len(copies) and not tensor else None
            if nbytes is None and tensor and not copies and per_slot is not None:
                nbytes = self._slot_fill(per_slot, symbols)
            if nbytes is None and stride is None and smem and barriers and not (copies or tensor or access or descs):
                # reached only as one mbarrier at the claim's offset 0: an mbarrier is an 8-byte object
                nbytes = 8 if one_mbarrier(self.code.module, smem) else None
            if nbytes is None:
                self.undecided(("claim smem", claim, "bytes"), f"the bytes of `{claim}`", line)
            self.undecided(("claim smem", claim, "lifetime"), f"the lifetime of `{claim}`", line)
            uses = {"bulk_copy"} if copies else set()
            if tensor:
                uses.add("tma")
            if any(s.detail.endswith("ldmatrix") for s in access):
                uses.add("ldmatrix")
            if any(s.detail in ("load:ld", "store:st") for s in access):
                uses.add("generic")
            if barriers:
                uses.add("mbarrier")
            swizzles = {s.value for s in descs}
            swizzle = swizzles.pop() if len(swizzles) == 1 else None
            if descs:
                uses.add("wgmma")
            if swizzle:
                uses.add(f"swizzle{swizzle}")
            if swizzle is None:
                self.undecided(
                    ("claim smem", claim, "use"),
                    f"uses of `{claim}` beyond what its instructions show (the swizzle a tensor map gives)",
                    line,
                )
            ordered = tuple(u for u in A.SMEM_USES if u in uses)
            align = self._alignment(ordered, swizzle is not None, {s.args[0] for s in descs if s.args})
            if align is None:
                spec = target_spec(self.code.target or "")
                least = needed_alignment(spec, ordered)[0] if spec is not None else 1
                bound = f" (its uses need at least {least})" if least > 1 else ""
                self.undecided(("claim smem", claim, "align"), f"the alignment of `{claim}`{bound}", line)
            self.add(A.SmemClaim(claim, nbytes, align, per_slot, uses=ordered))
        for claim in sorted({h.item for h in self.handles.values() if h.kind == "tmem"}):
            symbol = self._handle("tmem", claim, "tmem")
            line = self._line(symbol)
            columns = self._tmem_columns(symbol)
            if columns is None:
                self.undecided(("claim tmem", claim, "columns"), f"the tensor-memory columns of `{claim}`", line)
            self.add(A.TmemClaim(claim, columns))

    def _tmem_columns(self, symbol: str | None) -> int | None:
        """The columns of a tensor-memory claim whose only writer is ``tcgen05.mma`` (no ``tcgen05.st``/``cp``)
        with its accumulator at the claim's first column (the handle's value itself) and one constant
        instruction descriptor: M = 128 and an f32 accumulator (descriptor bits 24..28: M / 16; bits 4..5: 1)
        hold N columns (bits 17..22: N / 8); drafted where N is a power of two from 32 to 512 (what
        ``tcgen05.alloc`` takes). None: undecided."""
        ops = {o for f in self.code.functions for o in f.opcodes}
        if symbol is None or any(o.startswith(("tcgen05.st", "tcgen05.cp")) for o in ops):
            return None
        sites = [s for e in self._all() for s in self._sites(e, "tmem-mma")]
        mine = [s for s in sites if symbol in s.handles]
        if not mine or len(mine) != len(sites) or any(s.args != (1,) or ".cta_group::1." not in s.detail for s in mine):
            return None
        descs = {s.value for s in mine}
        if len(descs) != 1 or None in descs:
            return None
        idesc = descs.pop() or 0
        m, n, d_format = ((idesc >> 24) & 0x1F) << 4, ((idesc >> 17) & 0x3F) << 3, (idesc >> 4) & 3
        if m != 128 or d_format != 1 or n < 32 or n > 512 or n & (n - 1):
            return None
        return n

    def _slot_fill(self, ring: str, symbols: set[str]) -> int | None:
        """The bytes one slot of ``ring`` is filled with, when every copy completing on its full barrier is a
        tensor copy into the claim of ``symbols``: the transaction bytes that barrier expects, all copied when
        no ``mbarrier.complete_tx`` credits a part of them (None: undecided)."""
        full = self._handle("ring", ring, "full_bar")
        sites = [s for e in self._all() for s in self._sites(e) if full in s.handles]
        if any(s.op == "copy" or (s.op == "tensor-copy" and not s.extra & symbols) for s in sites):
            return None
        tx = {s.value for s in sites if s.op in ("arrive", "expect") and "expect_tx" in s.detail + s.op}
        return tx.pop() if len(tx) == 1 and None not in tx else None

    def _alignment(self, uses: tuple[str, ...], swizzle_known: bool, bases: set[int | None]) -> int | None:
        """The alignment the code itself encodes (None: undecided): a matrix descriptor's swizzle with base
        offset 0 places the tile at a swizzle-repeat boundary, an mbarrier is an 8-byte object. The other uses
        (copies, TMA, generic access) only bound it below; an author may align more."""
        spec = target_spec(self.code.target or "")
        if spec is None or not uses or not ((swizzle_known and bases == {0}) or set(uses) == {"mbarrier"}):
            return None
        if "generic" in uses or ("tma" in uses and not swizzle_known):
            return None
        return needed_alignment(spec, uses)[0]

    def _all(self) -> list[str]:
        return [*self.entries, *self.hooks, *self.exports]

    def _barriers(self) -> None:
        for name in sorted({h.item for h in self.handles.values() if h.kind == "barrier"}):
            bar_id = self._handle("barrier", name, "bar_id")
            line = self._line(bar_id)
            users = [e for e in self.entries if any(bar_id in s.handles for s in self._sites(e, "bar"))]
            roles = tuple(dict.fromkeys(self.role_of[e] for e in users))
            self.undecided(
                ("claim barrier", name, "kind"),
                f"whether `{name}` is this stage's `claim barrier` or a `rendezvous` with other stages",
                line,
            )
            self.add(A.BarrierClaim(name, roles))

    # ------------------------------------------------------------------ rings

    def _rings(self) -> None:
        for ring in self.rings:
            full = self._handle("ring", ring, "full_bar")
            empty = self._handle("ring", ring, "empty_bar")
            line = self._line(self._handle("ring", ring, "depth") or full or empty)
            slots = self._slot_handles(ring)
            hook = next((h for h, r in self.hooks.items() if r == ring), None)
            for entry in self.entries:
                self._ring_side(ring, entry, full, empty, slots, hook, line)

    def _slot_handles(self, ring: str) -> set[str]:
        """The handles that address ring ``ring``'s slots: its slot handles, or a claim per slot of it."""
        found = {h.symbol for h in self.handles.values() if h.kind == "ring-slot" and h.item == ring}
        if len(self.rings) == 1:
            found |= {
                h.symbol for h in self.handles.values() if h.kind == "smem" and self._handle("smem", h.item, "stride")
            }
        return found

    def _ring_side(
        self, ring: str, entry: str, full: str | None, empty: str | None, slots: set[str], hook: str | None, line: int
    ) -> None:
        role = self.role_of[entry]
        sites = self._sites(entry)
        calls = self._calls(entry)
        on_full = [s for s in sites if full and full in s.handles]
        on_empty = [s for s in sites if empty and empty in s.handles]
        full_wait = self._handle("ring", ring, "full_wait")
        empty_wait = self._handle("ring", ring, "empty_wait")
        waits_full = any(s.op == "wait" for s in on_full) or (full_wait in calls if full_wait else False)
        waits_empty = any(s.op == "wait" for s in on_empty) or (empty_wait in calls if empty_wait else False)
        fills = [s for s in on_full if s.op in ("arrive", "copy", "tensor-copy", "expect", "credit")]
        releases = [s for s in on_empty if s.op == "arrive"]
        produce = waits_empty or bool(fills)
        consume = waits_full or bool(releases)
        for side, yes in (("produce", produce), ("consume", consume)):
            if not yes:
                continue
            key = ("ring", ring, side)
            anchor = len(self.items)
            items: list[A.RingItem] = []
            self.undecided((*key, "depth"), f"ring `{ring}`'s depth range", line, anchor)
            if side == "produce":
                items.extend(self._produce(ring, key, role, hook, fills, waits_empty, slots, entry, anchor))
            else:
                items.extend(self._consume(ring, key, role, waits_full, releases, slots, entry, anchor))
            self.add(A.Ring(ring, side, role, tuple(items)))  # type: ignore[arg-type]

    def _arrival_count(self, ring: str, barrier: str) -> A.Count | None:
        """How many arrive on ``ring``'s ``barrier`` per phase, from the arrivals this stage's roles make:
        the full barrier's are its producer's, the empty one's its consumer's (None: undecided)."""
        symbol = self._handle("ring", ring, f"{barrier}_bar")
        terms: list[A.CountTerm] = []
        for entry in self.entries:
            sites = [s for s in self._sites(entry, "arrive") if symbol in s.handles]
            if not sites:
                continue
            count = _reach_count({s.reach for s in sites}, self.role_of[entry])
            if count is None:
                return None
            terms.extend(count.terms)
        return A.Count(tuple(terms)) if terms else None

    def _init_items(self, ring: str, key: Key, hook: str | None, tx: int | None, anchor: int) -> list[A.RingItem]:
        items: list[A.RingItem] = []
        if hook is None:
            return items
        inits = self._sites(hook, "init")
        barriers: tuple[A.BarrierKind, ...] = ("full", "empty")
        for barrier in barriers:
            symbol = self._handle("ring", ring, f"{barrier}_bar")
            counts = {s.value for s in inits if symbol in s.handles}
            at = next((s.line for s in inits if symbol in s.handles), self._line(hook))
            literal = counts.pop() if len(counts) == 1 and None not in counts else None
            count = _count(literal) if literal is not None else self._arrival_count(ring, barrier)
            if count is None:
                self.undecided(
                    (*key, f"{barrier} init", "count"), f"ring `{ring}`'s {barrier} arrival count", at, anchor
                )
            expect = tx if barrier == "full" else None
            items.append(A.RingBarrierInit(barrier, count or _count(1), expect))
        return items

    def _arrive(self, sites: list[Site], key: Key, role: str, barrier: str, ring: str, anchor: int) -> A.Count:
        """The count of the role's threads that reach these arrive sites (a placeholder and a note when undecided)."""
        count = _reach_count({s.reach for s in sites}, role)
        if count is None:
            self.undecided(
                (*key, f"{barrier} arrive", "count"),
                f"how many arrive on `{ring}`'s {barrier} barrier",
                sites[0].line,
                anchor,
            )
        return count or _count(1)

    def _produce(
        self,
        ring: str,
        key: Key,
        role: str,
        hook: str | None,
        fills: list[Site],
        waits_empty: bool,
        slots: set[str],
        entry: str,
        anchor: int,
    ) -> list[A.RingItem]:
        tx_values = {s.value for s in fills if s.op in ("arrive", "expect") and "expect_tx" in s.detail + s.op}
        tx = tx_values.pop() if len(tx_values) == 1 and None not in tx_values else None
        items = self._init_items(ring, key, hook, tx, anchor)
        if waits_empty:
            items.append(A.RingWait("empty"))
        arrives = [s for s in fills if s.op == "arrive"]
        if arrives:
            count = self._arrive(arrives, key, role, "full", ring, anchor)
            if tx is None and any("expect_tx" in s.detail for s in arrives):
                self.undecided((*key, "full arrive", "tx"), "the transaction bytes", arrives[0].line, anchor)
            items.append(A.RingArrive("full", count, tx))
        for site in fills:
            if site.op == "copy" and site.value is not None:
                items.append(A.RingCopy("full", site.value))
            elif site.op in ("copy", "tensor-copy"):
                what = (
                    "a tensor copy's bytes (its tensor map holds the box)" if site.op == "tensor-copy" else "the bytes"
                )
                self.undecided((*key, "full copy"), what, site.line, anchor)
        writes_async = any(s.op in ("copy", "tensor-copy") for s in fills)
        stores = [s for s in self._sites(entry, "smem") if s.handles & slots and s.detail.startswith("store")]
        if writes_async or stores:
            items.append(A.RingProxy("writes", "async" if writes_async else "generic"))
        if hook is not None:
            fenced = any(s.op == "fence" for s in self._sites(hook))
            if len(self.entries) > 1:
                self.undecided((*key, "init by"), f"which role's first thread runs `{hook}`", self._line(hook), anchor)
            items.append(A.RingInitBy(self.role_of[entry], fenced))
        return items

    def _consume(
        self,
        ring: str,
        key: Key,
        role: str,
        waits_full: bool,
        releases: list[Site],
        slots: set[str],
        entry: str,
        anchor: int,
    ) -> list[A.RingItem]:
        items: list[A.RingItem] = []
        if waits_full:
            items.append(A.RingWait("full"))
        loads = [s for s in self._sites(entry, "smem") if s.handles & slots and s.detail.startswith("load")]
        async_readers = any(o.startswith(("wgmma.mma_async", "tcgen05.mma")) for o in self._opcodes(entry))
        if loads:
            items.append(A.RingProxy("reads", "generic"))
        elif async_readers:
            items.append(A.RingProxy("reads", "async"))
        if releases:
            count = self._arrive(releases, key, role, "empty", ring, anchor)
            items.append(A.RingArrive("empty", count, lag=self._lag(entry, releases)))
        if loads and self._fenced_before(entry, releases):
            items.append(A.RingFence())
        return items

    def _lag(self, entry: str, releases: list[Site]) -> int | None:
        """How many k-steps a release lags (``lag L``): the releases the code runs after the innermost loop that
        releases, on one path (each holds back one slot of its last iterations; conformance's ring-step counts the
        same), or None when none follows the loop."""
        lines = {s.line for s in releases}
        facts = [f for f in derive("\n".join(self.code.ptx_lines)).facts if f.function == entry]
        arrives = [f for f in facts if f.kind == "arrive" and f.line in lines]
        inside = [f for f in arrives if f.loops]
        if not inside:
            return None
        loop = max(inside, key=lambda f: len(f.loops)).loops[-1]
        inside = [f for f in inside if loop in f.loops]
        after = [g for g in arrives if loop not in g.loops and any(g.order in f.reaches for f in inside)]
        return longest_chain(after) or None

    def _fenced_before(self, entry: str, releases: list[Site]) -> bool:
        """Whether a ``fence.proxy.async`` of ``entry``'s code comes before a release of the slots."""
        fences = [s.line for s in self._sites(entry, "fence") if s.detail.startswith("fence.proxy.async")]
        return any(f < r.line for f in fences for r in releases)

    # ------------------------------------------------------------------ counters, callables, tensors, facts

    def _counters(self) -> None:
        for name in sorted({h.item for h in self.handles.values() if h.kind == "counter"}):
            for what, side, op in (("counter_add", "produce", "add"), ("counter_wait", "consume", "wait_ge")):
                symbol = self._handle("counter", name, what)
                if symbol is None:
                    continue
                for entry in self.entries:
                    calls = [s for s in self._sites(entry, "call") if s.detail == symbol]
                    if not calls:
                        continue
                    key = ("counter", name, side)
                    amounts = {s.args[1] if len(s.args) > 1 else None for s in calls}
                    amount = amounts.pop() if len(amounts) == 1 else None
                    self.undecided((*key, "scope"), f"counter `{name}`'s scope", calls[0].line)
                    steps: tuple[A.CounterStep, ...] = ()
                    if amount is None:
                        self.undecided((*key, "step", "0"), f"the amount of `{symbol}`", calls[0].line)
                    else:
                        steps = (A.CounterStep(op, amount),)  # type: ignore[arg-type]
                    self.add(A.Counter(name, side, self.role_of[entry], steps=steps))  # type: ignore[arg-type]

    def _callables(self) -> None:
        for symbol in self.exports:
            fn = self.code.function(symbol)
            decl = self.code.defined[symbol]
            line = self._line(symbol)
            types = _own_types(fn, decl.prototype.params) if fn is not None else ()
            result = _own_result(fn) if fn is not None and decl.prototype.returns else "void"
            sig = self._signature(("export callable", symbol), types, result, line)
            guess = symbol.split("_", 1)[-1]
            self.undecided(("export callable", guess, "name"), f"the name `{symbol}` is exported under", line)
            self.undecided(("export callable", guess, "requires"), "what callers must guarantee", line)
            self.add(A.ExportCallable(guess, sig, symbol))
        for symbol, decl in sorted(self.code.externs.items()):
            if symbol in self.handles or symbol in TOOLKIT or decl.prototype.kind != "func":
                continue
            for entry in self.entries:
                calls = [s for s in self._sites(entry, "call") if s.detail == symbol]
                if not calls:
                    continue
                types = calls[0].types
                params = types[: types.index("->")] if "->" in types else types
                result = types[-1] if "->" in types else "void"
                line = calls[0].line
                sig = self._signature(("call", symbol), params, result, line)
                guess = re.sub(r"^kl_(call_)?", "", symbol)
                self.undecided(("call", guess, "name"), f"the callable `{symbol}` calls", line)
                # every thread of the role calls, all together: the role is whole warps, so full ones
                whole = all(s.reach == "per_thread" for s in calls)
                guarantees = ("converged", "full_warps") if whole else ()
                why = "what else the call site guarantees" if whole else "what the call site guarantees"
                self.undecided(("call", guess, "guarantees"), why, line)
                self.add(A.Call(guess, sig, symbol, self.role_of[entry], guarantees=guarantees))

    def _signature(self, key: Key, params: Iterable[str], result: str, line: int) -> A.Signature:
        def one(ptx: str) -> str:
            if ptx in _PTX_TYPES:
                return _PTX_TYPES[ptx]
            self.undecided((*key, "signature"), f"a `.{ptx}` argument or result's type", line)
            return _PLACEHOLDER_TYPES.get(ptx, "u32")

        shown = tuple(one(p) for p in params)
        return A.Signature(shown, "void" if result == "void" else one(result))

    def _tensors(self) -> None:
        for h in sorted(self.handles.values(), key=lambda h: (h.kind, h.item)):
            if h.kind not in ("export", "import"):
                continue
            callers = [e for e in self.entries if h.symbol in self._calls(e)]
            if not callers:
                continue
            role = self.role_of[callers[0]]
            line = self._line(h.symbol)
            key = (f"{h.kind} tensor", h.item)
            self.undecided((*key, "elem"), "the element type (the handle moves bits)", line)
            self.undecided((*key, "tile"), "the tile", line)
            if h.kind == "export":
                placement = self._tmem_placement(callers[0])
                if placement is None:
                    self.undecided((*key, "placement"), "the placement (which thread holds which element)", line)
                self.undecided((*key, "ready"), "the ready event", line)
                own = self.code.function(callers[0])
                sites = [s for s in (own.sites if own else ()) if s.op == "call" and s.detail == h.symbol]
                # each run of the role exports at most once: one generation per kernel (else undecided)
                once = len(callers) == 1 and bool(sites) and all(s.once for s in sites)
                if not once:
                    self.undecided((*key, "generation"), "the generation (the export may be made more than once)", line)
                self.add(A.ExportTensor(h.item, role, generation="once" if once else None, placement=placement))
            else:
                self.undecided((*key, "from"), "the export it imports", line)
                self.undecided((*key, "demand"), "the demand map and its chunks", line)
                self.undecided((*key, "lends"), "what it lends a route, and its done event", line)
                self.add(A.ImportTensor(h.item, h.item, role))

    def _tmem_placement(self, entry: str) -> A.LayoutMap | None:
        """An export's placement where its tile is the accumulator of the stage's one tensor-memory claim: the
        claim's columns are drafted (its only writer is ``tcgen05.mma.cta_group::1`` with M = 128 and an f32
        accumulator at the claim's first column, :meth:`_tmem_columns`), and every such MMA runs in the
        exporting role. M = 128 on one CTA puts row m at lane m and column n at the accumulator's column n
        (PTX ISA, tcgen05 data-path layout D). None: undecided."""
        claims = sorted({h.item for h in self.handles.values() if h.kind == "tmem"})
        if len(claims) != 1:
            return None
        symbol = self._handle("tmem", claims[0], "tmem")
        columns = self._tmem_columns(symbol)
        every = [s for e in self._all() for s in self._sites(e, "tmem-mma")]
        mine = self._sites(entry, "tmem-mma")
        if columns is None or not mine or len(mine) != len(every):
            return None
        return A.LayoutMap(
            "tmem",
            (A.MapParam("lane", 128), A.MapParam("col", columns)),
            ("m", "n"),
            (A.MapAssign("m", Name("lane")), A.MapAssign("n", Name("col"))),
        )

    def _facts(self) -> None:
        for h in sorted(self.handles.values(), key=lambda h: h.item):
            if h.kind == "fact":
                self.undecided(
                    ("fact", h.item, "owns"),
                    f"fact `{h.item}` (read through `{h.symbol}`): owned, used or assumed, its type and value",
                    self._line(h.symbol),
                )


def _plain(symbol: str) -> str:
    """A C++ name's last component (``_ZN2gs8smem_rawE`` -> ``smem_raw``); other names as they are."""
    if not symbol.startswith("_ZN"):
        return symbol
    parts, rest = [], symbol[3:]
    while rest and rest[0].isdigit():
        digits = re.match(r"\d+", rest)
        assert digits is not None
        size = int(digits.group(0))
        start = len(digits.group(0))
        parts.append(rest[start : start + size])
        rest = rest[start + size :]
    return parts[-1] if parts and rest == "E" else symbol


def _count(n: int) -> A.Count:
    return A.Count((A.CountTerm(n, "one"),))


def _reach_count(reached: set[str | None], role: str) -> A.Count | None:
    """One count for arrive sites that all reach the same threads of ``role`` (None: undecided or mixed)."""
    if len(reached) != 1:
        return None
    only = next(iter(reached))
    if only is None:
        return None
    if only == "one":
        return _count(1)
    unit: Literal["per_warp", "per_thread", "per_warpgroup"] = (
        "per_warp" if only == "per_warp" else "per_warpgroup" if only == "per_warpgroup" else "per_thread"
    )
    return A.Count((A.CountTerm(1, unit, role),))


def _role_guess(entry: str) -> str:
    base = re.sub(r"_main$", "", entry)
    return base.rsplit("_", 1)[-1] or base


def _own_types(fn: FunctionCode, slots: tuple[str, ...]) -> tuple[str, ...]:
    """A function's parameter types as its body reads them (``ld.param.f32``), else its PTX slots'."""
    read = dict(fn.param_types)
    return tuple(read.get(f"{fn.name}_param_{i}") or slot for i, slot in enumerate(slots))


def _own_result(fn: FunctionCode) -> str:
    return fn.result_type or "b32"
