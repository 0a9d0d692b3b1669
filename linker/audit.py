"""The link audit: what the linked code does with the kernel's resources is what the link map placed.

After LTO every handle is folded into an immediate, so the linked PTX (nvJitLink ``-ptx``)
shows the numbers the kernel will really use. The audit reads them with the code-facts
value analysis (package/codefacts, the shared-memory base counting as offset 0) and proves,
against the link record (``link.json``):

- **named barriers**: every ``bar``/``barrier`` ID is 0 or one the map assigned (a barrier
  claim's or rendezvous' ID handle, a tensor route's barrier), and a literal thread count is
  the map's for that ID (the block's for barrier 0);
- **register budgets**: the ``setmaxnreg`` operands are exactly the map's groups' (direction
  and budget);
- **ring barriers and depths**: the ``mbarrier.init`` sites initialise exactly the map's
  barriers — ``depth`` full and ``depth`` empty barriers of each ring, 8 bytes apart from the
  map's offsets — with the map's arrival counts;
- **shared memory**: every constant shared-memory offset lies below the map's dynamic size
  and inside a claim the map placed; ``.maxntid`` is the map's block size;
- **bulk copies**: a copy of a constant size into shared memory fits the piece it lands in (a
  ring slot, a claim): when its destination is a constant, that claim or slot; otherwise the
  largest piece the map places — so code that copies 32 KiB per fill into a ring the map laid
  out with 1 KiB slots fails;
- **params**: every ``ld.param`` of the kernel's params block reads whole fields of the map's
  layout (starts and ends on a field's bounds), the fields lie inside their regions and the
  block without overlapping, one fact has one value in every field and fact handle, and the
  cubin's kernel takes a params block of the map's size;
- **the C launcher**: ``kernel.h``, when the caller gives it (``kernlink audit DIR``), is the
  header this map and cubin give (linker/host_header.py), so the offsets and fact values it
  writes are the map's;
- **the cubin**: its SHA-256 is the one the map records, its kernel is the map's, with the
  map's thread bound and no static shared memory.

Each disagreement is a typed :class:`checker.clauses.l_link.AuditFinding`, worded there as
an ``L-LINK`` error carrying both values. A site whose value the analysis cannot see (a
barrier ID computed at run time, an init loop the compiler kept) is an ``I-AUDIT`` note (an
error with ``strict``): unknown is never a pass. The record is data from outside: its shape
(:data:`LINK_RECORD`) is checked before any field is used, and a record of another shape is
refused whole. ``kernlink link`` runs the audit on every link; ``kernlink audit DIR`` re-runs
it on a link's output directory.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checker.clauses import l_link
from checker.clauses.l_link import AuditCase, AuditFinding
from diagnostics.model import Diagnostic
from linker.artifacts import TMEM_SLOT_BYTES
from package.codefacts.ptx import Function, Instr, parse
from package.codefacts.values import Env, Val, analyse
from package.kpkg import check_limits
from package.schema import AnyValue, Arr, Int, Maybe, Obj, Str, validate
from toolchain.cubin import read_cubin

_BARRIER = re.compile(r"^(bar|barrier)(\.cta)?\.(sync|arrive|red)")
_BULK_COPY = re.compile(r"^cp\.async\.bulk\.shared::(cta|cluster)\.global\b")
_PARAM_ADDRESS = re.compile(r"^\[\s*([%\w$]+)\s*(?:\+\s*(-?\d+))?\s*\]$")
_WIDTH = {"8": 1, "16": 2, "32": 4, "64": 8}
#: The deepest ring a record may hold (the language allows depths up to 256): deeper is not a record.
MAX_DEPTH = 256

_U32, _U64 = Int(0, 2**32 - 1), Int(-(2**63), 2**64 - 1)
_NAME = Str(4096)
#: The fields of ``link.json`` the audit reads, and their shapes (other fields are not read).
LINK_RECORD = Obj(
    required={
        "status": Str(64),
        "cubin": Obj(required={"sha256": Maybe(Str(64))}),
        "dispatch": Obj(
            required={"kernel": _NAME, "threads": _U32, "dynamic_smem": _U32},
            optional={
                "smem_base": _U32,
                "groups": Arr(Obj(required={"budget": _U32}, optional={"op": Maybe(Str(8))}), 1024),
            },
        ),
        "generated": Obj(
            optional={
                "handles": Arr(
                    Obj(required={"kind": Str(64), "value": _U64}, optional={"stage": Maybe(_NAME), "item": _NAME})
                ),
                "transfers": Arr(
                    Obj(optional={"barrier_ids": Maybe(Arr(_U32, 1024)), "barrier_threads": Maybe(_U32)}),
                ),
            }
        ),
    },
    optional={
        "params": Obj(
            required={"size": _U32},
            optional={
                "fields": Arr(
                    Obj(
                        required={"name": _NAME, "offset": _U32, "size": _U32},
                        optional={
                            "stage": Maybe(_NAME),
                            "block": Maybe(_NAME),
                            "fact": Maybe(_NAME),
                            "source": Maybe(Str(64)),
                            "value": AnyValue(),
                        },
                    )
                ),
                "regions": Arr(Obj(required={"offset": _U32, "size": _U32}, optional={"block": Maybe(_NAME)})),
            },
        ),
        "placement": Obj(
            optional={
                "domains": Obj(
                    optional={
                        "smem": Obj(
                            optional={
                                "claims": Arr(
                                    Obj(
                                        required={"offset": _U32, "size": _U32},
                                        optional={"name": _NAME, "demand": _U32, "kind": Str(64), "owner": _NAME},
                                    )
                                )
                            }
                        ),
                        "tmem": Obj(optional={"claims": Arr(AnyValue())}),
                    }
                )
            }
        ),
    },
)


@dataclass(frozen=True)
class Audited:
    """What the audit proved (keys of :data:`checker.clauses.l_link.AUDIT_PROVED`) and what it found."""

    proved: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


def decode_record(data: bytes, name: str) -> dict[str, Any] | Diagnostic:
    """``link.json``'s bytes as a record of :data:`LINK_RECORD`'s shape, or the L-LINK refusal."""
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_no_constant, parse_int=_bounded_int)
    except RecursionError:
        return l_link.not_a_record(name, "deep")
    except (UnicodeDecodeError, ValueError) as err:
        return l_link.not_a_record(name, "json", str(err))
    if not isinstance(value, dict):
        return l_link.not_a_record(name, "shape", "`link.json` is not a JSON object")
    problem = check_limits(value) or validate(value, LINK_RECORD, "link.json")
    if problem is not None:
        return l_link.not_a_record(name, "shape", problem)
    return _too_deep(value, name) or value


def _too_deep(record: Mapping[str, Any], name: str) -> Diagnostic | None:
    """A ring depth no ring has (the audit lays out every slot of every ring)."""
    depth = max(
        (int(h["value"]) for h in record["generated"].get("handles", []) if h["kind"] == "ring_depth"), default=0
    )
    return l_link.not_a_record(name, "depth", str(depth)) if depth > MAX_DEPTH else None


def _no_constant(token: str) -> Any:
    raise ValueError(token)


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 20:
        raise ValueError(text[:24])
    return int(text)


def audit(
    record: Mapping[str, Any],
    cubin: bytes | None,
    ptx: str,
    *,
    ptx_name: str = "kernel.ptx",
    map_name: str = "link.json",
    strict: bool = False,
    header: tuple[str, str | None] | None = None,
) -> Audited:
    """Audit a link: its record (``link.json``'s object), cubin bytes and linked PTX.

    ``header``: (display name, text or None when absent) of the directory's ``kernel.h``,
    compared with the header this record and cubin give; None: not audited (the link itself
    writes the header from this record after the audit).
    """
    record = json.loads(json.dumps(record))  # the record as `link.json` holds it (the linker's has tuples)
    problem = check_limits(record) or validate(record, LINK_RECORD, "link.json")
    refused = l_link.not_a_record(map_name, "shape", problem) if problem is not None else _too_deep(record, map_name)
    if refused is not None:
        return Audited((), (refused,))
    audit_ = _Audit(record, ptx, ptx_name)
    proved = audit_.run(cubin, header)
    return Audited(
        tuple(proved), tuple(l_link.audit_diagnostic(f, map_name=map_name, strict=strict) for f in audit_.found)
    )


class _Audit:
    """One audit: the record, the linked PTX analysed once, and the findings so far."""

    def __init__(self, record: Mapping[str, Any], ptx: str, ptx_name: str) -> None:
        self.record = record
        self.dispatch: Mapping[str, Any] = record["dispatch"]
        self.generated: Mapping[str, Any] = record["generated"]
        self.handles: list[Mapping[str, Any]] = list(self.generated.get("handles", []))
        self.kernel = str(self.dispatch["kernel"])
        self.threads = int(self.dispatch["threads"])
        self.ptx_name = ptx_name
        self.lines = ptx.split("\n")
        self.module = parse(ptx)
        smem = frozenset(d.name for d in self.module.shared if d.dynamic)
        self.envs = [
            (fn, analyse(fn, handle_names=frozenset(), smem_names=smem, entry_like=False, smem_offsets=True))
            for fn in self.module.functions
        ]
        self.found: list[AuditFinding] = []

    def at(self, line: int | None) -> tuple[str, int, int] | None:
        if line is None or not 0 < line <= len(self.lines):
            return None
        return (self.ptx_name, line, len(self.lines[line - 1]))

    def add(self, case: AuditCase, line: int | None = None, *, undecided: bool = False, **facts: object) -> None:
        self.note(case, line, facts, undecided)

    def note(self, case: AuditCase, line: int | None, facts: Mapping[str, object], undecided: bool = False) -> None:
        self.found.append(AuditFinding(case, tuple((k, str(v)) for k, v in facts.items()), self.at(line), undecided))

    def run(self, cubin: bytes | None, header: tuple[str, str | None] | None) -> list[str]:
        entry = self.module.function(self.kernel)
        if entry is None:
            self.add("no-kernel", kernel=self.kernel)
            return []
        for name, values, line in entry.directives:
            if name in ("maxntid", "reqntid") and _product(values) != self.threads:
                self.add("block-size", line, directive=name, values=", ".join(map(str, values)), threads=self.threads)
        self._barriers()
        self._setmaxnreg()
        self._mbarriers()
        self._smem()
        self._copies()
        self._params(entry)
        proved = ["block-size", "barriers", "setmaxnreg", "mbarriers", "smem", "copies", "params"]
        if header is not None:
            self._header(cubin, *header)
            proved.append("header")
        if cubin is not None and self._cubin(cubin):
            proved.append("cubin")
        return proved

    def sites(self, test: Any) -> Iterator[tuple[Function, Env, Instr]]:
        for fn, env in self.envs:
            for ins in fn.body:
                if test(ins):
                    yield fn, env, ins

    # ------------------------------------------------------------- barriers and budgets

    def _barriers(self) -> None:
        threads: dict[int, set[int]] = {0: {self.threads}}
        ids: dict[tuple[str, str], int] = {}
        counts: dict[tuple[str, str], int] = {}
        for h in self.handles:
            key = (str(h.get("stage")), str(h.get("item")))
            if h["kind"] == "bar_id":
                ids[key] = int(h["value"])
            elif h["kind"] == "bar_threads":
                counts[key] = int(h["value"])
        for key, bid in ids.items():
            threads.setdefault(bid, set())
            if key in counts:
                threads[bid].add(counts[key])
        for t in self.generated.get("transfers", []):
            for bid in t.get("barrier_ids") or []:
                threads.setdefault(int(bid), set()).add(int(t.get("barrier_threads") or 0))
        for _fn, env, ins in self.sites(lambda i: _BARRIER.match(i.opcode) is not None):
            red = 1 if ".red" in ins.opcode else 0
            if len(ins.operands) <= red:
                continue
            ident = env.operand(ins.operands[red])
            if not ident.is_const or ident.const is None:
                self.add("barrier-id-unknown", ins.line, undecided=True, opcode=ins.opcode)
                continue
            if ident.const not in threads:
                assigned = ", ".join(str(i) for i in sorted(threads)) or "none"
                self.add("barrier-unassigned", ins.line, id=ident.const, assigned=assigned)
                continue
            if red == 0 and len(ins.operands) > 1:
                count = env.operand(ins.operands[1])
                want = threads[ident.const]
                if count.is_const and want and count.const not in want:
                    wanted = " or ".join(map(str, sorted(want)))
                    self.add("barrier-threads", ins.line, count=count.const, id=ident.const, want=wanted)
                elif not count.is_const:
                    self.add("barrier-threads-unknown", ins.line, undecided=True, opcode=ins.opcode, id=ident.const)

    def _setmaxnreg(self) -> None:
        want = {(str(g["op"]), int(g["budget"])) for g in self.dispatch.get("groups", []) if g.get("op")}
        seen: set[tuple[str, int]] = set()
        for _fn, env, ins in self.sites(lambda i: i.opcode.startswith("setmaxnreg")):
            op = "inc" if ".inc" in ins.opcode else "dec"
            val = env.operand(ins.operands[0]) if ins.operands else Val(unknown=True)
            if not val.is_const or val.const is None:
                self.add("setmaxnreg-unknown", ins.line, opcode=ins.opcode)
                continue
            seen.add((op, val.const))
            if (op, val.const) not in want:
                listed = ", ".join(f"{o} {b}" for o, b in sorted(want)) or "none"
                self.add("setmaxnreg-unmapped", ins.line, op=op, value=val.const, listed=listed)
        for op, budget in sorted(want - seen):
            self.add("setmaxnreg-missing", op=op, budget=budget)

    # ------------------------------------------------------------- ring barriers

    def _rings(self) -> dict[tuple[str, str], dict[str, int]]:
        rings: dict[tuple[str, str], dict[str, int]] = {}
        for h in self.handles:
            kind = str(h["kind"])
            if kind in ("ring_full_bar", "ring_empty_bar", "ring_depth", "ring_full_count", "ring_empty_count"):
                rings.setdefault((str(h.get("stage")), str(h.get("item"))), {})[kind] = int(h["value"])
        return rings

    def _mbarriers(self) -> None:
        rings = self._rings()
        expected: dict[int, tuple[str, int, int, int | None]] = {}  # offset -> (which, slot, depth, count)
        counted: dict[tuple[int, int], dict[str, int]] = {}
        for _key, v in sorted(rings.items()):
            if "ring_full_bar" in v and "ring_empty_bar" in v and "ring_depth" in v:
                counted.setdefault((v["ring_full_bar"], v["ring_empty_bar"]), {}).update(v)
        for (full, empty), v in sorted(counted.items()):
            for i in range(v["ring_depth"]):
                expected[full + 8 * i] = ("full", i, v["ring_depth"], v.get("ring_full_count"))
                expected[empty + 8 * i] = ("empty", i, v["ring_depth"], v.get("ring_empty_count"))
        # a stage's own mbarrier (e.g. the one a tcgen05.commit arrives on) lives at the start of
        # one of its shared-memory claims, addressed through the claim's handle; its arrival
        # count is the stage's own business (the ring protocol does not cover it)
        claims = {int(h["value"]) for h in self.handles if h["kind"] == "smem"}
        seen: set[int] = set()
        complete = True
        for _fn, env, ins in self.sites(lambda i: i.opcode.startswith("mbarrier.init")):
            addr = env.address(ins.operands[0]) if ins.operands else Val(unknown=True)
            if addr.const is None or addr.unknown or addr.origins != frozenset({"smem"}):
                self.add("mbarrier-unknown", ins.line, undecided=True, opcode=ins.opcode)
                complete = False
                continue
            offset = addr.const
            seen.add(offset)
            if offset not in expected and offset in claims:
                continue
            if offset not in expected:
                self.note("mbarrier-unmapped", ins.line, {"offset": offset, **_beyond(offset, rings)})
                continue
            which, slot, depth, want = expected[offset]
            count = env.operand(ins.operands[1]) if len(ins.operands) > 1 else Val(unknown=True)
            if want is not None and count.is_const and count.const != want:
                self.add(
                    "mbarrier-count",
                    ins.line,
                    which=which,
                    slot=slot,
                    depth=depth,
                    offset=offset,
                    count=count.const,
                    want=want,
                )
        if complete:
            for offset in sorted(set(expected) - seen):
                which, slot, depth, _ = expected[offset]
                self.add("mbarrier-missing", which=which, slot=slot, depth=depth, offset=offset)

    # ------------------------------------------------------------- shared memory and copies

    def _claims(self) -> list[tuple[int, int, int, str]]:
        """The map's shared-memory claims as (start, end, piece, name), offsets from the dynamic base;
        ``piece``: a slot's bytes for a ring's slots, the claim's size otherwise. With tensor-memory
        claims the dispatch kernel's own word, the one ``tcgen05.alloc`` writes the allocation to, is
        the last :data:`linker.artifacts.TMEM_SLOT_BYTES` of the dynamic shared memory."""
        base = int(self.dispatch.get("smem_base", 0))
        domains = (self.record.get("placement") or {}).get("domains") or {}
        found = []
        for c in (domains.get("smem") or {}).get("claims") or []:
            start = int(c["offset"]) - base
            piece = int(c.get("demand", c["size"])) if c.get("kind") == "slots" else int(c["size"])
            found.append((start, start + int(c["size"]), piece, str(c.get("name", "?"))))
        if (domains.get("tmem") or {}).get("claims"):
            end = int(self.dispatch["dynamic_smem"])
            found.append((end - TMEM_SLOT_BYTES, end, TMEM_SLOT_BYTES, "tcgen05.alloc"))
        return found

    def _smem(self) -> None:
        size = int(self.dispatch["dynamic_smem"])
        claims = self._claims()
        for _fn, env, ins in self.sites(lambda i: i.has("shared") or i.opcode.startswith("mbarrier")):
            addr_text = next((o for o in ins.operands if o.startswith("[")), None)
            if addr_text is None:
                continue
            addr = env.address(addr_text)
            if addr.const is None or addr.unknown or addr.origins != frozenset({"smem"}):
                continue
            if addr.const < 0 or addr.const >= size:
                self.add("smem-bounds", ins.line, offset=addr.const, size=size)
            elif claims and not any(start <= addr.const < end for start, end, _, _ in claims):
                self.add("smem-unclaimed", ins.line, offset=addr.const, width=_width(ins.opcode))

    def _copies(self) -> None:
        claims = self._claims()
        if not claims:
            return
        largest = max(claims, key=lambda c: (c[2], c[3]))
        for _fn, env, ins in self.sites(lambda i: _BULK_COPY.match(i.opcode) is not None):
            if len(ins.operands) < 3:
                continue
            size = env.operand(ins.operands[2])
            if not size.is_const or size.const is None:
                continue  # a size from the params or a tensor map: the ring's expect-tx bounds it (L-CONFORM)
            dst = env.address(ins.operands[0])
            if dst.const is not None and not dst.unknown and dst.origins == frozenset({"smem"}):
                home = next((c for c in claims if c[0] <= dst.const < c[1]), None)
                if home is not None:
                    end = home[1] if home[2] == home[1] - home[0] else _slot_end(home, dst.const)
                    if dst.const + size.const > end:
                        self.add("copy-overrun", ins.line, bytes=size.const, offset=dst.const, claim=home[3], end=end)
                    continue
            if size.const > largest[2]:
                self.add("copy-size", ins.line, bytes=size.const, largest=largest[2], claim=largest[3])

    # ------------------------------------------------------------- params

    def _params(self, entry: Function) -> None:
        params = self.record.get("params")
        if params is None:
            return
        size = int(params["size"])
        fields = [(int(f["offset"]), int(f["offset"]) + int(f["size"]), f) for f in params.get("fields", [])]
        regions = [(int(r["offset"]), int(r["offset"]) + int(r["size"])) for r in params.get("regions", [])]
        for start, end, f in fields:
            where = {"field": f["name"], "stage": f.get("stage") or "?", "start": start, "end": end, "size": size}
            if end > size:
                self.note("params-layout", None, {**where, "problem": "past"})
            elif regions and not any(a <= start and end <= b for a, b in regions):
                self.note("params-layout", None, {**where, "problem": "region"})
            else:
                other = next((g for s, e, g in fields if g is not f and s < end and start < e), None)
                if other is not None:
                    self.note("params-layout", None, {**where, "problem": "overlap", "other": other["name"]})
        starts = {s for s, _, _ in fields}
        ends = {e for _, e, _ in fields}
        for line, offset, width in _param_reads(entry):
            if offset not in starts or offset + width not in ends:
                self.add("params-load", line, offset=offset, width=width)
        self._facts(fields)

    def _facts(self, fields: Sequence[tuple[int, int, Mapping[str, Any]]]) -> None:
        """One fact, one value: in every params field that carries it and in its fact handles."""
        first: dict[str, tuple[object, tuple[str, str, str]]] = {}
        carried = [
            (str(f["fact"]), f.get("value"), ("field", str(f["name"]), str(f.get("stage"))))
            for _, _, f in fields
            if f.get("fact")
        ]
        carried += [
            (str(h.get("item")), h["value"], ("handle", str(h.get("item")), str(h.get("stage"))))
            for h in self.handles
            if h["kind"] == "fact"
        ]
        for fact, value, where in carried:
            seen = first.setdefault(fact, (value, where))
            if seen[0] != value:
                kind, name, stage = seen[1]
                self.add(
                    "fact-disagrees",
                    fact=fact,
                    value=seen[0],
                    kind=kind,
                    name=name,
                    stage=stage,
                    other_value=value,
                    other_kind=where[0],
                    other_name=where[1],
                    other_stage=where[2],
                )

    # ------------------------------------------------------------- kernel.h and the cubin

    def _header(self, cubin: bytes | None, name: str, text: str | None) -> None:
        if text is None:
            self.add("header-missing", undecided=True)
            return
        from linker.host_header import host_header

        try:
            want = host_header(self.record, cubin or b"")
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as err:
            self.add("header-unreadable", undecided=True, error=repr(err)[:80])
            return
        has_lines, want_lines = text.split("\n"), want.split("\n")
        for number, (has, line) in enumerate(zip(has_lines, want_lines, strict=False), 1):
            if has != line:
                self.found.append(
                    AuditFinding(
                        "header",
                        (("line", str(number)), ("has", has.strip()[:160]), ("want", line.strip()[:160])),
                        (name, number, len(has)),
                    )
                )
                return
        if len(has_lines) != len(want_lines):
            number = min(len(has_lines), len(want_lines)) + 1
            has = has_lines[number - 1] if number <= len(has_lines) else "(the end of the file)"
            want_line = want_lines[number - 1] if number <= len(want_lines) else "(the end of the file)"
            self.found.append(
                AuditFinding("header", (("line", str(number)), ("has", has[:160]), ("want", want_line[:160])))
            )

    def _cubin(self, cubin: bytes) -> bool:
        want = self.record["cubin"].get("sha256")
        got = hashlib.sha256(cubin).hexdigest()
        if want != got:
            self.add("cubin-hash", got=got[:16], want=str(want)[:16])
        try:
            info = read_cubin(cubin)
        except Exception as err:  # a tampered cubin may not even be ELF
            self.add("cubin-unreadable", error=str(err)[:200])
            return False
        k = info.kernel(self.kernel)
        if k is None:
            self.add("cubin-no-kernel", kernel=self.kernel, found=", ".join(info.kernel_names) or "none")
            return False
        if k.max_threads is not None and _product(k.max_threads) != self.threads:
            self.add("cubin-threads", kernel=self.kernel, bound=_product(k.max_threads), threads=self.threads)
        if k.static_smem:
            self.add("cubin-static-smem", kernel=self.kernel, bytes=k.static_smem)
        params = self.record.get("params")
        # the parameters' own sizes: the bank's size also counts the padding before a parameter
        # aligned past the bank's base (a 128-byte aligned block starts 112 bytes in on sm_90)
        taken = sum(p.size for p in k.params) if k.params else k.param_bytes
        if params is not None and taken and taken != int(params["size"]):
            self.add("params-size", cubin=taken, size=params["size"])
        return True


def _param_reads(entry: Function) -> Iterator[tuple[int, int, int]]:
    """Each element the kernel loads from its params block: (line, offset, bytes).

    The block is the entry's parameter (``kl_dispatch_param_0``); a register holds its address at
    a known offset when it is a ``mov`` of the parameter or an ``add`` of a constant to one. A load
    through any other register is not the params block's (a function's own parameter, or a pointer
    the analysis cannot follow) and is left out.
    """
    names = set(entry.params)
    at: dict[str, int | None] = {}

    def assign(reg: str, offset: int | None) -> None:
        at[reg] = offset if reg not in at or at[reg] == offset else None

    for ins in entry.body:
        ops = [o.strip() for o in ins.operands]
        if ins.base in ("mov", "cvta") and len(ops) == 2 and ops[1] in names:
            assign(ops[0], 0)
        elif ins.base == "add" and len(ops) == 3 and at.get(ops[1]) is not None and re.fullmatch(r"-?\d+", ops[2]):
            base = at[ops[1]]
            assign(ops[0], None if base is None else base + int(ops[2]))
        elif ops and ops[0] in at:  # any other write: the register no longer holds a known offset
            at[ops[0]] = None
        if ins.base != "ld" or not ins.has("param"):
            continue
        found = _PARAM_ADDRESS.match(next((o for o in ops if o.startswith("[")), ""))
        if found is None:
            continue
        base_name, plus = found.group(1), int(found.group(2) or 0)
        start = 0 if base_name in names else at.get(base_name)
        if start is None:
            continue
        width = _width(ins.opcode)
        count = next((int(p[1:]) for p in ins.opcode.split(".") if p in ("v2", "v4", "v8")), 1)
        for i in range(count):
            yield ins.line, start + plus + i * width, width


def _width(opcode: str) -> int:
    """The bytes of one element of an access (``ld.param.v2.u32`` → 4); 1 when the type is not read."""
    for part in reversed(opcode.split(".")):
        if part[:1] in "bsuf" and part[1:] in _WIDTH:
            return _WIDTH[part[1:]]
    return 1


def _slot_end(claim: tuple[int, int, int, str], offset: int) -> int:
    start, end, piece, _ = claim
    if piece <= 0:
        return end
    return min(end, start + ((offset - start) // piece + 1) * piece)


def _beyond(offset: int, rings: dict[tuple[str, str], dict[str, int]]) -> dict[str, object]:
    """Where an unexpected barrier offset falls: a slot past a ring's mapped depth (the nearest base explains it)."""
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
        return {}
    slot, which, ring, depth = min(found)
    return {"slot": slot, "which": which, "ring": ring, "depth": depth}


def _product(values: Sequence[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out
