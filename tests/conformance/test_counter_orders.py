"""A named barrier that ``orders`` a counter claim stands between the role's global writes and the counter's release,
and between its acquire and the role's global reads (issue 27, check ``barrier-orders``).

The persistent GEMM's consumer (role `mma`) runs the stream-K fix-up in the `gemm.streamk_fixup` callables: a
PARTIAL unit stores its partial to the global workspace (`gs_consumer_fixup_store`, every thread), syncs on
`sk_sync`, and thread 0 raises its counter (`gs_consumer_fixup_raise`, `st.release.gpu`); the FINISH unit's thread
0 awaits the counters (`gs_consumer_fixup_await`, an acquire spin), syncs on `sk_sync`, and every thread adds the
partials (`gs_consumer_fixup_add`). `claim barrier sk_sync participants mma orders sk_flags` states it. Each failing
variant below is one compiled edit of the example (one `named_sync` removed) and gives exactly one L-CONFORM
`barrier-orders` finding at the consumer's call, the callable's own line in a note; the unedited example (checked in
tests/conformance/test_callable_summary.py, ``test_the_example_is_the_passing_twin``) is the passing twin.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checker.conformance.context import Ctx, Finding
from checker.conformance.orders import orders
from checker.handles import expected_handles
from contract_lang.parser import parse_text
from package.codefacts.facts import EVERY_THREAD, CodeFacts, Fact, Operand
from tests.conformance.test_callable_summary import checked_pipeline

SK_SYNC = "            gs::named_sync(kl_gemm_mainloop_sk_sync_bar_id(), kl_gemm_mainloop_sk_sync_threads());\n"
STORE = "            gs_consumer_fixup_store(acc[0], p->workspace, &site);\n"
AWAIT = "            gs_consumer_fixup_await(flags, &site);\n"


CASES = {
    # every thread's partial store not ordered before thread 0's release of the counter
    "no-sync-before-raise": (STORE + SK_SYNC, STORE, "releases counter `sk_flags`", ("gs_sk_raise", "gs_sk_store")),
    # every thread's read of the partials not ordered after thread 0's acquire of the counter
    "no-sync-after-await": (
        AWAIT + SK_SYNC,
        AWAIT,
        "after the acquire `ld.acquire.gpu.global.u32` of counter `sk_flags`",
        ("gs_sk_add", "gs_sk_await"),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_missing_sync_around_the_counter_is_one_finding(case: str, tmp_path: Path) -> None:
    old, new, words, (callee, first) = CASES[case]
    found = checked_pipeline(tmp_path, {"consumer.cu": [(old, new)]})
    assert len(found) == 1, [d.message for d in found]
    d = found[0]
    data = dict(d.data)
    assert d.code == "L-CONFORM" and data["check"] == "barrier-orders", (d.code, data, d.message)
    assert data["function"] == "gs_consumer_main"
    assert words in d.message and "no `bar.sync` on barrier `sk_sync`" in d.message, d.message
    # at the call of one callable (its own line in a note), naming the other access and its callable's line
    assert any(f"run by the callable `{callee}`" in n for n in d.notes), d.notes
    assert f"in the callable `{first}` at its line" in d.message, d.message
    assert {lab.span.file.rsplit("/", 1)[-1] for lab in d.labels} >= {"consumer.kc"}


def test_without_orders_the_missing_sync_is_not_this_check(tmp_path: Path) -> None:
    # the contract that does not state `orders sk_flags` leaves the race outside (what the campaign measured)
    edits = {
        "consumer.cu": [(STORE + SK_SYNC, STORE)],
        "consumer.kc": [("participants mma orders sk_flags", "participants mma")],
    }
    assert [d for d in checked_pipeline(tmp_path, edits) if dict(d.data)["check"] == "barrier-orders"] == []


# ----------------------------------------------------------------- the rule, as a property over one role's facts

STAGE = """stage "s" version "1.0.0" {
    target sm_90a
    role r entry f warps 4
    claim counter c slots 1 scope gpu
    claim barrier b participants r orders c
}
"""


def _orders_findings(tokens: list[str]) -> list[Finding]:
    """The `barrier-orders` findings for a role whose code runs ``tokens`` in that order, in one pass: ``w`` a global
    write, ``r`` a global read, ``b`` a `bar.sync` on `b`, ``R`` the counter's release, ``A`` its acquire."""
    stage = parse_text(STAGE, "s.kc").stages[0]
    handles = {spec.kind: sym for sym, spec in expected_handles(stage).items()}
    counter = Operand("handle", handles=(handles["counter_ptr"],))
    made = {
        "w": ("gmem-access", "st.global.u32", (("addr", Operand("arith")),), "write"),
        "r": ("gmem-access", "ld.global.u32", (("addr", Operand("arith")),), "read"),
        "b": ("barrier", "bar.sync", (("id", Operand("handle", handles=(handles["bar_id"],))),), "sync"),
        "R": ("gmem-access", "st.release.gpu.global.u32", (("addr", counter),), "write"),
        "A": ("gmem-access", "ld.acquire.gpu.global.u32", (("addr", counter),), "read"),
    }
    facts = [
        Fact(kind, "f", i + 1, op, operands, None, detail, EVERY_THREAD, (), i + 1)
        for i, (kind, op, operands, detail) in enumerate(made[t] for t in tokens)
    ]
    ctx = Ctx(stage, {"f": stage.roles[0]}, {})
    return [f for f in orders(ctx, CodeFacts(tuple(facts), len(facts))) if f.check == "barrier-orders"]


def _unordered(tokens: list[str], step: str, access: str) -> int:
    """How many ``step``s (``R``: with a write before it, ``A``: with a read after it) no ``b`` separates from one."""
    count = 0
    for i, t in enumerate(tokens):
        if t != step:
            continue
        span = tokens[:i] if step == "R" else tokens[i + 1 :]
        near = span[::-1] if step == "R" else span  # from the step outwards, up to the first barrier
        cut = near.index("b") if "b" in near else len(near)
        count += access in near[:cut]
    return count


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("wrbRA"), max_size=9))
def test_a_counter_step_is_reported_once_iff_no_barrier_separates_it(tokens: list[str]) -> None:
    got = _orders_findings(tokens)
    assert all(f.decided for f in got)
    assert sorted(f.problem for f in got) == sorted(
        ["counter-release"] * _unordered(tokens, "R", "w") + ["counter-acquire"] * _unordered(tokens, "A", "r")
    )


def test_an_unbound_release_is_undecided_never_a_pass() -> None:
    stage = parse_text(STAGE, "s.kc").stages[0]
    release = Fact(
        "gmem-access", "f", 1, "st.release.gpu.global.u32", (("addr", Operand("unknown")),), None, "write", order=1
    )
    got = list(orders(Ctx(stage, {"f": stage.roles[0]}, {}), CodeFacts((release,), 1)))
    assert [(f.check, f.decided, f.value("what")) for f in got] == [("barrier-orders", False, "counter-step")]
