"""Determined values and the author's choices (analysis/draft/classify.py): each rule's condition, and its twin.

A draft here is a small contract (what the draft states) with its undecided keys; a composition is
a pipeline and another stage. The key classified is a value a hand-written contract would state:
its class never depends on that value, only on the key, the draft and the composition.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from analysis.draft import Draft, Undecided, values
from analysis.draft.classify import RULES, Verdict, choices, classify, kind, rule
from contract_lang import ast as A
from contract_lang.parser import parse_file, parse_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "specs" / "examples"

MINE = """
stage "t.mine" version "0.0.0" {
    target sm_90a
%s}
"""
PEER = """
stage "t.peer" version "1.0.0" {
    target sm_90a
    role peer entry peer_main warps 4
%s}
"""
PIPELINE = """
pipeline "p" {
    target sm_90a
    use "t.mine" version ^1.0
    use "t.peer" version ^1.0
%s}
"""


def _draft(items: str, *open_keys: tuple[str, ...]) -> Draft:
    stage = parse_text(MINE % items, "<t>", "contract").stages[0]
    return Draft(stage, tuple(Undecided(k, "open", 0) for k in open_keys))


def _composition(peer: str = "", pipeline: str = "") -> tuple[A.Pipeline, tuple[A.Stage, ...]]:
    other = parse_text(PEER % peer, "<peer>", "contract").stages[0]
    return parse_text(PIPELINE % pipeline, "p.kp", "pipeline").pipelines[0], (other,)


def one(
    key: tuple[str, ...], draft: Draft, composition: tuple[A.Pipeline, tuple[A.Stage, ...]] | None = None
) -> Verdict:
    (verdict,) = classify([key], draft, composition)
    return verdict


ROLE = "    role mine entry mine_main warps 1\n"


def test_a_drafted_value_is_determined_whatever_its_kind() -> None:
    draft = _draft(ROLE, ("stage", "version"))
    verdict = one(("stage", "version"), draft)
    assert verdict.choice and verdict.rule == "stage version"
    assert not one(("role", "mine", "entry"), draft).choice
    # the same kind, drafted (not undecided): determined
    drafted = one(("stage", "version"), Draft(draft.stage, ()))
    assert not drafted.choice and drafted.reason.startswith("drafted: ")


def test_a_value_the_draft_leaves_open_is_not_drafted() -> None:
    draft = _draft(ROLE, ("role", "mine", "warps"))
    verdict = one(("role", "mine", "warps"), draft)
    assert verdict.choice and "bounds neither its width" in verdict.reason


def test_a_role_width_a_named_barrier_fixes_is_determined() -> None:
    alone = _draft(ROLE + "    claim barrier b participants mine threads 128\n", ("role", "mine", "warps"))
    assert not one(("role", "mine", "warps"), alone).choice
    twin = _draft(
        ROLE + "    role other entry other_main warps 1\n    claim barrier b participants mine, other threads 128\n",
        ("role", "mine", "warps"),
    )
    assert one(("role", "mine", "warps"), twin).choice


def test_a_lone_role_width_the_composition_fixes_is_determined() -> None:
    draft = _draft(ROLE, ("role", "mine", "warps"))
    assert not one(("role", "mine", "warps"), draft, _composition(pipeline="    launch fixed threads 256\n")).choice
    # no launch anywhere in the composition: the block is the author's
    assert one(("role", "mine", "warps"), draft, _composition()).choice
    two = _draft(ROLE + "    role other entry other_main warps 1\n", ("role", "mine", "warps"))
    assert one(("role", "mine", "warps"), two, _composition(pipeline="    launch fixed threads 256\n")).choice


def test_a_register_budget_is_determined_only_where_the_code_runs_setmaxnreg() -> None:
    key = ("role", "mine", "regs")
    assert one(key, _draft(ROLE, key)).choice
    assert not one(key, _draft("    requires feature setmaxnreg\n" + ROLE, key)).choice


def test_a_feature_no_instruction_needs_is_a_choice() -> None:
    draft = _draft(ROLE)
    assert one(("feature", "setmaxnreg"), draft).rule == "feature setmaxnreg"
    assert one(("feature", "mbarrier"), draft).choice
    assert not one(("feature", "mbarrier"), _draft("    requires feature mbarrier\n" + ROLE)).choice


def test_an_owned_facts_value_is_determined_where_another_stage_assumes_it() -> None:
    draft = _draft(ROLE + "    owns fact f: u32 = 1\n", ("fact", "f", "owns"))
    key = ("fact", "f", "owns")
    assert not one(key, draft, _composition("    assumes fact f: u32 == 1\n")).choice
    assert one(
        key, draft, _composition("    uses fact f: u32 as param f\n    params P size 4 align 4 { f: u32 @ 0 }\n")
    ).choice
    assert one(key, draft).choice


def test_a_facts_type_is_determined_where_the_composition_declares_the_fact() -> None:
    key = ("fact", "g", "type")
    draft = _draft(ROLE)
    assert not one(key, draft, _composition("    owns fact g: u32 = 3\n")).choice
    assert one(key, draft, _composition("    owns fact h: u32 = 3\n")).choice


def test_a_fields_fact_is_determined_where_the_field_bears_a_composed_facts_name() -> None:
    draft = _draft(ROLE + "    params P size 8 align 4 { g: u32 @ 0\n k: u32 @ 4 }\n")
    composition = _composition("    owns fact g: u32 = 3\n")
    assert not one(("params", "P", "g", "fact"), draft, composition).choice
    assert one(("params", "P", "k", "fact"), draft, composition).choice


def test_an_mbarrier_claims_bytes_are_determined_its_run_time_claims_are_not() -> None:
    key = ("claim smem", "c", "bytes")
    barrier = _draft(ROLE + "    claim smem c align 8 use mbarrier\n", key)
    assert not one(key, barrier).choice
    generic = _draft(ROLE + "    claim smem c use generic\n", key)
    assert one(key, generic).choice


def test_a_placement_in_memory_is_determined_one_in_registers_is_not() -> None:
    key = ("export tensor", "t", "placement")
    assert not one(key, _draft(ROLE + "    claim tmem acc columns 128\n", key)).choice
    assert one(key, _draft(ROLE, key)).choice


def test_the_launch_is_determined_where_the_composition_states_it() -> None:
    key = ("launch", "threads")
    draft = _draft(ROLE, key)
    assert not one(key, draft, _composition("    launch fixed threads 128\n")).choice
    assert one(key, draft, _composition()).choice


def test_a_stage_whose_name_is_open_reads_no_composition() -> None:
    key = ("fact", "g", "type")
    open_name = _draft(ROLE, ("stage", "name"))
    assert one(key, open_name, _composition("    owns fact g: u32 = 3\n")).choice


def test_an_unknown_kind_counts_as_determined() -> None:
    verdict = one(("no such item", "x"), _draft(ROLE))
    assert not verdict.choice and verdict.reason.startswith("determined, not drafted")


def test_choices_counts_by_kind() -> None:
    draft = _draft(ROLE, ("stage", "version"), ("role", "mine", "regs"), ("ring", "r", "produce", "depth"))
    verdicts = classify(
        [("stage", "version"), ("role", "mine", "regs"), ("ring", "r", "produce", "depth"), ("target",)], draft
    )
    assert choices(verdicts) == {"ring depth": 1, "role regs": 1, "stage version": 1}


def test_every_key_of_the_example_contracts_has_a_rule_of_its_own() -> None:
    """No kind a hand-written example states falls back to the catch-all (determined, no reason)."""
    kinds = {r.kind for r in RULES}
    for contract in sorted(EXAMPLES.rglob("*.kc")):
        for stage in parse_file(contract, "contract", display=contract.name)[0].stages:
            for key in values(stage):
                assert rule(key).kind in kinds, (contract.name, key, kind(key))


def test_the_spec_lists_every_rule_as_the_code_states_it() -> None:
    spec = (ROOT / "specs" / "draft.md").read_text().split("## Determined values and the author's choices")[1]
    listed = re.findall(r"^\| `([^`]+)` \| .*$", spec, flags=re.M)
    assert sorted(listed) == sorted(r.kind for r in RULES)
    for r in RULES:
        when = r.determined or "— (never: always the author's)"
        why = r.choice or "— (always determined)"
        assert f"| `{r.kind}` | {when} | {why} |" in spec, r.kind


STAGE = (
    ROLE
    + """    role other entry other_main warps 2
    requires feature mbarrier
    claim smem c align 8 use mbarrier
    claim smem d use generic
    owns fact f: u32 = 1
    params P size 8 align 4 { g: u32 @ 0
 k: u32 @ 4 }
