"""A role's protocol run inside another stage's callables is checked through their summaries (issue 27).

The persistent GEMM's consumer (role `mma`) runs its staging ring `out_stage` (a write, a proxy
fence, a TMA store and its bulk group, a read wait before the next unit's write and a drain) in
the `swiglu.epilogue` callables, between its own `bar.sync`s on `epi_sync` (which `orders
staging`). `kernlink check` splices each callable's summary (its synchronisation facts, from the
exporter's package) at the consumer's calls (checker/conformance/summary.py) and judges the
staging ring's steps (checker/conformance/staging.py) and `barrier-orders` through them.

Each failing variant is one compiled edit of the example and gives exactly one L-CONFORM
finding, of its check and problem, at the consumer's call (its PTX line) with the callable's own
line in a note; the example itself (the passing twin of all of them) checks clean under
`--strict`. A callable whose summary is unknown (a TMA store in a loop it does not unroll) leaves
the step undecided: an error under `--strict`, never a pass. At `kernlink pack` of the consumer
alone the steps are deferred (the callables are not there): it packs clean.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checker.clauses import l_integrity
from checker.conformance import MANIFEST_KEY
from checker.conformance.summary import splice, summarize
from contract_lang import ast as A
from diagnostics.model import Diagnostic, DiagnosticError
from kernlink.api import check
from kernlink.cli import main
from package.codefacts.facts import EVERY_THREAD, CodeFacts, Fact
from package.kpkg import PAYLOADS_KEY, pack_bytes, parse_package
from package.manifest import read_stage_package
from packing.pack import pack

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"
PARTS = ("scheduler", "producer", "consumer", "fixup", "epilogue")
PIPELINE = "persistent/gemm_swiglu_persistent.kp"


def checked_pipeline(
    tmp_path: Path, edits: dict[str, list[tuple[str, str]]], **selection: list[str]
) -> list[Diagnostic]:
    """The persistent pipeline with ``edits`` (file -> (old, new) pairs) applied, packed and checked strictly
    (``selection``: ``select``/``ignore`` of the check): its conformance findings."""
    root = tmp_path / "gemm_swiglu"
    shutil.copytree(EXAMPLES / "gemm_swiglu", root, ignore=shutil.ignore_patterns("build"))
    for name, pairs in edits.items():
        path = root / "persistent" / name
        text = path.read_text()
        for old, new in pairs:
            assert text.count(old) == 1, f"{old!r} is not in {name} exactly once"
            text = text.replace(old, new)
        path.write_text(text)
    for part in PARTS:
        folder = root / "persistent"
        pack(folder / f"{part}.cu", folder / f"{part}.kc", folder / "build" / f"{part}.kpkg")
    result = check([root / PIPELINE], strict=True, **selection)
    return [d for d in result.diagnostics if d.code in ("L-CONFORM", "I-CONFORM")]


FIRST_WRITE = "    gs_consumer_swiglu_write(acc, staging);\n"
SECOND_SYNC = "        gs::named_sync(kl_gemm_mainloop_epi_sync_bar_id(), kl_gemm_mainloop_epi_sync_threads());\n"

CASES = {
    # the write's proxy fence: the TMA store reads the generic proxy's writes unfenced
    "no-proxy-fence": (
        {"epilogue.cuh": [("    fence_proxy_async_smem();\n}", "}")]},
        "ring-fence",
        "async-read",
    ),
    # the store's commit: no read wait waits for the TMA store's read of the slot
    "no-commit": ({"epilogue.cuh": [("        bulk_commit();\n", "")]}, "ring-step", "uncommitted"),
    # begin's read wait: the next unit rewrites the slot while the previous store may still read it
    "no-read-wait": ({"epilogue.cuh": [("        bulk_wait_read0();\n", "")]}, "ring-step", "missing"),
    # the drain's wait: the kernel ends with the last store still reading shared memory
    "no-drain": ({"epilogue.cuh": [("        bulk_wait0();\n", "")]}, "ring-step", "drain"),
    # the consumer's barrier between every thread's stmatrix and thread 0's TMA store
    "no-epi-sync": (
        {
            "consumer.cu": [
                (
                    "        gs_consumer_swiglu_write(acc, staging);\n" + SECOND_SYNC,
                    "        gs_consumer_swiglu_write(acc, staging);\n",
                )
            ]
        },
        "barrier-orders",
        "unordered",
    ),
    # a read wait that lets one group stay pending: the slot (depth 1) is rewritten while the last store reads it
    "read-wait-groups": (
        {
            "epilogue.cuh": [
                (
                    "        bulk_wait_read0();\n",
                    '        asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");\n',
                )
            ]
        },
        "ring-step",
        "groups",
    ),
    # the TMA stores skipped in the first CTA: it writes the slot and never reads it
    "conditional-read": (
        {
            "epilogue.cuh": [
                (
                    "                tma_store(tmap_out,",
                    "                if (blockIdx.x != 0) tma_store(tmap_out,",
                )
            ]
        },
        "ring-step",
        "conditional",
    ),
    # the store call gone: the slot is written and never read asynchronously
    "no-read": (
        {
            "consumer.cu": [
                ("        gs_consumer_swiglu_store(p->tmap_out, staging, row0, u.tile_n * (kBN / 2u));\n", "")
            ]
        },
        "ring-step",
        "missing",
    ),
    # no `orders staging` and no barrier between thread 0's read wait and every thread's writes
    "read-wait-unshared": (
        {
            "consumer.kc": [
                ("claim barrier epi_sync participants mma orders staging", "claim barrier epi_sync participants mma")
            ],
            "consumer.cu": [
                ("        gs_consumer_swiglu_begin();\n" + SECOND_SYNC, "        gs_consumer_swiglu_begin();\n")
            ],
        },
        "ring-step",
        "unshared",
    ),
}


# how each problem's message says it (checker/clauses/l_conform.py)
WORDS = {
    "missing": "never runs",
    "uncommitted": "commits no bulk group",
    "conditional": "under a condition its slot's writes are not under",
    "drain": "does not wait for the last asynchronous reads",
    "groups": "allowing 1 bulk groups to stay pending",
    "unshared": "no `bar.sync` of the role follows it",
    "async-read": "without the `fence.proxy.async` its contract promises",
    "unordered": "with no `bar.sync` on barrier `epi_sync`",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_step_run_in_a_callable_is_checked_at_the_call(case: str, tmp_path: Path) -> None:
    edits, check_name, problem = CASES[case]
    found = checked_pipeline(tmp_path, edits)
    assert len(found) == 1, [d.message for d in found]
    d = found[0]
    data = dict(d.data)
    assert d.code == "L-CONFORM" and data["check"] == check_name, (d.code, data, d.message)
    assert data["function"] == "gs_consumer_main"
    assert WORDS[problem] in d.message, d.message
    if problem in ("async-read", "uncommitted", "drain"):  # at the call, naming the callable's own line
        assert any("run by the callable `gs_swiglu_epilogue_" in n for n in d.notes), d.notes
    assert {lab.span.file.rsplit("/", 1)[-1] for lab in d.labels} >= {"consumer.kc"}


@pytest.mark.parametrize("selection", [{"select": ["L-OVERLAP"]}, {"ignore": ["L-CONFORM"]}])
def test_a_step_in_a_callable_is_shown_under_any_selection(selection: dict[str, list[str]], tmp_path: Path) -> None:
    """The spliced findings are protocol findings: a selection that leaves out L-CONFORM never hides them."""
    edits, check_, _problem = CASES["no-commit"]
    (found,) = checked_pipeline(tmp_path, edits, **selection)
    assert dict(found.data)["check"] == check_ and found.is_error
    assert "reported whatever the clause selection" in found.notes[-1]


def test_the_example_is_the_passing_twin(tmp_path: Path) -> None:
    assert checked_pipeline(tmp_path, {}) == []


def test_an_unknown_summary_is_undecided_never_a_pass(tmp_path: Path) -> None:
    # the TMA stores in a loop the compiler keeps: how often the callable reads the slot is not one count
    edits = {
        "epilogue.cuh": [
            (
                "#pragma unroll\n            for (int b = 0; b < kBoxes; ++b) {",
                "#pragma unroll 1\n            for (int b = 0; b < kBoxes; ++b) {",
            )
        ]
    }
    found = checked_pipeline(tmp_path, edits)
    assert found and all(dict(d.data)["check"] == "ring-step" for d in found), [d.message for d in found]
    assert any("cannot decide what the called callable synchronises" in d.message for d in found)
    assert all(d.code == "L-CONFORM" for d in found)  # --strict: an error


def test_the_consumer_alone_packs_clean_its_steps_deferred(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "gemm_swiglu"
    shutil.copytree(EXAMPLES / "gemm_swiglu", folder, ignore=shutil.ignore_patterns("build"))
    consumer = folder / "persistent" / "consumer"
    result = pack(consumer.with_suffix(".cu"), consumer.with_suffix(".kc"), tmp_path / "c.kpkg", strict=True)
    # one record per deferral: what, which check, the role, the claims and why
    assert [(d.check, d.role, d.claims) for d in result.deferred] == [
        ("ring-step", "mma", (("ring", "out_stage"),)),
        ("barrier-orders", "mma", (("barrier", "sk_sync"), ("counter", "sk_flags"))),
    ]
    assert all(d.node is not None and d.reason.startswith("role `mma` calls other stages'") for d in result.deferred)
    # `kernlink pack --strict` says which sides it leaves to the composition: I-DEFERRED notes, never errors
    argv = ["pack", str(consumer.with_suffix(".cu")), "--contract", str(consumer.with_suffix(".kc"))]
    capsys.readouterr()
    assert main([*argv, "-o", str(tmp_path / "d.kpkg"), "--strict"]) == 0
    said = "".join(capsys.readouterr())
    assert said.count("note[I-DEFERRED]") == 2
    assert "role `mma` calls other stages' callables, which may run steps of ring `out_stage`" in said
    assert "decides what barrier `sk_sync` orders around counter `sk_flags`" in said
    assert main([*argv, "-o", str(tmp_path / "e.kpkg"), "--strict", "--format", "json"]) == 0
    notes = json.loads(capsys.readouterr().out)["warnings"]
    assert [(n["code"], n["severity"], n["data"]["check"]) for n in notes] == [
        ("I-DEFERRED", "note", "barrier-orders"),
        ("I-DEFERRED", "note", "ring-step"),
    ]
    assert {n["labels"][0]["file"].rsplit("/", 1)[-1] for n in notes} == {"consumer.kc"}


@pytest.mark.parametrize("component", ["producer", "consumer_swapab"])
def test_a_component_whose_code_shows_every_side_defers_nothing(
    component: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The twins: the producer calls no callable; the swap-AB consumer calls one (its epilogue) but has no
    staging ring and no barrier that orders a counter, so its code shows every side."""
    folder = tmp_path / "gemm_swiglu"
    shutil.copytree(EXAMPLES / "gemm_swiglu", folder, ignore=shutil.ignore_patterns("build"))
    part = folder / "persistent" / component
    argv = ["pack", str(part.with_suffix(".cu")), "--contract", str(part.with_suffix(".kc"))]
    capsys.readouterr()
    assert main([*argv, "-o", str(tmp_path / "p.kpkg"), "--strict"]) == 0
    assert "I-DEFERRED" not in "".join(capsys.readouterr())
    assert pack(part.with_suffix(".cu"), part.with_suffix(".kc"), tmp_path / "q.kpkg", strict=True).deferred == ()


