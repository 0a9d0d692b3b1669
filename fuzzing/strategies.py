"""Hypothesis strategies for the contract language, for fuzzing tools and contracts.

Usage::

    from hypothesis import given
    from contract_lang.parser import parse_text
    from contract_lang.printer import print_file
    from fuzzing.strategies import source_files

    @given(source_files())
    def test_round_trip(source):
        assert parse_text(print_file(source)) == source

The module has one section per family of strategies:

* **syntax** (below): arbitrary *well-formed* ASTs. Every value prints, with
  :func:`contract_lang.printer.print_file`, to text that parses back to an equal
  tree, and together they reach every node type of :mod:`contract_lang.ast`, every
  literal of its closed vocabularies and every optional attribute. They are not
  *valid*: a ring may name a role no stage declares, a claim may ask for more
  shared memory than any GPU has. Use them to fuzz parsers, printers, formatters
  and anything that must not crash on a contract that parses.
* **valid by construction**: compositions that the checker accepts are a family of
  their own, kept beside this module in :mod:`fuzzing.compositions`.

Building blocks, from the whole to the parts: :func:`source_files` (``kind``
``"contract"``, ``"pipeline"`` or ``"any"``), :func:`stages`, :func:`pipelines`,
:func:`stage_items` / :func:`pipeline_items` (and :func:`stage_item_kinds` /
:func:`pipeline_item_kinds`, one strategy per kind of item, to fuzz one construct),
:func:`claims`, :func:`rings` and :func:`ring_items`, :func:`counts`,
:func:`counters`, :func:`callables`, :func:`export_tensors` / :func:`import_tensors`
and :func:`map_specs`, :func:`fact_values`, :func:`lifetimes` and :func:`events`,
:func:`expressions`; lexical pieces: :func:`identifiers` (never a keyword, see
:data:`KEYWORDS`), :func:`string_literals`, :func:`integers`, :func:`byte_sizes`,
:func:`version_requirements`. Where a strategy takes ``names`` or ``roles``, pass a
list of names to draw from (to make references line up) or a strategy.

Spans are left at their defaults: spans never take part in equality.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from importlib.resources import files
from typing import Literal, TypeVar

from hypothesis import strategies as st
from lark import Lark

from contract_lang import ast as A
from contract_lang.expr import ARITH_OPS, BOOL_OPS, COMPARE_OPS, BinOp, Expr, Int, Name, Not
from contract_lang.parser import FileKind

__all__ = [
    "KEYWORDS",
    "byte_sizes",
    "callables",
    "claims",
    "counters",
    "counts",
    "events",
    "export_tensors",
    "expressions",
    "fact_values",
    "identifiers",
    "import_tensors",
    "integers",
    "lifetimes",
    "map_specs",
    "pipeline_item_kinds",
    "pipeline_items",
    "pipelines",
    "ring_items",
    "rings",
    "source_files",
    "stage_item_kinds",
    "stage_items",
    "stages",
    "string_literals",
    "version_requirements",
]

T = TypeVar("T")
Names = Sequence[str] | st.SearchStrategy[str] | None

_GRAMMAR = files("contract_lang").joinpath("grammar.lark")
_ALTERNATION = re.compile(r"\(\?:((?:[A-Za-z_][A-Za-z0-9_]*\|?)+)\)")


@functools.cache
def _grammar_keywords() -> frozenset[str]:
    """Every word the grammar spells literally: ``"stage"``, and the words of ``SIDE: "produce" | "consume"``."""
    grammar = Lark(_GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="contextual")
    words: set[str] = set()
    for term in grammar.terminals:
        value = term.pattern.value
        if type(term.pattern).__name__ == "PatternStr":
            if value.isidentifier():
                words.add(value)
        elif (found := _ALTERNATION.fullmatch(value)) is not None:
            words.update(found.group(1).split("|"))
    return frozenset(words)


#: The grammar's keywords (contextual: reserved only where the parser expects them).
#: :func:`identifiers` never produces one, so a generated name never reads as a keyword.
KEYWORDS: frozenset[str] = _grammar_keywords()


# ============================================================================ syntax
#
# Well-formed ASTs: they print and parse back; nothing here promises that a
# checker accepts them.

# ------------------------------------------------------------------ lexical pieces

_WORDS = (
    "load",
    "mma",
    "epilogue",
    "producer",
    "consumer",
    "kv",
    "acc",
    "tile_k",
    "tiles",
    "scratch",
    "bar",
    "t",
    "r",
    "m",
    "n",
    "x",
    "_tmp",
    "Q0",
)


def identifiers() -> st.SearchStrategy[str]:
    """Names (``[A-Za-z_][A-Za-z0-9_]*``) that are never a keyword of the grammar."""
    fresh = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,11}", fullmatch=True)
    return st.one_of(st.sampled_from(_WORDS), fresh).filter(lambda name: name not in KEYWORDS)


def _names(names: Names) -> st.SearchStrategy[str]:
    if names is None:
        return identifiers()
    if isinstance(names, st.SearchStrategy):
        return names
    return st.sampled_from(tuple(names))


def string_literals() -> st.SearchStrategy[str]:
    """The contents of a string literal: any text without ``"`` or a line break."""
    chars = st.characters(codec="utf-8", exclude_characters='"\n')
    return st.one_of(st.sampled_from(("demo.loader", "1.0.0", "cp", "build/mma.kpkg", "")), st.text(chars, max_size=16))


