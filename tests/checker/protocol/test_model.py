"""The abstract protocol's invariants and the builder's defaults."""

from __future__ import annotations

import pytest

from checker.protocol import (
    Barrier,
    BarrierKind,
    Op,
    ProtocolBuilder,
    Provenance,
    Ring,
    Step,
    per_thread,
    per_warp,
    per_warpgroup,
)
from diagnostics.span import Span
from tests.checker.protocol.helpers import kv_ring

PROV = Provenance(Span("x.kc", 1, 1, 1, 2), "x")


def test_widths() -> None:
    role = ProtocolBuilder().role("mma", 8)
    assert (per_warp(role), per_thread(role), per_warpgroup(role)) == (8, 256, 2)
    with pytest.raises(ValueError, match="warpgroups"):
        per_warpgroup(ProtocolBuilder().role("odd", 3))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"op": Op.WAIT, "barrier": BarrierKind.FULL}, "parity"),
        ({"op": Op.WAIT, "parity": 2, "barrier": BarrierKind.FULL}, "parity must be 0 or 1"),
        ({"op": Op.ARRIVE, "barrier": BarrierKind.FULL}, "count 0"),
        ({"op": Op.COPY, "barrier": BarrierKind.FULL}, "byte count"),
        ({"op": Op.READ, "barrier": BarrierKind.FULL}, "name a barrier"),
        ({"op": Op.WAIT, "parity": 0, "barrier": BarrierKind.FULL, "lag": 1}, "lag"),
        ({"op": Op.ARRIVE, "barrier": BarrierKind.EMPTY, "count": 1, "nbytes": 8, "prearm": True}, "pre-arm"),
        ({"op": Op.BAR_SYNC, "count": 48}, "whole warps"),
    ],
)
def test_step_invariants(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Step("r", channel="kv", provenance=PROV, **kwargs)  # type: ignore[arg-type]


def test_ring_invariants() -> None:
    full = Barrier(BarrierKind.FULL, 1, PROV)
    empty = Barrier(BarrierKind.EMPTY, 1, PROV)
    with pytest.raises(ValueError, match="one role"):
        Ring("kv", 2, "a", ("a",), full, empty, PROV)
    with pytest.raises(ValueError, match="depth"):
        Ring("kv", 0, "a", ("b",), full, empty, PROV)
    with pytest.raises(ValueError, match="swapped"):
        Ring("kv", 2, "a", ("b",), empty, full, PROV)
    with pytest.raises(ValueError, match="< 1"):
        Barrier(BarrierKind.FULL, 0, PROV)


def test_protocol_invariants() -> None:
    b = ProtocolBuilder()
    b.role("load", 1)
    b.role("mma", 4)
    b.ring("kv", depth=2, producer="load", consumer="mma", full_init=1, empty_init=4)
    b.produce("kv")
    with pytest.raises(ValueError, match="never reads"):
        b.build()
    b.step("load", Op.READ, "kv")
    with pytest.raises(ValueError, match="only consumers read"):
        b.build()


def test_builder_applies_the_language_defaults() -> None:
    protocol = kv_ring(2)
    load = [s.provenance.text for s in protocol.program("load")]
    mma = [s.provenance.text for s in protocol.program("mma")]
    assert load == ["kv.empty wait parity 1", "kv.full arrive 1 tx 16384", "kv.full copy 16384"]
    assert mma == ["kv.full wait parity 0", "kv read", "kv.empty arrive 8"]
    assert protocol.default_bound() == 5
    assert protocol.with_depth("kv", 5).ring("kv").depth == 5
    no_tx = kv_ring(2, full_tx=None)
    assert [s.op for s in no_tx.program("load")] == [Op.WAIT, Op.WRITE, Op.ARRIVE]