# ----------------------------------------------------------------- the splice, as a property


def _fact(kind: str, order: int, reaches: tuple[int, ...], function: str = "f", detail: str = "") -> Fact:
    return Fact(kind, function, order, "op", (), None, detail, EVERY_THREAD, (), order, reaches)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=6), st.integers(min_value=1, max_value=5), st.integers(0, 5))
def test_a_splice_keeps_the_callers_order_and_puts_the_summary_at_its_call(n: int, m: int, at: int) -> None:
    at = min(at, n - 1)
    caller = [_fact("barrier", i + 1, tuple(range(i + 2, n + 1))) for i in range(n)]
    call = dataclasses_replace(caller[at], kind="xcall", detail="cs")
    caller[at] = call
    callee = [_fact("bulk-commit", j + 1, tuple(range(j + 2, m + 1)), function="g") for j in range(m)]
    a = _stage("a", calls=True)
    b = _stage("b", calls=False)
    spliced = splice([(a, CodeFacts(tuple(caller), 0)), (b, CodeFacts(tuple(callee), 0))])
    facts = spliced[0].facts
    assert len(summarize(CodeFacts(tuple(callee), 0), "g").facts) == m
    placed = [f for f in facts if f.via is not None]
    own = [f for f in facts if f.via is None]
    assert len(placed) == m and len(own) == n
    by_order = sorted(facts, key=lambda f: f.order)
    # the summary's facts sit right after the call, in the callable's order
    i = by_order.index(next(f for f in own if f.kind == "xcall"))
    assert [f.via for f in by_order[i + 1 : i + 1 + m]] == [("g", j + 1) for j in range(m)]
    # what reached the call reaches the summary; the summary reaches what the call reached
    for f in own:
        if f.order < by_order[i].order:
            assert all(p.order in f.reaches for p in placed)
        elif f.order > by_order[i].order:
            assert all(f.order in p.reaches for p in placed)
    assert spliced[1] is not None and spliced[1].facts == tuple(callee)  # a part that calls nothing is unchanged


