"""Assumers pin the value of a fact its owner states as a range or set (issue 27; checker/pins.py).

Property: for any owner values and any assumers, the composition is free of L-FACT exactly when
every assumer assumes one value the owner allows, with one L-FACT per assumer that is not a
member or disagrees with the first member assumed; and `requires fact` (L-ASSUME) is decided at
the pinned value when there is one, over every owner value otherwise.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kernlink.api import check_text
from tests.tiers import examples


def _composition(owned: str, assumed: list[int], bound: int) -> str:
    stages = [
        f'stage "demo.owner" version "1.0.0" {{\n    target sm_90a\n    owns fact block_n: u32 {owned}\n}}\n',
        f'stage "demo.limit" version "1.0.0" {{\n    target sm_90a\n    requires fact block_n <= {bound}\n}}\n',
    ]
    stages += [
        f'stage "demo.user{i}" version "1.0.0" {{\n    target sm_90a\n    assumes fact block_n: u32 == {v}\n}}\n'
        for i, v in enumerate(assumed)
    ]
    return "\n".join(stages)


@st.composite
def _owner(draw: st.DrawFn) -> tuple[str, tuple[int, ...]]:
    if draw(st.booleans()):
        lo = draw(st.integers(0, 300))
        hi = draw(st.integers(lo, lo + 300))
        return f"in {lo}..{hi}", tuple(range(lo, hi + 1))
    members = sorted(set(draw(st.lists(st.sampled_from((64, 96, 128, 192, 256)), min_size=2, max_size=4))))
    if len(members) < 2:
        members = [64, 256]
    return "in {" + ", ".join(map(str, members)) + "}", tuple(members)


@examples(0.3)
@given(_owner(), st.lists(st.sampled_from((0, 64, 96, 128, 150, 192, 256, 400)), max_size=3), st.integers(0, 400))
def test_assumers_pin_a_member_or_are_l_fact(
    owner: tuple[str, tuple[int, ...]], assumed: list[int], bound: int
) -> None:
    owned, allowed = owner
    result = check_text(_composition(owned, assumed, bound), "pins.kc")
    codes = [d.code for d in result.diagnostics if d.severity.value == "error"]
    members = [v for v in assumed if v in allowed]
    expected_fact = sum(1 for v in assumed if v not in allowed) + sum(1 for v in members if v != members[0])
    assert codes.count("L-FACT") == expected_fact, [d.message for d in result.diagnostics]
    pinned = len(set(assumed)) == 1 and members == assumed and assumed
    values = (assumed[0],) if pinned else allowed
    assert ("L-ASSUME" in codes) == any(v > bound for v in values), [d.message for d in result.diagnostics]
