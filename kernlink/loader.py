"""Gather a composition's inputs: the pipeline, the stage contracts and packages it uses.

Accepted inputs: one `.kp` pipeline (stages come from `.kc` files beside it, from
files named alongside, and from packages its `use … from` lines name), a directory
holding one `.kp`, or only `.kc` files (an implicit pipeline using every stage in
them). Every problem is a diagnostic; loading goes on so all of them are reported.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from checker.composition import StageEntry
from checker.resolve import implicit_pipeline
from contract_lang import ast as A
from contract_lang.parser import parse_file, parse_text
from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity
from diagnostics.sources import SourceMap
from diagnostics.span import Span


@dataclass
class Inputs:
    pipeline: A.Pipeline | None = None
    pipeline_source: str = ""
    candidates: list[StageEntry] = field(default_factory=list)
    sources: SourceMap = field(default_factory=SourceMap)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def fatal(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self.diagnostics)


class UsageError(ValueError):
    """The command line named inputs that cannot form a composition."""


def display_name(path: Path) -> str:
    """Paths in diagnostics: relative to the working directory when below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def load(paths: Sequence[str | Path]) -> Inputs:
    """Read every input; raises UsageError only for an impossible combination of paths."""
    inputs = Inputs()
    given = [Path(p) for p in paths]
    if not given:
        raise UsageError("no input files")
    expanded: list[Path] = []
    for path in given:
        if path.is_dir():
            pipelines = sorted(path.glob("*.kp"))
            expanded.extend(pipelines if pipelines else sorted(path.glob("*.kc")))
            if not pipelines and not list(path.glob("*.kc")):
                raise UsageError(f"`{path}` holds no `.kp` or `.kc` file")
        else:
            expanded.append(path)
    pipelines = [p for p in expanded if p.suffix == ".kp"]
    if len(pipelines) > 1:
        raise UsageError("give one pipeline (`.kp`) at a time")
    contracts = [p for p in expanded if p.suffix == ".kc"]
    packages = [p for p in expanded if p.suffix == ".kpkg"]
    other = [p for p in expanded if p.suffix not in (".kp", ".kc", ".kpkg")]
    if other:
        raise UsageError(f"`{other[0]}` is not a pipeline (.kp), contract (.kc) or package (.kpkg)")
    if pipelines:
        _load_pipeline(inputs, pipelines[0], contracts, packages)
    else:
        _load_contracts(inputs, contracts)
        for pkg in packages:
            _load_package(inputs, pkg, None)
        stages = [c.stage for c in inputs.candidates]
        if stages:
            first = expanded[0]
            name = display_name(first)
            inputs.pipeline = implicit_pipeline(stages, first.stem, Span(name, 1, 1, 1, 1))
            inputs.pipeline_source = name
    return inputs


def _parse_into(inputs: Inputs, path: Path) -> A.SourceFile | None:
    name = display_name(path)
    try:
        source, text = parse_file(path, display=name)
    except DiagnosticError as err:
        inputs.diagnostics.extend(err.diagnostics)
        with contextlib.suppress(OSError, UnicodeDecodeError):
            inputs.sources.add(name, path.read_text(encoding="utf-8"))
        return None
    inputs.sources.add(name, text)
    return source


def _load_contracts(inputs: Inputs, paths: Sequence[Path]) -> None:
    seen: set[Path] = set()
    for path in paths:
        key = path.resolve()
        if key in seen:
            continue
        seen.add(key)
        source = _parse_into(inputs, path)
        if source is not None:
            name = display_name(path)
            inputs.candidates.extend(StageEntry(s, name, None) for s in source.stages)


def _load_pipeline(inputs: Inputs, path: Path, contracts: Sequence[Path], packages: Sequence[Path]) -> None:
    source = _parse_into(inputs, path)
    beside = sorted(path.parent.glob("*.kc"))
    _load_contracts(inputs, [*contracts, *beside])
    if source is None or not source.pipelines:
        return
    pipeline = source.pipelines[0]
    inputs.pipeline = pipeline
    inputs.pipeline_source = display_name(path)
    named = {p.resolve() for p in packages}
    for pkg in packages:
        _load_package(inputs, pkg, None)
    for use in pipeline.uses:
        if use.path is None:
            continue
        pkg_path = (path.parent / use.path)
        if pkg_path.resolve() in named:
            continue
        if pkg_path.exists():
            named.add(pkg_path.resolve())
            _load_package(inputs, pkg_path, use)
        elif any(c.name == use.stage for c in inputs.candidates):
            inputs.diagnostics.append(Diagnostic(
                "I-NO-PACKAGE", f"package `{use.path}` is not built; `{use.stage}` was checked from its contract",
                severity=Severity.NOTE, labels=(Label(use.span, "package named here"),),
                notes=("symbols and params layouts are captured only when the package exists",),
                helps=(f"run `kernlink pack` to build `{use.path}`",)))


def _load_package(inputs: Inputs, path: Path, use: A.Use | None) -> None:
    from linker.manifest import read_stage_package

    name = display_name(path)
    try:
        loaded = read_stage_package(path)
    except DiagnosticError as err:
        inputs.diagnostics.extend(_at_use(d, use) for d in err.diagnostics)
        return
    contract_name = f"{name}!contract.kc"
    inputs.sources.add(contract_name, loaded.contract_text)
    if loaded.captured.ptx is not None:
        inputs.sources.add(f"{name}!code.ptx", loaded.captured.ptx)
    try:
        source = parse_text(loaded.contract_text, contract_name, "contract")
    except DiagnosticError as err:
        inputs.diagnostics.extend(err.diagnostics)
        return
    for stage in source.stages:
        inputs.candidates.append(StageEntry(stage, contract_name, use, package=name, captured=loaded.captured))


def _at_use(diag: Diagnostic, use: A.Use | None) -> Diagnostic:
    """A package's diagnostic pointed at the `use` line that names the package."""
    if diag.labels or use is None:
        return diag
    helps = diag.helps or (("rebuild the package with `kernlink pack`",) if diag.code == "L-INTEGRITY" else ())
    return replace(diag, labels=(Label(use.span, "package named here"),), helps=helps)
