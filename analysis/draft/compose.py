"""What a component's composition decides: the values its code only reads through handles.

``kernlink draft COMPONENT.cu --pipeline P.kp`` drafts the component as it is drafted from its
code alone, then reads the pipeline and the contracts of the *other* stages it uses (never the
drafted stage's own contract) for what the composition states and the language makes every
stage agree on:

- the stage's name: the ``use`` whose name reads as the handles' prefix (``ring.loader`` for
  ``kl_ring_loader_…``); its version only where the ``use`` pins one exact version;
- the launch of a stage with roles: the pipeline's ``launch`` line, else the other stages'
  (L-LAUNCH: they agree);
- a lone role's width: the block's warps less the other stages' roles (L-WARPS; it assumes no
  idle warp, and the comment says so);
- facts: one another stage owns is this stage's ``uses fact … as param F`` where its params
  struct has a field ``F`` of the owner's name and type (the field is ``= fact F``), else an
  ``assumes fact … ==`` the owner's exact value where the code reads the fact's handle; one
  that other stages use or assume and none of them owns is this stage's to own (L-OWNER),
  with their type and, where one assumes a value, that value (L-FACT);
- a named barrier another stage declares as a ``rendezvous``: this stage's side of it, its
  mode from the code's ``bar.sync`` / ``bar.arrive``, its threads the other sides' (L-BARRIER);
- a tensor import's export (the one export of the composition), its element type (L-DTYPE)
  and tile (L-TENSOR), and its done event (``c.done`` of its connection ``c``, §7.1); an
  export's element type and tile from the imports of it, and its ready event where one
  connection imports it (``c.ready``);
- a counter endpoint's scope: the other endpoint's (L-PAIR); a counter the code indexes (a slot
  other than 0) that no other stage claims: this stage's ``claim counter`` with its endpoints'
  scope (an unclaimed counter is one word), its slots undecided;
- a ``per_slot R`` claim the code reaches through ring ``R``'s handle (``P_R_<claim>_smem``) that no
  other stage declares: this stage's, its bytes and alignment undecided;
- the interpreter's ``phases exclusive …``: the phases the other stages assume exclusive, where
  none of them declares phases (L-PHASE: one stage declares them all in one line), in the one
  order their assumptions share (a phase none assumes is not shown: the comment says so);
- a ring barrier's init count the code leaves open: the sum of every side's arrivals on it,
  the other stages' as their contracts state them (§8.2; the protocol model checks the sum).

A width and a fact's owner are deduced from what none of the other stages states, so only
when every stage the pipeline uses but this one was read. Each value so drafted carries a
``# composed: …`` comment naming the line it comes from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise

from analysis.draft.model import Composed, Key, Undecided
from contract_lang import ast as A
from diagnostics.span import Span
from package.abi import sanitize


@dataclass(frozen=True)
class Composition:
    """A pipeline and the stages it uses (the drafted one's contract, if among them, is never read)."""

    pipeline: A.Pipeline
    stages: tuple[A.Stage, ...]


@dataclass(frozen=True)
class CodeView:
    """What the composition pass reads of the code: each named barrier's modes (``sync``/``arrive``), the
    facts whose handles it reads."""

    bar_modes: dict[str, frozenset[str]]
    fact_handles: frozenset[str]
    #: counters the code adds to or waits on at a slot other than 0, with the PTX line of the first such call
    indexed_counters: Mapping[str, int] = field(default_factory=dict)
    #: (ring, claim) of each ring-slot handle the code reads (``P_R_<claim>_smem``), with its PTX line
    ring_slots: Mapping[tuple[str, str], int] = field(default_factory=dict)


def own_use(pipeline: A.Pipeline, prefix_name: str, stem: str) -> A.Use | None:
    """The ``use`` of the drafted stage: the one whose name the handles' prefix spells, else the one whose
    package is built from a source of this stem (``from "build/loader.kpkg"``: ``loader.cu``); None: none
    or more than one."""
    found = [u for u in pipeline.uses if prefix_name and sanitize(u.stage) == prefix_name]
    if not found:
        found = [
            u for u in pipeline.uses if u.path is not None and re.sub(r"\.kpkg$", "", u.path.rsplit("/", 1)[-1]) == stem
        ]
    return found[0] if len(found) == 1 else None


def _at(span: Span) -> str:
    return f"{span.file}:{span.line}" if span.line > 0 else span.file


def exact(requirement: str) -> str | None:
    """The one version an exact requirement (``=1.2.3``, ``1.2.3``) allows (None: a range)."""
    m = re.fullmatch(r"=?\s*(\d+)\.(\d+)\.(\d+)", requirement.strip())
    return ".".join(m.groups()) if m else None


@dataclass
class _Pass:
    stage: A.Stage
    notes: list[Undecided]
    comp: Composition
    code: CodeView
    composed: list[Composed]
    own: A.Use

    @property
    def items(self) -> list[A.StageItem]:
        return list(self.stage.items)

    def decided(self, *keys: Key) -> None:
        self.notes = [n for n in self.notes if n.key not in keys]

    def note(self, key: Key, why: str, span: Span, anchor: int | None) -> None:
        self.composed.append(Composed(key, why, _at(span), anchor))

    def put(self, items: list[A.StageItem]) -> None:
        self.stage = replace(self.stage, items=tuple(items))

    def insert(self, at: int, item: A.StageItem) -> int:
        items = self.items
        items.insert(at, item)
        self.put(items)
        self.notes = [
            replace(n, anchor=n.anchor + 1) if n.anchor is not None and n.anchor >= at else n for n in self.notes
        ]
        self.composed = [
            replace(c, anchor=c.anchor + 1) if c.anchor is not None and c.anchor >= at else c for c in self.composed
        ]
        return at

    @property
    def complete(self) -> bool:
        """Whether every other stage the pipeline uses was read (a deduction from what none of them
        states, a width or a fact's owner, needs them all)."""
        wanted = {u.stage for u in self.comp.pipeline.uses} - {self.own.stage}
        return wanted <= {s.name for s in self.comp.stages}

    def others(self, kind: type[A.StageItem]) -> Iterable[tuple[A.Stage, A.StageItem]]:
        """The items of this kind of every stage the pipeline uses but the drafted one."""
        for stage in self.comp.stages:
            if stage.name == self.own.stage:
                continue
            for item in stage.items:
                if isinstance(item, kind):
                    yield stage, item

    # -------------------------------------------------------------- name, version, launch, widths

    def name(self, use: A.Use) -> None:
        self.stage = replace(self.stage, name=use.stage)
        self.decided(("stage", "name"))
        self.note(("stage", "name"), f"the stage's name: the pipeline's `use \"{use.stage}\"`", use.span, None)
        version = exact(use.requirement)
        if version is not None:
            self.stage = replace(self.stage, version=version)
            self.decided(("stage", "version"))
            self.note(("stage", "version"), "the one version the pipeline's `use` allows", use.span, None)
        else:
            self.notes = [
                replace(n, why=f"{n.why} (the pipeline requires `{use.requirement}`)")
                if n.key == ("stage", "version")
                else n
                for n in self.notes
            ]

    def launch(self) -> None:
        items = self.items
        if any(isinstance(i, A.Launch) for i in items) or not any(isinstance(i, A.Role) for i in items):
            return  # a stage without roles runs no code of its own in the launch
        stated = next((i for i in self.comp.pipeline.items if isinstance(i, A.Launch)), None)
        if stated is None:
            lines = [i for _, i in self.others(A.Launch) if isinstance(i, A.Launch)]
            kinds = {x.kind for x in lines}
            if len(kinds) != 1:
                return
            merged: dict[str, object] = {}
            for attr in ("threads", "blocks_per_sm", "grid"):
                values = {getattr(x, attr) for x in lines} - {None}
                if len(values) > 1:
                    return
                merged[attr] = values.pop() if values else None
            resident = any(x.resident for x in lines)
            cooperative = any(x.cooperative for x in lines)
            stated = replace(lines[0], **merged, resident=resident, cooperative=cooperative)  # type: ignore[arg-type]
            why = "the launch: the other stages' `launch` lines (L-LAUNCH: every stage's agrees)"
        else:
            why = "the launch: the pipeline's `launch` line"
        at = max((k for k, i in enumerate(items) if isinstance(i, (A.Role, A.Target, A.Features))), default=-1) + 1
        self.insert(at, stated)
        self.decided(("launch", "kind"))
        self.note(("launch",), why, stated.span, at)

    def width(self) -> None:
        items = self.items
        roles = [(k, i) for k, i in enumerate(items) if isinstance(i, A.Role)]
        launch = next((i for i in items if isinstance(i, A.Launch)), None)
        if len(roles) != 1 or launch is None or launch.threads is None or launch.threads % 32 or not self.complete:
            return
        theirs = [i for _, i in self.others(A.Role) if isinstance(i, A.Role)]
        if any(r.warps is None for r in theirs):
            return
        left = launch.threads // 32 - sum(r.warps or 0 for r in theirs)
        at, role = roles[0]
        if left < 1 or (role.warpgroup and left % 4):
            return
        items[at] = replace(role, warps=left)
        self.put(items)
        self.decided(("role", role.name, "warps"))
        self.note(
            ("role", role.name, "warps"),
            f"role `{role.name}`'s width: the block's {launch.threads // 32} warps less the other stages' "
            f"{launch.threads // 32 - left} (L-WARPS), if no warp idles",
            launch.span if launch.span.line > 0 else self.comp.pipeline.span,
            at,
        )

    # -------------------------------------------------------------- facts

    def facts(self) -> None:
        owners: dict[str, A.OwnsFact] = {}
        users: dict[str, list[A.UsesFact | A.AssumesFact]] = {}
        for _, item in self.others(A.OwnsFact):
            assert isinstance(item, A.OwnsFact)
            owners.setdefault(item.name, item)
        for kind in (A.UsesFact, A.AssumesFact):
            for _, item in self.others(kind):
                assert isinstance(item, (A.UsesFact, A.AssumesFact))
                users.setdefault(item.name, []).append(item)
        fields = {
            f.name: (k, f)
            for k, p in enumerate(self.items)
            if isinstance(p, A.Params)
            for f in p.fields
            if f.fact is None
        }
        for name in sorted(set(owners) | set(users) | self.code.fact_handles):
            owner = owners.get(name)
            if owner is not None:
                self._used(name, owner, fields)
            elif name in users and self.complete:
                self._owned(name, users[name], fields)

    def _field_fact(self, name: str, type_: str, fields: dict[str, tuple[int, A.ParamField]], span: Span) -> bool:
        found = fields.get(name)
        if found is None or found[1].type != type_:
            return False
        at, fld = found
        items = self.items
        params = items[at]
        assert isinstance(params, A.Params)
        items[at] = replace(params, fields=tuple(replace(f, fact=name) if f is fld else f for f in params.fields))
        self.put(items)
        self.note(
            ("params", params.name, name, "fact"),
            f"field `{name}` is `= fact {name}`: the field bears the fact's name and type",
            span,
            at,
        )
        return True

    def _used(self, name: str, owner: A.OwnsFact, fields: dict[str, tuple[int, A.ParamField]]) -> None:
        why = f"fact `{name}`: another stage owns it"
        if self._field_fact(name, owner.type, fields, owner.span):
            item: A.StageItem = A.UsesFact(name, owner.type, name)
            why += f", this stage's params field `{name}` takes it"
        elif name in self.code.fact_handles and owner.value.kind == "exact":
            item = A.AssumesFact(name, owner.type, owner.value.values[0])
            why += ", the code reads its handle and no params field takes it: an assumption of its value"
        else:
            return
        at = self.insert(len(self.items), item)
        self.decided(("fact", name, "owns"))
        self.note(("fact", name), why, owner.span, at)

    def _owned(
        self, name: str, users: Sequence[A.UsesFact | A.AssumesFact], fields: dict[str, tuple[int, A.ParamField]]
    ) -> None:
        types = {u.type for u in users}
        if len(types) != 1:
            return
        type_ = types.pop()
        assumed = {u.value for u in users if isinstance(u, A.AssumesFact)}
        value = assumed.pop() if len(assumed) == 1 else None
        span = users[0].span
        self._field_fact(name, type_, fields, span)
        at = self.insert(len(self.items), A.OwnsFact(name, type_, A.FactValue("exact", (value or 0,))))
        self.decided(("fact", name, "owns"))
        said = " and assumes its value" if value is not None else ""
        self.note(
            ("fact", name),
            f"fact `{name}`: the other stages use it{said} and none owns it (L-OWNER: this stage does)",
            span,
            at,
        )
        if value is None:
            self.notes.append(Undecided(("fact", name, "owns"), f"fact `{name}`'s value", 0, at))

    # -------------------------------------------------------------- rendezvous, tensors, counters

    def rendezvous(self) -> None:
        theirs = [i for _, i in self.others(A.Rendezvous) if isinstance(i, A.Rendezvous)]
        items = self.items
        for at, claim in enumerate(items):
            if not isinstance(claim, A.BarrierClaim):
                continue
            sides = [r for r in theirs if r.name == claim.name]
            modes = self.code.bar_modes.get(claim.name, frozenset())
            threads = {r.threads for r in sides}
            if not sides or len(modes) != 1 or len(claim.participants) != 1 or len(threads) != 1:
                continue
            mode = next(iter(modes))
            items[at] = A.Rendezvous(claim.name, mode, claim.participants[0], threads.pop())  # type: ignore[arg-type]
            self.put(items)
            self.decided(("claim barrier", claim.name, "kind"))
            self.note(
                ("rendezvous", claim.name),
                f"`{claim.name}` is a rendezvous of the other stages; its threads theirs (L-BARRIER)",
                sides[0].span,
                at,
            )

    def tensors(self) -> None:
        exports = [i for _, i in self.others(A.ExportTensor) if isinstance(i, A.ExportTensor)]
        imports = [i for _, i in self.others(A.ImportTensor) if isinstance(i, A.ImportTensor)]
        items = self.items
        for at, item in enumerate(items):
            if isinstance(item, A.ImportTensor) and len(exports) == 1:
                export = exports[0]
                done = A.EventRef(item.name, "done")
                items[at] = replace(item, export=export.name, elem=export.elem, tile=export.tile, done=done)
                key = ("import tensor", item.name)
                self.decided(
                    (*key, "from"), *((*key, "elem"),) * (export.elem is not None), (*key, "tile"), (*key, "done")
                )
                self.note(
                    key,
                    f"its export `{export.name}` (the composition's one), its elem and tile; its done event `{done}`",
                    export.span,
                    at,
                )
            elif isinstance(item, A.ExportTensor):
                mine = [i for i in imports if i.export == item.name]
                elems = {i.elem for i in mine} - {None}
                tiles = {i.tile for i in mine} - {()}
                if not mine or len(elems) > 1 or len(tiles) > 1:
                    continue
                key = ("export tensor", item.name)
                elem = elems.pop() if elems else None
                tile = tiles.pop() if tiles else ()
                # the ready event is the connection's: one import, one connection (§7.1)
                ready = A.EventRef(mine[0].name, "ready") if len(mine) == 1 else None
                items[at] = replace(item, elem=elem, tile=tile, ready=ready)
                self.decided(
                    *((*key, "elem"),) * (elem is not None),
                    *((*key, "tile"),) * bool(tile),
                    *((*key, "ready"),) * (ready is not None),
                )
                said = f"; its ready event `{ready}`, of the one connection importing it (§7.1)" if ready else ""
                self.note(key, f"its elem and tile: the imports' (L-DTYPE, L-TENSOR){said}", mine[0].span, at)
        self.put(items)

    def counters(self) -> None:
        theirs = [i for _, i in self.others(A.Counter) if isinstance(i, A.Counter)]
        items = self.items
        for at, item in enumerate(items):
            if not isinstance(item, A.Counter) or item.scope is not None:
                continue
            scopes = {c.scope for c in theirs if c.name == item.name and c.side != item.side} - {None}
            if len(scopes) != 1:
                continue
            items[at] = replace(item, scope=scopes.pop())
            key = ("counter", item.name, item.side)
            self.decided((*key, "scope"))
            other = next(c for c in theirs if c.name == item.name and c.side != item.side)
            self.note((*key, "scope"), "its scope: the other endpoint's (L-PAIR)", other.span, at)
        self.put(items)

    def counter_claims(self) -> None:
        """A counter the code indexes (a slot other than 0) that no other stage claims: this stage's claim.

        An unclaimed counter is one word (linker/counters.py), so a code that addresses another slot
        needs a ``claim counter`` of several slots, and when every other stage was read and none claims
        it, the claim is this stage's; its scope is its endpoints' (the linker uses the widest). How
        many slots is the author's bound on the index (undecided)."""
        if not self.complete:
            return
        claimed = {i.name for _, i in self.others(A.CounterClaim) if isinstance(i, A.CounterClaim)}
        claimed |= {i.name for i in self.items if isinstance(i, A.CounterClaim)}
        for name, line in sorted(self.code.indexed_counters.items()):
            if name in claimed:
                continue
            items = self.items
            ends = [(k, i) for k, i in enumerate(items) if isinstance(i, A.Counter) and i.name == name]
            scopes = {i.scope for _, i in ends}
            at = ends[0][0] if ends else len(items)
            scope = scopes.pop() if len(scopes) == 1 else None
            self.insert(at, A.CounterClaim(name, scope=scope))
            key = ("claim counter", name)
            why = (
                f"counter `{name}`'s claim: the code indexes its slots and no other stage claims it (an unclaimed "
                "counter is one word)"
            )
            span = self.comp.pipeline.span
            self.note((*key, "claim"), why + (f"; its scope: its endpoints' (`{scope}`)" if scope else ""), span, at)
            self.notes.append(Undecided((*key, "slots"), f"how many slots `{name}` has (the code's index)", line, at))
            if scope is None:
                self.notes.append(Undecided((*key, "scope"), f"counter `{name}`'s scope", line, at))

    def slot_claims(self) -> None:
        """A ``per_slot R`` claim the code reaches through ring ``R``'s handle (``P_R_<claim>_smem``, specs/
        handles.md: the claim of any stage of the composition) that no other stage declares: this stage's.
        Its bytes and alignment stay undecided (the code reaches it by a run-time stride)."""
        if not self.complete:
            return
        theirs = {i.name for _, i in self.others(A.SmemClaim) if isinstance(i, A.SmemClaim)}
        for (ring, claim), line in sorted(self.code.ring_slots.items()):
            mine = [i for i in self.items if isinstance(i, A.SmemClaim) and i.name == claim]
            rings = [i for i in self.items if isinstance(i, A.Ring) and i.name == ring]
            if claim in theirs or mine or not rings:
                continue
            at = max((k for k, i in enumerate(self.items) if isinstance(i, A.SmemClaim)), default=-1) + 1
            self.insert(at, A.SmemClaim(claim, per_slot=ring))
            key = ("claim smem", claim)
            self.note(
                (*key, "per_slot"),
                f"claim `{claim}`, per slot of ring `{ring}`: the code reaches it through the ring's handle and no "
                "other stage declares it",
                self.comp.pipeline.span,
                at,
            )
            for what, word in (("bytes", "bytes"), ("align", "alignment")):
                self.notes.append(Undecided((*key, what), f"the {word} of `{claim}`", line, at))

    def inits(self) -> None:
        items = self.items
        open_keys = {n.key for n in self.notes}
        for at, ring in enumerate(items):
            if not isinstance(ring, A.Ring):
                continue
            key = ("ring", ring.name, ring.side)
            inner = list(ring.items)
            for k, init in enumerate(inner):
                if not isinstance(init, A.RingBarrierInit) or (*key, f"{init.barrier} init", "count") not in open_keys:
                    continue
                sides = [r for _, r in self.others(A.Ring) if isinstance(r, A.Ring) and r.name == ring.name]
                sides += [r for r in items if isinstance(r, A.Ring) and r.name == ring.name]
                if any(
                    (*("ring", r.name, r.side), f"{init.barrier} arrive", "count") in open_keys
                    for r in items
                    if isinstance(r, A.Ring) and r.name == ring.name
                ):
                    continue
                arrives = [_plain_arrives(r, init.barrier) for r in sides]
                if any(a is None for a in arrives):
                    continue
                terms = tuple(t for found in arrives for a in found or () for t in a.count.terms)
                if not terms:
                    continue
                inner[k] = replace(init, count=A.Count(terms))
                self.decided((*key, f"{init.barrier} init", "count"))
                theirs = next(
                    (r for _, r in self.others(A.Ring) if isinstance(r, A.Ring) and r.name == ring.name), ring
                )
                self.note(
                    (*key, f"{init.barrier} init", "count"),
                    f"ring `{ring.name}`'s {init.barrier} init count: the arrivals every side makes (§8.2)",
                    theirs.span,
                    at,
                )
            items[at] = replace(ring, items=tuple(inner))
        self.put(items)

    def phases(self) -> None:
        items = self.items
        assumed = [i for _, i in self.others(A.AssumesPhases) if isinstance(i, A.AssumesPhases)]
        declared = any(True for _ in self.others(A.Phases))
        if not assumed or declared or not self.complete or any(isinstance(i, A.Phases) for i in items):
            return
        order = _one_order([a.names for a in assumed])
        if order is None:
            return
        at = max((k for k, i in enumerate(items) if isinstance(i, (A.Role, A.Launch, A.Params))), default=-1) + 1
        self.insert(at, A.Phases("exclusive", order))
        self.note(
            ("phases",),
            "the phases the other stages assume exclusive, none of which declares them (L-PHASE), in the order "
            "their assumptions share; a phase none assumes is not shown",
            assumed[0].span,
            at,
        )


def _one_order(sequences: Sequence[tuple[str, ...]]) -> tuple[str, ...] | None:
    """The one order of every name that keeps each sequence's (None: none, or more than one)."""
    names = list(dict.fromkeys(n for seq in sequences for n in seq))
    after: dict[str, set[str]] = {n: set() for n in names}
    for seq in sequences:
        for a, b in pairwise(seq):
            after[b].add(a)
    order: list[str] = []
    while len(order) < len(names):
        ready = [n for n in names if n not in order and after[n] <= set(order)]
        if len(ready) != 1:
            return None
        order.append(ready[0])
    return tuple(order)


def _plain_arrives(ring: A.Ring, barrier: str) -> list[A.RingArrive] | None:
    """``ring``'s arrivals on ``barrier`` (None: one is remote, multicast, pre-armed or on part of the grid)."""
    found = [i for i in ring.items if isinstance(i, A.RingArrive) and i.barrier == barrier]
    if any(a.remote or a.multicast or a.prearm or a.on is not None for a in found):
        return None
    return found


def compose(
    stage: A.Stage, notes: Sequence[Undecided], comp: Composition, code: CodeView, prefix_name: str, stem: str
) -> tuple[A.Stage, tuple[Undecided, ...], tuple[Composed, ...]]:
    """``stage`` and its undecided ``notes`` with what ``comp`` decides (module docstring)."""
    use = own_use(comp.pipeline, prefix_name, stem)
    if use is None:
        said = f"`{prefix_name}`" if prefix_name else f"a package built from `{stem}`"
        why = f"which stage of pipeline `{comp.pipeline.name}` this is: no one `use` line names {said}"
        return stage, (*notes, Undecided(("stage", "use"), why, 0)), ()
    run = _Pass(stage, list(notes), comp, code, [], use)
    run.name(use)
    run.launch()
    run.width()
    run.facts()
    run.rendezvous()
    run.tensors()
    run.counters()
    run.counter_claims()
    run.slot_claims()
    run.inits()
    run.phases()
    return run.stage, tuple(run.notes), tuple(run.composed)
