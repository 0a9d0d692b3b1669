"""Where an instruction sits: the threads that run it, the loops around it, its first-iteration values.

The conformance facts carry, for every synchronisation instruction, the guard it runs under
(read from the branches its block is control dependent on), the loops around it (a loop
that only polls an mbarrier is part of the wait, not a loop of the role), its order, the
synchronisation instructions a path reaches after it, and the parity a wait uses first.
"""

from __future__ import annotations

from package.codefacts import derive
from package.codefacts.facts import Fact
from package.codefacts.ptx import parse
from package.codefacts.values import written

HEAD = """
.extern .func  (.param .b32 func_retval0) kl_fx_work_warp0
()
;
.extern .func  (.param .b32 func_retval0) kl_fx_ring_empty_bar
()
;
.visible .func fx_main(
\t.param .b64 fx_main_param_0,
\t.param .b64 fx_main_param_1
)
{
\t.reg .pred \t%p<8>;
\t.reg .b32 \t%r<40>;
\tmov.u32 \t%r1, %tid.x;
\t{
\t.param .b32 retval0;
\tcall.uni (retval0),
\tkl_fx_work_warp0,
\t(
\t);
\tld.param.b32 \t%r2, [retval0+0];
\t}
\t{
\t.param .b32 retval0;
\tcall.uni (retval0),
\tkl_fx_ring_empty_bar,
\t(
\t);
\tld.param.b32 \t%r3, [retval0+0];
\t}
"""


def _facts(body: str, kind: str = "arrive") -> list[Fact]:
    ptx = HEAD + body + "\tret;\n}\n"
    return [f for f in derive(ptx).facts if f.kind == kind]


ARRIVE = "\tmbarrier.arrive.shared::cta.b64 _, [%r3];\n"


def test_an_unguarded_arrive_runs_in_every_thread() -> None:
    (fact,) = _facts(ARRIVE)
    assert fact.guard == ((),)


def test_an_arrive_under_a_lane_test_runs_once_per_warp() -> None:
    body = "\tand.b32 \t%r4, %r1, 31;\n\tsetp.ne.s32 \t%p1, %r4, 0;\n\t@%p1 bra \t$L_skip;\n" + ARRIVE + "$L_skip:\n"
    (fact,) = _facts(body)
    assert fact.guard == ((("lane", "eq", 0),),)


def test_the_elected_thread_of_a_role_after_an_early_return() -> None:
    body = (
        "\tshr.u32 \t%r5, %r1, 5;\n\tsetp.ne.s32 \t%p1, %r5, %r2;\n\tand.b32 \t%r4, %r1, 31;\n"
        "\tsetp.ne.s32 \t%p2, %r4, 0;\n\tor.pred \t%p3, %p2, %p1;\n\t@%p3 bra \t$L_out;\n" + ARRIVE + "$L_out:\n"
    )
    (fact,) = _facts(body)
    assert fact.guard == ((("lane", "eq", 0), ("warp", "eq", 0)),)


def test_one_thread_per_warpgroup_relative_to_the_role() -> None:
    body = (
        "\tshl.b32 \t%r6, %r2, 5;\n\tsub.s32 \t%r7, %r1, %r6;\n\tand.b32 \t%r8, %r7, 127;\n"
        "\tsetp.ne.s32 \t%p1, %r8, 0;\n\t@%p1 bra \t$L_skip;\n" + ARRIVE + "$L_skip:\n"
    )
    (fact,) = _facts(body)
    assert fact.guard == ((("wgt", "eq", 0),),)


def test_a_thread_invariant_condition_selects_no_threads() -> None:
    body = "\tld.param.u64 \t%rd1, [fx_main_param_0];\n\tld.u32 \t%r9, [%rd1];\n\tsetp.eq.s32 \t%p1, %r9, 0;\n"
    body += "\t@%p1 bra \t$L_skip;\n" + ARRIVE + "$L_skip:\n"
    (fact,) = _facts(body)
    assert fact.guard == ((),)


def test_a_thread_dependent_condition_it_cannot_read_is_undecided() -> None:
    body = "\tmul.lo.s32 \t%r9, %r1, %r1;\n\tsetp.eq.s32 \t%p1, %r9, 4;\n"
    body += "\t@%p1 bra \t$L_skip;\n" + ARRIVE + "$L_skip:\n"
    (fact,) = _facts(body)
    assert fact.guard is None


WAIT_LOOP = """\tmov.u32 \t%r20, 0;
\tmov.u32 \t%r21, 0;
$L_loop:
\txor.b32 \t%r22, %r20, 1;
$L_spin:
\t{
\t.reg .pred p;
\tmbarrier.try_wait.parity.shared::cta.b64 p, [%r3], %r22;
\tselp.u32 %r23, 1, 0, p;
\t}
\tsetp.eq.s32 \t%p5, %r23, 0;
\t@%p5 bra \t$L_spin;
\tmbarrier.arrive.shared::cta.b64 _, [%r3];
\txor.b32 \t%r20, %r20, 1;
\tadd.s32 \t%r21, %r21, 1;
\tsetp.lt.u32 \t%p6, %r21, 8;
\t@%p6 bra \t$L_loop;
"""


