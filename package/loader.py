"""Gather a composition's inputs: the pipeline, the stage contracts and packages it uses.

Accepted inputs: one `.kp` pipeline (stages come from `.kc` files beside it, from
files named alongside, and from packages its `use … from` lines name), a directory
holding one `.kp`, or only `.kc` files (an implicit pipeline using every stage in
them). Every problem is a diagnostic (a package that is not intact is a typed finding, in
``Inputs.unread``, that the check words); loading goes on so all of them are reported.

When a stage comes from a package (`use … from "x.kpkg"`, or a package on the command
line) and a `.kc` file also declares it, **the package's embedded contract wins**: its
object code was compiled against it. A `.kc` that says something else is reported as
``W-STALE-CONTRACT`` (a warning with both spans; an error with ``strict``). Likewise its code:
a package records the SHA-256 of the source it carries and of each local header; when the
file it was packed from (``<folder>/<source>`` for a package at ``<folder>/build/x.kpkg``,
else beside the package) or such a header says something else, ``W-STALE-SOURCE``.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from contract_lang import ast as A
from contract_lang.parser import FileKind, parse_text
from diagnostics.files import read_source
from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity
from diagnostics.sources import SourceMap
from diagnostics.span import Span
from diagnostics.symbols import Code
from package.captured import Captured
from package.integrity import IntegrityFinding, PackageDefect

# `stage "name"` at the start of a line: what a file that does not parse would have declared.
_STAGE_HEADER = re.compile(r'^\s*stage\s+"([^"\n]+)"', re.M)


@dataclass(frozen=True)
class StageEntry:
    """One stage of the composition, where it came from, and what its package captured."""

    stage: A.Stage
    source: str
    use: A.Use | None
    package: str | None = None
    captured: Captured | None = None

    @property
    def name(self) -> str:
        return self.stage.name


@dataclass
class Inputs:
    pipeline: A.Pipeline | None = None
    pipeline_source: str = ""
    candidates: list[StageEntry] = field(default_factory=list)
    sources: SourceMap = field(default_factory=SourceMap)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # stage name → the file meant to provide it that was not read: a contract that did not parse, or a
    # package refused (its syntax error or L-INTEGRITY finding is the root cause, never L-STAGE)
    unparsable: dict[str, str] = field(default_factory=dict)
    # packages that are not intact (L-INTEGRITY findings, worded by the check: checker/clauses/l_integrity.py)
    unread: list[Unread] = field(default_factory=list)
    # packages whose source or carried headers beside them were edited since they were packed
    stale_sources: list[StaleSource] = field(default_factory=list)

    @property
    def fatal(self) -> bool:
        return bool(self.unread) or any(d.severity is Severity.ERROR for d in self.diagnostics)


@dataclass(frozen=True)
class StaleSource:
    """A package whose packed source or headers differ from the files beside it (W-STALE-SOURCE)."""

    package: str
    files: tuple[str, ...]  # as displayed, the source first
    use: A.Use | None


@dataclass(frozen=True)
class Unread:
    """A package left out because it is not intact: the finding, and the `use` line that names the package."""

    finding: IntegrityFinding
    use: A.Use | None


class UsageError(ValueError):
    """The command line named inputs that cannot form a composition."""


def implicit_pipeline(stages: Sequence[A.Stage], name: str, span: Span) -> A.Pipeline:
    """The pipeline a bare contract file stands for: every stage it holds, at its version."""
    items: list[A.PipelineItem] = []
    first_target = next((s.target for s in stages if s.target is not None), None)
    if first_target is not None:
        items.append(A.Target(first_target.name, span=first_target.span))
    items.extend(A.Use(s.name, f"={s.version}", span=s.span) for s in stages)
    return A.Pipeline(name, tuple(items), span=span)


def display_name(path: Path) -> str:
    """Paths in diagnostics: relative to the working directory when below it."""
    try:
        return str(Path(os.path.realpath(path)).relative_to(os.path.realpath(Path.cwd())))
    except ValueError:
        return str(path)


def load(paths: Sequence[str | Path], *, strict: bool = False) -> Inputs:
    """Read every input; raises UsageError only for an impossible combination of paths.

    ``strict`` makes a stale contract (``W-STALE-CONTRACT``) an error.
    """
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
    inputs.diagnostics.extend(stale_contracts(inputs.candidates, strict=strict))
    inputs.diagnostics.extend(_stale_source(s, strict) for s in inputs.stale_sources)
    return inputs


def stale_contracts(candidates: Sequence[StageEntry], *, strict: bool = False) -> list[Diagnostic]:
    """A `.kc` stage that differs from the contract a package embeds for the same stage."""
    out: list[Diagnostic] = []
    files = [c for c in candidates if c.package is None]
    for pkg in (c for c in candidates if c.package is not None):
        for kc in (c for c in files if c.name == pkg.name and c.stage != pkg.stage):
            out.append(_stale(kc, pkg, strict))
    return out


def _stale(kc: StageEntry, pkg: StageEntry, strict: bool) -> Diagnostic:
    ours = [it for it in kc.stage.items]
    theirs = [it for it in pkg.stage.items]
    first = next((a for a, b in zip(ours, theirs, strict=False) if a != b), None)
    if first is None and len(ours) > len(theirs):
        first = ours[len(theirs)]
    if kc.stage.version != pkg.stage.version:
        where, text = kc.stage.span, f"version {kc.stage.version} here, {pkg.stage.version} in the package"
    elif first is not None:
        where, text = first.span, "differs from the packaged contract from here"
    else:
        where, text = kc.stage.span, "the packaged contract has items this one lacks"
    package = pkg.package or "the package"
    secondary = Label(
        pkg.use.span if pkg.use is not None else pkg.stage.span, "the package checked instead", primary=False
    )
    return Diagnostic(
        Code.W_STALE_CONTRACT,
        f"`{kc.source}` differs from the contract packed in `{package}` for stage `{kc.name}`",
        severity=Severity.ERROR if strict else Severity.WARNING,
        labels=(Label(where, text), secondary, Label(pkg.stage.span, "the contract in the package", primary=False)),
        notes=(
            "the package's contract is the one checked and linked: its object code was compiled against it; "
            "this file is ignored",
        ),
        helps=(
            f"repack the component with this contract (`kernlink pack <source>.cu --contract {kc.source} "
            f"-o {package}`), or revert the edit",
        ),
        data=(("stage", kc.name), ("file", kc.source), ("package", package)),
    )


_HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".inc")


def edited_sources(path: Path, manifest: Mapping[str, Any]) -> tuple[Path, ...]:
    """The files a package was packed from that now differ from the copies it carries: its source
    (``compile.source``, in the folder above ``build/`` or beside the package) and each carried
    local header there. Files that are absent or unreadable are not compared."""
    info = manifest.get("compile")
    name = info.get("source") if isinstance(info, Mapping) else None
    entries = manifest.get("payloads")
    recorded = {
        e["name"]: e["sha256"]
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, Mapping) and isinstance(e.get("name"), str) and isinstance(e.get("sha256"), str)
    }
    from package.manifest import SOURCE_PAYLOAD

    if not isinstance(name, str) or not name or Path(name).name != name or SOURCE_PAYLOAD not in recorded:
        return ()  # a binary-only package, or one that names no plain source file
    folder = path.parent.parent if path.parent.name == "build" else path.parent
    pairs = [(name, SOURCE_PAYLOAD), *((h, h) for h in sorted(recorded) if h.endswith(_HEADER_SUFFIXES))]
    edited: list[Path] = []
    for file, payload in pairs:
        try:
            with open(folder / file, "rb") as f:
                if hashlib.file_digest(f, "sha256").hexdigest() != recorded[payload]:
                    edited.append(folder / file)
        except OSError:
            continue
    return tuple(edited)


def _stale_source(found: StaleSource, strict: bool) -> Diagnostic:
    named = [f"`{f}`" for f in found.files]
    listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
    labels = [Label(Span(found.files[0], 1, 1, 1, 1), "edited since it was packed")]
    if found.use is not None:
        labels.append(Label(found.use.span, "the package checked instead", primary=False))
    return Diagnostic(
        Code.W_STALE_SOURCE,
        f"{listed} {'differs' if len(named) == 1 else 'differ'} from the copy packed in `{found.package}`",
        severity=Severity.ERROR if strict else Severity.WARNING,
        labels=tuple(labels),
        notes=("the package's code is the one checked and linked; the edit is ignored",),
        helps=(
            f"repack the component (`kernlink build`, or `kernlink pack {found.files[0]} --contract <stage>.kc "
            f"-o {found.package}`), or revert the edit",
        ),
        data=(("package", found.package), ("files", ", ".join(found.files))),
    )


def _parse_into(inputs: Inputs, path: Path) -> A.SourceFile | None:
    name = display_name(path)
    try:  # read once (a regular file, capped): diagnostics quote this text, never a re-read
        text = read_source(path, display=name)
    except DiagnosticError as err:
        inputs.diagnostics.extend(err.diagnostics)
        return None
    inputs.sources.add(name, text)
    kind: FileKind = "contract" if path.suffix == ".kc" else "pipeline" if path.suffix == ".kp" else "any"
    try:
        return parse_text(text, name, kind)
    except DiagnosticError as err:
        inputs.diagnostics.extend(err.diagnostics)
        for stage in _STAGE_HEADER.findall(text):  # a stage that does not parse is not `missing`
            inputs.unparsable.setdefault(stage, name)
        return None


def _key(path: Path) -> str:
    """A path's identity for de-duplication; a symlink loop resolves no further (never raises)."""
    return os.path.realpath(path)


