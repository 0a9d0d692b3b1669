"""Every clause fixture: failing ones trigger exactly their clause, passing ones are clean."""

from __future__ import annotations

import pytest

from tests.clauses.harness import Fixture, fixtures, run, update_snapshots


@pytest.mark.parametrize("fixture", fixtures(), ids=str)
def test_fixture(fixture: Fixture) -> None:
    result, text = run(fixture)
    error_codes = sorted({d.code for d in result.diagnostics if d.is_error})
    if not fixture.failing:
        assert error_codes == [], text
        return
    assert error_codes == [fixture.code], text
    if update_snapshots() or not fixture.snapshot.exists():
        fixture.snapshot.write_text(text)
    assert fixture.snapshot.read_text() == text
