"""Hypothesis strategies for small random protocols, for the protocol tests.

:func:`small_protocols` draws 2–3 roles, 1–2 rings and optional counters and named
barriers, with realistic mistakes mixed in at random: arrival counts off by a width
factor, missing or split expect_tx, flipped first parities, pre-arms, late releases,
missing waits, extra arrivals from a third role and shuffled step orders. Every drawn
protocol satisfies the model's invariants and L-INIT's rule (the explorer starts from
initialized barriers); small enough for the explicit-state explorer at its default bound.
"""

from __future__ import annotations

from typing import TypeVar

from hypothesis import strategies as st

from checker.protocol.model import BarrierKind, Op, Protocol, ProtocolBuilder, Scope, Step

T = TypeVar("T")
FULL = BarrierKind.FULL
EMPTY = BarrierKind.EMPTY


@st.composite
def small_protocols(
    draw: st.DrawFn, *, max_roles: int = 3, max_rings: int = 2, max_depth: int = 3, extras: bool = True
) -> Protocol:
    """A random small protocol; ``extras`` adds counters and named barriers sometimes."""
    b = ProtocolBuilder("fuzz.kc")
    n_roles = draw(st.integers(2, max_roles))
    roles = [b.role(f"r{i}", draw(st.sampled_from((1, 2, 4)))) for i in range(n_roles)]
    names = [r.name for r in roles]
    blocks: dict[str, list[list[Step]]] = {n: [] for n in names}
    for k in range(draw(st.integers(1, max_rings))):
        _ring(draw, b, f"q{k}", names, blocks, max_depth)
    if extras and draw(st.booleans()) and draw(st.booleans()):
        _counter(draw, b, names, blocks)
    if extras and draw(st.booleans()) and draw(st.booleans()):
        _named_barrier(draw, b, names, blocks)
    for name in names:
        order = draw(st.permutations(range(len(blocks[name]))))
        steps = [s for i in order for s in blocks[name][i]]
        if len(steps) > 1 and draw(st.integers(0, 9)) == 0:
            steps = list(draw(st.permutations(steps)))
        b.set_program(name, steps)
    return b.build()


def _ring(
    draw: st.DrawFn,
    b: ProtocolBuilder,
    name: str,
    roles: list[str],
    blocks: dict[str, list[list[Step]]],
    max_depth: int,
) -> None:
    shuffled = draw(st.permutations(roles))
    two = len(roles) > 2 and draw(st.integers(0, 4)) == 0
    producer, consumers = shuffled[0], tuple(shuffled[1:3] if two else shuffled[1:2])
    sound = draw(st.booleans())

    def pick(right: T, *wrong: T) -> T:
        """The right value for a sound ring; otherwise mostly right, sometimes wrong."""
        return right if sound else draw(st.sampled_from((right, right, right, *wrong)))

    depth = draw(st.integers(1, max_depth))
    tx = draw(st.sampled_from((0, 16, 32)))
    arrive = draw(st.sampled_from((1, 1, 2)))
    full_init = pick(arrive, 1, 2)
    releases = {}
    for c in consumers:
        role = b.get_role(c)
        releases[c] = pick(role.warps, 1, role.threads)
    empty_init = pick(sum(releases.values()), b.get_role(consumers[0]).warps, 1)
    declared: int | None = pick(None, 2 * tx) if not tx else pick(tx, None, 2 * tx)
    init_by = draw(st.sampled_from(((producer,), (consumers[-1],))))
    b.ring(
        name,
        depth=depth,
        producer=producer,
        consumer=consumers,
        full_init=full_init,
        empty_init=empty_init,
        full_tx=declared,
        init_by=init_by,
    )
    prearm = pick(False, True)

    prod: list[Step] = []
    if pick(True, False):
        right = 0 if prearm else 1
        prod.append(b.make_step(producer, Op.WAIT, name, barrier=EMPTY, parity=pick(right, 1 - right)))
    split = bool(tx) and draw(st.booleans())
    expect = pick(tx, tx // 2) if split else tx
    if not tx:
        prod.append(b.make_step(producer, Op.WRITE, name))
    prod.append(b.make_step(producer, Op.ARRIVE, name, barrier=FULL, count=arrive, nbytes=expect))
    if tx:
        for size in (tx // 2, tx - tx // 2) if split else (tx,):
            prod.append(b.make_step(producer, Op.COPY, name, barrier=FULL, nbytes=size))
    blocks[producer].append(prod)

    for c in consumers:
        cons: list[Step] = []
        if prearm:
            cons.append(b.make_step(c, Op.ARRIVE, name, barrier=EMPTY, count=releases[c], prearm=True))
        if pick(True, False):
            cons.append(b.make_step(c, Op.WAIT, name, barrier=FULL, parity=pick(0, 1)))
        cons.append(b.make_step(c, Op.READ, name))
        lag = pick(0, 1) if depth > 1 else pick(0, 0, 1)
        cons.append(b.make_step(c, Op.ARRIVE, name, barrier=EMPTY, count=releases[c], lag=lag))
        blocks[c].append(cons)

    others = [r for r in roles if r != producer and r not in consumers]
    if others and not sound and draw(st.integers(0, 2)) == 0:
        helper = draw(st.sampled_from(others))
        kind = draw(st.sampled_from((FULL, EMPTY)))
        if draw(st.booleans()):
            step = b.make_step(helper, Op.ARRIVE, name, barrier=kind, count=1)
        else:
            step = b.make_step(helper, Op.WAIT, name, barrier=kind, parity=draw(st.integers(0, 1)))
        blocks[helper].append([step])


def _counter(draw: st.DrawFn, b: ProtocolBuilder, roles: list[str], blocks: dict[str, list[list[Step]]]) -> None:
    producer, consumer = draw(st.permutations(roles))[:2]
    b.counter("ready", producer=producer, consumer=consumer, scope=draw(st.sampled_from(list(Scope))))
    add = draw(st.integers(1, 2))
    need = draw(st.sampled_from((add, add, 1, 2)))
    blocks[producer].append([b.make_step(producer, Op.ADD, "ready", count=add)])
    blocks[consumer].append([b.make_step(consumer, Op.WAIT_GE, "ready", count=need)])


def _named_barrier(draw: st.DrawFn, b: ProtocolBuilder, roles: list[str], blocks: dict[str, list[list[Step]]]) -> None:
    members = draw(st.lists(st.sampled_from(roles), min_size=1, max_size=len(roles), unique=True))
    threads = sum(b.get_role(r).threads for r in members)
    b.named_barrier("sync", draw(st.sampled_from((threads, threads, 32))))
    for role in members:
        op = draw(st.sampled_from((Op.BAR_SYNC, Op.BAR_SYNC, Op.BAR_ARRIVE)))
        blocks[role].append([b.make_step(role, op, "sync", count=b.get_role(role).threads)])
