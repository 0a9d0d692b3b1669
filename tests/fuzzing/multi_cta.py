"""Random protocols with grid-counter, cluster and named-barrier steps, written as contracts.

Each :class:`Protocol` is one stage: a producer ``load`` and a consumer ``mma`` sharing ring ``ab``,
plus any of: a cluster (a 2-CTA multicast load, or a 2-CTA pair whose leader waits and releases
for both; the release either one ``multicast`` arrive or an arrive on the own CTA's barrier and a
``remote`` one on the peer's), a grid counter ``sem`` raised and awaited by ``mma`` across the CTAs that share a tile
(serial split-K, a stream-K fix-up, a grid barrier, or an absolute threshold) and a named barrier
``go`` that ``mma`` signals and ``load`` waits on. Every knob has its correct value and wrong ones,
so a draw is safe or holds one or more mistakes of the kinds the protocol clauses report.
The oracle (fuzzing/contract_oracle.py) and ``kernlink check`` judge the same text.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from typing import TypeVar

from hypothesis import strategies as st

CLUSTERS = ("none", "multicast", "pair")
GRIDS = ("none", "splitk", "streamk", "barrier", "absolute")
NAMED = ("none", "signal")
T = TypeVar("T")


@dataclass(frozen=True)
class Protocol:
    depth: int = 1
    cluster: str = "none"
    release_multicast: bool = True  # multicast: each consumer releases the slot on every CTA
    empty_init: int = 0  # 0: the right count
    tx: int = 0  # 0: the right bytes per phase; else that many KiB
    leader_wait: bool = True  # pair: only the leader waits and reads (and releases)
    leader_release: bool = True
    remote_release: bool = False  # cluster: the release is an own arrive plus a `remote` arrive (not `multicast`)
    remote_arrive: str = "right"  # remote_release: "right"; "other rank" (multicast: only the peer's
    # remote arrive runs, `on peer`; pair: the peer's, not the leader's); "missing" (no remote arrive)
    grid: str = "none"
    waits_first: bool = True  # the counter's consume side stated before its produce side (right for
    # split-K and stream-K, whose splits wait for others; a grid barrier's and an absolute threshold's add first)
    counter_after_ring: bool = True  # the counter's steps after the consumer's ring steps
    threshold: int = 3  # absolute: `wait ge N`
    parts: bool = True  # stream-K: `on rest` / `on first` stated
    named: str = "none"
    sync_lag: bool = True  # load's `go` sync runs a phase late
    prearm: bool = False  # mma arrives on `go` once before its loop
    sync_before_fill: bool = True  # load syncs on `go` before its ring steps (else after)
    signal_after_release: bool = True  # mma signals `go` after its ring steps (else before)
    parity0: bool = False  # the producer's first empty wait states parity 0
    release_lag: bool = False  # the consumer releases a phase late

    def features(self) -> tuple[str, ...]:
        out = []
        if self.cluster != "none":
            out.append("cluster")
            if self.remote_release:
                out.append("remote arrive")
        if self.grid != "none":
            out.append("grid")
        if self.named != "none":
            out.append("named barrier")
        return tuple(out)

    def text(self) -> str:
        clustered = self.cluster != "none"
        lines = [
            'stage "o.multi" version "1.0.0" {',
            "    target sm_90a",
            "    requires feature mbarrier, named_barriers, tma" + (", tma_multicast, clusters" if clustered else ""),
            "    role load entry o_load warps 4 warpgroup",
            "    role mma entry o_mma warps 4 warpgroup",
        ]
        if clustered:
            lines.append("    cluster 2x1x1")
        lines.append("    launch persistent threads 256 blocks_per_sm 1 cooperative")
        scope = ["scope cluster"] if clustered else []
        if self.cluster == "multicast":
            right_tx, right_empty = 32, 2 if self.release_multicast or self.remote_release else 1
            fill = ["full copy 16KiB", "full copy 8KiB multicast"]
            if self.remote_release:
                release = ["empty arrive 1", *self._remote("", " on peer")]
            else:
                release = ["empty arrive 1" + (" multicast" if self.release_multicast else "")]
            wait = ["full wait"]
        elif self.cluster == "pair":
            right_tx, right_empty = 32, 1
            fill = ["full copy 16KiB on leader", "full copy 16KiB remote on peer"]
            on = " on leader" if self.leader_wait else ""
            wait = [f"full wait{on}", f"read multicast{on}"]
            on = " on leader" if self.leader_release else ""
            if self.remote_release:
                release = [f"empty arrive 1{on}", *self._remote(on, " on peer")]
            else:
                release = [f"empty arrive 1 multicast{on}"]
        else:
            right_tx, right_empty = 16, 1
            fill, wait = [], ["full wait"]
            release = ["empty arrive 1"]
        tx = self.tx or right_tx
        arrive = f"full arrive 1 tx {tx}KiB" + (" on leader" if self.cluster == "pair" else "")
        if self.release_lag:
            release = [line + " lag 1" for line in release]
        producer = [
            f"depth {self.depth}",
            *scope,
            f"full init 1 expect_tx {right_tx}KiB",
            f"empty init {self.empty_init or right_empty}",
            "empty wait" + (" parity 0" if self.parity0 else ""),
            arrive,
            *fill,
            "writes async",
            "init by load fenced",
        ]
        consumer = [*scope, *wait, "reads async", *release]
        load = [_ring("produce", "load", producer)]
        mma = [_ring("consume", "mma", consumer)]
        if self.named == "signal":
            sync = "    rendezvous go sync by load threads 256" + (" lag 1" if self.sync_lag else "")
            load = [sync, *load] if self.sync_before_fill else [*load, sync]
            signal = "    rendezvous go arrive by mma threads 256"
            mma = [*mma, signal] if self.signal_after_release else [signal, *mma]
            if self.prearm:
                mma = ["    rendezvous go arrive by mma threads 256 prearm", *mma]
        if self.grid != "none":
            sides = self._counter()
            mma = [*mma, *sides] if self.counter_after_ring else [*sides, *mma]
        return "\n".join([*lines, *load, *mma, "}", ""])

    def _remote(self, right: str, other: str) -> list[str]:
        """The remote release (an arrive on the next rank's barrier) run where ``right`` says, or
        on the other rank, or not at all."""
        if self.remote_arrive == "missing":
            return []
        return ["empty arrive 1 remote" + (other if self.remote_arrive == "other rank" else right)]

    def _counter(self) -> list[str]:
        rest = " on rest" if self.parts else ""
        first = " on first" if self.parts else ""
        add, wait = {
            "splitk": ("add 1", "wait ge split"),
            "streamk": (f"add 1{rest}", f"wait ge others{first}"),
            "barrier": ("add 1", "wait ge all"),
            "absolute": ("add 1", f"wait ge {self.threshold}"),
        }[self.grid]
        produce = f"    counter sem produce by mma scope gpu {{\n        {add}\n    }}"
        consume = f"    counter sem consume by mma scope gpu {{\n        {wait}\n    }}"
        return [consume, produce] if self.waits_first else [produce, consume]


def _ring(side: str, role: str, items: list[str]) -> str:
    body = "".join(f"        {it}\n" for it in items)
    return f"    ring ab {side} by {role} {{\n{body}    }}"


def draw(rng: random.Random) -> Protocol:
    """A random protocol with at least one of a cluster, a grid counter and a named barrier; in
    six draws of ten some knobs (each one in five) are off their right values. A cluster and a grid
    counter do not meet in one draw (six CTAs: larger than either judge's budget for 10 000 draws);
    a ring of depth 2 (five trip counts) comes only in one CTA."""
    while True:
        cluster = rng.choice(("none", "none", "multicast", "pair"))
        grid = rng.choice(("none", *GRIDS)) if cluster == "none" else "none"
        named = rng.choice(NAMED)
        if cluster != "none" or grid != "none" or named != "none":
            break
    wrong = 0.2 if rng.random() < 0.6 else 0.0

    def knob(right: T, *others: T) -> T:
        return rng.choice(others) if others and rng.random() < wrong else right

    return Protocol(
        depth=rng.choice((1, 1, 2)) if cluster == "none" and grid == "none" else 1,
        cluster=cluster,
        release_multicast=knob(True, False),
        empty_init=knob(0, 1, 2, 4),
        tx=knob(0, 16, 24, 48),
        leader_wait=knob(True, False),
        leader_release=knob(True, False),
        remote_release=cluster != "none" and rng.random() < 0.5,
        remote_arrive=knob("right", "other rank", "missing"),
        grid=grid,
        waits_first=knob(grid in ("splitk", "streamk"), grid not in ("splitk", "streamk")),
        counter_after_ring=rng.random() < 0.5,
        threshold=knob(3, 1, 2, 4),
        parts=knob(True, False),
        named=named,
        sync_lag=knob(True, False),
        prearm=knob(False, True),
        sync_before_fill=rng.random() < 0.5,
        signal_after_release=rng.random() < 0.5,
        parity0=knob(False, True),
        release_lag=knob(False, True),
    )


protocols = st.integers(0, 2**32 - 1).map(lambda seed: draw(random.Random(seed)))
"""Hypothesis draws of :func:`draw` (one seed each: the draw is the seed's)."""

KNOBS = tuple(f.name for f in fields(Protocol))
