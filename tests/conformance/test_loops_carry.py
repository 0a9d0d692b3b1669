"""The ring position across alternative k-loops (``Fact.across``, ``codefacts/carry.py``; specs/language.md §8.8).

A loop over units of work that runs one of two k-loops per unit, chosen by a loaded value: each wait
records, for the other loop, how its slot and parity enter its own loop after a pass that ran the
other one: ``carried`` (from the position the other loop moved), ``reset`` or ``unknown``.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from package.codefacts import derive
from package.codefacts.facts import Fact
from tests.conformance.test_ring_entry import _NEUTRAL, HEAD, K_LOOP, RESET, TAIL

SMALL_LOOP = K_LOOP.replace("$L_k", "$L_k2").replace("WAIT_0", "WAIT_1")
CHOOSE = "\tsetp.lt.u32 \t%p6, %r13, 16;\n\t@%p6 bra \t$L_small;\n"
JOIN = "\tbra.uni \t$L_join;\n$L_small:\n"
OWN = {"%r10": "%r24", "%r11": "%r25"}  # a second cursor, set once before the loop over units


def _waits(big: str = "", small: str = "", after_small: str = "", own: bool = False) -> tuple[Fact, Fact]:
    loop = SMALL_LOOP
    head = HEAD
    if own:
        for a, b in OWN.items():
            loop = loop.replace(a, b)
        head = head.replace("$L_unit:\n", "\tmov.u32 \t%r24, 0;\n\tmov.u32 \t%r25, 0;\n$L_unit:\n")
    ptx = head + CHOOSE + big + K_LOOP + JOIN + small + loop + after_small + "$L_join:\n" + TAIL
    waits = [f for f in derive(ptx).facts if f.kind == "wait"]
    assert len(waits) == 2 and all(len(w.loops) == 2 for w in waits)
    first, second = sorted(waits, key=lambda w: w.order)
    assert first.loops[0] == second.loops[0] and first.loops[1] != second.loops[1]
    return first, second


def _after(wait: Fact) -> tuple[str, ...]:
    return tuple(how for _, _, how in wait.across)


def test_one_cursor_moved_by_either_loop_is_carried_across() -> None:
    big, small = _waits()
    for wait, other in ((big, small), (small, big)):
        assert wait.entry == (("slot", "carried"), ("parity", "carried"))
        assert wait.across == ((other.loops[1], "slot", "carried"), (other.loops[1], "parity", "carried"))


def test_a_reset_before_one_loop_is_that_loops_reset() -> None:
    big, small = _waits(small=RESET)
    assert small.entry == (("slot", "reset"), ("parity", "reset"))
    assert _after(small) == ("reset", "reset") and _after(big) == ("reset", "reset")


def test_a_reset_after_one_loop_resets_the_others_entry_after_it() -> None:
    big, small = _waits(after_small=RESET)
    assert _after(big) == ("reset", "reset")
    assert small.entry != (("slot", "carried"), ("parity", "carried"))  # reset after its own loop: never carried


def test_a_cursor_of_its_own_is_unknown_across_never_carried() -> None:
    big, small = _waits(own=True)
    assert small.entry == (("slot", "carried"), ("parity", "carried"))  # alone it carries its own on
    assert _after(small) == ("unknown", "unknown") and _after(big) == ("unknown", "unknown")


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.sampled_from(_NEUTRAL), max_size=3),
    st.lists(st.sampled_from(_NEUTRAL), max_size=3),
    st.sampled_from(["none", "small", "after"]),
)
def test_code_that_leaves_the_cursor_alone_does_not_change_the_across_verdict(
    big: list[str], small: list[str], reset: str
) -> None:
    got = _waits(
        "".join(big),
        "".join(small) + (RESET if reset == "small" else ""),
        RESET if reset == "after" else "",
    )
    want = _waits(small=RESET if reset == "small" else "", after_small=RESET if reset == "after" else "")
    assert [(w.entry, _after(w)) for w in got] == [(w.entry, _after(w)) for w in want]