def integers(max_value: int = (1 << 32) - 1) -> st.SearchStrategy[int]:
    """Integer literal values: mostly small, sometimes large (the language has no negatives)."""
    return st.one_of(st.integers(0, 16), st.sampled_from((32, 64, 128, 255, 256, 1024)), st.integers(0, max_value))


def byte_sizes() -> st.SearchStrategy[int]:
    """Byte quantities; whole KiB often, so the printer's ``KiB`` form is exercised."""
    return st.one_of(integers(), st.integers(1, 1 << 14).map(lambda kib: kib * 1024))


def version_requirements() -> st.SearchStrategy[str]:
    """Version requirements of ``use``: ``^1.0``, ``~2``, ``>=1.2.3``, ``3``."""
    number = st.integers(0, 99).map(str)
    parts = st.lists(number, min_size=1, max_size=3).map(".".join)
    operator = st.sampled_from(("", "^", "~", ">=", "<=", ">", "<", "="))
    return st.builds(lambda op, ver: op + ver, operator, parts)


def _tuple(
    elements: st.SearchStrategy[T], min_size: int = 0, max_size: int = 4, unique: bool = False
) -> st.SearchStrategy[tuple[T, ...]]:
    return st.lists(elements, min_size=min_size, max_size=max_size, unique=unique).map(tuple)


def _rendezvous_phases(side: A.Rendezvous) -> st.SearchStrategy[A.Rendezvous]:
    """A loop side (not `prearm`) may lag (`lag N`, N >= 1) and run in the peeled phases (`peeled`)."""
    if side.prearm:
        return st.just(side)
    return st.builds(dataclasses.replace, st.just(side), lag=_maybe(st.integers(1, 1 << 20)), peeled=st.booleans())


def _maybe(elements: st.SearchStrategy[T]) -> st.SearchStrategy[T | None]:
    return st.one_of(st.none(), elements)


def _vocabulary(words: Sequence[str]) -> st.SearchStrategy[str]:
    return st.sampled_from(tuple(words))


_scalar_types = functools.partial(_vocabulary, A.SCALAR_TYPES)
_scopes = functools.partial(_vocabulary, A.SCOPES)
_views = functools.partial(_vocabulary, A.VIEWS)
_guarantees = functools.partial(_vocabulary, A.GUARANTEES)


# ------------------------------------------------------------------ expressions


def expressions(names: Names = None, max_depth: int = 3) -> st.SearchStrategy[Expr]:
    """Integer/boolean expression trees of at most ``max_depth`` operator levels.

    ``names`` gives the variables: a list to pick from, a strategy, or (default)
    any identifier. Every operator of the language appears: ``+ - * / %``, the
    comparisons, ``and``/``or`` and ``not``, nested in any shape (the printer adds
    the parentheses a shape needs).
    """
    leaf: st.SearchStrategy[Expr] = st.one_of(integers().map(Int), _names(names).map(Name))
    ops = _vocabulary((*ARITH_OPS, *COMPARE_OPS, *BOOL_OPS))
    level = leaf
    for _ in range(max_depth):
        below = _short_repr(level)
        binary = st.builds(BinOp, ops, below, below)
        # Operators twice as often as leaves, so that trees are rarely trivial.
        level = st.one_of(leaf, binary, binary, st.builds(Not, below))
    return level


