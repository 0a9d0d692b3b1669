"""Lark parse tree → typed AST, every node with its source span.

One method per grammar rule; ``__default__`` raises, so a rule without a method is
a loud bug rather than a silent pass-through. Vocabulary mistakes (an unknown type,
feature or scope; an attribute given twice) are collected and raised together.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal, NoReturn, TypeVar

from lark import Token, Transformer, Tree, v_args
from lark.tree import Meta

from contract_lang import ast as A
from contract_lang import fact_sizes
from contract_lang.expr import BinOp, Expr, Int, Name, Not
from diagnostics.model import Diagnostic, DiagnosticError, Label
from diagnostics.span import Span
from diagnostics.symbols import Code

T = TypeVar("T")
Attr = tuple[str, Any, Span]


def _first_spans(attrs: Sequence[Attr]) -> tuple[tuple[str, Span], ...]:
    """Each attribute key with the span of its first occurrence, in source order."""
    seen: dict[str, Span] = {}
    for key, _, span in attrs:
        seen.setdefault(key, span)
    return tuple(seen.items())


# What an integer literal may be, by what it states (specs/language.md §2.3): counts
# (warps, threads, registers, depths, slots, columns, lanes, lags, arrival counts,
# counter steps, dimensions, cluster extents) fit in u32; byte sizes, alignments and
# offsets, fact values and expression literals fit in u64; so does each part of a version.
U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1
INT_RANGES: dict[str, tuple[str, int]] = {
    "count": ("a count", U32_MAX),
    "size": ("a byte size", U64_MAX),
    "value": ("a value", U64_MAX),
    "version": ("a version part", U64_MAX),
}
# Longer literals are out of every range: refused before Python converts them
# (a conversion of thousands of digits is slow, and refused past 4300).
_MAX_LITERAL = 24


def _generation(value: str | tuple[str, str] | None) -> tuple[str | None, str | None]:
    """A tensor's generation word and, for `generation ring R`, the ring."""
    if isinstance(value, tuple):
        return value
    return value, None


def bounded_int(text: str, kind: str) -> int | None:
    """The literal's value when it lies in the range of ``kind``, else None."""
    if len(text) > _MAX_LITERAL:
        return None
    value = parse_int(text)
    return value if value <= INT_RANGES[kind][1] else None


def shown_literal(text: str) -> str:
    """A literal as a message quotes it: long ones cut, with their length."""
    return f"`{text}`" if len(text) <= 24 else f"`{text[:12]}…{text[-4:]}` ({len(text)} characters)"


def parse_int(text: str) -> int:
    """Integer literals: decimal, hex (``0x400``) and the ``KiB`` suffix."""
    if text.startswith(("0x", "0X")):
        return int(text, 16)
    if text.endswith("KiB"):
        return int(text[:-3]) * 1024
    return int(text)


