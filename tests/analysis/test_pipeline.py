"""The one check pipeline: accepted needs a placement; the memo, not module state, carries verdicts between checks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from analysis.downstream import Downstream
from analysis.pipeline import AnalysisContext, analyse
from analysis.plan import plan
from checker.composition import Composition
from checker.memo import Memo
from checker.protocol import check as protocol_check
from kernlink.api import check, check_text
from package.loader import load

ROOT = Path(__file__).resolve().parents[2]
RING = ROOT / "specs" / "examples" / "ring" / "ring.kp"


def test_an_accepted_check_carries_its_placement_and_routes() -> None:
    result = check([RING])
    assert result.accepted and result.placed is not None and result.downstream is not None


class _NoPlacement:
    """A downstream step that (wrongly) places nothing and says nothing."""

    def get(self, comp: Composition, compute: Callable[[], Downstream]) -> Downstream:
        return Downstream(None, [], [])


def test_no_placement_is_never_an_accept() -> None:
    found = analyse(load([RING]), AnalysisContext(downstreams=_NoPlacement()))
    assert not found.accepted
    assert [d.code for d in found.diagnostics if d.is_error] == ["E-INTERNAL"]


def test_a_memo_carries_protocol_verdicts_between_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whichever argument decides the protocol (the parametric proof or the bounded model)."""
    calls: list[object] = []
    real, proof = protocol_check.check_protocol, protocol_check.parametric.prove

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(args[0])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    def proved(*args: object, **kwargs: object) -> object:
        calls.append(args[0])
        return proof(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(protocol_check, "check_protocol", counted)
    monkeypatch.setattr(protocol_check.parametric, "prove", proved)
    memo = Memo()
    first = analyse(load([RING]), AnalysisContext(memo=memo))
    decided = len(calls)
    assert first.accepted and decided > 0 and len(memo.verdicts) + len(memo.proofs) == decided
    again = analyse(load([RING]), AnalysisContext(memo=memo))
    assert again.diagnostics == first.diagnostics and len(calls) == decided  # nothing decided twice
    analyse(load([RING]))  # a fresh context: a cold check, nothing kept from the others
    assert len(calls) == 2 * decided


def test_check_text_runs_the_same_pipeline() -> None:
    text = (ROOT / "specs" / "examples" / "hello").glob("*.kc")
    source = "\n".join(p.read_text() for p in sorted(text))
    result = check_text(source, "hello.kc")
    assert result.accepted and result.placed is not None


def test_the_plan_without_routes_is_the_checked_placement() -> None:
    result = check([RING])
    assert result.composition is not None and result.placed is not None
    planned = plan(result.composition, result.placed, result.downstream.routes if result.downstream else None)
    assert planned.placement == result.placed.placement and not planned.resolved
    assert planned.for_entry(255, "kl_dispatch") is planned  # a pool that still fits: the same plan
