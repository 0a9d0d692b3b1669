"""Which values a contract states the draft could decide: *determined* ones, and the author's *choices*.

A value is **determined** when something the draft reads fixes it: the component's compiled
code (its PTX and the compiler's params layout) or its composition (the pipeline, the other
stages' contracts). It is an **author's choice** when nothing the draft may read contains it:
a version, a budget the contract sets and the glue enforces, a lifetime, an owned fact's value
no other stage assumes. :func:`classify` sorts one value's key by a rule per *kind* of key
(``role warps``, ``claim smem bytes``, …) and the evidence present: what the draft states (the
code's instructions it read) and what the composition states. It never reads the hand-written
value, and no rule names a component. A value the draft states is determined (its conformance
check against the code shows it does not contradict the code); a kind no rule knows counts as
determined, so an unknown kind can only lower the share the draft reaches, never excuse it.

specs/draft.md ("Determined values and the author's choices") lists the rules (:data:`RULES`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from analysis.draft.compose import exact
from analysis.draft.model import Draft, Key
from analysis.draft.tally import values
from contract_lang import ast as A


@dataclass(frozen=True)
class Rule:
    """One kind of value: when it is determined, and why it is the author's choice otherwise."""

    kind: str
    determined: str  # when the code or the composition fixes it
    choice: str  # why, otherwise, it is the author's ("" : never a choice)


