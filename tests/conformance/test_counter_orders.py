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


def _orders_findings(tokens: list[str], loops: tuple[int, ...] = ()) -> list[Finding]:
    """The `barrier-orders` findings for a role whose code runs ``tokens`` in that order, in one pass (in the loops
    ``loops`` around all of them): ``w`` a global
    write, ``r`` a global read, ``b`` a `bar.sync` on `b`, ``R`` the counter's release, ``A`` its acquire, ``X`` an
    `atom.acq_rel` of it (both), ``F`` a `fence.acq_rel.gpu`, ``S`` a relaxed store of it, ``L`` a relaxed load."""
    stage = parse_text(STAGE, "s.kc").stages[0]
    handles = {spec.kind: sym for sym, spec in expected_handles(stage).items()}
    counter = Operand("handle", handles=(handles["counter_ptr"],))
    made = {
        "w": ("gmem-access", "st.global.u32", (("addr", Operand("arith")),), "write"),
        "r": ("gmem-access", "ld.global.u32", (("addr", Operand("arith")),), "read"),
        "b": ("barrier", "bar.sync", (("id", Operand("handle", handles=(handles["bar_id"],))),), "sync"),
        "R": ("gmem-access", "st.release.gpu.global.u32", (("addr", counter),), "write"),
        "A": ("gmem-access", "ld.acquire.gpu.global.u32", (("addr", counter),), "read"),
        "X": ("gmem-access", "atom.acq_rel.gpu.global.add.u32", (("addr", counter),), "write"),
        "F": ("fence", "fence.acq_rel.gpu", (), "gpu"),
        "S": ("gmem-access", "st.relaxed.gpu.global.u32", (("addr", counter),), "write"),
        "L": ("gmem-access", "ld.relaxed.gpu.global.u32", (("addr", counter),), "read"),
    }
    facts = [
        Fact(kind, "f", i + 1, op, operands, None, detail, EVERY_THREAD, loops, i + 1)
        for i, (kind, op, operands, detail) in enumerate(made[t] for t in tokens)
    ]
    ctx = Ctx(stage, {"f": stage.roles[0]}, {})
    return [f for f in orders(ctx, CodeFacts(tuple(facts), len(facts))) if f.check == "barrier-orders"]


_ACCESSES = "wrRAXSL"  # what may not lie between a fence and the relaxed access it pairs with


def _steps(tokens: list[str]) -> tuple[list[int], list[int], int]:
    """The model: where the releases and the acquires are checked (a fence and a relaxed store after it with no
    access between: a release at the fence; a relaxed load and a fence after it: an acquire at the fence), and how
    many relaxed stores are neither a release nor a reset (after an acquire): undecided."""
    releases = [i for i, t in enumerate(tokens) if t in "RX"]
    acquires = [i for i, t in enumerate(tokens) if t in "AX"]
    undecided = 0
    for i, t in enumerate(tokens):
        if t == "S":
            fence = next((j for j in range(i - 1, -1, -1) if tokens[j] in "F" + _ACCESSES), None)
            if fence is not None and tokens[fence] == "F":
                releases.append(fence)
            elif not any(u in "AX" for u in tokens[:i]):
                undecided += 1
        if t == "L":
            fence = next((j for j in range(i + 1, len(tokens)) if tokens[j] in "F" + _ACCESSES), None)
            if fence is not None and tokens[fence] == "F":
                acquires.append(fence)
    return releases, acquires, undecided


def _unordered(tokens: list[str], at: list[int], before: bool, access: str) -> int:
    """How many steps (at these positions; ``before``: a release, with a write before it, else an acquire with a read
    after it) no ``b`` separates from such an access."""
    count = 0
    for i in at:
        span = tokens[:i] if before else tokens[i + 1 :]
        near = span[::-1] if before else span  # from the step outwards, up to the first barrier
        cut = near.index("b") if "b" in near else len(near)
        count += access in near[:cut]
    return count


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("wrbRAXFSL"), max_size=9))
def test_a_counter_step_is_reported_once_iff_no_barrier_separates_it(tokens: list[str]) -> None:
    got = _orders_findings(tokens)
    releases, acquires, undecided = _steps(tokens)
    assert sum(not f.decided for f in got) == undecided, [(f.problem, f.decided) for f in got]
    assert sorted(f.problem for f in got if f.decided) == sorted(
        ["counter-release"] * _unordered(tokens, releases, True, "w")
        + ["counter-acquire"] * _unordered(tokens, acquires, False, "r")
    )


def test_an_unbound_release_is_undecided_never_a_pass() -> None:
    stage = parse_text(STAGE, "s.kc").stages[0]
    release = Fact(
        "gmem-access", "f", 1, "st.release.gpu.global.u32", (("addr", Operand("unknown")),), None, "write", order=1
    )
    got = list(orders(Ctx(stage, {"f": stage.roles[0]}, {}), CodeFacts((release,), 1)))
    assert [(f.check, f.decided, f.value("what")) for f in got] == [("barrier-orders", False, "counter-step")]


