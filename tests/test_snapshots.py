"""The snapshot rule itself: a missing snapshot fails, a different one fails, only the flag writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import snapshots


def test_missing_snapshot_fails_and_is_not_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNLINK_UPDATE_SNAPSHOTS", raising=False)
    monkeypatch.setitem(snapshots._FLAG, "update", False)
    path = tmp_path / "new.txt"
    with pytest.raises(AssertionError, match="no snapshot"):
        snapshots.assert_text_snapshot(path, "text")
    assert not path.exists()


def test_different_snapshot_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNLINK_UPDATE_SNAPSHOTS", raising=False)
    monkeypatch.setitem(snapshots._FLAG, "update", False)
    path = tmp_path / "old.bin"
    path.write_bytes(b"old")
    with pytest.raises(AssertionError, match="stale"):
        snapshots.assert_bytes_snapshot(path, b"new")
    assert path.read_bytes() == b"old"


def test_update_flag_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(snapshots._FLAG, "update", True)
    path = tmp_path / "sub" / "new.txt"
    snapshots.assert_text_snapshot(path, "text")
    assert path.read_text() == "text"
