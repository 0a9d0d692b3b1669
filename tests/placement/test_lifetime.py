"""The lifetime rule: which claims may share storage."""

from __future__ import annotations

import pytest

from placement import KERNEL, Connection, Interval, Phase, Timeline

TL = Timeline(
    phases=("attn", "mlp", "norm"),
    exclusive=(("attn", "mlp"),),
    connections=(Connection("acc", ("ready", "done")), Connection("o", ("ready", "done"))),
)
UNTIL_READY = Interval("acc", None, "ready")
BETWEEN = Interval("acc", "ready", "done")
FROM_READY = Interval("acc", "ready", None)
FROM_DONE = Interval("acc", "done", None)


@pytest.mark.parametrize(
    ("a", "b", "co_live"),
    [
        (KERNEL, KERNEL, True),
        (KERNEL, Phase("attn"), True),
        (KERNEL, BETWEEN, True),
        (Phase("attn"), Phase("attn"), True),
        (Phase("attn"), Phase("mlp"), False),
        (Phase("attn"), Phase("norm"), True),
        (UNTIL_READY, BETWEEN, False),
        (UNTIL_READY, FROM_READY, False),
        (BETWEEN, FROM_DONE, False),
        (BETWEEN, FROM_READY, True),
        (UNTIL_READY, UNTIL_READY, True),
        (UNTIL_READY, Interval("o", "ready", "done"), True),
        (Phase("attn"), BETWEEN, True),
    ],
)
def test_co_live_rule(a, b, co_live):  # type: ignore[no-untyped-def]
    assert TL.co_live(a, b) is co_live
    assert TL.co_live(b, a) is co_live
    reason = TL.disjoint_reason(a, b)
    assert (reason is None) is co_live
    if co_live:
        assert TL.co_live_reason(a, b)


def test_reasons_read_well() -> None:
    assert TL.disjoint_reason(Phase("attn"), Phase("mlp")) == "phases `attn` and `mlp` are exclusive"
    assert (
        TL.disjoint_reason(BETWEEN, UNTIL_READY) == "`until acc.ready` ends before `between acc.ready acc.done` starts"
    )
    assert TL.co_live_reason(Phase("attn"), Phase("norm")) == "phases `attn` and `norm` are not declared exclusive"


@pytest.mark.parametrize(
    "bad",
    [
        Phase("nope"),
        Interval("zz", None, "ready"),
        Interval("acc", "done", "ready"),
        Interval("acc", "ready", "ready"),
        Interval("acc", "never", None),
    ],
)
def test_invalid_lifetimes_are_rejected(bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        TL.validate(bad)


def test_timeline_invariants() -> None:
    with pytest.raises(ValueError):
        Timeline(phases=("a",), exclusive=(("a", "b"),))
    with pytest.raises(ValueError):
        Timeline(phases=("a", "a"))
    with pytest.raises(ValueError):
        Connection("acc", ("ready", "ready"))
    with pytest.raises(ValueError):
        Interval("acc", None, None)


def test_texts() -> None:
    assert KERNEL.text() == "kernel"
    assert UNTIL_READY.text() == "until acc.ready"
    assert FROM_DONE.text() == "from acc.done"
    assert BETWEEN.text() == "between acc.ready acc.done"
