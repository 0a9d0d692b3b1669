"""A callable's register fragment against its caller's (transfer_model.fragments): register for register.

The clause fixtures (tests/checker/clauses/L-ROUTE, L-TENSOR, L-MAP ``*fragment*``) pin the
diagnostics; this property pins the decision: a fragment read through any affine permutation of
the caller's threads and registers is refused unless the permutation is the identity.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contract_lang import ast as A
from contract_lang.parser import parse_text
from kernlink.api import check
from tests.tiers import examples
from transfer_model import fragments
from transfer_model.fragments import prove
from transfer_model.primitives import Seam
from transfer_model.tensors import TensorExport, TensorImport

_WGMMA = A.LibraryMap("wgmma_m64nNk16_f32", (("n", 128), ("warpgroups", 1)))
_TILE = (A.Dim("m", 64), A.Dim("n", 128))
_FIXTURES = Path(__file__).resolve().parents[1] / "checker" / "clauses" / "L-ROUTE"


def _demand(thread: str, register: str) -> A.LayoutMap:
    """wgmma's m64n128 accumulator map read at thread ``thread`` and register ``register``."""
    body = (
        f"m = 16 * (({thread}) / 32) + (({thread}) % 32) / 4 + 8 * ((({register}) / 2) % 2)\n"
        f"n = 8 * (({register}) / 4) + 2 * (({thread}) % 4) + ({register}) % 2"
    )
    text = (
        'stage "s" version "1" {\n    import tensor acc into callable f {\n'
        f"        demand regs(t: 128, p: 64) -> (m, n) {{\n{body}\n        }}\n    }}\n}}\n"
    )
    (item,) = parse_text(text, "<demand>", "contract").stages[0].items
    assert isinstance(item, A.Fragment) and isinstance(item.map, A.LayoutMap)
    return item.map


def _codes(demand: A.MapSpec) -> list[str]:
    passed = A.Fragment("acc", "f", "export", "f32", _TILE, _WGMMA)
    taken = A.Fragment("acc", "f", "import", "f32", _TILE, demand)
    return [d.code for d in prove(passed, taken)]


def test_the_same_map_written_out_is_accepted() -> None:
    assert _codes(_demand("t", "p")) == []
    assert _codes(_WGMMA) == []


@examples(0.2)
@given(
    st.sampled_from((1, 3, 5, 127)),
    st.integers(0, 127),
    st.sampled_from((1, 3, 7, 63)),
    st.integers(0, 63),
)
def test_a_permuted_fragment_is_refused_unless_it_is_the_identity(c: int, d: int, a: int, b: int) -> None:
    """Thread ``(c t + d) % 128`` and register ``(a p + b) % 64`` (odd ``a``, ``c``: permutations)."""
    codes = _codes(_demand(f"({c} * t + {d}) % 128", f"({a} * p + {b}) % 64"))
    assert codes == ([] if (c, d, a, b) == (1, 0, 1, 0) else ["L-ROUTE"])


class _Starved(Seam):
    """A seam whose register-for-register query has a solver budget of 1: Z3 gives up on it."""

    def __init__(self, export: TensorExport, imp: TensorImport, rlimit: int = 0) -> None:
        super().__init__(export, imp, 1)


def test_an_undecided_pair_is_solver_unknown_on_both_lines_never_a_refutation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The L-ROUTE fixture that passes, its pair query starved: E-SOLVER-UNKNOWN of L-ROUTE (an error,
    so `check` does not accept), labelled on the demand and the placement, worded as undecided."""
    monkeypatch.setattr(fragments, "Seam", _Starved)
    monkeypatch.chdir(_FIXTURES)
    result = check(["pass_fragment.kc"])
    (only,) = [d for d in result.diagnostics if d.is_error]
    assert (only.code, dict(only.data)["clause"]) == ("E-SOLVER-UNKNOWN", "L-ROUTE")
    assert only.message == (
        "fragment `acc` passed to `swiglu_regs`: the solver could not decide whether every register arrives where "
        "the callable reads it"
    )
    assert "reads element" not in only.message and not any("caller holds" in n for n in only.notes)
    assert [(lab.span.line, lab.primary) for lab in only.labels] == [(9, True), (24, False)]
    assert not result.accepted
    text = (_FIXTURES / "pass_fragment.kc").read_text().splitlines()
    assert "demand" in text[8] and "placement" in text[23]


def test_the_same_pair_with_its_budget_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_FIXTURES)
    assert check(["pass_fragment.kc"]).accepted
