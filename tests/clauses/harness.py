"""Fixture runner for clause folders: `tests/clauses/<CODE>/fail_*` and `pass_*`.

A fixture is a `.kc` file (an implicit pipeline of its stages) or a folder with one
`.kp` and the `.kc` files it uses. A failing fixture must trigger its clause and no
other error; its rendered text is compared with `<fixture>.stderr` (set
KERNLINK_UPDATE_SNAPSHOTS=1 to rewrite snapshots). A passing fixture has no error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from diagnostics.render_text import render_text
from kernlink.api import CheckResult, check

ROOT = Path(__file__).parent


@dataclass(frozen=True)
class Fixture:
    code: str
    path: Path

    @property
    def failing(self) -> bool:
        return self.path.name.startswith("fail_")

    @property
    def snapshot(self) -> Path:
        stem = self.path.name if self.path.is_dir() else self.path.stem
        return self.path.parent / f"{stem}.stderr"

    def __str__(self) -> str:
        return f"{self.code}/{self.path.name}"


def fixtures() -> list[Fixture]:
    found = []
    for folder in sorted(p for p in ROOT.iterdir() if p.is_dir() and p.name.startswith("L-")):
        for entry in sorted(folder.iterdir()):
            if entry.name.startswith(("fail_", "pass_")) and (entry.is_dir() or entry.suffix == ".kc"):
                found.append(Fixture(folder.name, entry))
    return found


def run(fixture: Fixture) -> tuple[CheckResult, str]:
    old = Path.cwd()
    os.chdir(fixture.path.parent)
    try:
        result = check([fixture.path.name])
        text = render_text(result.diagnostics, result.sources, color=False)
    finally:
        os.chdir(old)
    return result, text


def update_snapshots() -> bool:
    return os.environ.get("KERNLINK_UPDATE_SNAPSHOTS") == "1"
