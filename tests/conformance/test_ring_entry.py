"""Where a ring side's loop starts: the ring position carried from the loop around it, or reset.

A wait in a loop nested in another (a persistent kernel's k-loop inside its loop over units of
work) records how its slot and parity enter the inner loop (``Fact.entry``, ``codefacts/carry.py``):
``carried`` (the position the previous pass left), ``reset`` (the same on every pass: a cursor
reset per unit of work, before the k-loop or after it) or ``unknown`` (reset on some paths only,
or read from memory). ``wait-parity`` reports a reset for a side without ``restart`` and leaves an
unknown undecided, never a pass.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from package.codefacts import derive
from package.codefacts.facts import Fact, Operand
from packing.pack import Built, build, conformance_findings

HEAD = """
.extern .func  (.param .b32 func_retval0) kl_fx_ring_full_bar
()
;
.visible .func fx_main(
\t.param .b64 fx_main_param_0,
\t.param .b64 fx_main_param_1
)
{
\t.reg .pred \t%p<8>;
\t.reg .b32 \t%r<40>;
\t.reg .b64 \t%rd<8>;
\tld.param.u64 \t%rd1, [fx_main_param_0];
\t{
\t.param .b32 retval0;
\tcall.uni (retval0),
\tkl_fx_ring_full_bar,
\t(
\t);
\tld.param.b32 \t%r3, [retval0+0];
\t}
\tmov.u32 \t%r14, 4;
\tmov.u32 \t%r10, 0;
\tmov.u32 \t%r11, 0;
$L_unit:
\tld.global.u32 \t%r13, [%rd1];
"""
K_LOOP = """\tmov.u32 \t%r12, 0;
$L_k:
\tshl.b32 \t%r20, %r10, 3;
\tadd.s32 \t%r21, %r3, %r20;
\t{
\t.reg .pred p;
WAIT_0:
\tmbarrier.try_wait.parity.shared::cta.b64 p, [%r21], %r11;
\t@!p bra WAIT_0;
\t}
\tst.global.u32 \t[%rd1+24], %r12;
\tadd.s32 \t%r22, %r10, 1;
\tsetp.eq.s32 \t%p1, %r22, %r14;
\tselp.u32 \t%r23, 1, 0, %p1;
\txor.b32 \t%r11, %r11, %r23;
\tselp.b32 \t%r10, 0, %r22, %p1;
\tadd.s32 \t%r12, %r12, 1;
\tsetp.lt.u32 \t%p2, %r12, %r13;
\t@%p2 bra \t$L_k;
"""
TAIL = """\tld.global.u32 \t%r15, [%rd1+4];
\tsetp.ne.s32 \t%p3, %r15, 0;
\t@%p3 bra \t$L_unit;
\tret;
}
"""
RESET = "\tmov.u32 \t%r10, 0;\n\tmov.u32 \t%r11, 0;\n"
NOTHING = ""


def _wait(before: str, after: str = "") -> Fact:
    (wait,) = [f for f in derive(HEAD + before + K_LOOP + after + TAIL).facts if f.kind == "wait"]
    assert len(wait.loops) == 2
    return wait


def test_a_cursor_kept_across_units_is_carried() -> None:
    assert _wait(NOTHING).entry == (("slot", "carried"), ("parity", "carried"))


def test_a_cursor_reset_before_the_k_loop_is_reset() -> None:
    assert _wait(RESET).entry == (("slot", "reset"), ("parity", "reset"))


def test_a_cursor_reset_after_the_k_loop_is_reset_too() -> None:
    # the previous unit's loop leaves a position, and the code throws it away before the next unit
    assert _wait(NOTHING, RESET).entry == (("slot", "reset"), ("parity", "reset"))


def test_only_the_phase_reset_is_found_alone() -> None:
    assert _wait("\tmov.u32 \t%r11, 0;\n").entry == (("slot", "carried"), ("parity", "reset"))


def test_a_cursor_moved_on_by_a_skip_is_carried() -> None:
    # a unit another warpgroup consumes: `cur.skip(n, depth)` moves the carried position by a loaded count
    skip = (
        "\tld.global.u32 \t%r30, [%rd1+8];\n\tadd.s32 \t%r31, %r10, %r30;\n\tdiv.u32 \t%r32, %r31, %r14;\n"
        "\tand.b32 \t%r33, %r32, 1;\n\txor.b32 \t%r11, %r11, %r33;\n\trem.u32 \t%r10, %r31, %r14;\n"
    )
    assert _wait(skip).entry == (("slot", "carried"), ("parity", "carried"))


def test_a_reset_on_some_units_only_is_unknown() -> None:
    some = "\tsetp.eq.s32 \t%p4, %r13, 7;\n\t@%p4 mov.u32 \t%r10, 0;\n\t@%p4 mov.u32 \t%r11, 0;\n"
    assert _wait(some).entry == (("slot", "unknown"), ("parity", "unknown"))


def test_a_position_read_from_memory_is_unknown() -> None:
    loaded = "\tld.global.u32 \t%r10, [%rd1+12];\n\tld.global.u32 \t%r11, [%rd1+16];\n"
    assert _wait(loaded).entry == (("slot", "unknown"), ("parity", "unknown"))


def test_a_wait_in_one_loop_records_no_entry() -> None:
    ptx = HEAD.replace("$L_unit:\n", "") + K_LOOP + "\tret;\n}\n"
    (wait,) = [f for f in derive(ptx).facts if f.kind == "wait"]
    assert len(wait.loops) == 1 and wait.entry == ()


def test_the_entry_round_trips_through_json() -> None:
    facts = derive(HEAD + RESET + K_LOOP + TAIL)
    assert type(facts).from_json(facts.as_json()).facts == facts.facts


# Code that runs between units and never touches the cursor: a tile counter, a load, a select on it.
_NEUTRAL = [
    "\tadd.s32 \t%r35, %r35, 1;\n",
    "\tld.global.u32 \t%r36, [%rd1+20];\n",
    "\tsetp.gt.u32 \t%p5, %r36, 3;\n\tselp.u32 \t%r37, %r36, %r35, %p5;\n",
    "\tmov.u32 \t%r38, %tid.x;\n",
]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(_NEUTRAL), max_size=4),
    st.lists(st.sampled_from(_NEUTRAL), max_size=4),
    st.sampled_from(["none", "before", "after"]),
)
def test_code_that_leaves_the_cursor_alone_does_not_change_the_verdict(
    before: list[str], after: list[str], reset: str
) -> None:
    pre = "".join(before) + (RESET if reset == "before" else "")
    post = "".join(after) + (RESET if reset == "after" else "")
    how = "carried" if reset == "none" else "reset"
    assert _wait(pre, post).entry == (("slot", how), ("parity", how))


# The persistent swap-AB pipeline (specs/examples/gemm_swiglu/persistent): each side's cursor, edited.
PERSISTENT = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu" / "persistent"
MAINLOOP = "        mainloop<kN, 1, 2, 1, 1>(acc, ring, cur, u.k_end - u.k_begin, 0u, t == 0, 0u);\n"
PRODUCER_CURSOR = "    unsigned slot = 0, phase = 0;\n"
PRODUCER_UNIT = "        const int m0 = static_cast<int>(w.tile_m * kBM);\n"


def _built(tmp_path: Path, component: str, edits: dict[str, list[tuple[str, str]]]) -> Built:
    folder = tmp_path / "persistent"
    shutil.copytree(PERSISTENT, folder, ignore=shutil.ignore_patterns("build"))
    for name, pairs in edits.items():
        text = (folder / name).read_text()
        for old, new in pairs:
            assert text.count(old) == 1, old
            text = text.replace(old, new)
        (folder / name).write_text(text)
    return build(folder / f"{component}.cu", folder / f"{component}.kc")


def _pack(tmp_path: Path, component: str, edits: dict[str, list[tuple[str, str]]], strict: bool = False) -> list[Any]:
    return conformance_findings(_built(tmp_path, component, edits), tmp_path / "x.kpkg", strict=strict)


def test_a_cursor_reset_after_each_unit_is_rejected(tmp_path: Path) -> None:
    after = {"consumer_swapab.cuh": [(MAINLOOP, MAINLOOP + "        cur = gs::RingCursor{};\n")]}
    (diag,) = _pack(tmp_path, "consumer_swapab", after)
    assert diag.code == "L-CONFORM" and dict(diag.data)["check"] == "wait-parity"
    assert "from the same slot and parity on every pass" in diag.message


def test_a_phase_reset_alone_is_named_alone(tmp_path: Path) -> None:
    (diag,) = _pack(
        tmp_path, "consumer_swapab", {"consumer_swapab.cuh": [(MAINLOOP, "        cur.phase = 0;\n" + MAINLOOP)]}
    )
    assert diag.code == "L-CONFORM" and "from the same parity on every pass" in diag.message


def test_a_producer_that_restarts_its_cursor_per_tile_is_rejected(tmp_path: Path) -> None:
    moved = {"producer_swapab.cuh": [(PRODUCER_CURSOR, ""), (PRODUCER_UNIT, PRODUCER_CURSOR + "    " + PRODUCER_UNIT)]}
    (diag,) = _pack(tmp_path, "producer_swapab", moved)
    assert diag.code == "L-CONFORM" and "`empty wait` on ring `kv`" in diag.message
    assert any(lab.span.file.endswith("producer_swapab.kc") for lab in diag.labels)
    assert any(lab.span.file.endswith("!code.ptx") for lab in diag.labels)


def test_a_cursor_reset_on_some_units_only_is_undecided_never_a_pass(tmp_path: Path) -> None:
    some = {"consumer_swapab.cuh": [(MAINLOOP, "        if (u.tile_n == 0) cur = gs::RingCursor{};\n" + MAINLOOP)]}
    (note,) = _pack(tmp_path, "consumer_swapab", some)
    assert note.code == "I-CONFORM" and "cannot decide the ring position" in note.message
    (error,) = _pack(tmp_path / "strict", "consumer_swapab", some, strict=True)
    assert error.code == "L-CONFORM"


def test_a_side_that_states_restart_may_reset_its_cursor(tmp_path: Path) -> None:
    reset = {
        "consumer_swapab.cuh": [(MAINLOOP, "        cur = gs::RingCursor{};\n" + MAINLOOP)],
        "consumer_swapab.kc": [("        full wait\n", "        restart 4\n        full wait\n")],
    }
    assert _pack(tmp_path, "consumer_swapab", reset) == []


def test_a_cursor_that_skips_the_units_another_role_takes_is_accepted(tmp_path: Path) -> None:
    # the ping-pong consumer's `cur.skip(n_k, depth)` (consumer.cuh): the position moves on, never resets
    skip = "        if ((u.tile_n & 1u) != 0u) { cur.skip(u.k_end - u.k_begin, ring.depth); continue; }\n"
    built = _built(tmp_path, "consumer_swapab", {"consumer_swapab.cuh": [(MAINLOOP, skip + MAINLOOP)]})
    assert built.code is not None
    (wait,) = [f for f in built.code.facts if f.kind == "wait"]
    assert wait.entry == (("slot", "carried"), ("parity", "carried"))
    assert conformance_findings(built, tmp_path / "x.kpkg", strict=True) == []


# The lagged release after the k-loop (`empty arrive … lag 1`): the unit's peeled phase, once per unit of work.
FLUSH = "        if (leader && n_k > 0) {\n            release_slot<C>(ring, prev);\n"


def test_a_consumer_that_flushes_its_lagged_release_each_unit_packs(tmp_path: Path) -> None:
    assert _pack(tmp_path, "consumer_swapab", {}, strict=True) == []


def test_a_missing_release_after_the_k_loop_is_rejected(tmp_path: Path) -> None:
    # each unit's last slot stays held: the producer stalls once it wraps round to it
    dropped = {"consumer.cuh": [(FLUSH, "        if (leader && n_k > 0) {\n")]}
    (diag,) = _pack(tmp_path, "consumer_swapab", dropped)
    assert diag.code == "L-CONFORM" and dict(diag.data)["check"] == "ring-step"
    assert "never runs `empty arrive` of ring `kv` after its loop on each pass of the loop around it" in diag.message
    assert any(lab.span.file.endswith("consumer_swapab.kc") for lab in diag.labels)


def test_a_doubled_release_after_the_k_loop_is_rejected(tmp_path: Path) -> None:
    # a second arrive completes the slot's empty phase before the consumer read the next fill from it
    doubled = {"consumer.cuh": [(FLUSH, FLUSH + "            release_slot<C>(ring, prev);\n")]}
    (diag,) = _pack(tmp_path, "consumer_swapab", doubled)
    assert diag.code == "L-CONFORM" and dict(diag.data)["check"] == "ring-step"
    assert "runs `empty arrive` of ring `kv` twice after its loop on a pass of the loop around it" in diag.message
    assert "where its lag calls for it once per pass" in diag.message
    assert any(lab.span.file.endswith("!code.ptx") for lab in diag.labels)


def test_the_cooperative_consumer_misses_its_release_alone(tmp_path: Path) -> None:
    # two cluster arrives per release (`multicast`, cluster 2x1x1): deleting both is one finding
    dropped = {"consumer.cuh": [(FLUSH, "        if (leader && n_k > 0) {\n")]}
    (diag,) = _pack(tmp_path, "consumer", dropped)
    assert diag.code == "L-CONFORM" and "after its loop on each pass" in diag.message


RINGFED_FLUSH = "        if (k_tiles > 0 && leader) {\n            mbarrier_arrive(empty + kBarrierBytes * previous);\n"


def _ringfed(tmp_path: Path, new: str) -> list[Any]:
    folder = tmp_path / "ringfed"
    shutil.copytree(PERSISTENT / "ringfed", folder, ignore=shutil.ignore_patterns("build"))
    text = (folder / "mainloop.cu").read_text()
    assert text.count(RINGFED_FLUSH) == 1
    (folder / "mainloop.cu").write_text(text.replace(RINGFED_FLUSH, new))
    built = build(folder / "mainloop.cu", folder / "mainloop.kc")
    return conformance_findings(built, tmp_path / "x.kpkg", strict=True)


def test_the_ring_fed_mainloop_flushes_its_lagged_release_once_per_tile(tmp_path: Path) -> None:
    assert _ringfed(tmp_path, RINGFED_FLUSH) == []
    (missing,) = _ringfed(tmp_path / "a", "        if (k_tiles > 0 && leader) {\n")
    assert "never runs `empty arrive` of ring `kv` after its loop on each pass" in missing.message
    twice = RINGFED_FLUSH + "            mbarrier_arrive(empty + kBarrierBytes * previous);\n"
    (doubled,) = _ringfed(tmp_path / "b", twice)
    assert "runs `empty arrive` of ring `kv` twice after its loop on a pass" in doubled.message


# The release of a slot wgmma read (`reads async`): after a `wgmma.wait_group N` that retired the slot's group.
IN_LOOP_WAIT = "            if (i > 0) {\n                wgmma_wait<1>();\n"
FLUSH_WAIT = "    if constexpr (KEEP != 0) {\n        wgmma_wait<0>();\n"
UNRETIRED = "before a `wgmma.wait_group` retired the wgmma group that read it"


def test_a_release_after_a_wait_that_leaves_its_group_pending_is_unretired(tmp_path: Path) -> None:
    # `wgmma.wait_group 2` after this k-step's commit: the previous k-step's group may still read its slot
    two = {"consumer.cuh": [(IN_LOOP_WAIT, "            if (i > 0) {\n                wgmma_wait<2>();\n")]}
    (diag,) = _pack(tmp_path, "consumer_swapab", two, strict=True)
    assert diag.code == "L-CONFORM" and dict(diag.data)["check"] == "ring-step"
    assert UNRETIRED in diag.message and "lag 1" in diag.message


def test_a_release_after_the_k_loop_needs_every_group_retired(tmp_path: Path) -> None:
    # the unit's last slot released after `wgmma.wait_group 1`: its own group is the one left pending
    one = {"consumer.cuh": [(FLUSH_WAIT, "    if constexpr (KEEP != 0) {\n        wgmma_wait<1>();\n")]}
    (diag,) = _pack(tmp_path, "consumer_swapab", one, strict=True)
    assert diag.code == "L-CONFORM" and UNRETIRED in diag.message
    assert any(lab.span.file.endswith("!code.ptx") for lab in diag.labels)


def test_a_side_that_states_no_lag_releases_after_every_group_retired(tmp_path: Path) -> None:
    """gemm_swiglu's mainloop releases the previous k-step's slot after `wgmma.wait_group 1`: its contract states
    `lag 1`. Stated without the lag, the same release could be of the current slot, whose group is still pending."""
    folder = tmp_path / "gemm_swiglu"
    shutil.copytree(PERSISTENT.parent, folder, ignore=shutil.ignore_patterns("build", "persistent"))
    contract = folder / "mainloop.kc"
    text = contract.read_text()
    assert text.count("empty arrive per_warpgroup(mma) lag 1\n") == 1
    contract.write_text(text.replace("empty arrive per_warpgroup(mma) lag 1\n", "empty arrive per_warpgroup(mma)\n"))
    (diag,) = conformance_findings(build(folder / "mainloop.cu", contract), tmp_path / "x.kpkg", strict=True)
    assert diag.code == "L-CONFORM" and dict(diag.data)["check"] == "ring-step" and UNRETIRED in diag.message
    contract.write_text(text)  # the twin: the contract as the example states it
    assert conformance_findings(build(folder / "mainloop.cu", contract), tmp_path / "y.kpkg", strict=True) == []


def test_the_cooperative_consumer_releases_each_multicast_slot_after_its_group_retired(tmp_path: Path) -> None:
    # two cluster arrives per release (`multicast`, cluster 2x1x1) after `wgmma.wait_group 0`: one release
    assert _pack(tmp_path, "consumer", {}, strict=True) == []


SWAPAB_END = "        H::swiglu(acc, p->out, p->n / 2u, p->m, u.tile_n * (kBN / 2u));\n    }\n"


def test_a_per_unit_release_drained_once_after_the_loop_over_units_is_missing(tmp_path: Path) -> None:
    # consumer.cuh's k-loop releases from each unit's second k-step on (`prev` starts at 0 every unit): without
    # the release after the k-loop every unit but the last leaves a slot held, whatever a drain after the units does
    drained = SWAPAB_END + "    if (t == 0) {\n        gs::release_slot<1>(ring, cur.slot);\n    }\n"
    edits = {
        "consumer.cuh": [(FLUSH, "        if (leader && n_k > 0) {\n")],
        "consumer_swapab.cuh": [(SWAPAB_END, drained)],
    }
    built = _built(tmp_path, "consumer_swapab", edits)
    assert built.code is not None
    (release,) = [f for f in built.code.facts if f.kind == "arrive" and len(f.loops) == 2]
    assert release.entry == (("slot", "reset"),)  # the unit's first release addresses a slot reset per unit
    (diag,) = conformance_findings(built, tmp_path / "x.kpkg", strict=True)
    assert "never runs `empty arrive` of ring `kv` after its loop on each pass of the loop around it" in diag.message


# The retire bound as a property: an iteration of `p` wgmma groups, the wait after `c` of them, a release lagged `L`.
RETIRE_STAGE = """stage "r" version "1.0.0" {{
    target sm_90a
    role mma entry f warps 4 warpgroup
    ring kv consume by mma {{
        full wait
        reads async
        empty arrive per_warpgroup(mma){lag}
    }}
}}
"""


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 6))
def test_a_release_is_unretired_exactly_when_its_wait_leaves_the_slots_group_pending(
    lag: int, groups: int, before: int, pending: int
) -> None:
    from checker.conformance.steps import Site, _retired, _steps
    from contract_lang.parser import parse_text

    before = min(before, groups)
    stage = parse_text(RETIRE_STAGE.format(lag=f" lag {lag}" if lag else ""), "r.kc").stages[0]
    (side,) = stage.rings
    kinds = ["mma", *(["commit"] * before), "wait", *(["commit"] * (groups - before)), "release"]
    n = len(kinds)

    def fact(kind: str, i: int) -> Fact:
        fk = {"mma": "feature", "commit": "mma-commit", "wait": "mma-wait", "release": "arrive"}[kind]
        op = {"mma": "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "wait": "wgmma.wait_group"}.get(kind, fk)
        operands = (("groups", Operand("constant", pending)),) if kind == "wait" else ()
        return Fact(fk, "f", i, op, operands, loops=(100,), order=i, reaches=tuple(range(i + 1, n + 1)))

    facts = [fact(k, i + 1) for i, k in enumerate(kinds)]
    release = Site(facts[-1], "kv", "empty", "arrive")
    found = list(_retired(stage.roles[0], side, _steps(side), [release], 100, facts, None))
    retires = pending <= max(0, lag * max(groups, 1) - 1 + before)
    assert [f.problem for f in found] == ([] if retires else ["unretired"])
