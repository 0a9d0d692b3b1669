"""The mutation catalogue: every kind is reachable, every edit changes exactly what it says."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from contract_lang import ast as A
from contract_lang.parser import parse_text
from fuzzing.compositions.bundle import Bundle
from fuzzing.compositions.catalogue import MUTATION_KINDS, edits
from fuzzing.compositions.draw import mutations
from fuzzing.compositions.edit import Mutation
from fuzzing.subject import load_subject
from tests.properties.helpers import costly

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"
BLACKWELL = """
stage "bw.mma" version "1.0.0" {
    target sm_100a
    requires feature tmem, tcgen05
    role mma entry mma_main warps 4 warpgroup
    cluster 1x1x1, 2x1x1
    claim tmem acc columns 256
}

pipeline "bw" {
    target sm_100a
    use "bw.mma" version ^1.0
    cluster 2x1x1
}
"""


@cache
def _bundles() -> tuple[Bundle, ...]:
    """The reference compositions and a Blackwell one (tensor memory, clusters)."""
    found = [load_subject([str(p)]).bundle for p in sorted(EXAMPLES.glob("*/*.kp"))]
    return (*found, Bundle.of(parse_text(BLACKWELL, "bw.kc").items))


def test_every_kind_is_reachable() -> None:
    kinds = {e.kind for bundle in _bundles() for e in edits(bundle)}
    assert kinds == set(MUTATION_KINDS), set(MUTATION_KINDS) - kinds


def test_every_edit_changes_the_composition_and_says_where() -> None:
    for bundle in _bundles():
        for edit in edits(bundle):
            assert edit.kind in MUTATION_KINDS
            mutant = Mutation((edit,)).apply(bundle)
            assert mutant != bundle, edit
            unit = bundle.units[edit.unit]
            assert f"`{unit.name}`" in edit.describe(bundle)
            changed = [u for u, (a, b) in enumerate(zip(bundle.units, mutant.units, strict=True)) if a != b]
            assert changed == [edit.unit], edit


def test_later_edits_of_one_line_win_and_drops_keep_indices() -> None:
    bundle = _bundles()[-1]
    claim = next(i for i, it in enumerate(bundle.stages[0].items) if isinstance(it, A.TmemClaim))
    sizes = [e for e in edits(bundle) if e.kind == "tmem-columns" and e.index == claim]
    assert len(sizes) >= 2
    both = Mutation((sizes[0], sizes[1])).apply(bundle)
    assert both == Mutation((sizes[1],)).apply(bundle)


@costly(3)
@given(st.data())
def test_drawn_mutations_print_and_parse_back(data: st.DataObject) -> None:
    bundle = data.draw(st.sampled_from(_bundles()))
    mutation = data.draw(mutations(bundle, max_edits=3))
    mutant = mutation.apply(bundle)
    assert parse_text(mutant.text(), "<mutant>").items == mutant.units
    assert len({(e.unit, e.index) for e in mutation.edits}) == len(mutation.edits)
