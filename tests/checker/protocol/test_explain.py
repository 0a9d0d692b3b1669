"""Explanations: every assertion is tracked, cores are minimal, proofs name the facts."""

from __future__ import annotations

import z3

from checker.protocol import Provenance, check_protocol
from checker.protocol.smt import ProtocolModel, Query, QueryKey
from tests.checker.protocol.helpers import kv_ring


def texts(facts: tuple[object, ...]) -> set[str]:
    return {f.text for f in facts if isinstance(f, Provenance)}


def test_why_safe_names_the_waits_and_releases() -> None:
    verdict = check_protocol(kv_ring(2), explain=True)
    proofs = {(p.code, p.query, p.ring): p for p in verdict.proofs}
    overwrite, early = ("L-RACE", "overwrite", "kv"), ("L-RACE", "early-read", "kv")
    assert set(proofs) == {overwrite, early, ("L-DEADLOCK", "", "")}
    assert {"kv.empty wait parity 1", "kv.empty arrive 8", "empty init 8"} <= texts(proofs[overwrite].facts)
    assert "kv.full wait parity 0" in texts(proofs[early].facts)
    assert "kv.full wait parity 0" not in texts(proofs[overwrite].facts)


def test_every_core_is_minimal() -> None:
    protocol = kv_ring(2)
    model = ProtocolModel(protocol, bound=protocol.default_bound(), rlimit=100_000_000)
    facts = model.dynamic_facts()
    query = model.queries[QueryKey(Query.OVERWRITE, "kv")]
    core = model.core(facts, [query])
    assert model.check(core, [query]).unsat
    for dropped in core:
        rest = [k for k in core if k != dropped]
        assert model.check(rest, [query]).sat, dropped


def test_static_cores_are_minimal_and_name_the_declarations() -> None:
    protocol = kv_ring(2, produce={"tx": 8192, "copies": [8192, 8192]})
    model = ProtocolModel(protocol, bound=protocol.default_bound(), rlimit=100_000_000)
    failing = [c for c in model.static_checks if model.check([*c.fact_keys, c.rule_key], solver="static").unsat]
    assert {c.rule_key for c in failing} == {"rule:txbytes:kv.full", "rule:declared-expect:kv.full"}
    for check in failing:
        core = model.core([*check.fact_keys, check.rule_key], solver="static")
        assert check.rule_key in core
        for dropped in core:
            rest = [k for k in core if k != dropped]
            assert model.check(rest, solver="static").sat


def test_every_assertion_has_a_provenance() -> None:
    protocol = kv_ring(3, consume={"prearm": True}, produce={"parity": 0})
    model = ProtocolModel(protocol, bound=protocol.default_bound(), rlimit=100_000_000)
    tracked = {lit.get_id() for lit in model.lits.values()}
    tracked |= {lit.get_id() for lit in model.queries.values()}
    for solver in (model.solver, model.static_solver, model.cut_solver):
        for assertion in solver.assertions():
            assert z3.is_implies(assertion)
            guard = assertion.arg(0)
            lits = guard.children() if z3.is_and(guard) else [guard]
            assert all(lit.get_id() in tracked for lit in lits)
    assert set(model.facts) == set(model.lits)
