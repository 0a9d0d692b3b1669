"""Reference protocols for the protocol-model tests: the kv ring and its realistic mistakes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from checker.engine import word
from checker.protocol import BarrierKind, Op, Protocol, ProtocolBuilder, ProtocolVerdict, check_protocol, per_warp
from diagnostics.model import Diagnostic, sort_diagnostics

FULL = BarrierKind.FULL
EMPTY = BarrierKind.EMPTY
TILE = 16 * 1024


def kv_ring(
    depth: int = 4,
    *,
    mma_warps: int = 8,
    produce: dict[str, Any] | None = None,
    consume: dict[str, Any] | None = None,
    empty_init: int | None = None,
    full_tx: int | None = TILE,
) -> Protocol:
    """The reference ring: `load` (1 warp) fills `kv` for `mma` (a warpgroup pair)."""
    b = ProtocolBuilder("kv.kc")
    b.role("load", 1)
    mma = b.role("mma", mma_warps)
    b.ring(
        "kv",
        depth=depth,
        producer="load",
        consumer="mma",
        full_init=1,
        empty_init=per_warp(mma) if empty_init is None else empty_init,
        full_tx=full_tx,
        init_by=["load"],
    )
    b.produce("kv", **(produce or {}))
    b.consume("kv", **(consume or {}))
    return b.build()


def worded(verdict: ProtocolVerdict) -> list[Diagnostic]:
    """A verdict's findings and undecided queries in words, each by its clause, in deterministic order."""
    return sort_diagnostics(word(found) for found in (*verdict.findings, *verdict.undecided))


def protocol_diagnostics(protocol: Protocol) -> list[Diagnostic]:
    """``protocol`` checked and its verdict in words (empty when it is safe)."""
    return worded(check_protocol(protocol))


def two_operand_rings(depth: int = 2) -> ProtocolBuilder:
    """A loader filling rings `a` and `b` for `mma` (programs left to the caller)."""
    b = ProtocolBuilder("ab.kc")
    b.role("load", 1)
    mma = b.role("mma", 4)
    for name in ("a", "b"):
        b.ring(
            name,
            depth=depth,
            producer="load",
            consumer="mma",
            full_init=1,
            empty_init=per_warp(mma),
            full_tx=8192,
            init_by=["load"],
        )
    return b


def waits_on_unfed_barrier(depth: int = 2) -> Protocol:
    """`epi` waits on `acc.full`, but `mma` writes the slot and never arrives on it."""
    b = ProtocolBuilder("acc.kc")
    b.role("mma", 4)
    b.role("epi", 4)
    b.ring("acc", depth=depth, producer="mma", consumer="epi", full_init=1, empty_init=4, init_by=["mma"])
    b.step("mma", Op.WAIT, "acc", barrier=EMPTY, parity=1)
    b.step("mma", Op.WRITE, "acc")
    b.consume("acc")
    return b.build()


def loader_with_rendezvous(depth: int = 2, threads: int = 192) -> Protocol:
    """`r0` feeds `r1` (ring q1) and `r2` (ring q0); a named barrier joins all three per
    iteration, `r1` only arriving on it (it may run ahead)."""
    b = ProtocolBuilder("sync.kc")
    b.role("r0", 1)
    b.role("r1", 1)
    b.role("r2", 4)
    b.ring("q1", depth=depth, producer="r0", consumer="r1", full_init=1, empty_init=1, full_tx=32, init_by=["r0"])
    b.ring("q0", depth=depth, producer="r0", consumer="r2", full_init=1, empty_init=4, init_by=["r0"])
    b.named_barrier("sync", threads)
    b.produce("q1")
    b.step("r0", Op.BAR_SYNC, "sync", count=32)
    b.produce("q0")
    b.consume("q1", release=1)
    b.step("r1", Op.BAR_ARRIVE, "sync", count=32)
    b.step("r2", Op.BAR_SYNC, "sync", count=128)
    b.consume("q0")
    return b.build()


def contract_protocol(text: str, tmp_path: Path, depth: int | dict[str, int]) -> Protocol:
    """The protocol model of one contract file's stages (written to the folder ``tmp_path``, made if
    absent) at ``depth``: one depth for every ring, or each ring's."""
    from checker.protocol.build import build_model
    from checker.protocol.declarations import excluded
    from kernlink.api import compose

    tmp_path.mkdir(parents=True, exist_ok=True)
    kc = tmp_path / "p.kc"
    kc.write_text(text)
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        _, comp = compose([kc.name])
    finally:
        os.chdir(old)
    assert comp is not None
    depths = depth if isinstance(depth, dict) else dict.fromkeys(comp.rings, depth)
    built = build_model(comp, depths, excluded(comp)).protocol
    assert built is not None
    return built
