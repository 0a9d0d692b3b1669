"""What a component's code alone cannot show, and the composed check decides: its deferred sides.

A role that calls other stages' callables (``call … as S from role R``) may run part of its protocol
inside them. ``kernlink pack`` of the component alone has only the role's own code (the callables'
summaries come with their packages, ``checker/conformance/summary.py``), so such a side is neither
accepted nor rejected there: it is deferred to the composition (``kernlink check`` splices the
summaries and judges it). Each check that defers says so through one function here, and each deferral
is one :class:`Deferred` record, which ``kernlink pack`` shows as an ``I-DEFERRED`` note (never an
error: the composed check decides it).

- ``ring-step`` (:func:`staging`): a staging side (a ring without barriers whose slot the role writes
  and reads asynchronously, ``checker/conformance/staging.py``) of a role that calls imported callables;
- ``barrier-orders`` (:func:`counter_orders`): a claimed barrier that ``orders`` a counter claim, in a
  participant role that calls imported callables, which may make the global accesses or run the
  counter's steps it orders (``checker/conformance/orders.py``);
- ``ring-step`` and ``named-barrier`` (:func:`passed_steps`): a step of a ring or a named barrier the
  role's code lacks, where the role passes the ring's barrier or the barrier's ID to another stage's
  callable, which may run the step with it (``checker/conformance/steps.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from checker.conformance import orders, steps
from checker.conformance import staging as staging_sides
from contract_lang import ast as A
from package.codefacts.facts import CodeFacts


@dataclass(frozen=True)
class Deferred:
    """A side of one role that the component's code alone cannot show; the composed check decides it.

    ``what``: what is deferred, in words; ``check``: the conformance check that decides it; ``claims``: the
    contract items it is about, as ``(kind, name)`` (``("ring", "out_stage")``, ``("barrier", "sk_sync")``,
    ``("counter", "sk_flags")``), the first one's item being ``node``; ``reason``: what the role's callables
    may do that its own code does not show.
    """

    what: str
    check: str
    role: str
    claims: tuple[tuple[str, str], ...]
    reason: str
    node: A.Node | None = None


def deferred(stage: A.Stage, code: CodeFacts) -> tuple[Deferred, ...]:
    """Every deferral of a stage's code, check by check, each check's in its own order (deterministic)."""
    return (*staging(stage, code), *counter_orders(stage, code), *passed_steps(stage, code))


def staging(stage: A.Stage, code: CodeFacts) -> list[Deferred]:
    """``ring-step``: the staging sides whose steps the role's callables may run."""
    return [
        Deferred(
            f"the steps of ring `{ring}`",
            "ring-step",
            role,
            (("ring", ring),),
            f"role `{role}` calls other stages' callables, which may run steps of ring `{ring}`",
            next((r for r in stage.rings if r.name == ring and r.role == role), None),
        )
        for role, ring in staging_sides.deferred(stage, code)
    ]


def counter_orders(stage: A.Stage, code: CodeFacts) -> list[Deferred]:
    """``barrier-orders``: what a barrier orders around a counter, where the role's callables may access global
    memory or step the counter."""
    barriers = {b.name: b for b in stage.items if isinstance(b, A.BarrierClaim)}
    return [
        Deferred(
            f"what barrier `{barrier}` orders around counter `{counter}`",
            "barrier-orders",
            role,
            (("barrier", barrier), ("counter", counter)),
            f"role `{role}` calls other stages' callables, which may access global memory or step counter `{counter}`",
            barriers.get(barrier),
        )
        for role, barrier, counter in orders.deferred(stage, code)
    ]


def passed_steps(stage: A.Stage, code: CodeFacts) -> list[Deferred]:
    """``ring-step`` / ``named-barrier``: the missing steps of a ring or a named barrier that the role hands to
    another stage's callable (the ring's barrier, the barrier's ID), which may run them."""
    out = []
    for role, check, name in steps.deferred(stage, code):
        if check == "ring-step":
            kind, handed = "ring", "a barrier of ring"
            node: A.Node | None = next((r for r in stage.rings if r.name == name and r.role == role), None)
        else:
            kind, handed = "barrier", "the ID of barrier"
            node = next((b for b in stage.items if isinstance(b, A.BarrierClaim) and b.name == name), None)
        reason = f"role `{role}` passes {handed} `{name}` to another stage's callable, which may run its missing steps"
        out.append(Deferred(f"the missing steps of {kind} `{name}`", check, role, ((kind, name),), reason, node))
    return out
