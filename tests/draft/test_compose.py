"""What a composition decides for a draft (analysis/draft/compose.py): each rule alone, and its twin it leaves open.

The drafted stage here is written as a contract (what the code alone drafts), with its undecided
keys; the pipeline and the other stages are small contracts. No toolchain is needed.
"""

from __future__ import annotations

from analysis.draft import Composition, Draft, Undecided, values
from analysis.draft.compose import CodeView, compose
from contract_lang import ast as A
from contract_lang.parser import parse_text

PIPELINE = """
pipeline "p" {
    target sm_90a
    use "t.mine" version ^1.0
    use "t.peer" version ^1.0
%s}
"""

PEER = """
stage "t.peer" version "1.0.0" {
    target sm_90a
    role peer entry peer_main warps 8
%s}
"""

MINE = """
stage "t_mine" version "0.0.0" {
    target sm_90a
    role mine entry mine_main warps 1
%s}
"""

#: What the code alone leaves undecided in MINE.
OPEN = (("stage", "name"), ("stage", "version"), ("role", "mine", "warps"), ("launch", "kind"))


def _stage(text: str) -> A.Stage:
    return parse_text(text, "<t>", "contract").stages[0]


def _pipeline(items: str = "") -> A.Pipeline:
    return parse_text(PIPELINE % items, "p.kp", "pipeline").pipelines[0]


def composed(
    mine: str = "",
    peer: str = "",
    pipeline: str = "",
    *,
    open_keys: tuple[tuple[str, ...], ...] = OPEN,
    bars: dict[str, frozenset[str]] | None = None,
    facts: frozenset[str] = frozenset(),
    also: tuple[A.Stage, ...] = (),
    prefix: str = "t_mine",
    indexed: dict[str, int] | None = None,
    ring_slots: dict[tuple[str, str], int] | None = None,
) -> Draft:
    stage = _stage(MINE % mine)
    notes = tuple(Undecided(k, "open", 0) for k in open_keys)
    comp = Composition(_pipeline(pipeline), (_stage(PEER % peer), *also))
    got = compose(stage, notes, comp, CodeView(bars or {}, facts, indexed or {}, ring_slots or {}), prefix, "mine")
    return Draft(*got)


def decided(draft: Draft) -> dict[tuple[str, ...], str]:
    open_keys = draft.undecided_keys()
    return {k: v for k, v in values(draft.stage).items() if k not in open_keys}


def test_the_name_is_the_use_its_handles_spell_and_the_version_stays_open_under_a_range() -> None:
    got = composed()
    assert got.stage.name == "t.mine" and ("stage", "name") not in got.undecided_keys()
    assert ("stage", "version") in got.undecided_keys()


def test_an_exact_requirement_is_the_version() -> None:
    stage = _stage(MINE % "")
    pipeline = parse_text('pipeline "p" {\n    use "t.mine" version =1.2.3\n}\n', "p.kp", "pipeline").pipelines[0]
    got = Draft(
        *compose(
            stage,
            (Undecided(("stage", "version"), "open", 0),),
            Composition(pipeline, ()),
            CodeView({}, frozenset()),
            "t_mine",
            "mine",
        )
    )
    assert got.stage.version == "1.2.3" and not got.undecided


def test_no_use_naming_the_stage_leaves_the_composition_unread() -> None:
    got = composed(peer="    launch fixed threads 384\n", prefix="other")
    assert ("stage", "use") in got.undecided_keys()
    assert not any(isinstance(i, A.Launch) for i in got.stage.items) and not got.composed


def test_the_launch_is_the_pipelines_else_the_other_stages() -> None:
    got = composed(
        pipeline="    launch persistent threads 512 blocks_per_sm 1\n", peer="    launch fixed threads 384\n"
    )
    launch = next(i for i in got.stage.items if isinstance(i, A.Launch))
    assert (launch.kind, launch.threads, launch.blocks_per_sm) == ("persistent", 512, 1)
    got = composed(peer="    launch fixed threads 384\n")
    assert decided(got)[("launch", "threads")] == "384"


