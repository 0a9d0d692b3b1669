"""`kernlink draft` on every example component: it agrees with the hand-written contracts and with its own code."""

from __future__ import annotations

import argparse
from functools import cache
from pathlib import Path

import pytest

from analysis.draft import COMPOSED, MARKER, Draft, render, tally, values
from analysis.draft.classify import classify
from checker.conformance import check, derive
from contract_lang import ast as A
from contract_lang.parser import parse_file, parse_text
from contract_lang.printer import format_text
from diagnostics.sources import SourceMap
from kernlink.cli import main
from kernlink.cmd_draft import build_draft, load_composition
from tests.link.examples import EXAMPLES

#: The pipeline each component is composed into (`kernlink draft COMPONENT.cu --pipeline P.kp`).
PIPELINES = {
    "hello/provider": "hello/hello.kp",
    "hello/caller": "hello/hello.kp",
    "ring/loader": "ring/ring.kp",
    "ring/reduce": "ring/ring.kp",
    "moe4/interp": "moe4/moe4.kp",
    "moe4/comm": "moe4/moe4.kp",
    "moe4/gemm": "moe4/moe4.kp",
    "moe4/act": "moe4/moe4.kp",
    "gemm_swiglu/mainloop": "gemm_swiglu/gemm_swiglu.kp",
    "gemm_swiglu/epilogue": "gemm_swiglu/gemm_swiglu.kp",
    "gemm_swiglu/smem_acc": "gemm_swiglu/gemm_swiglu_smem_acc.kp",
    "gemm_swiglu/mma_sync": "gemm_swiglu/gemm_swiglu_mma_sync.kp",
    "gemm_swiglu/sm100/tcgen05": "gemm_swiglu/sm100/gemm_swiglu_tcgen05.kp",
}
COMPONENTS = (
    "hello/provider",
    "hello/caller",
    "ring/loader",
    "ring/reduce",
    "moe4/interp",
    "moe4/comm",
    "moe4/gemm",
    "moe4/act",
    "gemm_swiglu/mainloop",
    "gemm_swiglu/epilogue",
    "gemm_swiglu/smem_acc",
    "gemm_swiglu/mma_sync",
    "gemm_swiglu/sm100/tcgen05",
)
#: Values a draft states otherwise than a hand-written contract (none: gemm.mma_sync's `reads async`
#: for its `ldmatrix` reads was the contract's mistake, corrected with the fence it hid).
KNOWN: dict[str, set[tuple[tuple[str, ...], str, str]]] = {}
#: How many of each hand-written contract's values the draft states identically (bench/draft.py,
#: bench/results/cpu-2026-12-04f/draft/draft.md): 345 of 644 in all. A draft that drafts fewer fails.
AGREED = {
    "hello/provider": 3,
    "hello/caller": 15,
    "ring/loader": 23,
    "ring/reduce": 16,
    "moe4/interp": 10,
    "moe4/comm": 27,
    "moe4/gemm": 37,
    "moe4/act": 38,
    "gemm_swiglu/mainloop": 49,
    "gemm_swiglu/epilogue": 11,
    "gemm_swiglu/smem_acc": 39,
    "gemm_swiglu/mma_sync": 34,
    "gemm_swiglu/sm100/tcgen05": 43,
}


#: The same, composed into its pipeline (bench/results/cpu-2026-12-04f/draft/draft.md): 509 of 644 in all.
AGREED_COMPOSED = {
    "hello/provider": 5,
    "hello/caller": 16,
    "ring/loader": 29,
    "ring/reduce": 23,
    "moe4/interp": 23,
    "moe4/comm": 48,
    "moe4/gemm": 66,
    "moe4/act": 62,
    "gemm_swiglu/mainloop": 61,
    "gemm_swiglu/epilogue": 24,
    "gemm_swiglu/smem_acc": 51,
    "gemm_swiglu/mma_sync": 46,
    "gemm_swiglu/sm100/tcgen05": 55,
}