def _short_repr(strategy: st.SearchStrategy[T]) -> st.SearchStrategy[T]:
    """The same strategy behind ``deferred``, whose repr stays short (each level of an
    expression uses the one below twice, so a plain repr doubles in length per level)."""
    return st.deferred(lambda: strategy)


# ------------------------------------------------------------------ claims


def events() -> st.SearchStrategy[A.EventRef]:
    """``acc.ready``; the event's name may also be one of the keywords ``ready``/``done``."""
    return st.builds(A.EventRef, identifiers(), st.one_of(identifiers(), st.sampled_from(("ready", "done"))))


def lifetimes() -> st.SearchStrategy[A.Lifetime]:
    """Every kind of lifetime: kernel, phase, between, until, from."""
    return st.one_of(
        st.just(A.Lifetime("kernel")),
        st.builds(lambda p: A.Lifetime("phase", phase=p), identifiers()),
        st.builds(lambda s, e: A.Lifetime("between", start=s, end=e), events(), events()),
        st.builds(lambda e: A.Lifetime("until", end=e), events()),
        st.builds(lambda s: A.Lifetime("from", start=s), events()),
    )


def claims() -> st.SearchStrategy[A.Claim]:
    """Shared-memory, tensor-memory, named-barrier and counter claims with any attributes."""
    return st.one_of(*_claim_kinds())


def _claim_kinds() -> list[st.SearchStrategy[A.Claim]]:
    ints = integers()
    signal = st.builds(
        A.Signal,
        identifiers(),
        st.integers(1, (1 << 20) - 1),
        _vocabulary(A.SIGNAL_ARRIVES),
        st.integers(min_value=0, max_value=1),
    )
    smem = st.builds(
        A.SmemClaim,
        identifiers(),
        bytes=_maybe(byte_sizes()),
        align=_maybe(ints),
        per_slot=_maybe(identifiers()),
        lifetime=lifetimes(),
        handle=_maybe(identifiers()),
        uses=_tuple(_vocabulary(A.SMEM_USES)),
        signal=_maybe(signal),
    ).map(  # a signal is an mbarrier's protocol: its claim holds one
        lambda c: c if c.signal is None or "mbarrier" in c.uses else dataclasses.replace(c, uses=(*c.uses, "mbarrier"))
    )
    reads = _tuple(st.builds(A.TmemRead, identifiers(), ints, ints), max_size=3)
    tmem = st.builds(
        A.TmemClaim,
        identifiers(),
        columns=_maybe(ints),
        lifetime=lifetimes(),
        handle=_maybe(identifiers()),
        reads=reads,
    )
    barrier = st.builds(
        A.BarrierClaim,
        identifiers(),
        participants=_tuple(identifiers()),
        threads=_maybe(ints),
        handle=_maybe(identifiers()),
        orders=_tuple(identifiers()),
    )
    counter = st.builds(
        A.CounterClaim, identifiers(), slots=_maybe(ints), scope=_maybe(_scopes()), handle=_maybe(identifiers())
    )
    return [smem, tmem, barrier, counter]


# ------------------------------------------------------------------ rings


def counts(roles: Names = None) -> st.SearchStrategy[A.Count]:
    """Arrival counts: sums of constants and ``k * per_warp(role)``-style terms."""
    unit = _vocabulary(("per_warp", "per_thread", "per_warpgroup"))
    term = st.one_of(
        st.builds(lambda k: A.CountTerm(k, "one"), integers()),
        st.builds(A.CountTerm, st.one_of(st.just(1), integers()), unit, _names(roles)),
    )
    return _tuple(term, min_size=1, max_size=3).map(A.Count)


def ring_items(roles: Names = None) -> st.SearchStrategy[A.RingItem]:
    """One item of a ring side, of any kind (a ring holds at most one depth, init and scope)."""
    return st.one_of(_ring_singletons(roles), _ring_repeatables(roles))


_BARRIERS = _vocabulary(("full", "empty"))
_SIDES: tuple[Literal["produce", "consume"], ...] = ("produce", "consume")
_MAP_KINDS: tuple[Literal["regs", "tmem", "smem"], ...] = ("regs", "tmem", "smem")


