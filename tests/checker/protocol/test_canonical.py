"""Protocol verdicts are kept on the protocol's meaning: what the model does not read (spans,
the source text of a line, a role's width) is not in the key, and the verdict put in words
quotes each protocol's own text."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from analysis.pipeline import resolve_inputs
from checker.memo import Memo
from checker.protocol import Protocol, ProtocolBuilder, Provenance, per_thread
from checker.protocol.build import at_depths, build_model
from checker.protocol.check import ModelOptions, canonical, check_protocol, verdict
from checker.protocol.depths import depth_choices
from checker.protocol.model import InitBy, remap_provenance
from diagnostics.span import Span
from fuzzing.subject import load_subject
from tests.checker.protocol.helpers import kv_ring, worded

EXAMPLES = Path(__file__).resolve().parents[3] / "specs" / "examples"


def reworded(protocol: Protocol, file: str) -> Protocol:
    """The same protocol written elsewhere, every line worded differently."""
    return remap_provenance(  # type: ignore[no-any-return]
        protocol,
        lambda p: Provenance(Span(file, p.span.line + 3, 1, p.span.line + 3, 9), f"{p.text} # again"),
    )


def widened(protocol: Protocol) -> Protocol:
    """The same protocol with every role a warp wider (no count changes)."""
    return dataclasses.replace(protocol, roles=tuple(dataclasses.replace(r, warps=r.warps + 1) for r in protocol.roles))


def hanging() -> Protocol:
    """`mma` releases per thread where the barrier counts warps: L-ARRIVE (a core) and a deadlock (a trace)."""
    return kv_ring(2, consume={"release": per_thread(ProtocolBuilder().role("mma", 8))})


def test_wording_layout_and_widths_are_not_in_the_key() -> None:
    protocol = hanging()
    assert canonical(reworded(protocol, "other.kc"))[0] == canonical(protocol)[0]
    assert canonical(widened(protocol))[0] == canonical(protocol)[0]
    assert canonical(kv_ring(2))[0] != canonical(protocol)[0]


def test_the_model_reads_no_width_and_no_text() -> None:
    protocol = hanging()
    plain = worded(check_protocol(protocol))
    assert worded(check_protocol(widened(protocol))) == plain
    assert worded(check_protocol(canonical(protocol)[0])) != plain  # placeholders quoted


def test_a_kept_verdict_is_worded_with_each_protocols_own_text() -> None:
    protocol, other = hanging(), reworded(hanging(), "other.kc")
    memo, options = Memo(), ModelOptions()
    first = worded(verdict(protocol, options, memo))
    second = worded(verdict(other, options, memo))
    assert len(memo.verdicts) == 1  # decided once
    assert first == worded(check_protocol(protocol))
    assert second == worded(check_protocol(other))
    notes = [n for d in second for n in d.notes]
    assert any("# again" in n and n.startswith("trace (") for n in notes)  # the step table
    assert any("# again" in n and "other.kc" in n for n in notes if n.startswith("minimal conflicting facts"))
    assert all("<canonical>" not in v for d in second for _, v in d.data)


@pytest.mark.parametrize("name", ["ring", "attention", "gemm_swiglu"])
def test_a_protocol_moved_to_other_depths_is_the_one_built_there(name: str) -> None:
    comp = resolve_inputs(load_subject([str(EXAMPLES / name / f"{name}.kp")]).inputs)
    assert comp is not None
    lows, *rest = depth_choices(comp)
    for depths in [*rest, {ring: 3 for ring in comp.rings}]:
        assert at_depths(build_model(comp, lows), depths) == build_model(comp, depths)


def initialised_by(protocol: Protocol, *roles: str) -> Protocol:
    """``protocol`` with both barriers of its first ring initialized by ``roles``."""
    ring = protocol.rings[0]
    inits = tuple(
        InitBy(r, Provenance(Span("kv.kc", 40 + i, 5, 40 + i, 20), f"init by {r}")) for i, r in enumerate(roles)
    )
    full, empty = (dataclasses.replace(b, init_by=inits) for b in (ring.full, ring.empty))
    return dataclasses.replace(protocol, rings=(dataclasses.replace(ring, full=full, empty=empty), *protocol.rings[1:]))


def test_who_initializes_is_no_question_of_the_model_and_shares_its_verdict() -> None:
    """L-INIT's rule reads the declarations (``model.init_fault``, from l_init): the model's verdict,
    kept or decided afresh, is the same whoever initializes."""
    memo, options = Memo(), ModelOptions()
    for roles in (("load",), ("load", "mma"), ("mma",), ()):
        for protocol in (kv_ring(2), hanging()):
            variant = initialised_by(protocol, *roles)
            kept, whole = verdict(variant, options, memo), check_protocol(variant)
            assert worded(kept) == worded(whole)
            assert (kept.codes, kept.static, kept.races, kept.deadlock) == (
                whole.codes,
                whole.static,
                whole.races,
                whole.deadlock,
            )
    assert check_protocol(initialised_by(kv_ring(2), "load", "mma")).codes == check_protocol(kv_ring(2)).codes
    assert len(memo.verdicts) == 2  # one model verdict per protocol, whoever initializes


def test_a_protocol_clause_alone_reports_its_own_bug_as_e_internal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A protocol clause run alone (``--select`` of its code: the engine with that one clause) words a
    clause bug as E-INTERNAL: never a traceback, never a pass."""
    from checker.clauses.l_deadlock import DeadlockClause
    from checker.engine import run_clauses

    comp = resolve_inputs(load_subject([str(EXAMPLES / "ring" / "ring.kp")]).inputs)
    assert comp is not None

    def broken(self: DeadlockClause, comp: object, ctx: object) -> list[object]:
        raise RuntimeError("boom")

    monkeypatch.setattr(DeadlockClause, "check_in", broken)
    (diag,) = run_clauses(comp, [DeadlockClause])
    assert diag.code == "E-INTERNAL" and "boom" in diag.message


def test_a_protocol_clause_checks_alone_with_a_context_of_its_own() -> None:
    """`Clause.check` of a protocol clause: its own findings, in a check of its code alone."""
    from checker.clauses.l_deadlock import DeadlockClause

    fixture = Path(__file__).parents[1] / "clauses" / "L-DEADLOCK"
    hangs = resolve_inputs(load_subject([str(fixture / "fail_late_release_depth1.kc")]).inputs)
    safe = resolve_inputs(load_subject([str(fixture / "pass_late_release_depth2.kc")]).inputs)
    assert hangs is not None and safe is not None
    assert [d.code for d in DeadlockClause().check(hangs)] == ["L-DEADLOCK"]
    assert list(DeadlockClause().check(safe)) == []