def dataclasses_replace(f: Fact, **changes: object) -> Fact:
    import dataclasses

    return dataclasses.replace(f, **changes)  # type: ignore[arg-type]


def _stage(name: str, *, calls: bool) -> A.Stage:
    from contract_lang.parser import parse_text

    text = (
        f'stage "{name}" version "1.0.0" {{\n    target sm_90a\n'
        + (
            "    role r entry f warps 4\n    call cs () -> void as cs from role r guarantees converged\n"
            if calls
            else "    export callable cs () -> void = g requires converged\n"
        )
        + "}\n"
    )
    return parse_text(text, f"{name}.kc").stages[0]


# ----------------------------------------------------------------- the summary is recorded and bound to the PTX


def _epilogue(tmp_path: Path) -> Path:
    folder = tmp_path / "gemm_swiglu"
    shutil.copytree(EXAMPLES / "gemm_swiglu", folder, ignore=shutil.ignore_patterns("build"))
    src = folder / "persistent" / "epilogue"
    out = tmp_path / "epilogue.kpkg"
    pack(src.with_suffix(".cu"), src.with_suffix(".kc"), out)
    return out


def _forged(path: Path, edit: Callable[[list[dict[str, Any]]], None]) -> list[Diagnostic]:
    pkg = parse_package(path.read_bytes(), name=str(path))
    manifest = json.loads(json.dumps({k: v for k, v in pkg.manifest.items() if k != PAYLOADS_KEY}))
    edit(manifest[MANIFEST_KEY]["facts"])
    path.write_bytes(pack_bytes(manifest, dict(pkg.payloads)))
    with pytest.raises(DiagnosticError) as err, l_integrity.worded():
        read_stage_package(path)
    return list(err.value.diagnostics)