#: The rules, by kind (specs/draft.md prints them). A kind with ``choice == ""`` is always determined.
RULES: tuple[Rule, ...] = (
    Rule("stage name", "the handles' prefix, or the pipeline's `use`", ""),
    Rule(
        "stage version",
        "the pipeline's `use` allows exactly one version",
        "the code holds no version, and the pipeline's `use` allows a range",
    ),
    Rule("target", "the PTX `.target`", ""),
    Rule(
        "feature",
        "the code runs an instruction that needs it",
        "the code runs no instruction that needs it: a requirement the author puts on the target",
    ),
    Rule(
        "feature setmaxnreg",
        "the code runs `setmaxnreg`",
        "the code runs no `setmaxnreg`: the feature follows from a role's `regs` (L-FEATURE), the author's budget",
    ),
    Rule("role entry", "the role's entry function, from its `_warp0` handle", ""),
    Rule(
        "role warps",
        "a named barrier of a constant thread count that this role alone joins, a one-unit kernel's warp-index "
        "branch, or the composition's block less every other role's warps where this is the stage's only role",
        "the code reads the role's first warp but bounds neither its width nor the split of the block among roles",
    ),
    Rule(
        "role regs",
        "the code runs `setmaxnreg` for the role's threads (a one-unit kernel)",
        "a register budget the contract sets and the glue applies with `setmaxnreg`; the code never runs it",
    ),
    Rule(
        "role warpgroup",
        "the role runs `wgmma` (a warpgroup instruction)",
        "no warpgroup instruction: the alignment follows from the role's `regs` (L-WARPGROUP) or is the author's",
    ),
    Rule(
        "launch",
        "the pipeline's or another stage's `launch` line (L-LAUNCH), or a one-unit kernel's directives",
        "no line of the composition states the launch, and a role's device function has no launch directives",
    ),
    Rule("params", "the compiler's layout of the params struct", ""),
    Rule(
        "params field fact",
        "another stage of the composition owns, uses or assumes a fact of the field's name",
        "the field's name names no fact of the composition: which fact the linker writes into it is the author's",
    ),
    Rule(
        "fact type",
        "another stage of the composition declares the fact (its type, L-FACT), or a params field of its name",
        "no other stage declares the fact and no params field carries it: an owned fact's type is the author's",
    ),
    Rule(
        "fact owns",
        "another stage assumes its value (L-FACT)",
        "no other stage assumes a value: an owned fact's value is the author's (the code reads it, if at all, "
        "through the linker's constant)",
    ),
    Rule(
        "fact uses",
        "a params field bears the fact's name",
        "the fact is bound to a field whose name is not the fact's: the binding is the author's",
    ),
    Rule(
        "fact assumes",
        "another stage owns the fact with a value",
        "no other stage owns the fact with a value: the assumption is the author's",
    ),
    Rule(
        "requires fact",
        "",
        "a constraint the author puts on the facts' values; the code does not say which bounds it relies on",
    ),
    Rule(
        "claim smem bytes",
        "every copy into the claim has one constant size, a ring's tensor copies fill its slot, or its only use "
        "is `mbarrier` outside a ring (one mbarrier at its offset 0 is 8 bytes; several sit at constant offsets)",
        "the code reaches the claim at run-time offsets: its size is the author's budget, which the code stays within",
    ),
    Rule(
        "claim smem align",
        "the code encodes it (a matrix descriptor's swizzle at base offset 0, an mbarrier)",
        "the code's uses bound it only from below: a larger alignment is the author's",
    ),
    Rule(
        "claim smem lifetime",
        "",
        "how long the claim stays live across the pipeline's events is the author's promise to the other stages",
    ),
    Rule(
        "claim smem use",
        "the code's instructions on the claim (copies, TMA, ldmatrix, loads and stores, mbarriers, descriptors); "
        "every use but a swizzle",
        "a swizzle no matrix descriptor encodes is a field of the tensor map the host encodes",
    ),
    Rule("claim smem", "the handles the code reads (`per_slot` from the ring's stride handle)", ""),
    Rule("claim tmem", "the tensor-memory instructions on the claim (the MMA's accumulator width)", ""),
    Rule("claim barrier", "the code's `bar.sync` / `bar.arrive` on the barrier's handle", ""),
    Rule("claim counter slots", "", "the author's bound on a run-time slot index"),
    Rule("claim counter", "the counter's endpoints (L-PAIR)", ""),
    Rule("ring depth", "", "a range the author allows; the linker picks the depth"),
    Rule(
        "ring init by",
        "",
        "the dispatch runs the init hook from the role the contract names; any role of the stage may run it",
    ),
    Rule(
        "ring copy",
        "each copy into the slot has a constant size; every copy of a ring whose slots no TMA claim holds",
        "the split of a slot's bytes among tensor copies is the boxes of the tensor maps the host encodes",
    ),
    Rule("ring", "the ring's handles and the code's mbarrier instructions", ""),
    Rule(
        "counter step",
        "the code adds or waits for a constant amount",
        "the code waits for a run-time target; the step is the protocol model's abstraction of it",
    ),
    Rule("counter", "the counter's handles and the code's calls", ""),
    Rule("rendezvous", "the code's `bar.sync` / `bar.arrive` and the other sides' threads", ""),
    Rule(
        "export callable requires",
        "the code runs a warp-collective instruction",
        "a precondition the provider puts on its callers; the code needs none",
    ),
    Rule("export callable", "the exported function's prototype", ""),
    Rule("call", "the trampoline's prototype and how the role calls it", ""),
    Rule(
        "export tensor placement",
        "the tile lies in memory the code writes: a tensor-memory claim (the MMA's accumulator layout) or a "
        "shared-memory claim outside a ring that the code stores into (the stores' addresses)",
        "the tile lies in registers: their placement names how many warps share the tile, the role's width, "
        "which the author chooses",
    ),
    Rule("export tensor", "the export call and the imports of it (L-DTYPE, L-TENSOR, §7.1)", ""),
    Rule(
        "import tensor chunk",
        "",
        "how much of the tile each callback receives is the importer's request to the route the linker builds",
    ),
    Rule(
        "import tensor demand",
        "",
        "the layout the importer asks the route to deliver: the registers it receives carry no meaning in PTX",
    ),
    Rule("import tensor lends", "", "the storage and registers the importer lends the route: its budget"),
    Rule("import tensor", "the import call and the export it connects to (L-DTYPE, L-TENSOR, §7.1)", ""),
    Rule("cluster", "the code's cluster instructions and the launch (not drafted yet)", ""),
    Rule("domain", "the code's peer accesses through the domain's handles (not drafted yet)", ""),
    Rule("buffer", "the code's accesses to the symmetric buffer (not drafted yet)", ""),
    Rule("fragment", "the call's fragment interface the code passes (not drafted yet)", ""),
    Rule(
        "phases",
        "the phases the other stages assume exclusive (L-PHASE)",
        "no other stage assumes the phases exclusive",
    ),
    Rule(
        "assumesphases",
        "",
        "an assumption on the schedule of the pipeline's phases that the stage relies on; the code does not state it",
    ),
    Rule(
        "hostprovider",
        "",
        "the host code that fills params fields lies outside what the draft reads (the device code, the composition)",
    ),
)
_BY_KIND = {r.kind: r for r in RULES}
#: The sub-attributes of a ring value that name no barrier (``init by``, not ``full init``).
_RING_PLAIN = ("init by", "init fenced", "read wait")


