"""A role's mbarrier and named-barrier steps run inside another stage's callable are checked at the call.

The persistent GEMM's consumer (role `mma`) releases its `kv` slots (`empty arrive
per_warpgroup(mma) lag 1 multicast`: one `mbarrier.arrive.shared::cluster` per CTA of the
cluster), waits for their fill (`full wait`) and syncs its warpgroups on `epi_sync` (which
`orders staging`) in its own code. Each compiled edit below moves one of them into a callable the
`swiglu.epilogue` stage exports, the barrier's address (the caller's `empty_bar(slot)` or
`full_bar(slot)`), the parity or the barrier ID passed as an argument. `kernlink check` splices
the callable's summary (its arrives, waits and named barriers, bound to the caller's arguments:
checker/conformance/summary.py) at the call and judges them like the caller's own.

Before this, a correct release, wait or `bar.sync` in a callable was rejected (`ring-step`
`missing`, `barrier-orders` `unordered`, the exporter's undecided barrier ID) and a wrong one the
same way, with the wrong reason. Now each correct edit checks clean under `--strict`, each wrong
one gives exactly one L-CONFORM finding of its own, and a step the splice cannot bind (a callable
that repeats it in a loop, a parity or barrier ID only computed from its parameters) is undecided:
an error under `--strict`, never a pass and never a guessed binding.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checker.conformance.summary import splice, summarize
from contract_lang import ast as A
from contract_lang.parser import parse_text
from diagnostics.model import Diagnostic
from kernlink.cli import main
from package.codefacts.facts import EVERY_THREAD, CodeFacts, Fact, Operand
from tests.conformance.test_callable_summary import EXAMPLES, checked_pipeline

# The callables the edits add to the epilogue stage (epilogue.cu), each exported (epilogue.kc) and called by the
# consumer (consumer.kc); consumer.cuh declares what it calls.
CALLABLES = {
    "release": (
        """extern "C" __device__ void gs_swiglu_epilogue_release(unsigned bar) {
#pragma unroll
    for (unsigned r = 0; r < 2u; ++r) {
        gs::mbar_arrive_cluster(bar, r);
    }
}
""",
        "(u32)",
        "unsigned",
    ),
    "fullwait": (
        'extern "C" __device__ void gs_swiglu_epilogue_fullwait(unsigned bar, unsigned parity) '
        "{ gs::mbar_wait(bar, parity); }\n",
        "(u32, u32)",
        "unsigned, unsigned",
    ),
    "esync": (
        'extern "C" __device__ void gs_swiglu_epilogue_esync(unsigned id, unsigned n) { gs::named_sync(id, n); }\n',
        "(u32, u32)",
        "unsigned, unsigned",
    ),
}
DRAIN_DEF = 'extern "C" __device__ void gs_swiglu_epilogue_drain()'
DRAIN_EXPORT = "    export callable gs_swiglu_drain () -> void = gs_swiglu_epilogue_drain requires converged\n"
DRAIN_CALL = "    call gs_swiglu_drain () -> void as gs_consumer_swiglu_drain from role mma guarantees converged\n"
FEATURES = "requires feature tma, stmatrix, cp_async_bulk"
NAMESPACE = "\nnamespace gs {\n\nconstexpr unsigned kOrder0 = 4;"
RELEASE = (
    "#pragma unroll\n        for (unsigned r = 0; r < C; ++r) {\n"
    "            mbar_arrive_cluster(ring.empty_bar(slot), r);\n        }\n"
)
WAIT = "        mbar_wait(ring.full_bar(cur.slot), cur.phase);\n"
SECOND_SYNC = (
    "        gs::named_sync(kl_gemm_mainloop_epi_sync_bar_id(), kl_gemm_mainloop_epi_sync_threads());\n"
    "        gs_consumer_swiglu_store("
)


def moved(
    name: str,
    *,
    body: dict[str, str] | None = None,
    caller: tuple[str, str, str] | None = None,
) -> dict[str, list[tuple[str, str]]]:
    """The edits that add callable ``name`` to the epilogue (``body``: replacements in its text) and make the
    consumer call it (``caller``: (file, old, new) in the consumer's code)."""
    text, signature, params = CALLABLES[name]
    for old, new in (body or {}).items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    symbol = f"gs_swiglu_epilogue_{name}"
    export = f"    export callable gs_swiglu_{name} {signature} -> void = {symbol} requires converged\n"
    call = f"    call gs_swiglu_{name} {signature} -> void as gs_consumer_{name} from role mma guarantees converged\n"
    edits: dict[str, list[tuple[str, str]]] = {
        "epilogue.cu": [(DRAIN_DEF, text + DRAIN_DEF)],
        "epilogue.kc": [(DRAIN_EXPORT, DRAIN_EXPORT + export), (FEATURES, FEATURES + ", mbarrier, clusters")],
        "consumer.kc": [(DRAIN_CALL, DRAIN_CALL + call)],
        "consumer.cuh": [(NAMESPACE, f'\nextern "C" __device__ void gs_consumer_{name}({params});\n' + NAMESPACE)],
    }
    if caller is not None:
        file, old, new = caller
        edits.setdefault(file, []).append((old, new))
    return edits


Edits = dict[str, list[tuple[str, str]]]


def release(
    call: str = "        gs_consumer_release(ring.empty_bar(slot));\n", body: dict[str, str] | None = None
) -> Edits:
    return moved("release", body=body, caller=("consumer.cuh", RELEASE, call))


def wait(
    call: str = "        gs_consumer_fullwait(ring.full_bar(cur.slot), cur.phase);\n",
    body: dict[str, str] | None = None,
) -> Edits:
    return moved("fullwait", body=body, caller=("consumer.cuh", WAIT, call))


def esync(bar: str = "epi_sync") -> Edits:
    call = (
        f"        gs_consumer_esync(kl_gemm_mainloop_{bar}_bar_id(), kl_gemm_mainloop_epi_sync_threads());\n"
        "        gs_consumer_swiglu_store("
    )
    return moved("esync", caller=("consumer.cu", SECOND_SYNC, call))


def both_syncs() -> Edits:
    """Both of the unit's `bar.sync`s on `epi_sync` in the callable: the consumer's own code runs none."""
    edits = esync()
    first = "        gs_consumer_swiglu_begin();\n" + SECOND_SYNC.split("\n")[0] + "\n"
    call = "        gs_consumer_swiglu_begin();\n" + (
        "        gs_consumer_esync(kl_gemm_mainloop_epi_sync_bar_id(), kl_gemm_mainloop_epi_sync_threads());\n"
    )
    edits["consumer.cu"].append((first, call))
    return edits


PASSING = {
    "release in a callable": release(),
    "wait in a callable, its parity passed": wait(),
    "named barrier in a callable, its ID passed": esync(),
    "every named barrier of the role in a callable": both_syncs(),
}

FAILING = {
    # the release called twice per k-step: each slot's phase completes early
    "double-release": (
        release(2 * "        gs_consumer_release(ring.empty_bar(slot));\n"),
        "ring-step",
        "runs `empty arrive` of ring `kv` twice per iteration",
    ),
    # the callable arrives on four CTAs' barriers (a cluster of 2): one slot released twice
    "four-ranks": (
        release(body={"r < 2u": "r < 4u"}),
        "ring-step",
        "runs `empty arrive` of ring `kv` twice per iteration",
    ),
    # the caller passes the slot's full barrier: the release arrives on the wrong barrier
    "release-full-barrier": (
        release("        gs_consumer_release(ring.full_bar(slot));\n"),
        "ring-step",
        "`full arrive`",
    ),
    # the caller passes the other phase: the first wait waits for a phase that already completed
    "wait-wrong-parity": (
        wait("        gs_consumer_fullwait(ring.full_bar(cur.slot), cur.phase ^ 1u);\n"),
        "wait-parity",
        "first waits on `full wait` of ring `kv` with parity 1",
    ),
    # the callable waits on phase 0 whatever it is passed: wrong from the second lap of the ring on
    "wait-constant-parity": (
        wait(body={"mbar_wait(bar, parity)": "mbar_wait(bar, 0u)"}),
        "wait-parity",
        "with parity 0 in every iteration",
    ),
    # the caller passes sk_sync's ID: the stmatrix writes and the TMA store are not ordered by epi_sync
    "sync-other-barrier": (esync("sk_sync"), "barrier-orders", "with no `bar.sync` on barrier `epi_sync`"),
}


def _only(found: list[Diagnostic]) -> Diagnostic:
    assert len(found) == 1, [d.message for d in found]
    return found[0]


@pytest.mark.parametrize("case", sorted(PASSING))
def test_a_step_run_correctly_in_a_callable_is_accepted(case: str, tmp_path: Path) -> None:
    assert checked_pipeline(tmp_path, PASSING[case]) == []


@pytest.mark.parametrize("case", sorted(FAILING))
def test_a_wrong_step_in_a_callable_is_one_finding_at_the_call(case: str, tmp_path: Path) -> None:
    edits, check_name, words = FAILING[case]
    d = _only(checked_pipeline(tmp_path, edits))
    data = dict(d.data)
    assert d.code == "L-CONFORM" and data["check"] == check_name, (d.code, data, d.message)
    assert words in d.message, d.message
    assert data["function"] == "gs_consumer_main"


UNDECIDED = {
    # the release repeated in a loop the callable keeps: how often it arrives is not one count
    "release-in-a-loop": (release(body={"#pragma unroll\n": "#pragma unroll 1\n"}), "ring-step"),
    # the parity computed from the parameter: the caller's value is not the wait's
    "parity-computed": (
        wait(
            "        gs_consumer_fullwait(ring.full_bar(cur.slot), cur.phase ^ 1u);\n",
            body={"mbar_wait(bar, parity)": "mbar_wait(bar, parity ^ 1u)"},
        ),
        "wait-parity",
    ),
    # the barrier ID computed from the parameter: which barrier it is is not the caller's argument
    "id-computed": (
        moved(
            "esync",
            body={"named_sync(id, n)": "named_sync(id + 1u, n)"},
            caller=(
                "consumer.cu",
                SECOND_SYNC,
                "        gs_consumer_esync(kl_gemm_mainloop_epi_sync_bar_id() - 1u,"
                " kl_gemm_mainloop_epi_sync_threads());\n"
                "        gs_consumer_swiglu_store(",
            ),
        ),
        "barrier-id",
    ),
}


@pytest.mark.parametrize("case", sorted(UNDECIDED))
def test_a_step_the_splice_cannot_bind_is_undecided_never_a_pass(case: str, tmp_path: Path) -> None:
    edits, check_name = UNDECIDED[case]
    d = _only(checked_pipeline(tmp_path, edits))
    assert d.code == "L-CONFORM" and dict(d.data)["check"] == check_name, (d.code, dict(d.data), d.message)
    assert d.message.startswith("cannot decide"), d.message  # undecided: an error under --strict
    assert dict(d.data)["function"] == "gs_consumer_main"  # at the call, not in the callable


@pytest.mark.parametrize("moved_step", ["release", "esync", "both"])
def test_each_component_alone_packs_clean_the_step_left_to_the_composition(
    moved_step: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "gemm_swiglu"
    shutil.copytree(EXAMPLES / "gemm_swiglu", folder, ignore=shutil.ignore_patterns("build"))
    makers: dict[str, Callable[[], Edits]] = {"release": release, "esync": esync, "both": both_syncs}
    for name, pairs in makers[moved_step]().items():
        path = folder / "persistent" / name
        text = path.read_text()
        for old, new in pairs:
            text = text.replace(old, new)
        path.write_text(text)
    for part in ("consumer", "epilogue"):
        src = folder / "persistent" / part
        capsys.readouterr()
        argv = ["pack", str(src.with_suffix(".cu")), "--contract", str(src.with_suffix(".kc"))]
        assert main([*argv, "-o", str(tmp_path / f"{part}.kpkg"), "--strict"]) == 0, capsys.readouterr()
        said = capsys.readouterr().out
        if part == "consumer":
            kv = "note[I-DEFERRED]: role `mma` passes a barrier of ring `kv` to another stage's callable"
            assert (kv in said) == (moved_step == "release"), said
            bar = "note[I-DEFERRED]: role `mma` passes the ID of barrier `epi_sync` to another stage's callable"
            assert (bar in said) == (moved_step == "both"), said
        else:  # the exporter's arrive, or barrier ID, is judged at each call, not in the callable
            assert "note:" not in said and "error" not in said and "cannot decide" not in said, said


# ----------------------------------------------------------------- the binding, as a property

_STAGES = {
    "a": 'stage "a" version "1.0.0" {\n    target sm_90a\n    role r entry f warps 4\n'
    "    call cs (u32, u32, u32) -> void as cs from role r guarantees converged\n}\n",
    "b": 'stage "b" version "1.0.0" {\n    target sm_90a\n'
    "    export callable cs (u32, u32, u32) -> void = g requires converged\n}\n",
}


def _stage(name: str) -> A.Stage:
    return parse_text(_STAGES[name], f"{name}.kc").stages[0]


_ARGS = st.sampled_from(
    [
        Operand("handle", handles=("kl_a_kv_full_bar",)),
        Operand("handle", handles=("kl_a_kv_empty_bar",)),
        Operand("constant", 1, first=1),
        Operand("arith", first=0),
        Operand("unknown"),
    ]
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(_ARGS, min_size=3, max_size=3),
    st.integers(0, 2),
    st.one_of(st.none(), st.integers(0, 2)),
    st.booleans(),
)
def test_a_spliced_step_is_bound_to_the_argument_it_is_never_guessed(
    args: list[Operand], addr_param: int, parity_param: int | None, earlier: bool
) -> None:
    """A wait's barrier is the handles of the argument its address is built on; its parity is the argument its
    parity is (with the constant it holds at the call's first run), unknown where it is only computed from
    parameters or where another wait on the same barrier may run before it in the caller."""
    call_arg = Fact("call-arg", "f", 10, "call", tuple((f"a{i}", op) for i, op in enumerate(args)), None, "cs", order=3)
    xcall = Fact("xcall", "f", 10, "call", (), None, "cs", EVERY_THREAD, (), 3, (5,))
    parity = (("parity", Operand("arith", arg=True)),) + (
        (("param:parity", Operand("constant", parity_param)),) if parity_param is not None else ()
    )
    inner = Fact(
        "wait",
        "g",
        7,
        "mbarrier.try_wait.parity",
        (("addr", Operand("arith", arg=True)), *parity, ("param", Operand("constant", addr_param))),
        order=1,
        prior=(0,),
    )
    own = args[addr_param]
    before = Fact("wait", "f", 4, "mbarrier.try_wait.parity", (("addr", own),), order=1, reaches=(3, 5))
    caller = (*((before,) if earlier else ()), xcall, call_arg)
    spliced = splice([(_stage("a"), CodeFacts(caller, 0)), (_stage("b"), CodeFacts((inner,), 0))])[0]
    (got,) = [f for f in spliced.facts if f.via is not None]
    addr, bound = got.operand("addr"), got.operand("parity")
    assert addr is not None and bound is not None
    if own.kind == "unknown":
        assert addr.kind == "unknown"
    else:
        assert addr.handles == own.handles
    shared = earlier and bool(own.handles)  # the caller's own wait on the same barrier runs before the call
    if parity_param is None or shared or not own.handles:
        assert bound.kind == "unknown"
    else:
        assert bound == args[parity_param]
    assert got.via == ("g", 7) and got.line == 10


def test_a_step_on_the_exporters_own_barrier_is_not_the_callers() -> None:
    """A callable's arrive on its own stage's barrier (the exporter's handle) or a `bar.sync` on a literal ID is the
    exporter's protocol (judged with its stage): not in the summary, not unknown in a loop; one on a barrier the
    caller passes, or on one the analysis cannot trace, is the caller's."""
    own = Operand("handle", handles=("kl_b_sched_full_bar",))
    passed = Operand("arith", arg=True)
    looped = Fact("arrive", "g", 3, "mbarrier.arrive", (("addr", own),), order=2, loops=(1,))
    literal = Fact("barrier", "g", 4, "bar.sync", (("id", Operand("constant", 3)),), detail="sync", order=3)
    theirs = Fact("arrive", "g", 5, "mbarrier.arrive", (("addr", passed), ("param", Operand("constant", 0))), order=4)
    untraced = Fact("wait", "g", 6, "mbarrier.try_wait", (("addr", Operand("unknown")),), order=5)
    got = summarize(CodeFacts((looped, literal, theirs, untraced), 0), "g")
    assert got.unknown is None and got.facts == (theirs, untraced)
    assert summarize(CodeFacts((dataclasses.replace(theirs, loops=(1,)),), 0), "g").unknown == (
        "`mbarrier.arrive` in a loop",
        5,
    )