def test_the_epilogue_records_its_callables_summaries(tmp_path: Path) -> None:
    stage = read_stage_package(_epilogue(tmp_path))
    facts = CodeFacts.from_json(stage.manifest[MANIFEST_KEY])
    begin = summarize(facts, "gs_swiglu_epilogue_begin")
    store = summarize(facts, "gs_swiglu_epilogue_store")
    assert [(f.kind, f.detail) for f in begin.facts] == [("bulk-wait", "read")] and begin.unknown is None
    assert [f.kind for f in store.facts] == ["bulk-store", "bulk-store", "bulk-commit"]
    assert all(f.guard == ((("awgt", "eq", 0),),) for f in (*begin.facts, *store.facts))  # thread 0 of each warpgroup
    assert [p.value for f in store.facts[:2] for r, p in f.operands if r == "param"] == [1, 1]  # the staging argument


def test_a_recorded_summary_that_disagrees_with_the_ptx_is_l_integrity(tmp_path: Path) -> None:
    def drop_commit(facts: list[dict[str, Any]]) -> None:
        facts[:] = [
            f for f in facts if not (f["kind"] == "bulk-commit" and f["function"] == "gs_swiglu_epilogue_store")
        ]

    (diag,) = _forged(_epilogue(tmp_path), drop_commit)
    assert diag.code == "L-INTEGRITY" and "code facts" in diag.message


def test_a_malformed_recorded_summary_is_l_integrity_malformed(tmp_path: Path) -> None:
    def garble(facts: list[dict[str, Any]]) -> None:
        wait = next(f for f in facts if f["kind"] == "bulk-wait")
        wait["operands"] = [["groups", "zero"]]

    (diag,) = _forged(_epilogue(tmp_path), garble)
    assert diag.code == "L-INTEGRITY" and "malformed" in diag.message + " ".join(diag.notes)


def test_a_summary_is_unknown_never_empty_where_the_callable_hides_its_steps() -> None:
    commit = _fact("bulk-commit", 3, (), function="g")
    indirect = _fact("xcall", 2, (3,), function="g", detail="")
    helper = _fact("call", 2, (3,), function="g", detail="h")
    synchronising = _fact("bulk-wait", 1, (), function="h")
    looped = dataclasses_replace(commit, loops=(1,))
    assert summarize(CodeFacts((indirect, commit), 0), "g").unknown == ("an indirect call", 2)
    assert summarize(CodeFacts((helper, commit, synchronising), 0), "g").unknown == (
        "a call of `h`, which synchronises",
        2,
    )
    assert summarize(CodeFacts((looped,), 0), "g").unknown == ("`op` in a loop", 3)
    known = summarize(CodeFacts((helper, commit), 0), "g")  # `h` runs no synchronisation: followed as nothing
    assert known.unknown is None and known.facts == (commit,)
