"""Hypothesis strategies for small random protocols, for the protocol tests.

:func:`small_protocols` draws 2–3 roles, 1–2 rings and optional counters and named
barriers, with realistic mistakes mixed in at random: arrival counts off by a width
factor, missing or split expect_tx, flipped first parities, pre-arms, late releases,
missing waits, extra arrivals from a third role and shuffled step orders. Every drawn
protocol satisfies the model's invariants and L-INIT's rule (the explorer starts from
initialized barriers); small enough for the explicit-state explorer at its default bound.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from hypothesis import strategies as st

from checker.protocol.model import (
    RING_OPS,
    BarrierKind,
    Op,
    Part,
    Protocol,
    ProtocolBuilder,
    Scope,
    Step,
    Target,
    Threshold,
)

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


# -- production patterns: CTAs, turns, grid counters, asynchronous reads -------------------------


PATTERN_MISTAKES: dict[str, tuple[str, ...]] = {
    "pingpong": ("no-prearm", "prearm-both", "no-turns", "release-late"),
    "multicast": ("local-release", "tx-one-half", "no-empty-wait"),
    "pair": ("peer-copy-local", "peer-no-wait", "tx-one-copy"),
    "split-k": ("threshold", "no-wait", "add-first"),
    "stream-k": ("threshold", "no-wait", "add-first"),
    "grid-barrier": ("threshold", "no-wait", "add-first"),
    "staging": ("no-read-wait", "lag", "restart"),
    "tmem": ("release-first", "no-read-wait"),
    "lagged": ("release-early", "order"),
    "restart": ("wait-late", "no-read-wait"),
    "presync": ("one-side", "loop-one-side", "twice"),
    "pingpong-phases": ("synced-first", "handover-late"),
    "oneshot": ("refilled", "no-wait", "wait-in-loop"),
}
"""Each production pattern :func:`pattern` builds, and the mistakes it can make in it."""


@st.composite
def pattern_protocols(draw: st.DrawFn) -> Protocol:
    """A random protocol of one production pattern (:func:`pattern`), sound or with one mistake,
    at a random depth (and group size, for the counters); small enough for the explicit-state
    explorer at a bound of 2 or 3."""
    name = draw(st.sampled_from(sorted(PATTERN_MISTAKES)))
    mistake = draw(st.sampled_from(("",) * len(PATTERN_MISTAKES[name]) + PATTERN_MISTAKES[name]))
    depth = draw(st.integers(1, 2))
    knob = draw(st.integers(0, 2))
    return pattern(name, mistake, depth, knob)


def pattern(name: str, mistake: str = "", depth: int = 2, knob: int = 0) -> Protocol:
    """A production synchronization pattern, sound (``mistake`` empty) or with one mistake.

    ``pingpong``: two consumer warpgroups take turns on a ring, ordered by two named
    barriers, the second pre-armed once before the loop (FA3, CUTLASS ping-pong; ``knob`` 2:
    in a 2-CTA cluster whose consumers release both CTAs' slots);
    ``multicast``: a 2-CTA cluster, each CTA copying its half of an operand into both CTAs'
    slots and releasing both CTAs' slots; ``pair``: a 2-CTA pair whose leader's barrier counts
    both CTAs' copies, each landing in its own CTA, and whose leader reads both slots;
    ``split-k``, ``stream-k``, ``grid-barrier``: a counter whose partner is the same role in
    the other CTAs of a tile's group (``2 + knob % 2`` CTAs); ``staging``: a buffer a role
    writes and a TMA store reads asynchronously (``knob`` > 0: the read wait's lag is
    ``knob - 1`` below the depth); ``tmem``: a ring whose consumer reads asynchronously;
    ``lagged``: software pipelining, a consumer whose side of ring `v` lags one iteration (``knob``
    > 0: two) with its peeled tail, as the attention core's PV; ``restart``: a staging buffer whose
    slot index restarts every ``depth + 1 + knob`` iterations, its read wait one iteration late;
    ``presync``: roles that `bar.sync` before their loops (``knob`` > 0: on the barrier their
    loops sync on too); ``pingpong-phases``: the ping-pong as FA3's code runs it, ring `v` lagging
    one phase, warpgroup 0's first turn unsynced (`lag 1`) and warpgroup 1's last hand-over
    skipped (ring `k`'s depth is ``depth + knob``); ``oneshot``: ring `q` filled once per CTA
    (`once`), waited for before the consumer's loop and released after it, beside ring `k`
    (its depth ``depth + knob``).
    """
    builders = {
        "pingpong": _pingpong,
        "multicast": _multicast,
        "pair": _pair,
        "split-k": _grid_counter,
        "stream-k": _grid_counter,
        "grid-barrier": _grid_counter,
        "staging": _staging,
        "tmem": _async_ring,
        "lagged": _lagged,
        "restart": _restart,
        "presync": _presync,
        "pingpong-phases": _pingpong_phases,
        "oneshot": _oneshot,
    }
    if mistake and mistake not in PATTERN_MISTAKES[name]:
        raise ValueError(f"pattern `{name}` has no mistake `{mistake}`")
    return builders[name](name, mistake, depth, knob)


def _pingpong(name: str, wrong: str, depth: int, knob: int) -> Protocol:
    b = ProtocolBuilder(f"{name}.kc")
    b.role("p", 1)
    turns = 1 if wrong == "no-turns" else 2
    for w in range(2):
        b.role(f"w{w}", 1, turn=w % turns, turns=turns)
    cluster = 2 if knob == 2 else 1  # in a 2-CTA cluster each consumer releases both CTAs' slot
    release = Target.ALL if cluster > 1 else Target.OWN
    b.ring("kv", depth=depth, producer="p", consumer=("w0", "w1"), full_init=1, empty_init=cluster, init_by=("p",))
    b.named_barrier("o0", 64)
    b.named_barrier("o1", 64)
    b.produce("kv")
    for w in range(2):
        me = f"w{w}"
        late = 1 if wrong == "release-late" and w == 0 else 0
        steps = [
            b.make_step(me, Op.BAR_SYNC, f"o{w}", count=32),
            b.make_step(me, Op.WAIT, "kv", barrier=FULL, parity=0),
            b.make_step(me, Op.READ, "kv"),
            b.make_step(me, Op.ARRIVE, "kv", barrier=EMPTY, count=1, lag=late, target=release),
            b.make_step(me, Op.BAR_ARRIVE, f"o{1 - w}", count=32),
        ]
        if (w == 1 and wrong != "no-prearm") or wrong == "prearm-both":
            steps.insert(0, b.make_step(me, Op.BAR_ARRIVE, f"o{1 - w}" if w == 1 else "o1", count=32, prearm=True))
        b.set_program(me, steps)
    return b.build(cluster=cluster)


def _multicast(name: str, wrong: str, depth: int, knob: int) -> Protocol:
    b = ProtocolBuilder(f"{name}.kc")
    own, half = 16, 8 * (1 + knob % 2)
    b.role("p", 1)
    b.role("c", 1)
    tx = own + (half if wrong == "tx-one-half" else 2 * half)
    b.ring("kv", depth=depth, producer="p", consumer="c", full_init=1, empty_init=2, full_tx=tx, init_by=("p",))
    prod = []
    if wrong != "no-empty-wait":
        prod.append(b.make_step("p", Op.WAIT, "kv", barrier=EMPTY, parity=1))
    prod.append(b.make_step("p", Op.ARRIVE, "kv", barrier=FULL, count=1, nbytes=tx))
    prod.append(b.make_step("p", Op.COPY, "kv", barrier=FULL, nbytes=own))
    prod.append(b.make_step("p", Op.COPY, "kv", barrier=FULL, nbytes=half, target=Target.ALL))
    b.set_program("p", prod)
    local = wrong == "local-release"
    b.set_program(
        "c",
        [
            b.make_step("c", Op.WAIT, "kv", barrier=FULL, parity=0),
            b.make_step("c", Op.READ, "kv"),
            b.make_step(
                "c", Op.ARRIVE, "kv", barrier=EMPTY, count=2 if local else 1, target=Target.OWN if local else Target.ALL
            ),
        ],
    )
    return b.build(cluster=2)


def _pair(name: str, wrong: str, depth: int, knob: int) -> Protocol:
    b = ProtocolBuilder(f"{name}.kc")
    b.role("p", 1)
    b.role("c", 1)
    size = 16
    tx = size if wrong == "tx-one-copy" else 2 * size
    b.ring("kv", depth=depth, producer="p", consumer="c", full_init=1, empty_init=1, full_tx=tx, init_by=("p",))
    peer_target = Target.OWN if wrong == "peer-copy-local" else Target.PEER
    wait = b.make_step("p", Op.WAIT, "kv", barrier=EMPTY, parity=1, part=Part.LEADER)
    if wrong != "peer-no-wait":
        wait = b.make_step("p", Op.WAIT, "kv", barrier=EMPTY, parity=1)
    b.set_program(
        "p",
        [
            wait,
            b.make_step("p", Op.ARRIVE, "kv", barrier=FULL, count=1, nbytes=tx, part=Part.LEADER),
            b.make_step("p", Op.COPY, "kv", barrier=FULL, nbytes=size, part=Part.LEADER),
            b.make_step("p", Op.COPY, "kv", barrier=FULL, nbytes=size, part=Part.PEER, target=peer_target),
        ],
    )
    b.set_program(
        "c",
        [
            b.make_step("c", Op.WAIT, "kv", barrier=FULL, parity=0, part=Part.LEADER),
            b.make_step("c", Op.READ, "kv", part=Part.LEADER, target=Target.ALL),
            b.make_step("c", Op.ARRIVE, "kv", barrier=EMPTY, count=1, part=Part.LEADER, target=Target.ALL),
        ],
    )
    return b.build(cluster=2)


def _grid_counter(name: str, wrong: str, depth: int, knob: int) -> Protocol:
    b = ProtocolBuilder(f"{name}.kc")
    b.role("m", 1)
    b.counter("flag", producer="m", consumer="m", scope=Scope.GPU, grid=True)
    right = {"split-k": Threshold.SPLIT, "stream-k": Threshold.OTHERS}.get(name, Threshold.ALL)
    # the wrong threshold: all splits (split-K waits for itself), split 0's none (stream-K), the
    # others' adds, which a CTA's own add already makes (a grid barrier whose CTAs all add)
    threshold = {Threshold.SPLIT: Threshold.ALL, Threshold.OTHERS: Threshold.SPLIT}.get(right, Threshold.OTHERS)
    chosen = threshold if wrong == "threshold" else right

    def step(op: Op, part: Part = Part.ALL) -> Step:
        if op is Op.WAIT_GE:
            return b.make_step("m", op, "flag", threshold=chosen, part=part)
        return b.make_step("m", op, "flag", count=1 if op is Op.ADD else 0, part=part)

    if name == "split-k":  # split s waits for splits 0 .. s-1, adds its partial to theirs, raises
        steps = [step(Op.WAIT_GE), step(Op.READ), step(Op.WRITE), step(Op.ADD)]
    elif name == "stream-k":  # the later splits store partials and raise; the first waits and reads them
        steps = [
            step(Op.WRITE, Part.REST),
            step(Op.ADD, Part.REST),
            step(Op.WAIT_GE, Part.FIRST),
            step(Op.READ, Part.FIRST),
        ]
    else:  # every CTA writes, raises, waits for all, reads
        steps = [step(Op.WRITE), step(Op.ADD), step(Op.WAIT_GE), step(Op.READ)]
    if wrong == "no-wait":
        steps = [s for s in steps if s.op is not Op.WAIT_GE]
    elif wrong == "add-first":
        add = next(s for s in steps if s.op is Op.ADD)
        steps.remove(add)
        steps.insert(0, add)
    b.set_program("m", steps)
    return b.build(group=2 + knob % 2)


def _staging(name: str, wrong: str, depth: int, knob: int) -> Protocol:
    b = ProtocolBuilder(f"{name}.kc")
    b.role("e", 1)
    b.ring(
        "stage",
        depth=depth,
        producer="e",
        consumer="e",
        full_init=1,
        empty_init=1,
        restart=depth + 1 if wrong == "restart" else 0,
        synchronized=False,
    )
    lag = depth + 1 if wrong == "lag" else max(0, depth - knob % 2)
    steps = [] if wrong == "no-read-wait" else [b.make_step("e", Op.READ_WAIT, "stage", lag=lag)]
    steps += [b.make_step("e", Op.WRITE, "stage"), b.make_step("e", Op.READ, "stage", asynchronous=True)]
    b.set_program("e", steps)
    return b.build()


def _async_ring(name: str, wrong: str, depth: int, knob: int) -> Protocol:
    b = ProtocolBuilder(f"{name}.kc")
    b.role("mma", 1)
    b.role("epi", 4)
    b.ring("acc", depth=depth, producer="mma", consumer="epi", full_init=1, empty_init=4, init_by=("mma",))
    b.produce("acc")
    steps = [
        b.make_step("epi", Op.WAIT, "acc", barrier=FULL, parity=0),
        b.make_step("epi", Op.READ, "acc", asynchronous=True),
    ]
    release = b.make_step("epi", Op.ARRIVE, "acc", barrier=EMPTY, count=4)
    done = b.make_step("epi", Op.READ_WAIT, "acc")
    steps += {"release-first": [release, done], "no-read-wait": [release]}.get(wrong, [done, release])
    b.set_program("epi", steps)
    return b.build()


def _lagged(name: str, wrong: str, depth: int, knob: int) -> Protocol:
    b = ProtocolBuilder(f"{name}.kc")
    b.role("p", 1)
    b.role("c", 4)
    for ring in ("k", "v"):
        b.ring(ring, depth=depth, producer="p", consumer="c", full_init=1, empty_init=1, full_tx=16, init_by=("p",))
    lag = 1 + knob % 2
    # the producer fills K_i, V_i ("order": V_i, then K_{i-lag}, while the consumer waits K_i first)
    produced: list[Step] = []
    for ring in ("v", "k") if wrong == "order" else ("k", "v"):
        prod = [
            b.make_step("p", Op.WAIT, ring, barrier=EMPTY, parity=1),
            b.make_step("p", Op.ARRIVE, ring, barrier=FULL, count=1, nbytes=16),
            b.make_step("p", Op.COPY, ring, barrier=FULL, nbytes=16),
        ]
        if wrong == "order" and ring == "k":
            prod = [dataclasses.replace(s, lag=lag, peel=lag) for s in prod]
        produced += prod
    b.set_program("p", produced)
    steps: list[Step] = []
    for ring in ("k", "v"):
        side = [
            b.make_step("c", Op.WAIT, ring, barrier=FULL, parity=0),
            b.make_step("c", Op.READ, ring),
            b.make_step("c", Op.ARRIVE, ring, barrier=EMPTY, count=1),
        ]
        if ring == "v" and wrong != "order":  # PV_{i-lag} after S_i; its last phases after the loop
            side = [dataclasses.replace(s, lag=lag, peel=lag) if s.op is not Op.ARRIVE else s for s in side]
            if wrong != "release-early":  # "release-early": V_i released before it is read
                side[-1] = dataclasses.replace(side[-1], lag=lag, peel=lag)
        steps += side
    b.set_program("c", steps)
    return b.build()


def _restart(name: str, wrong: str, depth: int, knob: int) -> Protocol:
    b = ProtocolBuilder(f"{name}.kc")
    b.role("e", 1)
    b.ring(
        "stage",
        depth=depth,
        producer="e",
        consumer="e",
        full_init=1,
        empty_init=1,
        restart=depth + 1 + knob,
        synchronized=False,
    )
    # before each write, the reads of every earlier subtile are done ("wait-late": all but the last
    # two, while the restart reuses a slot one subtile after its previous use at some depths)
    steps = [] if wrong == "no-read-wait" else [b.make_step("e", Op.READ_WAIT, "stage", lag=2 if wrong else 1)]
    steps += [b.make_step("e", Op.WRITE, "stage"), b.make_step("e", Op.READ, "stage", asynchronous=True)]
    b.set_program("e", steps)
    return b.build()


def _presync(name: str, wrong: str, depth: int, knob: int) -> Protocol:
    b = ProtocolBuilder(f"{name}.kc")
    b.role("p", 1)
    b.role("c", 1)
    b.ring("kv", depth=depth, producer="p", consumer="c", full_init=1, empty_init=1, init_by=("p",))
    b.named_barrier("s", 64)
    sides = {
        "p": [
            b.make_step("p", Op.WAIT, "kv", barrier=EMPTY, parity=1),
            b.make_step("p", Op.WRITE, "kv"),
            b.make_step("p", Op.ARRIVE, "kv", barrier=FULL, count=1),
        ],
        "c": [
            b.make_step("c", Op.WAIT, "kv", barrier=FULL, parity=0),
            b.make_step("c", Op.READ, "kv"),
            b.make_step("c", Op.ARRIVE, "kv", barrier=EMPTY, count=1),
        ],
    }
    for role, steps in sides.items():
        pre = (
            [] if wrong == "one-side" and role == "p" else [b.make_step(role, Op.BAR_SYNC, "s", count=32, prearm=True)]
        )
        if wrong == "twice" and role == "c":
            pre.append(b.make_step(role, Op.BAR_SYNC, "s", count=32, prearm=True))
        if knob % 2 or wrong == "loop-one-side":  # the loops sync on it too ("loop-one-side": only
            # the consumer syncs before its loop)
            steps.append(b.make_step(role, Op.BAR_SYNC, "s", count=32))
            if wrong == "loop-one-side" and role == "p":
                pre = []
        b.set_program(role, [*pre, *steps])
    return b.build()


def _pingpong_phases(name: str, wrong: str, depth: int, knob: int) -> Protocol:
    b = ProtocolBuilder(f"{name}.kc")
    b.role("p", 1)
    b.role("w0", 1)
    b.role("w1", 1)
    for ring, d in (("k", depth + knob), ("v", depth)):
        b.ring(ring, depth=d, producer="p", consumer=("w0", "w1"), full_init=1, empty_init=2, init_by=("p",))
    b.named_barrier("o0", 64)
    b.named_barrier("o1", 64)

    def side(role: str, ring: str, producer: bool) -> list[Step]:
        if producer:
            steps = [
                b.make_step(role, Op.WAIT, ring, barrier=EMPTY, parity=1),
                b.make_step(role, Op.WRITE, ring),
                b.make_step(role, Op.ARRIVE, ring, barrier=FULL, count=1),
            ]
        else:
            steps = [
                b.make_step(role, Op.WAIT, ring, barrier=FULL, parity=0),
                b.make_step(role, Op.READ, ring),
                b.make_step(role, Op.ARRIVE, ring, barrier=EMPTY, count=1),
            ]
        return [dataclasses.replace(s, lag=1, peel=1) for s in steps] if ring == "v" else steps

    b.set_program("p", side("p", "k", True) + side("p", "v", True))
    first = {} if wrong == "synced-first" else {"lag": 1, "peel": 1}
    handover = {"lag": 1, "peel": 1} if wrong == "handover-late" else {}
    sync0 = b.make_step("w0", Op.BAR_SYNC, "o0", count=32)
    b.set_program(
        "w0",
        [
            dataclasses.replace(sync0, **first),  # type: ignore[arg-type]
            *side("w0", "k", False),
            *side("w0", "v", False),
            dataclasses.replace(b.make_step("w0", Op.BAR_ARRIVE, "o1", count=32), peel=1),
        ],
    )
    b.set_program(
        "w1",
        [
            dataclasses.replace(b.make_step("w1", Op.BAR_SYNC, "o1", count=32), peel=1),
            *side("w1", "k", False),
            *side("w1", "v", False),
            dataclasses.replace(b.make_step("w1", Op.BAR_ARRIVE, "o0", count=32), **handover),  # type: ignore[arg-type]
        ],
    )
    return b.build()


def _oneshot(name: str, wrong: str, depth: int, knob: int) -> Protocol:
    b = ProtocolBuilder(f"{name}.kc")
    b.role("p", 1)
    b.role("c", 4)
    for ring, d in (("q", depth), ("k", depth + knob)):
        b.ring(ring, depth=d, producer="p", consumer="c", full_init=1, empty_init=1, full_tx=16, init_by=("p",))
    fill = [
        b.make_step("p", Op.WAIT, "q", barrier=EMPTY, parity=1),
        b.make_step("p", Op.ARRIVE, "q", barrier=FULL, count=1, nbytes=16),
        b.make_step("p", Op.COPY, "q", barrier=FULL, nbytes=16),
    ]
    if wrong != "refilled":  # "refilled": the producer fills Q every iteration
        fill = [dataclasses.replace(s, once="before") for s in fill]
    b.set_program(
        "p",
        [
            *fill,
            b.make_step("p", Op.WAIT, "k", barrier=EMPTY, parity=1),
            b.make_step("p", Op.ARRIVE, "k", barrier=FULL, count=1, nbytes=16),
            b.make_step("p", Op.COPY, "k", barrier=FULL, nbytes=16),
        ],
    )
    take = [] if wrong == "no-wait" else [b.make_step("c", Op.WAIT, "q", barrier=FULL, parity=0)]
    take = [dataclasses.replace(s, once="before") for s in (*take, b.make_step("c", Op.READ, "q"))]
    if wrong == "wait-in-loop":  # the consumer waits for Q every iteration: the second fill never comes
        take = [dataclasses.replace(s, once="") for s in take]
    release = dataclasses.replace(b.make_step("c", Op.ARRIVE, "q", barrier=EMPTY, count=1), once="after")
    b.set_program(
        "c",
        [
            *take,
            b.make_step("c", Op.WAIT, "k", barrier=FULL, parity=0),
            b.make_step("c", Op.READ, "k"),
            b.make_step("c", Op.ARRIVE, "k", barrier=EMPTY, count=1),
            release,
        ],
    )
    return b.build()


@st.composite
def mixed_protocols(draw: st.DrawFn) -> Protocol:
    """A :func:`small_protocols` draw with the production steps sprinkled in at random: a 2-CTA
    cluster whose arrivals and copies reach the peer's or every CTA's barrier, steps only one
    side of the cluster runs, consumers that take turns, asynchronous reads completed by read
    waits (or never), pre-armed named-barrier arrivals and syncs, a ring side that lags one
    iteration with its peeled tail (a side's `lag 1`), and a counter whose tiles a group of 2 CTAs
    shares, waited for by relative thresholds. Any mix, sound or not; small enough for the
    explicit-state explorer at a bound of 2."""
    base = draw(small_protocols(max_roles=3, max_rings=1, max_depth=2))
    cluster = draw(st.sampled_from((1, 2)))
    grid = bool(base.counters) and draw(st.booleans())
    group = 2 if grid and cluster == 1 else 1
    programs = []
    for role, steps in base.programs:
        new: list[Step] = []
        for step in steps:
            step = _sprinkle(draw, step, cluster > 1)
            new.append(step)
            if step.op is Op.READ and step.asynchronous and draw(st.booleans()):
                wait = Step(role, Op.READ_WAIT, step.channel, step.provenance, lag=draw(st.integers(0, 1)))
                new.insert(draw(st.integers(len(new), len(new) + 1)) if draw(st.booleans()) else len(new), wait)
        ring = draw(st.sampled_from([None, None, None, *sorted({s.channel for s in new if s.op in RING_OPS})]))
        if ring is not None:  # this role's side of `ring` lags one iteration, its last phase peeled
            new = [
                dataclasses.replace(s, lag=s.lag + 1, peel=1) if s.channel == ring and not s.prearm else s for s in new
            ]
        programs.append((role, tuple(new)))
    roles = list(base.roles)
    if base.rings and len(base.rings[0].consumers) == 2 and draw(st.booleans()):
        turned = base.rings[0].consumers
        roles = [dataclasses.replace(r, turn=turned.index(r.name), turns=2) if r.name in turned else r for r in roles]
    counters = base.counters
    if grid:
        ctr = base.counters[0]
        counters = (dataclasses.replace(ctr, grid=True),)
        programs = [(role, _grid_steps(draw, role, steps, ctr.name)) for role, steps in programs]
    return dataclasses.replace(
        base, roles=tuple(roles), counters=counters, programs=tuple(programs), cluster=cluster, group=group
    )


def _sprinkle(draw: st.DrawFn, step: Step, clustered: bool) -> Step:
    """``step`` with, at random, a part, a target or an asynchronous read that its op allows."""
    changes: dict[str, object] = {}
    if clustered and step.op in (Op.ARRIVE, Op.COPY) and not step.prearm and draw(st.integers(0, 2)) == 0:
        changes["target"] = draw(st.sampled_from((Target.PEER, Target.ALL)))
    if clustered and draw(st.integers(0, 5)) == 0:
        changes["part"] = draw(st.sampled_from((Part.LEADER, Part.PEER)))
    if step.op is Op.READ and draw(st.integers(0, 2)) == 0:
        changes["asynchronous"] = True
        if clustered and draw(st.booleans()):
            changes["target"] = Target.ALL
    if step.op in (Op.BAR_ARRIVE, Op.BAR_SYNC) and not step.prearm:
        phases = draw(st.sampled_from(("loop", "loop", "loop", "prearm", "lag", "peeled")))
        if phases == "prearm":
            changes["prearm"] = True
        elif phases == "lag":  # a rendezvous side's `lag 1`
            changes.update(lag=1, peel=1)
        elif phases == "peeled":  # a rendezvous side's `peeled`
            changes["peel"] = 1
    return dataclasses.replace(step, **changes) if changes else step  # type: ignore[arg-type]


def _grid_steps(draw: st.DrawFn, role: str, steps: tuple[Step, ...], counter: str) -> tuple[Step, ...]:
    """A grid counter's steps: relative thresholds at random, first/rest parts, the tile's data steps."""
    out: list[Step] = []
    for step in steps:
        if step.channel == counter and step.op is Op.WAIT_GE:
            threshold = draw(st.sampled_from(list(Threshold)))
            count = step.count if threshold is Threshold.COUNT else 0
            part = draw(st.sampled_from((Part.ALL, Part.ALL, Part.FIRST, Part.REST)))
            step = dataclasses.replace(step, threshold=threshold, count=count, part=part)
            out += [step, Step(role, Op.READ, counter, step.provenance, part=part)]
        elif step.channel == counter and step.op is Op.ADD:
            part = draw(st.sampled_from((Part.ALL, Part.ALL, Part.FIRST, Part.REST)))
            step = dataclasses.replace(step, part=part)
            out += [Step(role, Op.WRITE, counter, step.provenance, part=part), step]
        else:
            out.append(step)
    return tuple(out)
