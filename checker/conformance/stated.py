"""A fill decided once per value its contract states for a params field (``page_size: i32 @ … in {16, 32}``).

When a box is sized by such a field, or a copy runs under a condition computed from such
fields (``j < 128 / page_size`` in an unrolled loop: ``Fact.when``), the fill's bytes and
its copy count are no constants of the code; they are for each stated value. Each
assignment of the fields the fill reads is evaluated: the copies and credits whose
conditions hold run, each completes its box's (or its own) bytes at those values, and the
sum must be the ring's ``copy`` bytes. A condition not computed from stated fields alone is
undecided at the first value it is needed for. The copy lines of the ring state the split of
one of the values: at some value the fill's copies are the ``copy`` lines, one copy of each
line's bytes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence

from checker.conformance.context import Finding, found
from contract_lang import ast as A
from package.codefacts.conds import evaluate, fields_of
from package.codefacts.facts import Fact
from package.codefacts.values import Linear

#: The most assignments a fill is evaluated at (the product of the fields' value counts).
MAX_ASSIGNMENTS = 4096
_WORD = 1 << 32
_TX_LIMIT = 1 << 20  # a barrier phase's transaction count (PTX ISA, mbarrier tx-count)


def stated_fields(stage: A.Stage) -> dict[int, A.ParamField]:
    """The params fields that state their values, by offset."""
    block = next((i for i in stage.items if isinstance(i, A.Params)), None)
    return {f.offset: f for f in block.fields if f.values} if block is not None else {}


def extra_conds(site: Fact, fills: list[set[str]]) -> list[str]:
    """The conditions of ``site`` that its fill's ``expect_tx`` does not share (it runs in some fills only)."""
    if not site.conds or any(set(site.conds) <= c for c in fills):
        return []
    shared = set.intersection(*fills) if fills else set()
    return sorted(set(site.conds) - shared)


def _read(sizes: Sequence[tuple[Fact, Linear]], fills: list[set[str]]) -> set[int]:
    """The params offsets a fill's sizes read, and the conditions only some of its fills share."""
    read: set[int] = set()
    for site, size in sizes:
        read |= {off for off, _ in size[1]}
        when = dict(site.when)
        for cond in extra_conds(site, fills):
            read |= fields_of(when.get(cond, ""))
    return read


def applies(sizes: Sequence[tuple[Fact, Linear]], fills: list[set[str]], stated: Mapping[int, A.ParamField]) -> bool:
    """Whether the fill reads a stated field (a size or a condition) and no other params field."""
    read = _read(sizes, fills)
    return bool(read) and read <= set(stated)


def per_value(
    ring: A.Ring,
    sizes: Sequence[tuple[Fact, Linear]],
    fills: list[set[str]],
    stated: Mapping[int, A.ParamField],
) -> Iterator[Finding]:
    """The first finding of the fill at some assignment of its stated fields, else its copy-count finding."""
    copies = [i for i in ring.items if isinstance(i, A.RingCopy)]
    want = sum(c.bytes for c in copies) if copies else None
    node: A.Node = copies[0] if copies else ring
    offsets = sorted(_read(sizes, fills) & set(stated))
    choices = [stated[o].values for o in offsets]
    if math.prod(len(c) for c in choices) > MAX_ASSIGNMENTS:
        yield _undecided(sizes[0][0], node, "assignments", _named(stated, offsets, ()), cond="")
        return
    counts: list[tuple[str, list[int]]] = []  # per assignment, the bytes of each copy it issues
    for values in itertools.product(*choices):
        at = dict(zip(offsets, values, strict=True))
        named = _named(stated, offsets, values)
        running: list[tuple[Fact, int]] = []
        for site, size in sizes:
            holds = True
            when = dict(site.when)
            for cond in extra_conds(site, fills):
                value = evaluate(when[cond], at) if cond in when else None
                if value is None:
                    yield _undecided(site, node, "value-cond", named, cond=cond)
                    return
                holds = holds and value != 0
            if holds:
                running.append((site, _at(size, at)))
        total = sum(b for _, b in running) % _WORD
        bad = next((s for s, b in running if not 0 <= b < _TX_LIMIT), None)
        if want is None or total != want or bad is not None:
            first = bad or (running[0][0] if running else sizes[0][0])
            yield found(
                "copy-bytes",
                "value",
                first,
                node,
                ring=ring.name,
                total=total,
                want="" if want is None else want,
                at=named,
                copies=sum(1 for s, _ in running if s.kind != "complete-tx"),
            )
            return
        counts.append((named, sorted(b for s, b in running if s.kind != "complete-tx")))
    split = sorted(c.bytes for c in copies)
    if copies and split not in [c for _, c in counts]:
        yield found(
            "copy-count",
            "values",
            sizes[0][0],
            copies[0],
            ring=ring.name,
            want=len(copies),
            got="; ".join(f"{_split(c)} when {named}" for named, c in counts),
            said=_split(split),
        )


def _split(sizes: list[int]) -> str:
    """Copy sizes in words: ``4 × 8192 B``, ``8192 B + 16384 B``."""
    if sizes and len(set(sizes)) == 1:
        return f"{len(sizes)} × {sizes[0]} B"
    return " + ".join(f"{b} B" for b in sizes) or "no copy"


def _at(form: Linear, at: Mapping[int, int]) -> int:
    const, terms = form
    return (const + sum(coef * at[off] for off, coef in terms)) % _WORD


def _named(stated: Mapping[int, A.ParamField], offsets: list[int], values: tuple[int, ...]) -> str:
    if not values:
        return ", ".join(f"`{stated[o].name}`" for o in offsets)
    return ", ".join(f"`{stated[o].name}` = {v}" for o, v in zip(offsets, values, strict=True))


def _undecided(site: Fact, node: A.Node, what: str, named: str, *, cond: str) -> Finding:
    facts = (("what", what), ("at", named), ("cond", cond), ("others", "0"))
    return Finding("copy-bytes", "undecided", site, node, facts, decided=False)