def _parts() -> st.SearchStrategy[str | None]:
    return _maybe(_vocabulary(A.PARTS))


def _ring_repeatables(roles: Names) -> st.SearchStrategy[A.RingItem]:
    ints = integers()
    return st.one_of(
        st.builds(A.RingBarrierInit, _BARRIERS, counts(roles), _maybe(byte_sizes())),
        st.builds(A.RingWait, _BARRIERS, _maybe(st.sampled_from((0, 1))), _parts()),
        st.builds(
            A.RingArrive,
            _BARRIERS,
            counts(roles),
            tx=_maybe(byte_sizes()),
            lag=_maybe(ints),
            prearm=st.booleans(),
            remote=st.booleans(),
            multicast=st.booleans(),
            on=_parts(),
        ),
        st.builds(
            A.RingCopy,
            _BARRIERS,
            byte_sizes(),
            _maybe(identifiers()),
            multicast=st.booleans(),
            remote=st.booleans(),
            on=_parts(),
        ),
        st.builds(A.RingRead, st.booleans(), st.booleans(), _parts()),
        st.builds(A.RingReadWait, _maybe(ints), _parts()),
        st.builds(A.RingProxy, _vocabulary(("writes", "reads")), _vocabulary(("generic", "async"))),
        st.just(A.RingFence()),
    )


def _ring_singletons(roles: Names) -> st.SearchStrategy[A.RingItem]:
    return st.one_of(
        _depths(),
        st.builds(A.RingInitBy, _names(roles), st.booleans()),
        st.builds(A.RingScope, _scopes()),
        st.builds(A.RingRestart, integers()),
        st.builds(A.RingLag, integers()),
        st.builds(A.RingOnce),
        st.builds(A.RingLoops, st.integers(2, 64)),
    )


def _depths() -> st.SearchStrategy[A.RingDepth]:
    fixed = st.integers(0, 64).map(lambda d: A.RingDepth(d, d))
    return st.one_of(fixed, st.builds(A.RingDepth, st.integers(0, 64), st.integers(0, 64)))


@st.composite
def rings(draw: st.DrawFn, roles: Names = None, max_items: int = 10) -> A.Ring:
    """One side of an mbarrier ring; at most one ``depth``, ``init by`` and ``scope`` line."""
    items: list[A.RingItem] = draw(st.lists(_ring_repeatables(roles), max_size=max_items))
    once: list[st.SearchStrategy[A.RingItem]] = [
        _depths(),
        st.builds(A.RingInitBy, _names(roles), st.booleans()),
        st.builds(A.RingScope, _scopes()),
        st.builds(A.RingRestart, integers()),
        st.builds(A.RingLag, integers()),
        st.builds(A.RingOnce),
        st.builds(A.RingLoops, st.integers(2, 64)),
    ]
    for strategy in once:
        if draw(st.booleans()):
            items.insert(draw(st.integers(0, len(items))), draw(strategy))
    if any(isinstance(it, A.RingOnce) for it in items):  # a one-shot side runs in no loop (E-VALUE)
        items = [it for it in items if not isinstance(it, A.RingLoops)]
    return A.Ring(draw(identifiers()), draw(st.sampled_from(_SIDES)), draw(_names(roles)), tuple(items))


# ------------------------------------------------------------------ counters, rendezvous, callables


def counters() -> st.SearchStrategy[A.Counter]:
    """Counter endpoints of either side, with any attributes and ``add``/``wait ge`` steps."""
    step = st.one_of(
        st.builds(A.CounterStep, _vocabulary(("add", "wait_ge")), integers(), on=_parts()),
        st.builds(A.CounterStep, st.just("wait_ge"), st.just(0), _vocabulary(A.THRESHOLDS), _parts()),
    )
    return st.builds(
        A.Counter,
        identifiers(),
        _vocabulary(("produce", "consume")),
        identifiers(),
        scope=_maybe(_scopes()),
        domain=_maybe(string_literals()),
        space=_maybe(_vocabulary(A.COUNTER_SPACES)),
        steps=_tuple(step),
    )


def _signatures() -> st.SearchStrategy[A.Signature]:
    return st.builds(A.Signature, _tuple(_scalar_types()), st.one_of(_scalar_types(), st.just("void")))


def callables() -> st.SearchStrategy[A.ExportCallable | A.Call]:
    """Exported callables and call sites (from a role or from a callable), with guarantees."""
    return st.one_of(*_callables())


