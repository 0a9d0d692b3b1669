"""The canonical printer: one form for every AST, ``parse(print(x)) == x``.

Canonical form: four-space indentation, one item per line, attributes in a fixed
order, defaults omitted, byte quantities that are whole KiB written with the
``KiB`` suffix, one blank line between top-level blocks. ``format_text`` also keeps
the source's comments, attached to the line they precede or end.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from contract_lang import ast as A
from contract_lang.expr import Expr, to_text

if TYPE_CHECKING:
    from contract_lang.parser import FileKind
from diagnostics.span import Span

INDENT = "    "


def size(value: int) -> str:
    """A byte quantity: ``16KiB`` when it is a whole number of KiB, else decimal."""
    return f"{value // 1024}KiB" if value >= 1024 and value % 1024 == 0 else str(value)


def sized(value: int | None, written: Expr | None) -> str:
    """A byte size as the contract gives it: its expression of facts when it was written as one
    (literals in it as :func:`size` writes them), else its value."""
    if written is not None:
        return to_text(written, size)
    assert value is not None
    return size(value)


def _names(names: Iterable[str]) -> str:
    return ", ".join(names)


def _quote(text: str) -> str:
    return f'"{text}"'


# ----------------------------------------------------------------- one-line forms


def lifetime_text(life: A.Lifetime) -> str:
    match life.kind:
        case "kernel":
            return "lifetime kernel"
        case "phase":
            return f"lifetime phase {life.phase}"
        case "between":
            return f"lifetime between {life.start} {life.end}"
        case "until":
            return f"lifetime until {life.end}"
    return f"lifetime from {life.start}"


def count_text(count: A.Count) -> str:
    parts = []
    for term in count.terms:
        if term.unit == "one":
            parts.append(str(term.coef))
        elif term.coef == 1:
            parts.append(f"{term.unit}({term.role})")
        else:
            parts.append(f"{term.coef} * {term.unit}({term.role})")
    return " + ".join(parts)


def _claimed(words: list[str], item: A.Claim) -> str:
    """A claim line, ending with what every claim may state: a lifetime (shared and tensor memory), a handle."""
    if isinstance(item, (A.SmemClaim, A.TmemClaim)) and item.lifetime != A.KERNEL_LIFETIME:
        words.append(lifetime_text(item.lifetime))
    if item.handle is not None:
        words.append(f"handle {item.handle}")
    return " ".join(words)


def _smem_claim(item: A.SmemClaim) -> str:
    words = ["claim smem", item.name]
    if item.bytes is not None or item.bytes_expr is not None:
        words.append(f"bytes {sized(item.bytes, item.bytes_expr)}")
    if item.align is not None:
        words.append(f"align {item.align}")
    if item.per_slot is not None:
        words.append(f"per_slot {item.per_slot}")
    if item.uses:
        words.append(f"use {_names(item.uses)}")
    if item.signal is not None:
        sig = item.signal
        words.append(f"signal by {sig.role} init {sig.init} arrive {sig.arrive} wait parity {sig.parity}")
    return _claimed(words, item)


def _tmem_claim(item: A.TmemClaim) -> str:
    words = ["claim tmem", item.name]
    if item.columns is not None:
        words.append(f"columns {item.columns}")
    words.extend(f"read by {r.role} lanes {r.lane_lo}..{r.lane_hi}" for r in item.reads)
    return _claimed(words, item)


def _barrier_claim(item: A.BarrierClaim) -> str:
    words = ["claim barrier", item.name]
    if item.participants:
        words.append(f"participants {_names(item.participants)}")
    if item.threads is not None:
        words.append(f"threads {item.threads}")
    if item.orders:
        words.append(f"orders {_names(item.orders)}")
    return _claimed(words, item)


def _counter_claim(item: A.CounterClaim) -> str:
    words = ["claim counter", item.name]
    if item.slots is not None:
        words.append(f"slots {item.slots}")
    if item.scope is not None:
        words.append(f"scope {item.scope}")
    return _claimed(words, item)


def ring_item_line(item: A.RingItem) -> str:
    if isinstance(item, A.RingDepth):
        return f"depth {item.lo}" if item.lo == item.hi else f"depth {item.lo}..{item.hi}"
    if isinstance(item, A.RingBarrierInit):
        has_tx = item.expect_tx is not None or item.expect_tx_expr is not None
        tx = f" expect_tx {sized(item.expect_tx, item.expect_tx_expr)}" if has_tx else ""
        return f"{item.barrier} init {count_text(item.count)}{tx}"
    if isinstance(item, A.RingWait):
        return f"{item.barrier} wait" + (f" parity {item.parity}" if item.parity is not None else "") + _on(item.on)
    if isinstance(item, A.RingArrive):
        words = [f"{item.barrier} arrive {count_text(item.count)}"]
        if item.tx is not None or item.tx_expr is not None:
            words.append(f"tx {sized(item.tx, item.tx_expr)}")
        if item.lag is not None:
            words.append(f"lag {item.lag}")
        if item.prearm:
            words.append("prearm")
        if item.remote:
            words.append("remote")
        if item.multicast:
            words.append("multicast")
        return " ".join(words) + _on(item.on)
    if isinstance(item, A.RingCopy):
        words = [f"{item.barrier} copy {sized(item.bytes, item.bytes_expr)}"]
        if item.into:
            words.append(f"into {item.into}")
        if item.multicast:
            words.append("multicast")
        if item.remote:
            words.append("remote")
        return " ".join(words) + _on(item.on)
    if isinstance(item, A.RingRead):
        return (
            "read" + (" async" if item.asynchronous else "") + (" multicast" if item.multicast else "") + _on(item.on)
        )
    if isinstance(item, A.RingReadWait):
        return "read wait" + (f" lag {item.lag}" if item.lag is not None else "") + _on(item.on)
    if isinstance(item, A.RingRestart):
        return f"restart {item.every}"
    if isinstance(item, A.RingLag):
        return f"lag {item.count}"
    if isinstance(item, A.RingOnce):
        return "once"
    if isinstance(item, A.RingLoops):
        return f"loops {item.count}"
    if isinstance(item, A.RingInitBy):
        return f"init by {item.role}" + (" fenced" if item.fenced else "")
    if isinstance(item, A.RingScope):
        return f"scope {item.scope}"
    if isinstance(item, A.RingProxy):
        return f"{item.access} {item.proxy}"
    return f"fence {item.kind}"


def _on(part: str | None) -> str:
    return f" on {part}" if part is not None else ""


def counter_step_line(step: A.CounterStep) -> str:
    """A counter step as written: ``add 1``, ``wait ge split on rest``."""
    if step.op == "add":
        return f"add {step.amount}" + _on(step.on)
    return f"wait ge {step.threshold or step.amount}" + _on(step.on)


def _fact_value(value: A.FactValue) -> str:
    if value.kind == "exact":
        return f"= {value.values[0]}"
    if value.kind == "range":
        return f"in {value.values[0]}..{value.values[1]}"
    return "in {" + ", ".join(str(v) for v in value.values) + "}"


def _dims(dims: tuple[A.Dim, ...]) -> str:
    return " ".join(f"{d.name} {d.extent}" for d in dims)


def _lend(lend: A.Lend) -> str:
    return f"smem {lend.claim}" if lend.kind == "smem" else f"regs {lend.regs}"


def _role(item: A.Role) -> str:
    words = [f"role {item.name}"]
    if item.entry is not None:
        words.append(f"entry {item.entry}")
    if item.warps is not None:
        words.append(f"warps {item.warps}")
    if item.regs is not None:
        words.append(f"regs {item.regs}")
    if item.warpgroup:
        words.append("warpgroup")
    if item.turns is not None:
        words.append(f"turn {item.turn} of {item.turns}")
    return " ".join(words)


def _launch(item: A.Launch) -> str:
    words = [f"launch {item.kind}"]
    if item.threads is not None:
        words.append(f"threads {item.threads}")
    if item.blocks_per_sm is not None:
        words.append(f"blocks_per_sm {item.blocks_per_sm}")
    if item.grid_text is not None:
        words.append(f"grid {item.grid_text}")
    if item.cooperative:
        words.append("cooperative")
    return " ".join(words)


def _rendezvous(item: A.Rendezvous) -> str:
    threads = f" threads {item.threads}" if item.threads is not None else ""
    prearm = " prearm" if item.prearm else ""
    lag = f" lag {item.lag}" if item.lag is not None else ""
    peeled = " peeled" if item.peeled else ""
    return f"rendezvous {item.name} {item.mode} by {item.role}{threads}{prearm}{lag}{peeled}"


def _export_callable(item: A.ExportCallable) -> str:
    req = f" requires {_names(item.requires)}" if item.requires else ""
    return f"export callable {item.name} {item.signature} = {item.symbol}{req}"


def _call(item: A.Call) -> str:
    gua = f" guarantees {_names(item.guarantees)}" if item.guarantees else ""
    return f"call {item.name} {item.signature} as {item.symbol} from {item.caller_kind} {item.caller}{gua}"


def _buffer(item: A.Buffer) -> str:
    words = [f"buffer {item.name} bytes {size(item.bytes)}"]
    if item.symmetric:
        words.append("symmetric")
    if item.domain is not None:
        words.append(f"domain {_quote(item.domain)}")
    if item.views:
        words.append(f"views {_names(item.views)}")
    return " ".join(words)


def _host_provider(item: A.HostProvider) -> str:
    words = [f"host provider {_quote(item.library)}"]
    if item.function is not None:
        words.append(f"fn {item.function}")
    if item.fills:
        words.append(f"fills {_names(item.fills)}")
    if item.header is not None:
        words.append(f"header {_quote(item.header)}")
    return " ".join(words)


def _use(item: A.Use) -> str:
    src = f" from {_quote(item.path)}" if item.path is not None else ""
    return f"use {_quote(item.stage)} version {item.requirement}{src}"


ITEM_LINES: Mapping[type[A.Node], Callable[[Any], str]] = MappingProxyType(
    {
        A.Target: lambda item: f"target {item.name}",
        A.Features: lambda item: f"requires feature {_names(item.names)}",
        A.Role: _role,
        A.Launch: _launch,
        A.SmemClaim: _smem_claim,
        A.TmemClaim: _tmem_claim,
        A.BarrierClaim: _barrier_claim,
        A.CounterClaim: _counter_claim,
        A.Rendezvous: _rendezvous,
        A.ExportCallable: _export_callable,
        A.Call: _call,
        A.OwnsFact: lambda item: f"owns fact {item.name}: {item.type} {_fact_value(item.value)}",
        A.UsesFact: lambda item: f"uses fact {item.name}: {item.type} as param {item.param}",
        A.AssumesFact: lambda item: f"assumes fact {item.name}: {item.type} == {item.value}",
        A.RequiresFact: lambda item: f"requires fact {to_text(item.expr)}",
        A.Phases: lambda item: f"phases {item.mode} {_names(item.names)}",
        A.AssumesPhases: lambda item: f"assumes phases exclusive {_names(item.names)}",
        A.Cluster: lambda item: "cluster " + ", ".join(str(s) for s in item.shapes),
        A.Domain: lambda item: f"domain {_quote(item.name)} views {_names(item.views)}",
        A.Buffer: _buffer,
        A.HostProvider: _host_provider,
        A.Use: _use,
        A.PipelineCluster: lambda item: f"cluster {item.shape}",
        A.ProvidesDomain: lambda item: f"caller provides domain {_quote(item.name)} views {_names(item.views)}",
        A.ProvidesBuffer: lambda item: f"caller provides buffer {item.name} bytes {size(item.bytes)}",
        A.Resolve: lambda item: f"resolve call {item.call} to {_quote(item.stage)}",
    }
)
"""The text of each kind of item printed on one line; the others are :data:`ITEM_BLOCKS`."""


# ----------------------------------------------------------------- comments

_COMMENT = re.compile(r"#[^\n]*")


@dataclass
class _Comments:
    """Source comments by line, handed out as the printer passes their position."""

    own_line: list[tuple[int, str]] = field(default_factory=list)
    trailing: dict[int, str] = field(default_factory=dict)

    @classmethod
    def scan(cls, text: str) -> _Comments:
        found = cls()
        # Lines as the parser counts them: only "\n" ends a line (a form feed or U+2028
        # inside a string or comment does not).
        for lineno, line in enumerate(text.split("\n"), start=1):
            code, comment = _split_comment(line)
            if comment is None:
                continue
            if code.strip():
                found.trailing[lineno] = comment
            else:
                found.own_line.append((lineno, comment))
        return found

    def before(self, line: int) -> list[str]:
        # own_line is in line order, so the comments above `line` are a prefix of it.
        cut = bisect.bisect_left(self.own_line, (line,))
        taken = [c for _, c in self.own_line[:cut]]
        del self.own_line[:cut]
        return taken

    def any_inside(self, span: Span) -> bool:
        """Whether an own-line comment is still waiting strictly inside the lines of ``span``."""
        index = bisect.bisect_left(self.own_line, (span.line + 1,))
        return index < len(self.own_line) and self.own_line[index][0] < span.end_line

    def after(self, line: int) -> str | None:
        return self.trailing.pop(line, None)


def _split_comment(line: str) -> tuple[str, str | None]:
    in_string = False
    for idx, ch in enumerate(line):
        if ch == '"':
            in_string = not in_string
        elif ch == "#" and not in_string:
            return line[:idx], line[idx:].rstrip()
    return line, None


# ----------------------------------------------------------------- block printer


class _Printer:
    def __init__(self, comments: _Comments | None) -> None:
        self.lines: list[str] = []
        self.comments = comments

    def emit(self, depth: int, text: str, span: Span | None) -> None:
        pad = INDENT * depth
        if self.comments is not None and span is not None and span.file != "<unknown>":
            self.lines.extend(pad + c for c in self.comments.before(span.line))
            trailing = self.comments.after(span.line)
            if trailing is not None:
                text = f"{text}  {trailing}"
        self.lines.append(pad + text)

    def close(self, depth: int, span: Span | None) -> None:
        text = "}"
        if self.comments is not None and span is not None and span.file != "<unknown>":
            self.lines.extend(INDENT * (depth + 1) + c for c in self.comments.before(span.end_line))
            trailing = self.comments.after(span.end_line)
            if trailing is not None:
                text = f"}}  {trailing}"
        self.lines.append(INDENT * depth + text)

    def block(self, depth: int, header: str, node: A.Node, children: list[tuple[str | None, A.Node]]) -> None:
        if not children and not self._has_inner_comments(node.span):
            self.emit(depth, header + " {}", node.span)
            return
        self.emit(depth, header + " {", node.span)
        for text, child in children:
            if text is None:
                self.item(depth + 1, child)
            else:
                self.emit(depth + 1, text, child.span)
        self.close(depth, node.span)

    def _has_inner_comments(self, span: Span) -> bool:
        if self.comments is None or span.file == "<unknown>":
            return False
        return self.comments.any_inside(span)

    def unit(self, unit: A.Stage | A.Pipeline) -> None:
        """A stage or a pipeline block, at the top level."""
        if isinstance(unit, A.Stage):
            header = f"stage {_quote(unit.name)} version {_quote(unit.version)}"
        else:
            header = f"pipeline {_quote(unit.name)}"
        self.block(0, header, unit, [(None, it) for it in unit.items])

    def item(self, depth: int, item: A.Node) -> None:
        block = ITEM_BLOCKS.get(type(item))
        if block is not None:
            block(self, depth, item)
            return
        line = ITEM_LINES.get(type(item))
        if line is None:
            raise AssertionError(f"no printer for {type(item).__name__}")
        self.emit(depth, line(item), item.span)

    def _params(self, depth: int, item: A.Params) -> None:
        fields = [
            (
                f"{f.name}: {f.type} @ {f.offset}"
                + (f" = fact {f.fact}" if f.fact else "")
                + (f" in {{{', '.join(map(str, f.values))}}}" if f.values else "")
                + (f" box {', '.join(map(str, f.box.dims))} elem {f.box.elem}" if f.box else ""),
                f,
            )
            for f in item.fields
        ]
        self.block(
            depth,
            f"params {item.name} size {item.size} align {item.align}",
            item,
            list[tuple[str | None, A.Node]](fields),
        )

    def _ring(self, depth: int, item: A.Ring) -> None:
        rows = [(ring_item_line(it), it) for it in item.items]
        self.block(depth, f"ring {item.name} {item.side} by {item.role}", item, list[tuple[str | None, A.Node]](rows))

    def _counter(self, depth: int, item: A.Counter) -> None:
        words = [f"counter {item.name} {item.side} by {item.role}"]
        if item.scope is not None:
            words.append(f"scope {item.scope}")
        if item.domain is not None:
            words.append(f"domain {_quote(item.domain)}")
        if item.space is not None:
            words.append(f"space {item.space}")
        header = " ".join(words)
        if not item.steps:
            self.emit(depth, header, item.span)
            return
        rows = [(counter_step_line(s), s) for s in item.steps]
        self.block(depth, header, item, list[tuple[str | None, A.Node]](rows))

    def _tensor(self, depth: int, item: A.ExportTensor | A.ImportTensor) -> None:
        if isinstance(item, A.ExportTensor):
            header = f"export tensor {item.name} from role {item.role}"
        else:
            header = f"import tensor {item.name} from {item.export} into role {item.role}"
        self.emit(depth, header + " {", item.span)
        inner = depth + 1
        if item.elem is not None:
            self.emit(inner, f"elem {item.elem}", item.attr_span("elem"))
        if item.tile:
            self.emit(inner, f"tile {_dims(item.tile)}", item.tile[0].span)
        if isinstance(item, A.ImportTensor) and item.chunk:
            self.emit(inner, f"chunk {_dims(item.chunk)}", item.chunk[0].span)
        if item.generation is not None:
            through = f" {item.ring}" if item.ring is not None else ""
            self.emit(inner, f"generation {item.generation}{through}", item.attr_span("generation"))
        spec = item.placement if isinstance(item, A.ExportTensor) else item.demand
        if spec is not None:
            self._map(inner, "placement" if isinstance(item, A.ExportTensor) else "demand", spec)
        if isinstance(item, A.ImportTensor) and item.lends:
            self.emit(inner, "lends " + ", ".join(_lend(lend) for lend in item.lends), item.lends[0].span)
        event = item.ready if isinstance(item, A.ExportTensor) else item.done
        if event is not None:
            word = "ready" if isinstance(item, A.ExportTensor) else "done"
            self.emit(inner, f"{word} event {event}", event.span)
        self.close(depth, item.span)

    def _fragment(self, depth: int, item: A.Fragment) -> None:
        into = "callable" if item.side == "import" else "call"
        self.emit(depth, f"{item.side} tensor {item.name} into {into} {item.callable} {{", item.span)
        if item.elem is not None:
            self.emit(depth + 1, f"elem {item.elem}", item.attr_span("elem"))
        if item.tile:
            self.emit(depth + 1, f"tile {_dims(item.tile)}", item.tile[0].span)
        if item.map is not None:
            self._map(depth + 1, "demand" if item.side == "import" else "placement", item.map)
        self.close(depth, item.span)

    def _map(self, depth: int, word: str, spec: A.MapSpec) -> None:
        if isinstance(spec, A.LibraryMap):
            args = ", ".join(f"{k}: {v}" for k, v in spec.args)
            self.emit(depth, f"{word} library {spec.name}({args})", spec.span)
            return
        params = ", ".join(p.name if p.extent is None else f"{p.name}: {p.extent}" for p in spec.params)
        header = f"{word} {spec.kind}({params}) -> ({_names(spec.outputs)})"
        rows = [(f"{a.name} = {to_text(a.expr)}", a) for a in spec.assigns]
        self.block(depth, header, spec, list[tuple[str | None, A.Node]](rows))


ITEM_BLOCKS: Mapping[type[A.Node], Callable[[_Printer, int, Any], None]] = MappingProxyType(
    {
        A.Params: _Printer._params,
        A.Ring: _Printer._ring,
        A.Counter: _Printer._counter,
        A.ExportTensor: _Printer._tensor,
        A.ImportTensor: _Printer._tensor,
        A.Fragment: _Printer._fragment,
    }
)
"""The kinds of item printed as a block of lines (a counter with steps; the others always)."""


def print_file(source: A.SourceFile) -> str:
    """Canonical text of a parsed file (comments are not part of the AST)."""
    return _render(source, None)


def print_node(node: A.Stage | A.Pipeline) -> str:
    return _render(A.SourceFile("<node>", (node,)), None)


def format_text(text: str, path: str = "<input>", kind: FileKind = "any") -> str:
    """Parse and reprint in canonical form, keeping comments; raises DiagnosticError on bad input.

    ``kind`` is checked as when parsing (a `.kc` holds stages, a `.kp` one pipeline).
    """
    from contract_lang.parser import parse_text

    return _render(parse_text(text, path, kind), _Comments.scan(text))


def _render(source: A.SourceFile, comments: _Comments | None) -> str:
    printer = _Printer(comments)
    for index, item in enumerate(source.items):
        if index:
            printer.lines.append("")
        printer.unit(item)
    if comments is not None:
        printer.lines.extend(comments.before(1 << 30))
        printer.lines.extend(comments.trailing.values())
    return "\n".join(printer.lines) + "\n"
