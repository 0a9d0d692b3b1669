"""The runtime's public entry points stay reachable from ``kernlink`` without importing CUDA eagerly."""

from __future__ import annotations

import pytest

import kernlink


def test_session_and_run_linked_are_the_runtimes() -> None:
    from runtime.run import run_linked
    from runtime.session import Session

    assert kernlink.Session is Session
    assert kernlink.run_linked is run_linked


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        _ = kernlink.launch