def kind(key: Key) -> str:
    """The kind of a value's key: its item's kind and attribute, without the names (``role warps``)."""
    head = key[0]
    if head in ("stage", "launch"):
        return f"{head} {key[1]}" if head == "stage" else "launch"
    if head == "feature":
        return "feature setmaxnreg" if key[1] == "setmaxnreg" else "feature"
    if head == "params":
        return "params field fact" if key[-1] == "fact" and len(key) == 4 else "params"
    if head == "ring" and len(key) > 3:
        attr = key[3]
        if attr == "init by":
            return "ring init by"
        if attr not in _RING_PLAIN and " " in attr and attr.split(" ", 1)[1] == "copy":
            return "ring copy"
        return "ring depth" if attr == "depth" else "ring"
    if head == "counter":
        return "counter step" if len(key) > 3 and key[3] == "step" else "counter"
    if head in ("role", "fact", "claim smem", "claim counter", "export tensor", "import tensor", "export callable"):
        return f"{head} {key[2]}" if len(key) > 2 else head
    return head


def rule(key: Key) -> Rule:
    """The rule of a key's kind; a kind without a rule of its own falls back to its item's, else to
    an always-determined rule (an unknown kind is never excused as a choice)."""
    found = _BY_KIND.get(kind(key))
    if found is None:
        found = _BY_KIND.get(key[0])
    return found or Rule(kind(key), "no rule: counted as determined", "")


def rule_of(kind: str) -> Rule:
    """The rule of a kind, by its name (``role warps``)."""
    return _BY_KIND[kind]


@dataclass(frozen=True)
class Verdict:
    """One value's class: ``choice`` (the author's) or determined, by ``rule``, and the line why."""

    key: Key
    rule: str
    choice: bool
    reason: str


#: A composition as :func:`classify` reads it: the pipeline and the stages it uses.
Composed = tuple[A.Pipeline, tuple[A.Stage, ...]]


def classify(keys: Iterable[Key], drafted: Draft, composition: Composed | None = None) -> tuple[Verdict, ...]:
    """The class of the value at each of ``keys`` (module docstring), in their order. ``drafted``: the
    draft of the stage (its values are the code's evidence); ``composition``: the pipeline and its
    stages, when the draft was composed (the drafted stage's own contract among them is never read)."""
    stated = values(drafted.stage)
    open_keys = drafted.undecided_keys()
    # a stage whose name the draft left open cannot tell its own contract from the others'
    evidence = _Evidence(drafted.stage, None if ("stage", "name") in open_keys else composition)
    out: list[Verdict] = []
    for key in keys:
        found = rule(key)
        if key not in open_keys and key in stated:
            out.append(Verdict(key, found.kind, False, f"drafted: {found.determined}"))
        elif not found.choice or evidence.fixes(key):
            out.append(Verdict(key, found.kind, False, f"determined, not drafted: {found.determined}"))
        else:
            out.append(Verdict(key, found.kind, True, found.choice))
    return tuple(out)


def choices(verdicts: Iterable[Verdict]) -> dict[str, int]:
    """How many values of each kind are the author's choice, by kind (sorted)."""
    counted = Counter(v.rule for v in verdicts if v.choice)
    return dict(sorted(counted.items()))