def test_disagreeing_launch_lines_leave_it_open() -> None:
    other = _stage('stage "t.third" version "1.0.0" {\n    launch fixed threads 256\n}\n')
    got = composed(peer="    launch fixed threads 384\n", also=(other,))
    assert not any(isinstance(i, A.Launch) for i in got.stage.items)
    assert ("launch", "kind") in got.undecided_keys()


def test_a_lone_roles_width_is_what_the_block_leaves() -> None:
    got = composed(peer="    launch fixed threads 384\n")
    assert decided(got)[("role", "mine", "warps")] == "4"
    assert any(c.key == ("role", "mine", "warps") and "if no warp idles" in c.why for c in got.composed)


def test_two_roles_share_what_the_block_leaves_so_neither_width_is_drafted() -> None:
    got = composed(
        mine="    role other entry other_main warps 1\n",
        peer="    launch fixed threads 384\n",
        open_keys=(*OPEN, ("role", "other", "warps")),
    )
    assert ("role", "mine", "warps") in got.undecided_keys()


def test_a_fact_another_stage_owns_is_used_through_the_params_field_of_its_name_and_type() -> None:
    mine = "    params P size 8 align 4 {\n        n: u32 @ 0\n        m: u32 @ 4\n    }\n"
    got = decided(composed(mine=mine, peer="    owns fact n: u32 = 8\n    owns fact m: u64 = 2\n"))
    assert got[("params", "P", "n", "fact")] == "n"
    assert got[("fact", "n", "uses")] == "n" and got[("fact", "n", "type")] == "u32"
    assert ("params", "P", "m", "fact") not in got  # the field's type is not the fact's
    assert ("fact", "m", "type") not in got


def test_a_fact_read_through_its_handle_and_no_field_is_an_assumption_of_the_owners_value() -> None:
    got = decided(composed(peer="    owns fact n: u32 = 8\n", facts=frozenset({"n"})))
    assert got[("fact", "n", "assumes")] == "8"
    got = decided(composed(peer="    owns fact n: u32 in 1..8\n", facts=frozenset({"n"})))
    assert ("fact", "n", "assumes") not in got  # no one value to assume: an assumption would pin one (L-FACT)


def test_a_fact_the_others_use_and_none_owns_is_owned_here_with_an_assumed_value() -> None:
    got = composed(peer="    assumes fact n: u32 == 16\n")
    assert decided(got)[("fact", "n", "owns")] == "owns fact n: u32 = 16"
    got = composed(
        peer="    params Q size 4 align 4 {\n        n: u32 @ 0 = fact n\n    }\n    uses fact n: u32 as param n\n"
    )
    assert decided(got)[("fact", "n", "type")] == "u32"
    assert ("fact", "n", "owns") in got.undecided_keys()  # no stage says its value


def test_a_named_barrier_the_others_declare_a_rendezvous_is_this_stages_side() -> None:
    mine = "    claim barrier phase participants mine\n"
    open_keys = (*OPEN, ("claim barrier", "phase", "kind"))
    peer = "    rendezvous phase sync by peer threads 288\n"
    got = composed(mine=mine, peer=peer, open_keys=open_keys, bars={"phase": frozenset({"arrive"})})
    assert decided(got)[("rendezvous", "phase", "mode")] == "arrive"
    assert decided(got)[("rendezvous", "phase", "threads")] == "288"
    got = composed(mine=mine, open_keys=open_keys, bars={"phase": frozenset({"sync"})})
    assert ("claim barrier", "phase", "kind") in got.undecided_keys()