def _load_contracts(inputs: Inputs, paths: Sequence[Path]) -> None:
    seen: set[str] = set()
    for path in paths:
        key = _key(path)
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
    named = {_key(p) for p in packages}
    for pkg in packages:
        _load_package(inputs, pkg, None)
    for use in pipeline.uses:
        if use.path is None:
            continue
        pkg_path = path.parent / use.path
        if _key(pkg_path) in named:
            continue
        if os.path.lexists(pkg_path):
            named.add(_key(pkg_path))
            _load_package(inputs, pkg_path, use)
        elif any(c.name == use.stage for c in inputs.candidates):
            inputs.diagnostics.append(
                Diagnostic(
                    Code.I_NO_PACKAGE,
                    f"package `{use.path}` is not built; `{use.stage}` was checked from its contract",
                    severity=Severity.NOTE,
                    labels=(Label(use.span, "package named here"),),
                    notes=("symbols and params layouts are captured only when the package exists",),
                    helps=(f"run `kernlink pack` to build `{use.path}`",),
                )
            )


def _hides(inputs: Inputs, use: A.Use | None, name: str) -> None:
    """A refused package hides the stage its `use` names: that use is unresolved because of the refusal."""
    if use is not None:
        inputs.unparsable.setdefault(use.stage, name)


def _load_package(inputs: Inputs, path: Path, use: A.Use | None) -> None:
    from package.manifest import read_stage_package

    name = display_name(path)
    try:
        loaded = read_stage_package(path)
    except PackageDefect as err:
        inputs.unread.append(Unread(err.finding, use))
        _hides(inputs, use, name)
        return
    except DiagnosticError as err:
        inputs.diagnostics.extend(_at_use(d, use) for d in err.diagnostics)
        _hides(inputs, use, name)
        return
    edited = edited_sources(path, loaded.manifest)
    if edited:
        inputs.stale_sources.append(StaleSource(name, tuple(display_name(f) for f in edited), use))
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
    return replace(diag, labels=(Label(use.span, "package named here"),))
