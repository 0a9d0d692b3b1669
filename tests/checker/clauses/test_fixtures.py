"""Every clause fixture: failing ones trigger exactly their clause, passing ones are clean."""

from __future__ import annotations

import pytest

from tests.checker.clauses.harness import Fixture, fixtures, run
from tests.snapshots import assert_text_snapshot


@pytest.mark.parametrize("fixture", fixtures(), ids=str)
def test_fixture(fixture: Fixture) -> None:
    result, text = run(fixture)
    error_codes = sorted({d.code for d in result.diagnostics if d.is_error})
    if not fixture.failing:
        assert error_codes == [], text
        return
    assert error_codes == [fixture.code], text
    assert_text_snapshot(fixture.snapshot, text)