def test_an_import_takes_the_one_export_and_the_export_the_imports_identity() -> None:
    mine = "    import tensor acc from acc into role mine {\n    }\n"
    peer = "    export tensor out from role peer {\n        elem f32\n        tile m 64 n 32\n    }\n"
    keys = (*OPEN, ("import tensor", "acc", "from"), ("import tensor", "acc", "elem"))
    got = decided(composed(mine=mine, peer=peer, open_keys=keys))
    assert got[("import tensor", "acc", "from")] == "out" and got[("import tensor", "acc", "elem")] == "f32"
    assert got[("import tensor", "acc", "tile")] == "m 64 n 32" and got[("import tensor", "acc", "done")] == "acc.done"
    two = _stage('stage "t.third" version "1.0.0" {\n    export tensor y from role z {\n    }\n}\n')
    got = decided(composed(mine=mine, peer=peer, open_keys=keys, also=(two,)))
    assert ("import tensor", "acc", "from") not in got
    mine = "    export tensor out from role mine {\n    }\n"
    peer = "    import tensor c from out into role peer {\n        elem bf16\n    }\n"
    got = decided(composed(mine=mine, peer=peer))
    assert got[("export tensor", "out", "elem")] == "bf16" and got[("export tensor", "out", "ready")] == "c.ready"


def test_a_counter_endpoints_scope_is_the_other_endpoints() -> None:
    mine = "    counter c produce by mine {\n        add 1\n    }\n"
    key = ("counter", "c", "produce", "scope")
    got = composed(mine=mine, peer="    counter c consume by peer scope gpu\n", open_keys=(*OPEN, key))
    assert decided(got)[key] == "gpu"
    got = composed(mine=mine, peer="    counter d consume by peer scope gpu\n", open_keys=(*OPEN, key))
    assert key in got.undecided_keys()


def test_a_ring_init_count_is_every_sides_arrivals() -> None:
    mine = "    ring kv produce by mine {\n        empty init 1\n        empty wait\n    }\n"
    key = ("ring", "kv", "produce", "empty init", "count")
    peer = "    ring kv consume by peer {\n        full wait\n        empty arrive per_warp(peer)\n    }\n"
    got = composed(mine=mine, peer=peer, open_keys=(*OPEN, key))
    assert decided(got)[key] == "per_warp(peer)"
    remote = peer.replace("per_warp(peer)", "per_warp(peer) remote")
    got = composed(mine=mine, peer=remote, open_keys=(*OPEN, key))
    assert key in got.undecided_keys()


def test_the_drafted_stages_own_contract_is_never_read() -> None:
    own = _stage('stage "t.mine" version "1.0.0" {\n    launch fixed threads 999\n    owns fact n: u32 = 7\n}\n')
    got = composed(also=(own,), facts=frozenset({"n"}))
    assert not any(isinstance(i, A.Launch) for i in got.stage.items)
    assert ("fact", "n", "assumes") not in decided(got) and ("fact", "n", "owns") not in decided(got)


def test_a_stage_the_pipeline_uses_but_nobody_read_stops_the_deductions_from_what_none_states() -> None:
    """With a third stage unread, the block's spare warps and an unowned fact may be its: neither is drafted."""
    pipeline = '    use "t.third" version ^1.0\n    launch fixed threads 384\n'
    got = composed(peer="    assumes fact n: u32 == 16\n", pipeline=pipeline)
    assert ("role", "mine", "warps") in got.undecided_keys()
    assert not any(isinstance(i, A.OwnsFact) for i in got.stage.items)
    assert decided(got)[("launch", "threads")] == "384"


def test_the_phases_the_others_assume_are_the_interpreters_in_the_one_order_they_share() -> None:
    peer = "    assumes phases exclusive a, b\n"
    other = _stage('stage "t.third" version "1.0.0" {\n    assumes phases exclusive b, c\n}\n')
    pipeline = '    use "t.third" version ^1.0\n'
    got = decided(composed(peer=peer, also=(other,), pipeline=pipeline))
    assert got[("phases", "phases exclusive a, b, c")] == "yes"
    unordered = _stage('stage "t.third" version "1.0.0" {\n    assumes phases exclusive a, c\n}\n')
    got = decided(composed(peer=peer, also=(unordered,), pipeline=pipeline))  # b and c: either order
    assert not any(k[0] == "phases" for k in got)
    declares = _stage('stage "t.third" version "1.0.0" {\n    phases exclusive a, b\n}\n')
    got = decided(composed(peer=peer, also=(declares,), pipeline=pipeline))  # another stage is the interpreter
    assert not any(k[0] == "phases" for k in got)