#: How many of each hand-written contract's values are the author's choice, composed
#: (analysis/draft/classify.py, bench/results/cpu-2026-12-04f/draft/draft.md): 133 of 644. A
#: classification that excuses more fails; drafting a choice (it is then determined) lowers it.
CHOICES_COMPOSED = {
    "hello/provider": 3,
    "hello/caller": 6,
    "ring/loader": 7,
    "ring/reduce": 5,
    "moe4/interp": 4,
    "moe4/comm": 11,
    "moe4/gemm": 17,
    "moe4/act": 6,
    "gemm_swiglu/mainloop": 15,
    "gemm_swiglu/epilogue": 12,
    "gemm_swiglu/smem_acc": 16,
    "gemm_swiglu/mma_sync": 17,
    "gemm_swiglu/sm100/tcgen05": 14,
}
#: The determined values the composed drafts do not draft yet (the gaps): drafting one removes it here.
UNDRAFTED = {
    "hello/caller": {("fact", "scale_factor", "type")},
    "gemm_swiglu/smem_acc": {("export tensor", "accumulator", "placement")},
}


@cache
def drafted(component: str, composed: bool = False) -> tuple[Draft, str]:
    source = EXAMPLES / f"{component}.cu"
    args = argparse.Namespace(
        source=str(source),
        include=[],
        define=[],
        std=None,
        cutlass=False,
        target="sm_100a" if "sm100" in component else "sm_90a",
        stage=None,
        stage_version=None,
        pipeline=str(EXAMPLES / PIPELINES[component]) if composed else None,
    )
    return build_draft(args, SourceMap())


def _stated(component: str) -> A.Stage:
    contract = EXAMPLES / f"{component}.kc"
    return parse_file(contract, "contract", display=str(contract))[0].stages[0]


@pytest.mark.toolchain
@pytest.mark.parametrize("component", COMPONENTS)
def test_the_draft_agrees_with_the_hand_written_contract(component: str) -> None:
    draft, _ = drafted(component)
    result = tally(_stated(component), draft)
    assert set(result.disagreed) == KNOWN.get(component, set())
    assert len(result.agreed) >= AGREED[component]


def test_the_agreement_figure_covers_every_component() -> None:
    assert set(AGREED) == set(COMPONENTS) and sum(AGREED.values()) == 345
    assert set(AGREED_COMPOSED) == set(PIPELINES) == set(COMPONENTS) and sum(AGREED_COMPOSED.values()) == 509
    assert set(CHOICES_COMPOSED) == set(COMPONENTS) and sum(CHOICES_COMPOSED.values()) == 133


@pytest.mark.toolchain
@pytest.mark.parametrize("component", COMPONENTS)
def test_the_author_choices_and_the_undrafted_determined_values(component: str) -> None:
    """Composed, each stated value the draft leaves open is the author's choice by its kind's rule, or one of
    the known gaps; every value it drafts is determined."""
    draft, _ = drafted(component, composed=True)
    result = tally(_stated(component), draft)
    composition = load_composition(EXAMPLES / PIPELINES[component], SourceMap())
    stated = (*result.agreed, *(d[0] for d in result.disagreed), *result.undecided)
    verdicts = classify(stated, draft, (composition.pipeline, composition.stages))
    assert len([v for v in verdicts if v.choice]) <= CHOICES_COMPOSED[component]
    assert not any(v.choice for v in verdicts if v.key in result.agreed)
    gaps = {v.key for v in verdicts if not v.choice and v.key in result.undecided}
    assert gaps <= UNDRAFTED.get(component, set())
    assert all(v.reason for v in verdicts)


@pytest.mark.toolchain
@pytest.mark.parametrize("component", COMPONENTS)
def test_the_composed_draft_agrees_and_keeps_its_own_code(component: str) -> None:
    """Composed into its pipeline: no value disagrees, none contradicts the code, it prints canonically."""
    draft, ptx = drafted(component, composed=True)
    result = tally(_stated(component), draft)
    assert set(result.disagreed) == KNOWN.get(component, set())
    assert len(result.agreed) >= AGREED_COMPOSED[component]
    assert [f for f in check(draft.stage, derive(ptx)) if f.decided] == []
    text = render(draft)
    assert format_text(text, "<draft>", "contract") == text
    assert parse_text(text, "<draft>", "contract").stages[0] == draft.stage
    assert all(f"# {COMPOSED}: {c.why} ({c.where})" in text for c in draft.composed)


@pytest.mark.toolchain
@pytest.mark.parametrize("component", COMPONENTS)
def test_the_draft_keeps_its_own_code(component: str) -> None:
    """No drafted value contradicts the code: the conformance checks find no error in the draft."""
    draft, ptx = drafted(component)
    errors = [f for f in check(draft.stage, derive(ptx)) if f.decided]
    assert errors == []