def test_a_wait_knows_its_first_parity_and_that_it_flips() -> None:
    (wait,) = _facts(WAIT_LOOP, "wait")
    parity = wait.operand("parity")
    assert parity is not None and parity.first == 1 and parity.kind != "constant"


def test_the_polling_loop_is_part_of_the_wait_not_a_loop_of_the_role() -> None:
    (wait,) = _facts(WAIT_LOOP, "wait")
    (arrive,) = _facts(WAIT_LOOP, "arrive")
    assert len(wait.loops) == 1 and wait.loops == arrive.loops
    assert wait.order < arrive.order and arrive.order in wait.reaches
    assert wait.order not in arrive.reaches  # only through the back edge


def test_facts_round_trip_through_json() -> None:
    facts = derive(HEAD + WAIT_LOOP + "\tret;\n}\n")
    again = type(facts).from_json(facts.as_json())
    assert again.facts == facts.facts


# ---- a register read before every path defines it


def _addr_kind(body: str) -> str:
    (fact,) = _facts(body)
    addr = fact.operand("addr")
    assert addr is not None
    return addr.kind


def test_an_address_defined_after_its_use_in_a_loop_is_unknown() -> None:
    """The arrive moved above the instruction that computes its barrier: on the first pass it reads no
    value, on later passes the previous pass's, so which barrier it arrives on is not the handle's."""
    body = (
        "\tmov.u32 \t%r10, 0;\n$L_loop:\n\tmbarrier.arrive.shared::cta.b64 _, [%r11];\n"
        "\tadd.s32 \t%r11, %r3, 8;\n\tadd.s32 \t%r10, %r10, 1;\n\tsetp.lt.u32 \t%p1, %r10, 4;\n\t@%p1 bra \t$L_loop;\n"
    )
    assert _addr_kind(body) == "unknown"


def test_an_address_defined_before_its_use_in_the_same_loop_is_the_handles() -> None:
    body = (
        "\tmov.u32 \t%r10, 0;\n$L_loop:\n\tadd.s32 \t%r11, %r3, 8;\n\tmbarrier.arrive.shared::cta.b64 _, [%r11];\n"
        "\tadd.s32 \t%r10, %r10, 1;\n\tsetp.lt.u32 \t%p1, %r10, 4;\n\t@%p1 bra \t$L_loop;\n"
    )
    assert _addr_kind(body) == "handle"


def test_a_loop_carried_address_set_before_the_loop_is_the_handles() -> None:
    """The compiler's form of a value carried across passes: set before the loop, updated at its end."""
    body = (
        "\tmov.u32 \t%r10, 0;\n\tmov.u32 \t%r11, %r3;\n$L_loop:\n\tmbarrier.arrive.shared::cta.b64 _, [%r11];\n"
        "\tadd.s32 \t%r11, %r3, 8;\n\tadd.s32 \t%r10, %r10, 1;\n\tsetp.lt.u32 \t%p1, %r10, 4;\n\t@%p1 bra \t$L_loop;\n"
    )
    assert _addr_kind(body) == "handle"


def test_an_address_set_on_both_sides_of_a_branch_is_the_handles() -> None:
    body = (
        "\tsetp.eq.s32 \t%p1, %r1, 0;\n\t@%p1 bra \t$L_a;\n\tadd.s32 \t%r11, %r3, 8;\n\tbra.uni \t$L_join;\n"
        "$L_a:\n\tmov.u32 \t%r11, %r3;\n$L_join:\n" + "\tmbarrier.arrive.shared::cta.b64 _, [%r11];\n"
    )
    assert _addr_kind(body) == "handle"


def test_an_address_set_on_one_side_of_a_branch_only_is_unknown() -> None:
    body = (
        "\tsetp.eq.s32 \t%p1, %r1, 0;\n\t@%p1 bra \t$L_join;\n\tadd.s32 \t%r11, %r3, 8;\n"
        "$L_join:\n" + "\tmbarrier.arrive.shared::cta.b64 _, [%r11];\n"
    )
    assert _addr_kind(body) == "unknown"


def test_the_registers_an_instruction_writes() -> None:
    """Every destination of a vector load (the parser drops its braces: they stand before the address),
    both of setp's, a call's results; a barrier writes none, a store none of its operands."""
    text = (
        "\tld.shared.v2.u32 \t{%r1, %r2}, [%r3+8];\n\tsetp.lt.u32 \t%p1|%p2, %r1, %r2;\n"
        "\tcall.uni (%r4), g, (%r1);\n\tbar.sync \t%r5;\n\tst.shared.u32 \t[%r3], %r6;\n\tmov.u32 \t%r7, %r8;\n"
    )
    (fn,) = parse(".visible .func f()\n{\n" + text + "\tret;\n}\n").functions
    assert [written(ins) for ins in fn.body[:6]] == [("%r1", "%r2"), ("%p1", "%p2"), ("%r4",), (), (), ("%r7",)]