class _Evidence:
    """What the code (as the draft read it) and the composition state, for the rules' conditions."""

    def __init__(self, stage: A.Stage, composition: Composed | None) -> None:
        self.stage = stage
        self.pipeline: A.Pipeline | None = composition[0] if composition is not None else None
        others = composition[1] if composition is not None else ()
        # the stage's own contract, if the composition holds one, is never read
        self.others = tuple(s for s in others if s.name != stage.name)
        self.features = {n for i in stage.items if isinstance(i, A.Features) for n in i.names}

    def _facts(self) -> dict[str, list[A.OwnsFact | A.UsesFact | A.AssumesFact]]:
        out: dict[str, list[A.OwnsFact | A.UsesFact | A.AssumesFact]] = {}
        for other in self.others:
            for item in other.items:
                if isinstance(item, (A.OwnsFact, A.UsesFact, A.AssumesFact)):
                    out.setdefault(item.name, []).append(item)
        return out

    def fixes(self, key: Key) -> bool:
        """Whether the rule's *determined* condition holds for a value the draft left open."""
        k = kind(key)
        facts = self._facts()
        if k == "stage version":
            uses = self.pipeline.uses if self.pipeline is not None else ()
            return any(u.stage == self.stage.name and exact(u.requirement) is not None for u in uses)
        if k in ("feature", "feature setmaxnreg"):
            return key[1] in self.features
        if k == "role regs":
            return "setmaxnreg" in self.features
        if k == "role warps":
            return self._barrier_width(key[1]) or self._lone_role(key[1])
        if k == "launch":
            return self._launch_stated()
        if k == "params field fact":
            return key[2] in facts
        if k == "fact type":
            return key[1] in facts or any(
                f.name == key[1] for i in self.stage.items if isinstance(i, A.Params) for f in i.fields
            )
        if k == "fact owns":
            return any(isinstance(f, A.AssumesFact) for f in facts.get(key[1], ()))
        if k == "fact uses":
            return any(f.name == key[1] for i in self.stage.items if isinstance(i, A.Params) for f in i.fields)
        if k == "fact assumes":
            return any(isinstance(f, A.OwnsFact) and isinstance(f.value, int) for f in facts.get(key[1], ()))
        if k == "claim smem bytes":
            claim = self._claim(key[1])
            return claim is not None and claim.per_slot is None and set(claim.uses) == {"mbarrier"}
        if k == "claim smem use":
            return not key[3].startswith("swizzle")  # only a swizzle can come from the host's tensor map
        if k == "ring copy":
            # only tensor copies take their bytes from a box the host encodes
            return not any(
                isinstance(i, A.SmemClaim) and i.per_slot == key[1] and "tma" in i.uses for i in self.stage.items
            )
        if k == "export tensor placement":
            return any(
                isinstance(i, A.TmemClaim)
                or (isinstance(i, A.SmemClaim) and i.per_slot is None and "generic" in i.uses)
                for i in self.stage.items
            )
        if k == "phases":
            return any(isinstance(i, A.AssumesPhases) for s in self.others for i in s.items)
        return False  # the other kinds with a choice: determined only when drafted (the draft's rule is the condition)

    def _roles(self) -> list[A.Role]:
        return [i for i in self.stage.items if isinstance(i, A.Role)]

    def _claim(self, name: str) -> A.SmemClaim | None:
        return next((i for i in self.stage.items if isinstance(i, A.SmemClaim) and i.name == name), None)

    def _barrier_width(self, role: str) -> bool:
        return any(
            isinstance(i, A.BarrierClaim) and i.threads is not None and i.participants == (role,)
            for i in self.stage.items
        )

    def _launch_stated(self) -> bool:
        if self.pipeline is not None and any(isinstance(i, A.Launch) for i in self.pipeline.items):
            return True
        return any(isinstance(i, A.Launch) for s in self.others for i in s.items)

    def _lone_role(self, role: str) -> bool:
        roles = self._roles()
        if [r.name for r in roles] != [role] or not self._launch_stated():
            return False
        return all(r.warps is not None for s in self.others for r in s.items if isinstance(r, A.Role))
