"""Two-sided contracts: does a component's compiled code keep its own contract?

``kernlink pack`` compiles each component to PTX beside its LTO IR (same front end
and flags, plus ``-lineinfo``); the PTX is stored in the package (payload
``code.ptx``) and analysed here:

1. :mod:`.ptx` reads the module (functions, instructions, ``.shared`` declarations);
2. :mod:`.values` classifies every register — constant, from a handle, params load,
   arithmetic on them, or unknown — by a flow-insensitive fixed point;
3. :mod:`.facts` lists what the checks read (barriers, mbarrier inits, expect-tx and
   copy sizes, setmaxnreg, shared-memory addresses, atomics, fences, proxies, launch
   directives, tensor-memory allocations, absolute thread indexing): contract-free,
   recorded in the manifest (``conformance``) and derived again from the payload;
4. :mod:`.checks` judges the facts against the stage's contract.

Each violation is an ``L-CONFORM`` diagnostic with two sides: the contract line and
the PTX line (and the CUDA line where ``-lineinfo`` gives it). What the analysis
cannot decide is an ``I-CONFORM`` note naming the instruction (an error under
``--strict``): unknown is never a pass. This package reads the PTX text it is given;
it does not compile (the layering keeps the checker below the linker).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from checker.conformance.checks import CHECKS, Finding, check
from contract_lang import ast as A
from diagnostics.model import Diagnostic, Label, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code
from package.codefacts import FACTS_VERSION, MANIFEST_KEY, PTX_PAYLOAD, CodeFacts, Fact, derive, recorded

CODE = Code.L_CONFORM
NOTE_CODE = Code.I_CONFORM


def ptx_display(package: str) -> str:
    """How a package's PTX payload is named in diagnostics (and in the source map)."""
    return f"{package}!{PTX_PAYLOAD}"


def source_display(package: str) -> str:
    """How a package's CUDA source payload is named in diagnostics (and in the source map)."""
    return f"{package}!source.cu"


def diagnostics(
    stage: A.Stage,
    code: CodeFacts,
    *,
    ptx_name: str,
    source_name: str | None,
    ptx_text: str | None = None,
    strict: bool = False,
    severity: Severity = Severity.ERROR,
) -> list[Diagnostic]:
    """The findings of :func:`check` as diagnostics (``severity`` for violations; notes are errors if ``strict``)."""
    lines = ptx_text.split("\n") if ptx_text is not None else None
    return [_diagnostic(f, ptx_name, source_name, lines, strict, severity) for f in check(stage, code)]


def _diagnostic(
    f: Finding, ptx_name: str, source_name: str | None, lines: list[str] | None, strict: bool, severity: Severity
) -> Diagnostic:
    labels: list[Label] = []
    if f.node is not None and f.node.span.line > 0:
        labels.append(Label(f.node.span, f.contract_text))
    width = len(lines[f.fact.line - 1]) if lines and 0 < f.fact.line <= len(lines) else 1
    labels.append(
        Label(Span(ptx_name, f.fact.line, 1, f.fact.line, max(width, 1) + 1), f.code_text, primary=not labels)
    )
    notes: list[str] = []
    if f.fact.src is not None and source_name is not None:
        file, line = f.fact.src
        own = file in ("#1", source_name.rsplit("!", 1)[-1].rsplit("/", 1)[-1])
        if own and line > 0:
            labels.append(Label(Span(source_name, line, 1, line, 2), "the CUDA line", primary=False))
        else:
            notes.append(f"CUDA source: {file}:{line}")
    undecided = f.severity == "note"
    if undecided:
        notes.append("the conformance analysis could not decide this site; it is not a pass")
    code = CODE if not undecided or strict else NOTE_CODE
    sev = severity if not undecided else (Severity.ERROR if strict else Severity.NOTE)
    return Diagnostic(
        code,
        f.message,
        severity=sev,
        labels=tuple(labels),
        notes=tuple(notes),
        helps=(f.help,) if f.help else (),
        data=(
            ("check", f.check),
            ("function", f.fact.function),
            ("ptx_line", str(f.fact.line)),
            ("instruction", f.fact.opcode),
        ),
    )


def strict(diags: Sequence[Diagnostic]) -> list[Diagnostic]:
    """``--strict``: every undecided site (``I-CONFORM``) becomes an ``L-CONFORM`` error."""
    return [dataclasses.replace(d, code=CODE, severity=Severity.ERROR) if d.code == NOTE_CODE else d for d in diags]


__all__ = [
    "CHECKS",
    "CODE",
    "FACTS_VERSION",
    "MANIFEST_KEY",
    "NOTE_CODE",
    "PTX_PAYLOAD",
    "CodeFacts",
    "Fact",
    "Finding",
    "check",
    "derive",
    "diagnostics",
    "ptx_display",
    "recorded",
    "source_display",
    "strict",
]