"""
)
KEYS = (
    ("stage", "name"),
    ("stage", "version"),
    ("role", "mine", "warps"),
    ("role", "mine", "regs"),
    ("role", "other", "warpgroup"),
    ("feature", "setmaxnreg"),
    ("feature", "mbarrier"),
    ("launch", "threads"),
    ("claim smem", "c", "bytes"),
    ("claim smem", "d", "bytes"),
    ("claim smem", "d", "lifetime"),
    ("fact", "f", "owns"),
    ("fact", "f", "type"),
    ("fact", "g", "type"),
    ("params", "P", "g", "fact"),
    ("params", "P", "k", "fact"),
    ("export tensor", "t", "placement"),
)


@given(st.sets(st.sampled_from(KEYS)), st.sets(st.sampled_from(KEYS)), st.permutations(KEYS))
def test_drafting_more_never_makes_more_choices(
    more: set[tuple[str, ...]], less: set[tuple[str, ...]], order: list[tuple[str, ...]]
) -> None:
    """Leaving fewer values open never turns a determined value into a choice, and the verdicts do not
    depend on the order the keys are asked in."""
    composition = _composition(
        "    owns fact g: u32 = 3\n    assumes fact f: u32 == 1\n", "    launch fixed threads 256\n"
    )
    wide = classify(KEYS, _draft(STAGE, *(more | less)), composition)
    narrow = classify(KEYS, _draft(STAGE, *less), composition)
    for w, n in zip(wide, narrow, strict=True):
        assert n.choice <= w.choice, (w, n)
    shuffled = {v.key: v for v in classify(order, _draft(STAGE, *less), composition)}
    assert {v.key: v for v in narrow} == shuffled


def test_only_a_swizzle_use_is_the_hosts() -> None:
    draft = _draft(ROLE + "    claim smem c use generic\n")
    assert one(("claim smem", "c", "use", "swizzle128"), draft).choice
    assert not one(("claim smem", "c", "use", "ldmatrix"), draft).choice


def test_only_a_tensor_copys_bytes_are_the_hosts() -> None:
    key = ("ring", "r", "produce", "full copy")
    tma = _draft(ROLE + "    claim smem c bytes 1024 align 1024 per_slot r use tma\n", key)
    assert one(key, tma).choice
    bulk = _draft(ROLE + "    claim smem c bytes 1024 align 16 per_slot r use bulk_copy\n", key)
    assert not one(key, bulk).choice


def test_a_version_is_determined_where_the_pipeline_pins_one() -> None:
    key = ("stage", "version")
    draft = _draft(ROLE, key)
    pinned = _composition()
    pipeline = parse_text((PIPELINE % "").replace("^1.0", "=1.0.2", 1), "p.kp", "pipeline").pipelines[0]
    assert not one(key, draft, (pipeline, pinned[1])).choice
    assert one(key, draft, pinned).choice


def test_a_facts_use_is_determined_where_a_field_bears_its_name() -> None:
    key = ("fact", "g", "uses")
    named = _draft(ROLE + "    params P size 4 align 4 { g: u32 @ 0 }\n")
    assert not one(key, named).choice
    other = _draft(ROLE + "    params P size 4 align 4 { k: u32 @ 0 }\n")
    assert one(key, other).choice