# ------------------------------------------- a read through a pointer the frame keeps (no false rejection, item 1)

HELPER_AT = 'extern "C" __device__ void gs_consumer_main('
LIVE_DECL = "    gs::Work u;\n"
LIVE_USE = "    gs_consumer_swiglu_drain();\n}"


def _table_helper(second: str) -> dict[str, list[tuple[str, str]]]:
    """The consumer with a function of its own module, called by the FINISH unit between its acquire (the await) and
    the `sk_sync` barrier, that reads a site through a pointer it loads from a table in its own frame (nvcc keeps the
    table there: an empty `asm` takes its address). ``second`` is the table's second entry, the one it reads."""
    helper = (
        "__device__ __noinline__ unsigned gs_site_live(unsigned tile, unsigned t, unsigned live, const void* ws) {\n"
        "    gs::FixupSite site{nullptr, tile, t, live};\n"
        f"    const gs::FixupSite* views[2] = {{&site, {second}}};\n"
        '    asm volatile("" : : "l"(views) : "memory");\n'
        "    const gs::FixupSite* v = views[1];\n"
        "    return v->warp_live + v->sk_tile;\n"
        "}\n\n"
    )
    return {
        "consumer.cu": [
            (HELPER_AT, helper + HELPER_AT),
            (AWAIT, AWAIT + "            live += gs_site_live(u.sk_tile, t, site.warp_live, p->workspace);\n"),
            (LIVE_DECL, LIVE_DECL + "    unsigned live = 0;\n"),
            (LIVE_USE, "    gs_consumer_swiglu_drain();\n    if (live == 12345u) {\n        __trap();\n    }\n}"),
        ]
    }


def test_a_read_of_a_local_site_through_a_pointer_the_frame_keeps_is_no_global_read(tmp_path: Path) -> None:
    # `ld.local.u64 %rd6, [%rd4+8]; ld.v2.u32 {..}, [%rd6+8]`: the pointer is the frame's own (`&site`), so the read
    # between the acquire and the barrier is of local memory: accepted (it was a false `counter-acquire`)
    assert checked_pipeline(tmp_path, _table_helper("&site")) == []


def test_the_same_read_through_a_global_pointer_is_rejected(tmp_path: Path) -> None:
    # the twin: the table's entry is the workspace (a kernel params pointer), a global read before the barrier
    found = checked_pipeline(tmp_path, _table_helper("static_cast<const gs::FixupSite*>(ws)"))
    assert len(found) == 1, [d.message for d in found]
    data = dict(found[0].data)
    assert (found[0].code, data["check"]) == ("L-CONFORM", "barrier-orders"), found[0].message
    assert "after the acquire `ld.acquire.gpu.global.u32` of counter `sk_flags`" in found[0].message


# ------------------------------------------------- an atomic with .acq_rel acquires too (item 2)

LD_ACQUIRE = 'asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");'
ATOM_ACQ_REL = 'asm volatile("atom.acq_rel.gpu.global.or.b32 %0, [%1], 0;" : "=r"(v) : "l"(p) : "memory");'


def _acq_rel_await(after: bool) -> dict[str, list[tuple[str, str]]]:
    """The await polls with `atom.acq_rel.gpu.global.or.b32` (a read-modify-write: a release and an acquire), with
    `sk_sync` before it (the release's barrier: the scheduler's writes of this pass come before it) and, ``after``,
    the one after it."""
    return {
        "common.cuh": [(LD_ACQUIRE, ATOM_ACQ_REL)],
        "consumer.cu": [(AWAIT + SK_SYNC, SK_SYNC + AWAIT + (SK_SYNC if after else ""))],
    }


def test_an_acq_rel_atomic_await_is_an_acquire(tmp_path: Path) -> None:
    # without the barrier after it, the adds read the partials unordered after the acquire; the atomic counted as a
    # release only, so nothing checked them
    found = checked_pipeline(tmp_path, _acq_rel_await(after=False))
    assert len(found) == 1, [d.message for d in found]
    assert dict(found[0].data)["check"] == "barrier-orders", found[0].message
    assert "after the acquire `atom.acq_rel.gpu.global.or.b32` of counter `sk_flags`" in found[0].message


def test_an_acq_rel_atomic_await_between_two_syncs_is_accepted(tmp_path: Path) -> None:
    # the passing twin: a barrier on each side of the atomic
    assert checked_pipeline(tmp_path, _acq_rel_await(after=True)) == []


# ------------------------------------------------- a fence, then a relaxed access: a release or an acquire (item 3)

