"""Fixture runner for clause folders: `tests/checker/clauses/<CODE>/fail_*` and `pass_*`.

A fixture is a `.kc` file (an implicit pipeline of its stages) or a folder with one
`.kp` and the `.kc` files (or `.kpkg` packages) it uses. A failing fixture must
trigger its clause and no other error; its rendered text is compared with
`<fixture>.stderr` (`pytest --update-snapshots` rewrites snapshots). A passing
fixture has no error.

Two extensions serve the clauses decided from compiled artifacts:

- a fixture folder may hold `captured/<stage>.json`: what `kernlink pack` would have
  captured for that stage (the manifest's `captured` object: `defined`, `needed`,
  `params`, optional `prototypes`); the stage checked from its `.kc` is given these
  facts, as if it came from a package (L-SYMBOL, L-HANDLE); with `captured/<stage>.cu` beside
  it, that source is compiled to PTX (as `kernlink pack` does) for L-CONFORM;
- fixtures of a clause decided by the link (L-LINK) are linked, not only checked:
  their pipelines name committed packages, and the output goes to a temporary folder.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from analysis.pipeline import AnalysisContext, analyse
from checker.clauses import CLAUSES
from checker.conformance import ptx_display
from diagnostics.render_text import render_text
from kernlink.api import CheckResult, LinkResult, check, link
from package.loader import load
from package.manifest import captured_from_json
from toolchain.symbols import compile_ptx

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


def run(fixture: Fixture) -> tuple[CheckResult | LinkResult, str]:
    old = Path.cwd()
    os.chdir(fixture.path.parent)
    try:
        result: CheckResult | LinkResult
        if next(c for c in CLAUSES if c.code == fixture.code).decided_by == "link":
            with tempfile.TemporaryDirectory(prefix="kernlink-fixture-") as out:
                result = link([fixture.path.name], out)
        elif (fixture.path / "captured").is_dir():
            result = check_captured(fixture.path)
        else:
            result = check([fixture.path.name])
        text = render_text(result.diagnostics, result.sources, color=False)
    finally:
        os.chdir(old)
    return result, text


def check_captured(folder: Path, ctx: AnalysisContext | None = None) -> CheckResult:
    """``check`` (the one pipeline) with each stage given the facts in ``captured/<stage>.json``."""
    facts = {
        p.stem: captured_from_json(json.loads(p.read_text()), toolkit="nvrtc 13.0", target="sm_90a")
        for p in sorted((folder / "captured").glob("*.json"))
    }
    for source in sorted((folder / "captured").glob("*.cu")):  # L-CONFORM: the stage's code, compiled here
        ptx = compile_ptx(source.read_text(), source.name, arch="sm_90a", extra_options=("-lineinfo",))
        facts[source.stem] = dataclasses.replace(facts[source.stem], ptx=ptx)
    inputs = load([folder.name])
    inputs.candidates = [dataclasses.replace(c, captured=facts.get(c.name, c.captured)) for c in inputs.candidates]
    for c in inputs.candidates:
        if c.captured is not None and c.captured.ptx is not None:
            inputs.sources.add(ptx_display(c.source), c.captured.ptx)
    assert inputs.pipeline is not None
    return analyse(inputs, ctx)