@pytest.mark.toolchain
@pytest.mark.parametrize("component", COMPONENTS)
def test_the_draft_is_canonical_and_parses_back(component: str) -> None:
    draft, ptx = drafted(component)
    text = render(draft)
    assert format_text(text, "<draft>", "contract") == text
    assert parse_text(text, "<draft>", "contract").stages[0] == draft.stage
    lines = ptx.split("\n")
    for note in draft.undecided:
        assert f"# {MARKER}: " in text
        assert 0 <= note.line <= len(lines)
        if note.line:
            assert f"(code.ptx:{note.line})" in text


@pytest.mark.toolchain
def test_the_ring_loader_draft() -> None:
    """The values the ring loader's code decides, each as its contract states it."""
    draft, _ = drafted("ring/loader")
    got = values(draft.stage)
    open_keys = draft.undecided_keys()
    decided = {k: v for k, v in got.items() if k not in open_keys}
    assert decided == {
        ("target",): "sm_90a",
        ("feature", "mbarrier"): "yes",
        ("feature", "cp_async_bulk"): "yes",
        ("role", "load", "entry"): "ring_load_main",
        ("params", "LoaderParams", "size"): "16",
        ("params", "LoaderParams", "align"): "8",
        ("params", "LoaderParams", "src", "type"): "ptr",
        ("params", "LoaderParams", "src", "offset"): "0",
        ("params", "LoaderParams", "tiles", "type"): "u32",
        ("params", "LoaderParams", "tiles", "offset"): "8",
        ("claim smem", "stage", "bytes"): "32768",
        ("claim smem", "stage", "per_slot"): "kv",
        ("claim smem", "stage", "use", "bulk_copy"): "yes",
        ("ring", "kv", "produce", "role"): "load",
        ("ring", "kv", "produce", "full init", "count"): "1",
        ("ring", "kv", "produce", "full init", "expect_tx"): "32KiB",
        ("ring", "kv", "produce", "empty wait"): "yes",
        ("ring", "kv", "produce", "full arrive", "count"): "1",
        ("ring", "kv", "produce", "full arrive", "tx"): "32KiB",
        ("ring", "kv", "produce", "full copy"): "32KiB",
        ("ring", "kv", "produce", "writes"): "async",
        ("ring", "kv", "produce", "init by"): "load",
        ("ring", "kv", "produce", "init fenced"): "yes",
    }
    assert {("role", "load", "warps"), ("ring", "kv", "produce", "depth"), ("launch", "kind")} <= open_keys


@pytest.mark.toolchain
def test_a_pipeline_drafts_each_component_it_uses(tmp_path: Path) -> None:
    """`kernlink draft ring.kp`: both stages, named by the pipeline, each composed with the other's contract."""
    out = tmp_path / "ring.kc"
    assert main(["draft", str(EXAMPLES / "ring" / "ring.kp"), "-o", str(out)]) == 0
    stages = parse_file(out, "contract", display=str(out))[0].stages
    assert [s.name for s in stages] == ["ring.loader", "ring.reduce"]
    widths = {i.name: i.warps for s in stages for i in s.items if isinstance(i, A.Role)}
    assert widths == {"load": 4, "reduce": 8}


@pytest.mark.toolchain
def test_a_pipeline_with_no_use_of_the_component_leaves_the_stage_open(capsys: pytest.CaptureFixture[str]) -> None:
    source = EXAMPLES / "ring" / "loader.cu"
    assert main(["draft", str(source), "--pipeline", str(EXAMPLES / "hello" / "hello.kp")]) == 0
    text = capsys.readouterr().out
    assert "# undecided: which stage of pipeline `hello` this is" in text and "# composed" not in text


@pytest.mark.toolchain
def test_a_pipeline_compiles_its_components_for_its_target(capsys: pytest.CaptureFixture[str]) -> None:
    """No `--target`: the pipeline's (sm_100a for the tcgen05 producer), which the default sm_90a cannot compile."""
    source = EXAMPLES / "gemm_swiglu" / "sm100" / "tcgen05.cu"
    pipeline = EXAMPLES / "gemm_swiglu" / "sm100" / "gemm_swiglu_tcgen05.kp"
    assert main(["draft", str(source), "--pipeline", str(pipeline)]) == 0
    text = capsys.readouterr().out
    assert "    target sm_100a\n" in text and 'stage "gemm.tcgen05"' in text