RAISE = "            gs_consumer_fixup_raise(flags, &site);\n"
FENCED_RAISE = (
    "            if (t == 0) {\n"
    '                asm volatile("fence.acq_rel.gpu;\\n\\tst.relaxed.gpu.global.u32 [%0], %1;"'
    ' ::"l"(flags + sched.slot(sched.cluster)), "r"(1u) : "memory");\n'
    "            }\n"
)


def test_a_fence_and_a_relaxed_store_are_a_release(tmp_path: Path) -> None:
    # the consumer raises the counter itself with `fence.acq_rel.gpu; st.relaxed.gpu` (the release pattern) and the
    # barrier between the partial's store and it is gone: one `counter-release` (a relaxed store counted as no release)
    found = checked_pipeline(tmp_path, {"consumer.cu": [(STORE + SK_SYNC + RAISE, STORE + FENCED_RAISE)]})
    assert len(found) == 1, [d.message for d in found]
    assert dict(found[0].data)["check"] == "barrier-orders", found[0].message
    assert "releases counter `sk_flags`" in found[0].message, found[0].message


def test_a_fence_and_a_relaxed_store_after_the_sync_are_accepted(tmp_path: Path) -> None:
    # the passing twin: store, `sk_sync`, fence, relaxed store
    assert checked_pipeline(tmp_path, {"consumer.cu": [(RAISE, FENCED_RAISE)]}) == []


def test_a_fence_before_the_sync_is_no_release_of_the_other_threads_writes(tmp_path: Path) -> None:
    # every thread fences, then `sk_sync`, then thread 0's relaxed store: the fence that pairs with the store (the one
    # thread 0 runs) precedes the barrier, so the other threads' partials are not released: one `counter-release`
    fenced_first = FENCED_RAISE.replace("fence.acq_rel.gpu;\\n\\t", "")
    edits = {
        "consumer.cu": [
            (
                STORE + SK_SYNC + RAISE,
                STORE + '            asm volatile("fence.acq_rel.gpu;" ::: "memory");\n' + SK_SYNC + fenced_first,
            )
        ]
    }
    found = checked_pipeline(tmp_path, edits)
    assert [dict(d.data)["check"] for d in found] == ["barrier-orders"], [d.message for d in found]


# ------------------------------------------------------------- across the passes of a loop around both (item 4)


def _looped(tokens: str) -> list[Finding]:
    """``tokens`` (as :func:`_orders_findings`) as the body of one loop (header at position 0)."""
    return _orders_findings(list(tokens), loops=(0,))


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("Rw", "counter-release"),  # the pass's write comes before the next pass's release, no barrier between
        ("rA", "counter-acquire"),  # the next pass's read comes after this pass's acquire
        ("bRw", None),  # the barrier before the release orders the previous pass's write too
        ("Rwb", None),  # ... as does one after the write
        ("rAb", None),
        ("brA", None),
        ("wbRw", None),  # the trailing write: the next pass's barrier before its release orders it
        ("Rbw", "counter-release"),  # a barrier between the release and the write orders neither pass's pair
        ("rbA", "counter-acquire"),  # a barrier between the read and the acquire: the next pass's read is after
    ],
)
def test_a_loop_carried_pair_is_reported_unless_a_barrier_of_the_loop_orders_it(body: str, problem: str | None) -> None:
    got = _looped(body)
    assert all(f.decided for f in got)
    assert [(f.problem, f.value("across")) for f in got] == ([] if problem is None else [(problem, "True")])


# ------------------------------------------------- what the facts cannot show is undecided, never a pass (items 3, 4)


def test_a_relaxed_raise_without_a_fence_is_undecided(tmp_path: Path) -> None:
    # thread 0 raises with a bare `st.relaxed.gpu` after `sk_sync`: no release pattern, no reset after an acquire
    raise_ = FENCED_RAISE.replace("fence.acq_rel.gpu;\\n\\t", "")
    found = checked_pipeline(tmp_path, {"consumer.cu": [(RAISE, raise_)]})
    assert len(found) == 1, [d.message for d in found]
    assert dict(found[0].data)["check"] == "barrier-orders", found[0].message
    assert "cannot decide whether this relaxed access of the counter releases" in found[0].message


def test_a_relaxed_poll_in_a_callable_is_undecided(tmp_path: Path) -> None:
    # the await polls with `ld.relaxed.gpu` and then fences (an acquire pattern), inside the fix-up callable: its
    # summary holds no fences, so the composition cannot tell the pattern from a bare poll
    poll = 'asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\\n\\tfence.acq_rel.gpu;" : "=r"(v) : "l"(p) : "memory");'
    found = checked_pipeline(tmp_path, {"common.cuh": [(LD_ACQUIRE, poll)]})
    assert found, "a relaxed poll in a callable was taken as ordered"
    assert all(
        dict(d.data)["check"] == "barrier-orders" and "relaxed access of the counter" in d.message for d in found
    ), [d.message for d in found]