def _callables() -> list[st.SearchStrategy[A.ExportCallable | A.Call]]:
    export = st.builds(A.ExportCallable, identifiers(), _signatures(), identifiers(), _tuple(_guarantees()))
    call = st.builds(
        A.Call,
        identifiers(),
        _signatures(),
        identifiers(),
        identifiers(),
        _vocabulary(("role", "callable")),
        _tuple(_guarantees()),
    )
    return [export, call]


# ------------------------------------------------------------------ tensors


@st.composite
def _layout_maps(draw: st.DrawFn) -> A.LayoutMap:
    params = draw(_tuple(identifiers(), min_size=1, max_size=3, unique=True))
    outputs = draw(_tuple(identifiers(), min_size=1, max_size=3, unique=True))
    assign = st.builds(A.MapAssign, st.sampled_from(outputs), expressions(names=params, max_depth=3))
    return A.LayoutMap(
        draw(st.sampled_from(_MAP_KINDS)),
        tuple(A.MapParam(p, draw(_maybe(integers()))) for p in params),
        outputs,
        draw(_tuple(assign, max_size=3)),
    )


def map_specs() -> st.SearchStrategy[A.MapSpec]:
    """Closed-form layout maps (``regs(t: 128) -> (m) { m = t }``) and library maps."""
    library = st.builds(A.LibraryMap, identifiers(), _tuple(st.tuples(identifiers(), integers())))
    return st.one_of(_layout_maps(), library)


def _dims() -> st.SearchStrategy[tuple[A.Dim, ...]]:
    return _tuple(st.builds(A.Dim, identifiers(), integers()), max_size=3)


def export_tensors() -> st.SearchStrategy[A.ExportTensor]:
    """``export tensor`` blocks with any subset of their items."""
    return st.builds(
        A.ExportTensor,
        identifiers(),
        identifiers(),
        elem=_maybe(_vocabulary(A.ELEM_TYPES)),
        tile=_dims(),
        placement=_maybe(map_specs()),
        ready=_maybe(events()),
    ).flatmap(_with_generation)


def fragments() -> st.SearchStrategy[A.Fragment]:
    """Register fragments of either side (``import``: a demand, ``export``: a placement), items optional."""
    return st.builds(
        A.Fragment,
        identifiers(),
        identifiers(),
        st.sampled_from(("import", "export")),
        elem=_maybe(_vocabulary(A.ELEM_TYPES)),
        tile=_dims(),
        map=_maybe(map_specs()),
    )


def _generations() -> st.SearchStrategy[tuple[str | None, str | None]]:
    """A tensor's ``generation`` word and ``ring``: none, a word, or ``ring`` and a ring's name."""
    return st.one_of(
        st.just((None, None)),
        _vocabulary([g for g in A.GENERATIONS if g != "ring"]).map(lambda g: (g, None)),
        identifiers().map(lambda r: ("ring", r)),
    )


def _with_generation(tensor: T) -> st.SearchStrategy[T]:
    return _generations().map(lambda g: dataclasses.replace(tensor, generation=g[0], ring=g[1]))  # type: ignore[type-var]


def import_tensors() -> st.SearchStrategy[A.ImportTensor]:
    """``import tensor`` blocks with any subset of their items, lends included."""
    lend = st.one_of(
        st.builds(lambda c: A.Lend("smem", claim=c), identifiers()),
        st.builds(lambda r: A.Lend("regs", regs=r), integers()),
    )
    return st.builds(
        A.ImportTensor,
        identifiers(),
        identifiers(),
        identifiers(),
        elem=_maybe(_vocabulary(A.ELEM_TYPES)),
        tile=_dims(),
        chunk=_dims(),
        demand=_maybe(map_specs()),
        lends=_tuple(lend, max_size=3),
        done=_maybe(events()),
    ).flatmap(_with_generation)


# ------------------------------------------------------------------ facts, phases, topology


def fact_values() -> st.SearchStrategy[A.FactValue]:
    """An owner's value: exact, a non-empty inclusive range, or a set."""
    ints = integers()
    return st.one_of(
        st.builds(lambda v: A.FactValue("exact", (v,)), ints),
        st.builds(lambda lo, extra: A.FactValue("range", (lo, lo + extra)), ints, ints),
        _tuple(ints, min_size=1, max_size=4).map(lambda vs: A.FactValue("set", vs)),
    )


