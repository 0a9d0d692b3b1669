"""The one snapshot rule: a missing or different snapshot fails; only ``--update-snapshots`` writes.

``pytest --update-snapshots`` (or ``KERNLINK_UPDATE_SNAPSHOTS=1`` where a flag cannot be
passed, e.g. a test run from a script) rewrites every snapshot a test compares; read the diff
before committing it. A snapshot never creates itself.
"""

from __future__ import annotations

import os
from pathlib import Path

_FLAG = {"update": False}


def set_update(value: bool) -> None:
    """Called once by tests/conftest.py from the command-line flag."""
    _FLAG["update"] = value


def updating() -> bool:
    return _FLAG["update"] or os.environ.get("KERNLINK_UPDATE_SNAPSHOTS") == "1"


def _missing(path: Path) -> str:
    return f"no snapshot {path.name}: run pytest --update-snapshots and read what it wrote"


def assert_text_snapshot(path: Path, actual: str) -> None:
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), _missing(path)
    assert path.read_text(encoding="utf-8") == actual, f"{path.name} differs (pytest --update-snapshots rewrites it)"


def assert_bytes_snapshot(path: Path, actual: bytes) -> None:
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(actual)
    assert path.exists(), _missing(path)
    assert path.read_bytes() == actual, f"{path.name} is stale (pytest --update-snapshots rewrites it)"


def stable_link_map(link_map: str) -> str:
    """The map without what names the toolkit's bytes (package and cubin hashes, sizes of LTO IR)."""
    keep = []
    section = ""
    for line in link_map.splitlines():
        if line and not line.startswith(" ") and not line.startswith("#"):
            section = line.split()[0]
        if section == "inputs" and line.startswith(" "):
            continue
        if line.startswith("# toolkit") or "sha256" in line:
            continue
        keep.append(line)
    return "\n".join(keep) + "\n"