def test_a_counter_the_code_indexes_and_no_other_stage_claims_is_claimed_here_with_its_scope() -> None:
    mine = "    counter c produce by mine scope gpu {\n        add 1\n    }\n"
    got = composed(mine=mine, peer="    counter c consume by peer scope gpu\n", indexed={"c": 7})
    claims = [i for i in got.stage.items if isinstance(i, A.CounterClaim)]
    assert claims == [A.CounterClaim("c", None, "gpu")]
    assert decided(got)[("claim counter", "c", "scope")] == "gpu"
    slots = next(u for u in got.undecided if u.key == ("claim counter", "c", "slots"))
    assert slots.line == 7 and "the code's index" in slots.why
    assert any(c.key == ("claim counter", "c", "claim") for c in got.composed)


def test_a_counter_another_stage_claims_or_the_code_does_not_index_is_not_claimed() -> None:
    mine = "    counter c produce by mine scope gpu {\n        add 1\n    }\n"
    peer = "    claim counter c slots 4 scope gpu\n    counter c consume by peer scope gpu\n"
    for draft in (
        composed(mine=mine, peer=peer, indexed={"c": 7}),
        composed(mine=mine, peer="    counter c consume by peer scope gpu\n"),
    ):
        assert not any(isinstance(i, A.CounterClaim) for i in draft.stage.items)
        assert not any(k[0] == "claim counter" for k in draft.undecided_keys())


def test_an_indexed_counter_is_not_claimed_before_every_other_stage_was_read() -> None:
    """A deduction from what none of the others states needs them all (the pipeline's second use unread)."""
    mine = "    counter c produce by mine scope gpu {\n        add 1\n    }\n"
    stage = _stage(MINE % mine)
    pipeline = _pipeline()
    got = Draft(*compose(stage, (), Composition(pipeline, ()), CodeView({}, frozenset(), {"c": 7}), "t_mine", "mine"))
    assert not any(isinstance(i, A.CounterClaim) for i in got.stage.items)


def test_a_slot_claim_the_code_reaches_through_its_ring_and_no_other_stage_declares_is_this_stages() -> None:
    mine = "    ring h produce by mine {\n        depth 2\n    }\n"
    got = composed(
        mine=mine, peer="    ring h consume by peer {\n        full wait\n    }\n", ring_slots={("h", "act_in"): 44}
    )
    claims = [i for i in got.stage.items if isinstance(i, A.SmemClaim)]
    assert claims == [A.SmemClaim("act_in", per_slot="h")]
    assert decided(got)[("claim smem", "act_in", "per_slot")] == "h"
    assert {("claim smem", "act_in", "bytes"), ("claim smem", "act_in", "align")} <= got.undecided_keys()


def test_a_slot_claim_another_stage_declares_or_of_a_ring_this_stage_lacks_is_not_claimed() -> None:
    mine = "    ring h produce by mine {\n        depth 2\n    }\n"
    peer = "    claim smem act_in bytes 1KiB per_slot h\n    ring h consume by peer {\n        full wait\n    }\n"
    for draft in (
        composed(mine=mine, peer=peer, ring_slots={("h", "act_in"): 44}),
        composed(peer="    ring h consume by peer {\n        full wait\n    }\n", ring_slots={("h", "act_in"): 44}),
    ):
        assert not any(isinstance(i, A.SmemClaim) for i in draft.stage.items)
        assert not any(k[0] == "claim smem" for k in draft.undecided_keys())