def _facts() -> list[st.SearchStrategy[A.StageItem]]:
    return [
        st.builds(A.OwnsFact, identifiers(), _scalar_types(), fact_values()),
        st.builds(A.UsesFact, identifiers(), _scalar_types(), identifiers()),
        st.builds(A.AssumesFact, identifiers(), _scalar_types(), integers()),
        st.builds(A.RequiresFact, expressions()),
    ]


def _shapes() -> st.SearchStrategy[A.ClusterShape]:
    dim = st.one_of(st.integers(1, 4), integers())
    return st.builds(A.ClusterShape, dim, dim, dim)


def _launches() -> st.SearchStrategy[A.Launch]:
    grids = st.one_of(st.just((None, False)), st.tuples(integers(), st.just(False)), st.just((None, True)))
    return grids.flatmap(
        lambda g: st.builds(
            A.Launch,
            _vocabulary(("persistent", "fixed")),
            threads=_maybe(integers()),
            blocks_per_sm=_maybe(integers()),
            grid=st.just(g[0]),
            resident=st.just(g[1]),
            cooperative=st.booleans(),
        )
    )


def _targets() -> st.SearchStrategy[A.Target]:
    return st.builds(A.Target, st.one_of(_vocabulary(("sm_90a", "sm_100a", "sm_120a")), identifiers()))


# ------------------------------------------------------------------ stages


def _with_turn(role: A.Role) -> st.SearchStrategy[A.Role]:
    """``role`` as drawn, or taking turn ``t`` of ``n`` (``t < n``)."""
    turn = st.integers(1, 8).flatmap(lambda n: st.tuples(st.integers(0, n - 1), st.just(n)))
    return st.one_of(st.just(role), turn.map(lambda tn: dataclasses.replace(role, turn=tn[0], turns=tn[1])))


def stage_item_kinds() -> dict[str, st.SearchStrategy[A.StageItem]]:
    """One strategy per kind of stage item, by AST class name (``"Ring"``, ``"SmemClaim"``, …):
    fuzz one construct alone, or weight the kinds as a test needs."""
    ints = integers()
    box = st.builds(A.TmaBox, _tuple(st.integers(1, 256), min_size=1, max_size=5), _vocabulary(A.ELEM_TYPES))
    param_field = st.one_of(
        st.builds(A.ParamField, identifiers(), _scalar_types(), ints, _maybe(identifiers())),
        st.builds(A.ParamField, identifiers(), st.just("ptr"), ints, _maybe(identifiers()), box),
        st.builds(  # an integer field stating its values (`in {16, 32, 64}`)
            A.ParamField,
            identifiers(),
            _vocabulary(("i32", "u32")),
            ints,
            _maybe(identifiers()),
            st.none(),
            st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=4, unique=True).map(tuple),
        ),
    )
    kinds: list[st.SearchStrategy[A.StageItem]] = [
        _targets(),
        st.builds(A.Features, _tuple(_vocabulary(A.FEATURES), min_size=1)),
        st.builds(
            A.Role,
            identifiers(),
            entry=_maybe(identifiers()),
            warps=_maybe(ints),
            regs=_maybe(ints),
            warpgroup=st.booleans(),
        ).flatmap(_with_turn),
        _launches(),
        st.builds(A.Params, identifiers(), ints, ints, _tuple(param_field)),
        *_claim_kinds(),
        rings(),
        counters(),
        st.builds(
            A.Rendezvous, identifiers(), _vocabulary(("arrive", "sync")), identifiers(), _maybe(ints), st.booleans()
        ).flatmap(_rendezvous_phases),
        *_callables(),
        export_tensors(),
        import_tensors(),
        fragments(),
        *_facts(),
        st.builds(A.Phases, _vocabulary(("exclusive", "concurrent")), _tuple(identifiers(), min_size=1)),
        st.builds(A.AssumesPhases, _tuple(identifiers(), min_size=1)),
        st.builds(A.Cluster, _tuple(_shapes(), min_size=1, max_size=3)),
        st.builds(A.Domain, string_literals(), _tuple(_views(), min_size=1, max_size=2)),
        st.builds(
            A.Buffer,
            identifiers(),
            byte_sizes(),
            symmetric=st.booleans(),
            domain=_maybe(string_literals()),
            views=_tuple(_views(), max_size=2),
        ),
        st.builds(
            A.HostProvider,
            string_literals(),
            _maybe(string_literals()),
            _maybe(identifiers()),
            _tuple(identifiers(), max_size=2),
        ),
    ]
    return dict(zip(_STAGE_ITEM_NAMES, kinds, strict=True))