class AstBuilder(Transformer[Token, Any]):
    """Builds the AST of one file; ``build`` raises DiagnosticError on vocabulary mistakes."""

    def __init__(self, path: str) -> None:
        super().__init__(visit_tokens=False)
        self.path = path
        self.problems: list[Diagnostic] = []

    def build(self, tree: Tree[Token]) -> A.SourceFile:
        result = self._transform_bottom_up(tree)
        if self.problems:
            raise DiagnosticError(self.problems)
        assert isinstance(result, A.SourceFile)
        return result

    def _transform_bottom_up(self, tree: Tree[Token]) -> Any:
        """``Transformer.transform`` without recursion: every subtree after its children, so an
        expression nested hundreds deep (`not not … x`, `(x + (x + …))`) costs no Python stack."""
        done: dict[int, Any] = {}
        for sub in tree.iter_subtrees():  # children before their parents
            children = [done.pop(id(c)) if isinstance(c, Tree) else c for c in sub.children]
            done[id(sub)] = self._call_userfunc(sub, children)  # type: ignore[no-untyped-call]
        return done[id(tree)]

    # ------------------------------------------------------------- helpers

    def __default__(self, data: str, children: list[Any], meta: Meta) -> NoReturn:
        raise AssertionError(f"grammar rule `{data}` has no AST builder")

    def _span(self, meta: Meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.path, 1, 1, 1, 1)
        return Span(self.path, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tok_span(self, tok: Token) -> Span:
        line, col = tok.line or 1, tok.column or 1
        return Span(self.path, line, col, tok.end_line or line, tok.end_column or col + len(tok))

    def _vocab(self, tok: Token, allowed: Sequence[str], what: str) -> str:
        word = str(tok)
        if word not in allowed:
            from diagnostics.suggestions import did_you_mean

            guess = did_you_mean(word, tuple(allowed))
            helps = (
                (f"did you mean `{guess}`?",) if guess else (f"known {what}s: {', '.join(f'`{a}`' for a in allowed)}",)
            )
            self.problems.append(
                Diagnostic(
                    Code.E_NAME,
                    f"unknown {what} `{word}`",
                    labels=(Label(self._tok_span(tok), f"not a known {what}"),),
                    helps=helps,
                )
            )
        return word

    def _int(self, tok: Token, kind: str) -> int:
        """An integer literal within the range of ``kind``; outside it, E-VALUE (and 0)."""
        value = bounded_int(str(tok), kind)
        if value is None:
            self.problems.append(_out_of_range(str(tok), kind, self._tok_span(tok)))
            return 0
        return value

    def _version(self, tok: Token) -> None:
        """Each number of a version or requirement is at most u64 (E-VALUE otherwise)."""
        for part in re.findall(r"[0-9]+", str(tok)):
            if bounded_int(part, "version") is None:
                self.problems.append(_out_of_range(part, "version", self._tok_span(tok)))
                return

    def _attrs(self, owner: str, attrs: Sequence[Attr], repeatable: tuple[str, ...] = ()) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        spans: dict[str, Span] = {}
        for key, value, span in attrs:
            if key in repeatable:
                seen.setdefault(key, []).append(value)
                continue
            if key in seen:
                self.problems.append(
                    Diagnostic(
                        Code.E_DUPLICATE,
                        f"`{key}` is given twice on {owner}",
                        labels=(Label(span, "second one here"), Label(spans[key], "first one here", primary=False)),
                        helps=(f"keep one `{key}`",),
                    )
                )
                continue
            seen[key] = value
            spans[key] = span
        return seen

    def _items(self, children: Sequence[Any], kind: type[T]) -> tuple[T, ...]:
        return tuple(c for c in children if isinstance(c, kind))

    # ------------------------------------------------------------- files and stages

    @v_args(meta=True)
    def start(self, meta: Meta, children: list[Any]) -> A.SourceFile:
        return A.SourceFile(self.path, tuple(children), span=self._span(meta))

    @v_args(meta=True)
    def stage(self, meta: Meta, children: list[Any]) -> A.Stage:
        name, version, *items = children
        self._version(version)
        self._duplicate_items(_str(name), items, "stage")
        resolved = fact_sizes.resolve(_str(name), tuple(items))
        self.problems.extend(resolved.problems)
        return A.Stage(_str(name), _str(version), resolved.items, span=self._span(meta))

    def _duplicate_items(self, name: str, items: Sequence[Any], block: str) -> None:
        """A second `target` line, or a second claim of one name (claims share one namespace)."""
        targets = [it for it in items if isinstance(it, A.Target)]
        if len(targets) > 1:
            self.problems.append(
                Diagnostic(
                    Code.E_DUPLICATE,
                    f"`target` is given twice in {block} `{name}`",
                    labels=(
                        Label(targets[1].span, "second one here"),
                        Label(targets[0].span, "first one here", primary=False),
                    ),
                    helps=(f"a {block} has one target: keep one `target` line",),
                )
            )
        claims: dict[str, A.Node] = {}
        for item in items:
            if not isinstance(item, A.Claim):
                continue
            first = claims.setdefault(item.name, item)
            if first is not item:
                self.problems.append(
                    Diagnostic(
                        Code.E_DUPLICATE,
                        f"claim `{item.name}` is declared twice in {block} `{name}`",
                        labels=(
                            Label(item.span, "second one here"),
                            Label(first.span, "first one here", primary=False),
                        ),
                        helps=(f"rename one of them, or merge them into one `claim … {item.name}`",),
                    )
                )

    @v_args(meta=True)
    def target(self, meta: Meta, children: list[Token]) -> A.Target:
        return A.Target(str(children[0]), span=self._span(meta))

    @v_args(meta=True)
    def features(self, meta: Meta, children: list[Any]) -> A.Features:
        names = children[0]
        for tok in names:
            self._vocab(tok, A.FEATURES, "feature")
        return A.Features(tuple(str(t) for t in names), span=self._span(meta))

    @v_args(meta=True)
    def role(self, meta: Meta, children: list[Any]) -> A.Role:
        name, *attrs = children
        got = self._attrs(f"role `{name}`", attrs)
        return A.Role(
            str(name),
            entry=got.get("entry"),
            warps=got.get("warps"),
            regs=got.get("regs"),
            warpgroup=got.get("warpgroup", False),
            turn=got["turn"][0] if "turn" in got else None,
            turns=got["turn"][1] if "turn" in got else None,
            span=self._span(meta),
        )

    @v_args(meta=True)
    def role_turn(self, meta: Meta, c: list[Token]) -> Attr:
        turn, turns = self._int(c[0], "count"), self._int(c[1], "count")
        if not 0 <= turn < turns:
            self.problems.append(
                Diagnostic(
                    Code.E_VALUE,
                    f"turn {turn} of {turns} is no turn: "
                    + (f"turns are numbered 0 to {turns - 1}" if turns else "a role takes turns among at least 1"),
                    labels=(Label(self._span(meta), "turn out of range"),),
                    helps=("number a role's turn from 0, below the number of turns (`turn 1 of 2`)",),
                )
            )
        return ("turn", (turn, turns), self._span(meta))

    @v_args(meta=True)
    def role_entry(self, meta: Meta, c: list[Token]) -> Attr:
        return ("entry", str(c[0]), self._span(meta))

    @v_args(meta=True)
    def role_warps(self, meta: Meta, c: list[Token]) -> Attr:
        return ("warps", self._int(c[0], "count"), self._span(meta))

    @v_args(meta=True)
    def role_regs(self, meta: Meta, c: list[Token]) -> Attr:
        return ("regs", self._int(c[0], "count"), self._span(meta))

    @v_args(meta=True)
    def role_warpgroup(self, meta: Meta, c: list[Token]) -> Attr:
        return ("warpgroup", True, self._span(meta))

    @v_args(meta=True)
    def launch(self, meta: Meta, children: list[Any]) -> A.Launch:
        kind, *attrs = children
        got = self._attrs("`launch`", attrs)
        grid = got.get("grid")
        return A.Launch(
            str(kind),  # type: ignore[arg-type]
            threads=got.get("threads"),
            blocks_per_sm=got.get("blocks_per_sm"),
            grid=grid if isinstance(grid, int) else None,
            resident=grid == "resident",
            cooperative=bool(got.get("cooperative")),
            span=self._span(meta),
        )

    @v_args(meta=True)
    def launch_threads(self, meta: Meta, c: list[Token]) -> Attr:
        return ("threads", self._int(c[0], "count"), self._span(meta))

    @v_args(meta=True)
    def launch_blocks(self, meta: Meta, c: list[Token]) -> Attr:
        return ("blocks_per_sm", self._int(c[0], "count"), self._span(meta))

    @v_args(meta=True)
    def launch_grid(self, meta: Meta, c: list[Token]) -> Attr:
        value = c[0]
        return ("grid", "resident" if value.type == "GRID_RESIDENT" else parse_int(value), self._span(meta))

    @v_args(meta=True)
    def launch_cooperative(self, meta: Meta, c: list[Token]) -> Attr:
        return ("cooperative", True, self._span(meta))

    @v_args(meta=True)
    def params(self, meta: Meta, children: list[Any]) -> A.Params:
        name, size, align, *fields = children
        # a box dimension names a `u32` field, or a field whose stated values are all box sizes
        sizing = {f.name for f in fields if f.type == "u32" and not f.values} | {
            f.name for f in fields if f.values and all(1 <= v <= TMA_BOX_MAX for v in f.values)
        }
        for f in fields:
            for dim in f.box.fields if f.box is not None else ():
                if dim not in sizing:
                    self.problems.append(
                        Diagnostic(
                            Code.E_VALUE,
                            f"the box of `{f.name}` is sized by `{dim}`, which is no `u32` field of params `{name}` "
                            f"nor a field whose values (`in {{…}}`) are all 1 to {TMA_BOX_MAX}",
                            labels=(Label(f.box.span, "a box dimension names a params field"),),
                            helps=(
                                "write the dimension as a number, or name a `u32` field of this block, or state "
                                f"the field's values (`{dim}: i32 @ … in {{16, 32, 64}}`)",
                            ),
                        )
                    )
        return A.Params(
            str(name), self._int(size, "size"), self._int(align, "size"), tuple(fields), span=self._span(meta)
        )

    @v_args(meta=True)
    def param_field(self, meta: Meta, children: list[Any]) -> A.ParamField:
        name, type_tok, offset, *rest = children
        self._vocab(type_tok, A.FIELD_TYPES, "type")
        fact = next((r for r in rest if isinstance(r, str)), None)
        box = next((r for r in rest if isinstance(r, A.TmaBox)), None)
        values = next((r for r in rest if isinstance(r, tuple)), ())
        if values:
            self._field_values(meta, str(name), str(type_tok), values)
        if box is not None and str(type_tok) not in ("ptr", "tensormap"):
            self.problems.append(
                Diagnostic(
                    Code.E_VALUE,
                    f"field `{name}` is a `{type_tok}`; a tensor-map box belongs on a `ptr` or `tensormap` field",
                    labels=(Label(box.span, "the box of a tensor map"),),
                    helps=(
                        "declare the box on the field that holds the tensor map: `ptr` (its address) or "
                        "`tensormap` (the map itself, 128 bytes)",
                    ),
                )
            )
        return A.ParamField(
            str(name), str(type_tok), self._int(offset, "size"), fact, box, values, span=self._span(meta)
        )

    def fact_source(self, c: list[Token]) -> str:
        return str(c[0])

    def field_values(self, c: list[Token]) -> tuple[int, ...]:
        return tuple(self._int(t, "count") for t in c)

    def _field_values(self, meta: Meta, name: str, type_: str, values: tuple[int, ...]) -> None:
        """``in {…}`` on an integer field: distinct values the type holds, at most ``FIELD_VALUES_MAX``."""
        bits = _FIELD_BITS.get(type_)
        problem = None
        if bits is None:
            problem = f"field `{name}` is a `{type_}`; only an integer field states its values (`in {{…}}`)"
        elif len(set(values)) != len(values):
            problem = f"field `{name}` states a value twice"
        elif len(values) > FIELD_VALUES_MAX:
            problem = f"field `{name}` states {len(values)} values; at most {FIELD_VALUES_MAX}"
        elif any(v >= 1 << bits for v in values):
            problem = f"a value of `{name}` does not fit its type `{type_}`"
        if problem is not None:
            self.problems.append(
                Diagnostic(
                    Code.E_VALUE,
                    problem,
                    labels=(Label(self._span(meta), "the field's stated values"),),
                    helps=(
                        "state the few distinct values the host may write, e.g. `page_size: i32 @ 8 in {16, 32, 64}`",
                    ),
                )
            )

    @v_args(meta=True)
    def tma_box(self, meta: Meta, c: list[Token]) -> A.TmaBox:
        *dims, elem = c
        sizes = tuple(str(d) if d.type == "NAME" else self._int(d, "count") for d in dims)
        bad = [t for t, size in zip(dims, sizes, strict=True) if isinstance(size, int) and not 1 <= size <= TMA_BOX_MAX]
        if bad or len(sizes) > TMA_BOX_RANK:
            span = self._tok_span(bad[0]) if bad else self._span(meta)
            self.problems.append(
                Diagnostic(
                    Code.E_VALUE,
                    f"a tensor-map box has 1 to {TMA_BOX_RANK} dimensions of 1 to {TMA_BOX_MAX} elements",
                    labels=(Label(span, "outside the tensor map's limits"),),
                    helps=(f"write each dimension between 1 and {TMA_BOX_MAX}, innermost first",),
                )
            )
        return A.TmaBox(sizes, self._vocab(elem, A.ELEM_TYPES, "element type"), span=self._span(meta))

    # ------------------------------------------------------------- claims

    @v_args(meta=True)
    def smem_claim(self, meta: Meta, children: list[Any]) -> A.SmemClaim:
        name, *attrs = children
        got = self._attrs(f"claim `{name}`", attrs)
        signal = got.get("signal")
        if signal is not None and "mbarrier" not in got.get("use", ()):
            self.problems.append(
                Diagnostic(
                    Code.E_VALUE,
                    f"claim `{name}` states a `signal` but holds no mbarrier",
                    labels=(Label(signal.span, "the protocol of an mbarrier"),),
                    helps=("add `use mbarrier` to the claim",),
                )
            )
        size, size_expr = _size(got.get("bytes"))
        return A.SmemClaim(
            str(name),
            bytes=size,
            bytes_expr=size_expr,
            align=got.get("align"),
            per_slot=got.get("per_slot"),
            lifetime=got.get("lifetime", A.KERNEL_LIFETIME),
            handle=got.get("handle"),
            uses=got.get("use", ()),
            signal=got.get("signal"),
            span=self._span(meta),
        )

    @v_args(meta=True)
    def bytes_attr(self, meta: Meta, c: list[Expr]) -> Attr:
        return ("bytes", c[0], self._span(meta))

    @v_args(meta=True)
    def align_attr(self, meta: Meta, c: list[Token]) -> Attr:
        return ("align", self._int(c[0], "size"), self._span(meta))

    @v_args(meta=True)
    def per_slot_attr(self, meta: Meta, c: list[Token]) -> Attr:
        return ("per_slot", str(c[0]), self._span(meta))

    @v_args(meta=True)
    def use_attr(self, meta: Meta, c: list[Any]) -> Attr:
        for tok in c[0]:
            self._vocab(tok, A.SMEM_USES, "shared-memory use")
        return ("use", tuple(str(t) for t in c[0]), self._span(meta))

    @v_args(meta=True)
    def signal_attr(self, meta: Meta, c: list[Token]) -> Attr:
        role, init, arrive, parity = c
        span = self._span(meta)
        phase = self._int(parity, "count")
        if phase > 1:
            self.problems.append(
                Diagnostic(
                    Code.E_VALUE,
                    "a wait's parity is 0 or 1",
                    labels=(Label(self._tok_span(parity), "not a parity"),),
                    helps=("write `wait parity 0` for the barrier's first phase",),
                )
            )
        arrivals = self._int(init, "count")
        if not 1 <= arrivals < 1 << 20:
            self.problems.append(
                Diagnostic(
                    Code.E_VALUE,
                    "an mbarrier counts 1 to 2^20 - 1 arrivals",
                    labels=(Label(self._tok_span(init), "no phase of this count completes"),),
                    helps=("write `init 1` for one `tcgen05.commit`",),
                )
            )
        signal = A.Signal(
            str(role),
            arrivals,
            self._vocab(arrive, A.SIGNAL_ARRIVES, "signal arrival"),
            phase & 1,
            span=span,
        )
        return ("signal", signal, span)

    @v_args(meta=True)
    def handle_attr(self, meta: Meta, c: list[Token]) -> Attr:
        return ("handle", str(c[0]), self._span(meta))

    @v_args(meta=True)
    def tmem_claim(self, meta: Meta, children: list[Any]) -> A.TmemClaim:
        name, *attrs = children
        got = self._attrs(f"claim `{name}`", attrs, repeatable=("read",))
        return A.TmemClaim(
            str(name),
            columns=got.get("columns"),
            lifetime=got.get("lifetime", A.KERNEL_LIFETIME),
            handle=got.get("handle"),
            reads=tuple(got.get("read", ())),
            span=self._span(meta),
        )

    @v_args(meta=True)
    def columns_attr(self, meta: Meta, c: list[Token]) -> Attr:
        return ("columns", self._int(c[0], "count"), self._span(meta))

    @v_args(meta=True)
    def tmem_read(self, meta: Meta, c: list[Token]) -> Attr:
        span = self._span(meta)
        return ("read", A.TmemRead(str(c[0]), self._int(c[1], "count"), self._int(c[2], "count"), span=span), span)

    @v_args(meta=True)
    def barrier_claim(self, meta: Meta, children: list[Any]) -> A.BarrierClaim:
        name, *attrs = children
        got = self._attrs(f"claim `{name}`", attrs)
        return A.BarrierClaim(
            str(name),
            participants=got.get("participants", ()),
            threads=got.get("threads"),
            handle=got.get("handle"),
            orders=got.get("orders", ()),
            span=self._span(meta),
        )

    @v_args(meta=True)
    def participants_attr(self, meta: Meta, c: list[Any]) -> Attr:
        return ("participants", tuple(str(t) for t in c[0]), self._span(meta))

    @v_args(meta=True)
    def orders_attr(self, meta: Meta, c: list[Any]) -> Attr:
        return ("orders", tuple(str(t) for t in c[0]), self._span(meta))

    @v_args(meta=True)
    def threads_attr(self, meta: Meta, c: list[Token]) -> Attr:
        return ("threads", self._int(c[0], "count"), self._span(meta))

    @v_args(meta=True)
    def counter_claim(self, meta: Meta, children: list[Any]) -> A.CounterClaim:
        name, *attrs = children
        got = self._attrs(f"claim `{name}`", attrs)
        return A.CounterClaim(
            str(name), slots=got.get("slots"), scope=got.get("scope"), handle=got.get("handle"), span=self._span(meta)
        )

    @v_args(meta=True)
    def slots_attr(self, meta: Meta, c: list[Token]) -> Attr:
        return ("slots", self._int(c[0], "count"), self._span(meta))

    @v_args(meta=True)
    def scope_attr(self, meta: Meta, c: list[Token]) -> Attr:
        return ("scope", self._vocab(c[0], A.SCOPES, "scope"), self._span(meta))

    @v_args(meta=True)
    def lifetime_kernel(self, meta: Meta, c: list[Any]) -> Attr:
        span = self._span(meta)
        return ("lifetime", A.Lifetime("kernel", span=span), span)

    @v_args(meta=True)
    def lifetime_phase(self, meta: Meta, c: list[Token]) -> Attr:
        span = self._span(meta)
        return ("lifetime", A.Lifetime("phase", phase=str(c[0]), span=span), span)

    @v_args(meta=True)
    def lifetime_between(self, meta: Meta, c: list[A.EventRef]) -> Attr:
        span = self._span(meta)
        return ("lifetime", A.Lifetime("between", start=c[0], end=c[1], span=span), span)

    @v_args(meta=True)
    def lifetime_until(self, meta: Meta, c: list[A.EventRef]) -> Attr:
        span = self._span(meta)
        return ("lifetime", A.Lifetime("until", end=c[0], span=span), span)

    @v_args(meta=True)
    def lifetime_from(self, meta: Meta, c: list[A.EventRef]) -> Attr:
        span = self._span(meta)
        return ("lifetime", A.Lifetime("from", start=c[0], span=span), span)

    @v_args(meta=True)
    def event(self, meta: Meta, c: list[Token]) -> A.EventRef:
        return A.EventRef(str(c[0]), str(c[1]), span=self._span(meta))

    # ------------------------------------------------------------- rings

    @v_args(meta=True)
    def ring(self, meta: Meta, children: list[Any]) -> A.Ring:
        name, side, role, *items = children
        span = self._span(meta)
        for kind, label in (
            (A.RingDepth, "depth"),
            (A.RingInitBy, "init by"),
            (A.RingScope, "scope"),
            (A.RingRestart, "restart"),
            (A.RingLag, "lag"),
            (A.RingOnce, "once"),
            (A.RingLoops, "loops"),
        ):
            found = [it for it in items if isinstance(it, kind)]
            if len(found) > 1:
                self.problems.append(
                    Diagnostic(
                        Code.E_DUPLICATE,
                        f"`{label}` is given twice in ring `{name}`",
                        labels=(
                            Label(found[1].span, "second one here"),
                            Label(found[0].span, "first one here", primary=False),
                        ),
                        helps=(f"keep one `{label}`",),
                    )
                )
        loops = next((it for it in items if isinstance(it, A.RingLoops)), None)
        once = next((it for it in items if isinstance(it, A.RingOnce)), None)
        if loops is not None and once is not None:
            self.problems.append(
                Diagnostic(
                    Code.E_VALUE,
                    f"ring `{name}` states `loops {loops.count}` and `once`: a one-shot side runs outside its role's "
                    "loop, in none of the alternatives",
                    labels=(
                        Label(loops.span, "alternative loops here"),
                        Label(once.span, "one-shot side here", primary=False),
                    ),
                    helps=("keep `once` for a side acted on once per CTA, `loops N` for a side run in N k-loops",),
                )
            )
        return A.Ring(str(name), str(side), str(role), tuple(items), span=span)  # type: ignore[arg-type]

    @v_args(meta=True)
    def ring_depth_fixed(self, meta: Meta, c: list[Token]) -> A.RingDepth:
        value = self._int(c[0], "count")
        return A.RingDepth(value, value, span=self._span(meta))

    @v_args(meta=True)
    def ring_depth_range(self, meta: Meta, c: list[Token]) -> A.RingDepth:
        return A.RingDepth(self._int(c[0], "count"), self._int(c[1], "count"), span=self._span(meta))

    @v_args(meta=True)
    def ring_barrier_init(self, meta: Meta, c: list[Any]) -> A.RingBarrierInit:
        tx, tx_expr = _size(c[2] if len(c) > 2 else None)
        return A.RingBarrierInit(str(c[0]), c[1], tx, expect_tx_expr=tx_expr, span=self._span(meta))  # type: ignore[arg-type]

    def expect_tx(self, c: list[Expr]) -> Expr:
        return c[0]

    @v_args(meta=True)
    def ring_wait(self, meta: Meta, c: list[Any]) -> A.RingWait:
        kind, *attrs = c
        got = self._attrs(f"`{kind} wait`", attrs)
        return A.RingWait(str(kind), got.get("parity"), got.get("on"), span=self._span(meta))  # type: ignore[arg-type]

    @v_args(meta=True)
    def wait_parity(self, meta: Meta, c: list[Token]) -> Attr:
        value = self._int(c[0], "count")
        if value not in (0, 1):
            self.problems.append(
                Diagnostic(
                    Code.E_VALUE,
                    f"a parity is 0 or 1, not {value}",
                    labels=(Label(self._tok_span(c[0]), "parity out of range"),),
                )
            )
        return ("parity", value, self._span(meta))

    @v_args(meta=True)
    def step_on(self, meta: Meta, c: list[Token]) -> Attr:
        return ("on", self._vocab(c[0], A.PARTS, "part"), self._span(meta))

    @v_args(meta=True)
    def ring_arrive(self, meta: Meta, c: list[Any]) -> A.RingArrive:
        kind, count, *attrs = c
        got = self._attrs(f"`{kind} arrive`", attrs)
        tx, tx_expr = _size(got.get("tx"))
        return A.RingArrive(
            str(kind),  # type: ignore[arg-type]
            count,
            tx=tx,
            tx_expr=tx_expr,
            lag=got.get("lag"),
            prearm=got.get("prearm", False),
            remote=got.get("remote", False),
            multicast=got.get("multicast", False),
            on=got.get("on"),
            span=self._span(meta),
        )

    @v_args(meta=True)
    def arrive_tx(self, meta: Meta, c: list[Expr]) -> Attr:
        return ("tx", c[0], self._span(meta))

    @v_args(meta=True)
    def arrive_lag(self, meta: Meta, c: list[Token]) -> Attr:
        return ("lag", self._int(c[0], "count"), self._span(meta))

    @v_args(meta=True)
    def arrive_prearm(self, meta: Meta, c: list[Token]) -> Attr:
        return ("prearm", True, self._span(meta))

    @v_args(meta=True)
    def arrive_remote(self, meta: Meta, c: list[Token]) -> Attr:
        return ("remote", True, self._span(meta))

    @v_args(meta=True)
    def arrive_multicast(self, meta: Meta, c: list[Token]) -> Attr:
        return ("multicast", True, self._span(meta))

    @v_args(meta=True)
    def ring_copy(self, meta: Meta, c: list[Any]) -> A.RingCopy:
        kind, written, *attrs = c
        got = self._attrs(f"`{kind} copy`", attrs)
        size, size_expr = _size(written)
        return A.RingCopy(
            str(kind),  # type: ignore[arg-type]
            0 if size is None else size,
            got.get("into"),
            bytes_expr=size_expr,
            multicast=got.get("multicast", False),
            remote=got.get("remote", False),
            on=got.get("on"),
            span=self._span(meta),
        )

    @v_args(meta=True)
    def copy_into(self, meta: Meta, c: list[Token]) -> Attr:
        return ("into", str(c[0]), self._span(meta))

    @v_args(meta=True)
    def ring_read(self, meta: Meta, c: list[Attr]) -> A.RingRead:
        got = self._attrs("`read`", c)
        return A.RingRead(got.get("async", False), got.get("multicast", False), got.get("on"), span=self._span(meta))

    @v_args(meta=True)
    def read_async(self, meta: Meta, c: list[Token]) -> Attr:
        return ("async", True, self._span(meta))

    @v_args(meta=True)
    def ring_read_wait(self, meta: Meta, c: list[Attr]) -> A.RingReadWait:
        got = self._attrs("`read wait`", c)
        return A.RingReadWait(got.get("lag"), got.get("on"), span=self._span(meta))

    @v_args(meta=True)
    def ring_restart(self, meta: Meta, c: list[Token]) -> A.RingRestart:
        return A.RingRestart(self._int(c[0], "count"), span=self._span(meta))

    @v_args(meta=True)
    def ring_lag(self, meta: Meta, c: list[Token]) -> A.RingLag:
        return A.RingLag(self._int(c[0], "count"), span=self._span(meta))

    @v_args(meta=True)
    def ring_once(self, meta: Meta, c: list[Token]) -> A.RingOnce:
        return A.RingOnce(span=self._span(meta))

    @v_args(meta=True)
    def ring_loops(self, meta: Meta, c: list[Token]) -> A.RingLoops:
        known = len(self.problems)
        value = self._int(c[0], "count")
        if value < 2 and len(self.problems) == known:  # out of range: `_int` said so
            self.problems.append(
                Diagnostic(
                    Code.E_VALUE,
                    f"`loops` counts two or more alternative loops, not {value}",
                    labels=(Label(self._tok_span(c[0]), "fewer than two loops"),),
                    helps=("a side run in one loop states no `loops`",),
                )
            )
        return A.RingLoops(value, span=self._span(meta))

    @v_args(meta=True)
    def ring_init_by(self, meta: Meta, c: list[Any]) -> A.RingInitBy:
        return A.RingInitBy(str(c[0]), fenced=len(c) > 1, span=self._span(meta))

    def init_fenced(self, c: list[Token]) -> bool:
        return True

    @v_args(meta=True)
    def ring_scope(self, meta: Meta, c: list[Token]) -> A.RingScope:
        return A.RingScope(self._vocab(c[0], A.SCOPES, "scope"), span=self._span(meta))

    @v_args(meta=True)
    def ring_proxy(self, meta: Meta, c: list[Token]) -> A.RingProxy:
        return A.RingProxy(str(c[0]), str(c[1]), span=self._span(meta))  # type: ignore[arg-type]

    @v_args(meta=True)
    def ring_fence(self, meta: Meta, c: list[Token]) -> A.RingFence:
        return A.RingFence(span=self._span(meta))

    @v_args(meta=True)
    def count(self, meta: Meta, c: list[A.CountTerm]) -> A.Count:
        return A.Count(tuple(c), span=self._span(meta))

    @v_args(meta=True)
    def count_const(self, meta: Meta, c: list[Token]) -> A.CountTerm:
        return A.CountTerm(self._int(c[0], "count"), "one", span=self._span(meta))

    @v_args(meta=True)
    def count_unit(self, meta: Meta, c: list[Token]) -> A.CountTerm:
        return A.CountTerm(1, str(c[0]), str(c[1]), span=self._span(meta))  # type: ignore[arg-type]

    @v_args(meta=True)
    def count_scaled(self, meta: Meta, c: list[Token]) -> A.CountTerm:
        return A.CountTerm(self._int(c[0], "count"), str(c[1]), str(c[2]), span=self._span(meta))  # type: ignore[arg-type]

    # ------------------------------------------------------------- counters and rendezvous

    @v_args(meta=True)
    def counter(self, meta: Meta, children: list[Any]) -> A.Counter:
        name, side, role, *rest = children
        steps: tuple[A.CounterStep, ...] = ()
        attrs: list[Attr] = []
        for item in rest:
            if len(item) == 3 and isinstance(item[0], str):
                attrs.append(item)
            else:
                steps = item
        got = self._attrs(f"counter `{name}`", attrs)
        return A.Counter(
            str(name),
            str(side),  # type: ignore[arg-type]
            str(role),
            scope=got.get("scope"),
            domain=got.get("domain"),
            space=got.get("space"),
            steps=steps,
            span=self._span(meta),
        )

    @v_args(meta=True)
    def counter_domain(self, meta: Meta, c: list[Token]) -> Attr:
        return ("domain", _str(c[0]), self._span(meta))

    @v_args(meta=True)
    def counter_space(self, meta: Meta, c: list[Token]) -> Attr:
        return ("space", self._vocab(c[0], A.COUNTER_SPACES, "counter space"), self._span(meta))

    def counter_body(self, c: list[A.CounterStep]) -> tuple[A.CounterStep, ...]:
        return tuple(c)

    @v_args(meta=True)
    def counter_add(self, meta: Meta, c: list[Any]) -> A.CounterStep:
        on = c[1][1] if len(c) > 1 else None
        return A.CounterStep("add", self._int(c[0], "count"), on=on, span=self._span(meta))

    @v_args(meta=True)
    def counter_wait(self, meta: Meta, c: list[Any]) -> A.CounterStep:
        amount, on = c[0], (c[1][1] if len(c) > 1 else None)
        if amount.type == "INT":
            return A.CounterStep("wait_ge", self._int(amount, "count"), on=on, span=self._span(meta))
        threshold = self._vocab(amount, A.THRESHOLDS, "counter threshold")
        return A.CounterStep("wait_ge", 0, threshold, on, span=self._span(meta))

    @v_args(meta=True)
    def rendezvous(self, meta: Meta, c: list[Any]) -> A.Rendezvous:
        name, mode, role, *attrs = c
        got = self._attrs(f"rendezvous `{name}`", attrs)
        loop_only = [(key, span) for key, value, span in attrs if key in ("lag", "peeled") and value]
        if got.get("prearm") and loop_only:
            key, span = loop_only[0]
            self.problems.append(
                Diagnostic(
                    Code.E_VALUE,
                    f"rendezvous `{name}` runs before its role's loop (`prearm`), so it cannot be `{key}`",
                    labels=(Label(span, "a loop side's attribute"),),
                    helps=("state the side before the loop and the side in the loop as two rendezvous lines",),
                )
            )
        if got.get("lag") == 0:
            self.problems.append(
                Diagnostic(
                    Code.E_VALUE,
                    f"rendezvous `{name}` lags 0 iterations",
                    labels=(Label(self._span(meta), "`lag 0` is no lag"),),
                    helps=("drop `lag 0`, or state how many iterations the side runs late",),
                )
            )
        return A.Rendezvous(
            str(name),
            str(mode),  # type: ignore[arg-type]
            str(role),
            got.get("threads"),
            got.get("prearm", False),
            got.get("lag"),
            got.get("peeled", False),
            span=self._span(meta),
        )

    @v_args(meta=True)
    def rdv_threads(self, meta: Meta, c: list[Token]) -> Attr:
        return ("threads", self._int(c[0], "count"), self._span(meta))

    @v_args(meta=True)
    def rdv_peeled(self, meta: Meta, c: list[Token]) -> Attr:
        return ("peeled", True, self._span(meta))

    # ------------------------------------------------------------- callables

    @v_args(meta=True)
    def export_callable(self, meta: Meta, c: list[Any]) -> A.ExportCallable:
        requires = c[3] if len(c) > 3 else ()
        return A.ExportCallable(str(c[0]), c[1], str(c[2]), requires, span=self._span(meta))

    def callable_requires(self, c: list[Any]) -> tuple[str, ...]:
        return self._guarantees(c[0])

    @v_args(meta=True)
    def call(self, meta: Meta, c: list[Any]) -> A.Call:
        guarantees = c[4] if len(c) > 4 else ()
        kind, caller = c[3]
        return A.Call(str(c[0]), c[1], str(c[2]), caller, kind, guarantees, span=self._span(meta))

    def origin_role(self, c: list[Token]) -> tuple[str, str]:
        return ("role", str(c[0]))

    def origin_callable(self, c: list[Token]) -> tuple[str, str]:
        return ("callable", str(c[0]))

    def call_guarantees(self, c: list[Any]) -> tuple[str, ...]:
        return self._guarantees(c[0])

    def _guarantees(self, toks: list[Token]) -> tuple[str, ...]:
        return tuple(self._vocab(t, A.GUARANTEES, "call-site guarantee") for t in toks)

    @v_args(meta=True)
    def signature(self, meta: Meta, c: list[Any]) -> A.Signature:
        params, result = c
        toks = list(params) if params is not None else []
        for tok in toks:
            self._vocab(tok, A.SCALAR_TYPES, "type")
        self._vocab(result, (*A.SCALAR_TYPES, "void"), "result type")
        return A.Signature(tuple(str(t) for t in toks), str(result), span=self._span(meta))

    # ------------------------------------------------------------- tensors

    _EXPORT_KEYS = ("elem", "tile", "generation", "placement", "ready")
    _IMPORT_KEYS = ("elem", "tile", "chunk", "generation", "demand", "lends", "done")

    def _tensor_attrs(self, what: str, attrs: list[Attr], allowed: tuple[str, ...]) -> dict[str, Any]:
        for key, _, span in attrs:
            if key not in allowed:
                self.problems.append(
                    Diagnostic(
                        Code.E_SYNTAX,
                        f"`{key}` does not belong in {what}",
                        labels=(Label(span, f"not valid in {what}"),),
                        helps=(f"{what} takes: {', '.join(f'`{k}`' for k in allowed)}",),
                    )
                )
        return self._attrs(what, [a for a in attrs if a[0] in allowed])

    @v_args(meta=True)
    def export_tensor(self, meta: Meta, c: list[Any]) -> A.ExportTensor:
        name, role, *attrs = c
        got = self._tensor_attrs(f"export `{name}`", attrs, self._EXPORT_KEYS)
        generation, ring = _generation(got.get("generation"))
        return A.ExportTensor(
            str(name),
            str(role),
            elem=got.get("elem"),
            tile=got.get("tile", ()),
            generation=generation,
            ring=ring,
            placement=got.get("placement"),
            ready=got.get("ready"),
            attr_spans=_first_spans(attrs),
            span=self._span(meta),
        )

    @v_args(meta=True)
    def import_tensor(self, meta: Meta, c: list[Any]) -> A.ImportTensor:
        name, export, role, *attrs = c
        got = self._tensor_attrs(f"import `{name}`", attrs, self._IMPORT_KEYS)
        generation, ring = _generation(got.get("generation"))
        return A.ImportTensor(
            str(name),
            str(export),
            str(role),
            elem=got.get("elem"),
            tile=got.get("tile", ()),
            chunk=got.get("chunk", ()),
            generation=generation,
            ring=ring,
            demand=got.get("demand"),
            lends=got.get("lends", ()),
            done=got.get("done"),
            attr_spans=_first_spans(attrs),
            span=self._span(meta),
        )

    @v_args(meta=True)
    def fragment_import(self, meta: Meta, c: list[Any]) -> A.Fragment:
        return self._fragment(meta, c, "import", "demand")

    @v_args(meta=True)
    def fragment_export(self, meta: Meta, c: list[Any]) -> A.Fragment:
        return self._fragment(meta, c, "export", "placement")

    def _fragment(self, meta: Meta, c: list[Any], side: Literal["import", "export"], word: str) -> A.Fragment:
        name, callable_, *attrs = c
        got = self._tensor_attrs(f"fragment `{name}`", attrs, ("elem", "tile", word))
        return A.Fragment(
            str(name),
            str(callable_),
            side,
            elem=got.get("elem"),
            tile=got.get("tile", ()),
            map=got.get(word),
            attr_spans=_first_spans(attrs),
            span=self._span(meta),
        )

    @v_args(meta=True)
    def tensor_elem(self, meta: Meta, c: list[Token]) -> Attr:
        return ("elem", self._vocab(c[0], A.ELEM_TYPES, "element type"), self._span(meta))

    @v_args(meta=True)
    def tensor_tile(self, meta: Meta, c: list[A.Dim]) -> Attr:
        return ("tile", tuple(c), self._span(meta))

    @v_args(meta=True)
    def tensor_chunk(self, meta: Meta, c: list[A.Dim]) -> Attr:
        return ("chunk", tuple(c), self._span(meta))

    @v_args(meta=True)
    def dim(self, meta: Meta, c: list[Token]) -> A.Dim:
        return A.Dim(str(c[0]), self._int(c[1], "count"), span=self._span(meta))

    @v_args(meta=True)
    def tensor_generation(self, meta: Meta, c: list[Token]) -> Attr:
        word = self._vocab(c[0], [g for g in A.GENERATIONS if g != "ring"], "generation")
        return ("generation", word, self._span(meta))

    @v_args(meta=True)
    def tensor_generation_ring(self, meta: Meta, c: list[Token]) -> Attr:
        return ("generation", ("ring", str(c[0])), self._span(meta))

    @v_args(meta=True)
    def tensor_placement(self, meta: Meta, c: list[A.MapSpec]) -> Attr:
        return ("placement", c[0], self._span(meta))

    @v_args(meta=True)
    def tensor_demand(self, meta: Meta, c: list[A.MapSpec]) -> Attr:
        return ("demand", c[0], self._span(meta))

    @v_args(meta=True)
    def tensor_lends(self, meta: Meta, c: list[A.Lend]) -> Attr:
        return ("lends", tuple(c), self._span(meta))

    @v_args(meta=True)
    def lend_smem(self, meta: Meta, c: list[Token]) -> A.Lend:
        return A.Lend("smem", claim=str(c[0]), span=self._span(meta))

    @v_args(meta=True)
    def lend_regs(self, meta: Meta, c: list[Token]) -> A.Lend:
        return A.Lend("regs", regs=self._int(c[0], "count"), span=self._span(meta))

    @v_args(meta=True)
    def tensor_ready(self, meta: Meta, c: list[A.EventRef]) -> Attr:
        return ("ready", c[0], self._span(meta))

    @v_args(meta=True)
    def tensor_done(self, meta: Meta, c: list[A.EventRef]) -> Attr:
        return ("done", c[0], self._span(meta))

    @v_args(meta=True)
    def layout_map(self, meta: Meta, c: list[Any]) -> A.LayoutMap:
        kind = str(c[0])
        params = tuple(x for x in c[1:] if isinstance(x, A.MapParam))
        outputs = next(x for x in c if isinstance(x, list))
        assigns = tuple(x for x in c if isinstance(x, A.MapAssign))
        return A.LayoutMap(
            kind,  # type: ignore[arg-type]
            params,
            tuple(str(t) for t in outputs),
            assigns,
            span=self._span(meta),
        )

    @v_args(meta=True)
    def library_map(self, meta: Meta, c: list[Any]) -> A.LibraryMap:
        name, *args = c
        return A.LibraryMap(str(name), tuple(a for a in args if a is not None), span=self._span(meta))

    @v_args(meta=True)
    def map_param(self, meta: Meta, c: list[Any]) -> A.MapParam:
        extent = self._int(c[1], "count") if c[1] is not None else None
        return A.MapParam(str(c[0]), extent, span=self._span(meta))

    @v_args(meta=True)
    def map_assign(self, meta: Meta, c: list[Any]) -> A.MapAssign:
        return A.MapAssign(str(c[0]), c[1], span=self._span(meta))

    def library_arg(self, c: list[Token]) -> tuple[str, int]:
        return (str(c[0]), self._int(c[1], "count"))

    # ------------------------------------------------------------- facts, phases, topology

    @v_args(meta=True)
    def owns_fact(self, meta: Meta, c: list[Any]) -> A.OwnsFact:
        self._vocab(c[1], A.SCALAR_TYPES, "type")
        return A.OwnsFact(str(c[0]), str(c[1]), c[2], span=self._span(meta))

    @v_args(meta=True)
    def fact_exact(self, meta: Meta, c: list[Token]) -> A.FactValue:
        return A.FactValue("exact", (self._int(c[0], "value"),), span=self._span(meta))

    @v_args(meta=True)
    def fact_range(self, meta: Meta, c: list[Token]) -> A.FactValue:
        lo, hi = self._int(c[0], "value"), self._int(c[1], "value")
        if hi < lo:
            self.problems.append(
                Diagnostic(
                    Code.E_VALUE,
                    f"the range {lo}..{hi} is empty",
                    labels=(Label(self._span(meta), "upper bound below lower bound"),),
                    helps=(f"write `in {hi}..{lo}`",),
                )
            )
        return A.FactValue("range", (lo, hi), span=self._span(meta))

    @v_args(meta=True)
    def fact_set(self, meta: Meta, c: list[Token]) -> A.FactValue:
        return A.FactValue("set", tuple(self._int(t, "value") for t in c), span=self._span(meta))

    @v_args(meta=True)
    def uses_fact(self, meta: Meta, c: list[Token]) -> A.UsesFact:
        self._vocab(c[1], A.SCALAR_TYPES, "type")
        return A.UsesFact(str(c[0]), str(c[1]), str(c[2]), span=self._span(meta))

    @v_args(meta=True)
    def assumes_fact(self, meta: Meta, c: list[Token]) -> A.AssumesFact:
        self._vocab(c[1], A.SCALAR_TYPES, "type")
        return A.AssumesFact(str(c[0]), str(c[1]), self._int(c[2], "value"), span=self._span(meta))

    @v_args(meta=True)
    def requires_fact(self, meta: Meta, c: list[Expr]) -> A.RequiresFact:
        return A.RequiresFact(c[0], span=self._span(meta))

    @v_args(meta=True)
    def phases(self, meta: Meta, c: list[Any]) -> A.Phases:
        return A.Phases(str(c[0]), tuple(str(t) for t in c[1]), span=self._span(meta))  # type: ignore[arg-type]

    @v_args(meta=True)
    def assumes_phases(self, meta: Meta, c: list[Any]) -> A.AssumesPhases:
        return A.AssumesPhases(tuple(str(t) for t in c[0]), span=self._span(meta))

    @v_args(meta=True)
    def cluster(self, meta: Meta, c: list[Token]) -> A.Cluster:
        return A.Cluster(tuple(self._shape(t) for t in c), span=self._span(meta))

    def _shape(self, tok: Token) -> A.ClusterShape:
        x, y, z = (bounded_int(v, "count") for v in str(tok).split("x"))
        if x is None or y is None or z is None:
            self.problems.append(_out_of_range(str(tok), "count", self._tok_span(tok)))
            return A.ClusterShape(0, 0, 0, span=self._tok_span(tok))
        return A.ClusterShape(x, y, z, span=self._tok_span(tok))

    @v_args(meta=True)
    def domain(self, meta: Meta, c: list[Any]) -> A.Domain:
        return A.Domain(_str(c[0]), self._views(c[1]), span=self._span(meta))

    def _views(self, toks: list[Token]) -> tuple[str, ...]:
        return tuple(self._vocab(t, A.VIEWS, "view") for t in toks)

    @v_args(meta=True)
    def buffer(self, meta: Meta, c: list[Any]) -> A.Buffer:
        name, size, *attrs = c
        got = self._attrs(f"buffer `{name}`", attrs)
        return A.Buffer(
            str(name),
            self._int(size, "size"),
            symmetric=got.get("symmetric", False),
            domain=got.get("domain"),
            views=got.get("views", ()),
            span=self._span(meta),
        )

    @v_args(meta=True)
    def buffer_symmetric(self, meta: Meta, c: list[Token]) -> Attr:
        return ("symmetric", True, self._span(meta))

    @v_args(meta=True)
    def buffer_domain(self, meta: Meta, c: list[Token]) -> Attr:
        return ("domain", _str(c[0]), self._span(meta))

    @v_args(meta=True)
    def buffer_views(self, meta: Meta, c: list[Any]) -> Attr:
        return ("views", self._views(c[0]), self._span(meta))

    @v_args(meta=True)
    def host_provider(self, meta: Meta, c: list[Any]) -> A.HostProvider:
        library, *attrs = c
        got = self._attrs(f"host provider {library}", attrs)
        return A.HostProvider(
            _str(library), got.get("header"), got.get("fn"), got.get("fills", ()), span=self._span(meta)
        )

    @v_args(meta=True)
    def provider_header(self, meta: Meta, c: list[Token]) -> Attr:
        return ("header", _str(c[0]), self._span(meta))

    @v_args(meta=True)
    def provider_fn(self, meta: Meta, c: list[Token]) -> Attr:
        return ("fn", str(c[0]), self._span(meta))

    @v_args(meta=True)
    def provider_fills(self, meta: Meta, c: list[Any]) -> Attr:
        return ("fills", tuple(str(t) for t in c[0]), self._span(meta))

    # ------------------------------------------------------------- pipelines

    @v_args(meta=True)
    def pipeline(self, meta: Meta, c: list[Any]) -> A.Pipeline:
        name, *items = c
        self._duplicate_items(_str(name), items, "pipeline")
        return A.Pipeline(_str(name), tuple(items), span=self._span(meta))

    @v_args(meta=True)
    def use(self, meta: Meta, c: list[Any]) -> A.Use:
        path = c[2] if len(c) > 2 else None
        self._version(c[1])
        return A.Use(_str(c[0]), str(c[1]), path, span=self._span(meta))

    def use_from(self, c: list[Token]) -> str:
        return _str(c[0])

    @v_args(meta=True)
    def pipeline_cluster(self, meta: Meta, c: list[Token]) -> A.PipelineCluster:
        return A.PipelineCluster(self._shape(c[0]), span=self._span(meta))

    @v_args(meta=True)
    def provides_domain(self, meta: Meta, c: list[Any]) -> A.ProvidesDomain:
        return A.ProvidesDomain(_str(c[0]), self._views(c[1]), span=self._span(meta))

    @v_args(meta=True)
    def provides_buffer(self, meta: Meta, c: list[Token]) -> A.ProvidesBuffer:
        return A.ProvidesBuffer(str(c[0]), self._int(c[1], "size"), span=self._span(meta))

    @v_args(meta=True)
    def resolve(self, meta: Meta, c: list[Token]) -> A.Resolve:
        return A.Resolve(str(c[0]), _str(c[1]), span=self._span(meta))

    # ------------------------------------------------------------- expressions

    @v_args(meta=True)
    def or_expr(self, meta: Meta, c: list[Expr]) -> Expr:
        return self._fold(meta, c, lambda _: "or")

    @v_args(meta=True)
    def and_expr(self, meta: Meta, c: list[Expr]) -> Expr:
        return self._fold(meta, c, lambda _: "and")

    @v_args(meta=True)
    def not_op(self, meta: Meta, c: list[Expr]) -> Expr:
        return Not(c[0], span=self._span(meta))

    @v_args(meta=True)
    def comparison(self, meta: Meta, c: list[Any]) -> Expr:
        return BinOp(str(c[1]), c[0], c[2], span=self._span(meta))

    @v_args(meta=True)
    def sum(self, meta: Meta, c: list[Any]) -> Expr:
        return self._fold_ops(meta, c)

    @v_args(meta=True)
    def product(self, meta: Meta, c: list[Any]) -> Expr:
        return self._fold_ops(meta, c)

    @v_args(meta=True)
    def int_lit(self, meta: Meta, c: list[Token]) -> Expr:
        return Int(self._int(c[0], "value"), span=self._span(meta))

    @v_args(meta=True)
    def name_ref(self, meta: Meta, c: list[Token]) -> Expr:
        return Name(str(c[0]), span=self._span(meta))

    def name_list(self, c: list[Token]) -> list[Token]:
        return list(c)

    def _fold(self, meta: Meta, operands: list[Expr], op: Callable[[int], str]) -> Expr:
        result = operands[0]
        for i, rhs in enumerate(operands[1:]):
            result = BinOp(op(i), result, rhs, span=_cover(result, rhs, self._span(meta)))
        return result

    def _fold_ops(self, meta: Meta, c: list[Any]) -> Expr:
        result: Expr = c[0]
        for i in range(1, len(c), 2):
            rhs: Expr = c[i + 1]
            result = BinOp(str(c[i]), result, rhs, span=_cover(result, rhs, self._span(meta)))
        return result


#: A tensor map's box: at most 5 dimensions of at most 256 elements each (cuTensorMapEncodeTiled).
TMA_BOX_RANK = 5
TMA_BOX_MAX = 256
#: The most values a params field states (``in {…}``): conformance decides the code once per value.
FIELD_VALUES_MAX = 64
#: The integer field types that state values, by the bits of a non-negative value they hold.
_FIELD_BITS = {"i8": 7, "i16": 15, "i32": 31, "i64": 63, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


def _out_of_range(text: str, kind: str, span: Span) -> Diagnostic:
    what, top = INT_RANGES[kind]
    return Diagnostic(
        Code.E_VALUE,
        f"integer {shown_literal(text)} is out of range for {what}",
        labels=(Label(span, f"{what} is at most {top}"),),
        helps=(f"write {what} between 0 and {top}",),
    )


def _cover(left: Expr, right: Expr, fallback: Span) -> Span:
    try:
        return left.span.cover(right.span)
    except ValueError:
        return fallback


def _size(written: Expr | None) -> tuple[int | None, Expr | None]:
    """A byte size as written: an integer literal is its value; an expression of facts is kept
    for :func:`fact_sizes.resolve`, which gives it its value once the stage's facts are known."""
    if written is None:
        return None, None
    if isinstance(written, Int):
        return written.value, None
    return None, written


def _str(tok: Token) -> str:
    """A STRING token's text without its quotes."""
    return str(tok)[1:-1]