_STAGE_ITEM_NAMES = (
    "Target",
    "Features",
    "Role",
    "Launch",
    "Params",
    "SmemClaim",
    "TmemClaim",
    "BarrierClaim",
    "CounterClaim",
    "Ring",
    "Counter",
    "Rendezvous",
    "ExportCallable",
    "Call",
    "ExportTensor",
    "ImportTensor",
    "Fragment",
    "OwnsFact",
    "UsesFact",
    "AssumesFact",
    "RequiresFact",
    "Phases",
    "AssumesPhases",
    "Cluster",
    "Domain",
    "Buffer",
    "HostProvider",
)


def stage_items() -> st.SearchStrategy[A.StageItem]:
    """Any one item of a stage block, every kind about equally likely."""
    return st.one_of(*stage_item_kinds().values())


def stages(max_items: int = 12) -> st.SearchStrategy[A.Stage]:
    """A ``stage`` block with up to ``max_items`` items of any kind, in any order."""
    items = _tuple(stage_items(), max_size=max_items).map(_unique_items)
    return st.builds(A.Stage, string_literals(), string_literals(), items)


def _unique_items(items: tuple[T, ...]) -> tuple[T, ...]:
    """Items without a second `target` or a second claim of one name (both E-DUPLICATE)."""
    seen: set[tuple[str, str]] = set()
    kept: list[T] = []
    for item in items:
        key = (
            ("target", "")
            if isinstance(item, A.Target)
            else ("claim", item.name)
            if isinstance(item, A.Claim)
            else None
        )
        if key is not None and key in seen:
            continue
        if key is not None:
            seen.add(key)
        kept.append(item)
    return tuple(kept)


# ------------------------------------------------------------------ pipelines


def pipeline_item_kinds() -> dict[str, st.SearchStrategy[A.PipelineItem]]:
    """One strategy per kind of pipeline item, by AST class name (``"Use"``, ``"Resolve"``, …)."""
    return {
        "Target": _targets(),
        "Use": st.builds(A.Use, string_literals(), version_requirements(), _maybe(string_literals())),
        "PipelineCluster": st.builds(A.PipelineCluster, _shapes()),
        "ProvidesDomain": st.builds(A.ProvidesDomain, string_literals(), _tuple(_views(), min_size=1, max_size=2)),
        "ProvidesBuffer": st.builds(A.ProvidesBuffer, identifiers(), byte_sizes()),
        "Resolve": st.builds(A.Resolve, identifiers(), string_literals()),
        "Launch": _launches(),
    }


def pipeline_items() -> st.SearchStrategy[A.PipelineItem]:
    """Any one item of a pipeline block."""
    return st.one_of(*pipeline_item_kinds().values())


def pipelines(max_items: int = 8) -> st.SearchStrategy[A.Pipeline]:
    """A ``pipeline`` block with up to ``max_items`` items of any kind, in any order."""
    return st.builds(A.Pipeline, string_literals(), _tuple(pipeline_items(), max_size=max_items).map(_unique_items))


# ------------------------------------------------------------------ files


def source_files(kind: FileKind = "any", max_blocks: int = 3) -> st.SearchStrategy[A.SourceFile]:
    """Whole files: ``"contract"`` (``.kc``: one or more stages), ``"pipeline"`` (``.kp``:
    exactly one pipeline) or ``"any"`` (stages and pipelines mixed, as ``parse_text``
    accepts with ``kind="any"``)."""
    make: Callable[[tuple[A.Stage | A.Pipeline, ...]], A.SourceFile] = functools.partial(A.SourceFile, "<generated>")
    if kind == "pipeline":
        return pipelines().map(lambda p: make((p,)))
    blocks: st.SearchStrategy[A.Stage | A.Pipeline] = (
        stages() if kind == "contract" else st.one_of(stages(), pipelines())
    )
    return _tuple(blocks, min_size=1, max_size=max_blocks).map(make)
