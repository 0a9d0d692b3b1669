"""L-INTEGRITY: a package's payload does not match its manifest's hash, or its manifest is malformed.

## What it checks
Decided when a package is read, before any clause runs (`package/kpkg.py` and
`package/manifest.py`; the format is specs/package-format.md). A `.kpkg` is rejected
when:

- it does not start with the package magic, or has a format version this kernlink
  does not read;
- it is truncated: the header, the manifest, its hash or a payload ends past the
  end of the file, or bytes follow the last payload;
- the manifest's SHA-256 does not match the manifest, or the manifest is not
  canonical JSON (sorted keys, no blanks, no duplicate keys);
- a payload's SHA-256 or size disagrees with its manifest entry, a payload name is
  not a plain file name, or the payloads are not sorted;
- a required manifest key (`stage`, `version`, `target`, `contract`, `toolkit`,
  `captured`) is missing or of the wrong type, the `lto.ir` payload is missing, or
  `captured` is malformed;
- `compile.options` records an option kernlink would not replay when it rebuilds the
  source: only `-D`, `-I` within the package, `-std`, `-arch` and kernlink's own
  code-generation flags are (an option that names a file the compiler writes, such as
  `--create-pch=F`, would let a package write the user's files).

The clause's own check reports nothing: the readers raise each defect as a typed finding
(`package/integrity.py`), the check words it here, and the package's stage is then
resolved as if the package were absent.

The same code refuses a link output directory whose `kernel.cubin` is not the one
its `link.json` records (size and SHA-256), or whose manifest records no hash:
`kernlink run` and every load of a linked kernel check it before a launch
(`linker/outdir.py`). So it does a host provider's C source that is not the one
`link.json` records: `kernlink.Session` compiles a provider only after checking it.
The binding (`packing/binding.py`, at every link, and at check with `--strict` or
`--require-binding`) reports here too: a `code.ptx` that is not what the package's
`lto.ir` lowers to while its manifest says it is, `captured` symbols, prototypes or
params layouts its code does not declare, a payload its own `source.cu` does not
compile to, and — under `--strict`/`--require-binding` — a package that cannot be
bound at all (an `I-BINDING` note without them).

## Why it matters
The checker trusts what a package captured — its symbols, its params layout, its
contract, its PTX — and the linker links its LTO IR. A package changed after it was
packed (a flipped byte, a truncated copy, a hand-edited manifest, a payload replaced
and its hashes recomputed) would make the checker vouch for code it never saw, feed
nvJitLink an object that fails in a way that names neither file nor cause, or run
the compiler with options that write the user's files.

## Example
Illustrative: the verdict comes from the package file. This pipeline is rejected
when `build/loader.kpkg` has had a byte of its `lto.ir` payload changed after
`kernlink pack` wrote it:

```kernlink
pipeline "demo" {
    target sm_90a
    use "demo.loader" version ^1.0 from "build/loader.kpkg"
}
```

## Fix
Rebuild the package with `kernlink pack` from its source and contract; never edit a
package by hand. Copy packages as binary files.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from checker.clause import Clause
from checker.composition import Composition
from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code
from package.integrity import IntegrityFinding, PackageDefect


class IntegrityClause(Clause):
    code = Code.L_INTEGRITY
    name = "package-integrity"
    summary = "a package's payload does not match its manifest's hash, or its manifest is malformed"
    category = "composition"
    decided_by = "package"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        """Nothing: packages are verified when they are read (module docstring)."""
        yield from ()


# ----------------------------------------------------------------- the linker's findings, worded here

CODE = Code.L_INTEGRITY


def unrecorded_hash(manifest: str, where: str, fix: str) -> Diagnostic:
    """A link directory whose manifest vouches for no cubin hash."""
    return Diagnostic(
        CODE,
        f"`{manifest}` records no SHA-256 for {where}",
        notes=("a loader runs a cubin only when the manifest vouches for it",),
        helps=(fix,),
    )


def hash_mismatch(
    manifest: str, where: str, recorded: tuple[object, str], found: tuple[int, str], fix: str
) -> Diagnostic:
    """A cubin that is not the one its link directory's manifest records (``recorded``/``found``: size, SHA-256)."""
    return Diagnostic(
        CODE,
        f"{where} does not match the SHA-256 that `{manifest}` records",
        notes=(
            f"the manifest records {recorded[0]} bytes with SHA-256 {recorded[1]}; "
            f"the file has {found[0]} bytes with SHA-256 {found[1]}",
            "the cubin was replaced after the link, or two writers shared the directory",
        ),
        helps=(fix,),
        data=(("expected", recorded[1]), ("found", found[1])),
    )


def host_code_mismatch(manifest: str, where: str, recorded: str, found: str, fix: str) -> Diagnostic:
    """A host provider's source that is not the one its link directory's manifest records: never compiled."""
    return Diagnostic(
        CODE,
        f"{where} does not match the SHA-256 that `{manifest}` records",
        notes=(
            f"the manifest records SHA-256 {recorded}; the file has SHA-256 {found}",
            "a host provider is C code the launch helpers compile and run: only the source the link "
            "recorded (and `kernlink link` listed) is built; this one was replaced after the link",
        ),
        helps=(fix,),
        data=(("expected", recorded), ("found", found)),
    )


def unbound_note(package: str, why: str, *, checked: bool) -> Diagnostic:
    """I-BINDING: a package whose checked code is not shown to be its linked code (``--strict`` refuses it).

    ``checked``: its LTO IR was lowered here, and that code checked against its contract at link.
    """
    then = (
        "its LTO IR is linked; the PTX it lowers to was checked against its contract at link instead"
        if checked
        else "its LTO IR is linked as packed: nothing ties it to the code L-CONFORM checked"
    )
    return Diagnostic(
        Code.I_BINDING,
        f"package `{package}` cannot be bound to the code that was checked: {why}",
        severity=Severity.NOTE,
        labels=_in(package),
        notes=(then, "`--strict` and `--require-binding` refuse such a package"),
        helps=("repack it with `kernlink pack` (NVRTC, this kernlink's toolkit)",),
        data=(("package", package), ("why", why)),
    )


def _in(package: str) -> tuple[Label, ...]:
    return (Label(Span(package, 1, 1, 1, 1), "in this package"),)


# ----------------------------------------------------------------- the package readers' findings, worded here

_REBUILD = "rebuild the package with `kernlink pack`"


def _message(found: IntegrityFinding) -> str:
    """The one message of each defect the package readers find."""
    name, f = found.package, dict(found.facts)
    match found.defect:
        case "bad-magic":
            return f"`{name}` is not a kernlink package (bad magic)"
        case "short-header":
            return f"package `{name}` is truncated: its header needs {f['need']} bytes, the file has {f['size']}"
        case "format-version":
            return f"package `{name}` has format version {f['version']}; this kernlink reads version {f['supported']}"
        case "short-manifest":
            return (
                f"package `{name}` is truncated: its manifest and hash need {f['need']} bytes, the file has {f['size']}"
            )
        case "manifest-too-large":
            return f"the manifest of `{name}` is {f['length']} bytes, over the limit of {f['limit']} bytes"
        case "manifest-cut":
            return f"package `{name}` is truncated: it ended while its manifest was read"
        case "manifest-hash":
            return f"the manifest of `{name}` does not match its SHA-256"
        case "manifest-deep":
            return f"the manifest of `{name}` is nested more than {f['depth']} levels deep"
        case "manifest-json":
            return f"the manifest of `{name}` is not valid JSON: {f['error']}"
        case "manifest-not-object":
            return f"the manifest of `{name}` is not a JSON object"
        case "manifest-limits":
            return f"the manifest of `{name}` {f['problem']}"
        case "manifest-not-canonical":
            return f"the manifest of `{name}` is not in canonical form"
        case "no-payload-list":
            return f"the manifest of `{name}` has no `{f['key']}` list"
        case "payload-entry":
            return f"the manifest of `{name}` has a malformed payload entry: {f['entry']}"
        case "payload-name":
            return f"payload name `{f['payload']}` in `{name}` is not a plain file name"
        case "payload-twice":
            return f"payload `{f['payload']}` appears twice in `{name}`"
        case "payloads-unsorted":
            return f"the payloads of `{name}` are not sorted by name"
        case "payload-cut":
            return (
                f"payload `{f['payload']}` of `{name}` is truncated: it needs {f['need']} bytes at offset "
                f"{f['offset']}, the file has {f['size']}"
            )
        case "trailing-bytes":
            return f"package `{name}` has {f['count']} unexpected bytes after its last payload"
        case "payload-ended":
            return f"payload `{f['payload']}` of `{name}` is truncated: the file ended while it was read"
        case "payload-hash":
            return f"payload `{f['payload']}` of `{name}` does not match its SHA-256"
        case "grew":
            return f"package `{name}` grew while it was read"
        case "unsafe-name":
            return f"payload name `{f['payload']}` is not a plain file name; refusing to write it"
        case "malformed":
            return f"package `{name}` has a malformed manifest: {f['why']}"
        case "code-facts":
            return f"the manifest of `{name}` records code facts its `{f['payload']}` payload does not have"
        case "compile-option":
            return f"package `{name}` records the compile option `{f['option']}`, which kernlink does not replay"
        case "ptx-not-lowered":
            return f"the `{f['payload']}` payload of `{name}` is not what its `{f['from']}` payload lowers to"
        case "captured-not-code":
            return f"the manifest of `{name}` records captured facts its code does not have: {f['what']}"
        case "not-rebuilt":
            return f"the `{f['payload']}` payload of `{name}` is not what its `{f['source']}` compiles to"
        case "unbound":
            return f"package `{name}` cannot be bound to the code that was checked: {f['why']}"
        case "changed":
            return f"package `{name}` changed while it was linked: the binding read other bytes than the link"


def defect(found: IntegrityFinding, at: Span | None = None) -> Diagnostic:
    """A package that is not intact; ``at`` is the `use` line that names it, when there is one.

    A defect of the stage manifest points into the package itself; a defect of the container
    points at ``at`` (with the fix), or nowhere when the package was named on the command line.
    """
    message = _message(found)
    if found.defect in _BINDING:
        return _binding(found, message, at)
    if found.defect in ("malformed", "code-facts", "compile-option", "changed"):
        here = (Label(Span(found.package, 1, 1, 1, 1), "in this package"),)
        if found.defect == "malformed":
            return Diagnostic(CODE, message, labels=here, helps=(_REBUILD,))
        if found.defect == "changed":
            other = ("another writer replaced the package during the link",)
            return Diagnostic(CODE, message, labels=here, notes=other, helps=("link again once nothing writes it",))
        if found.defect == "compile-option":
            replay = (
                "a package's recorded options are given to the compiler again when its source is rebuilt at link; "
                "kernlink replays only `-D`, `-I` within the package, `-std`, `-arch` and its own code-generation "
                "flags, so that a package cannot make the compiler write or read a file of yours",
            )
            return Diagnostic(
                CODE, message, labels=here, notes=replay, helps=(_REBUILD,), data=(("option", found.fact("option")),)
            )
        notes = (
            found.fact("difference"),
            "the package's hashes match: its manifest was edited and the hashes recomputed",
        )
        return Diagnostic(CODE, message, labels=here, notes=notes, helps=(_REBUILD,))
    if at is None:
        return Diagnostic(CODE, message)
    return Diagnostic(CODE, message, labels=(Label(at, "package named here"),), helps=(_REBUILD,))


_BINDING = ("ptx-not-lowered", "captured-not-code", "not-rebuilt", "unbound")


def _binding(found: IntegrityFinding, message: str, at: Span | None) -> Diagnostic:
    """A binding defect (packing/binding.py): the package, and the `use` line that names it when there is one."""
    labels = _in(found.package) + ((Label(at, "package named here", primary=False),) if at is not None else ())
    f = dict(found.facts)
    if found.defect == "unbound":
        notes: tuple[str, ...] = (
            "`--strict` and `--require-binding` link only a package whose checked PTX is its LTO IR's code",
        )
        helps = (f"{_REBUILD} (NVRTC, this kernlink's toolkit), or drop `--strict`/`--require-binding`",)
        return Diagnostic(CODE, message, labels=labels, notes=notes, helps=helps, data=(("why", f["why"]),))
    if found.defect == "captured-not-code":
        notes = (
            "the checks read the manifest's symbols, prototypes and params layouts; its code declares others",
            "the package's hashes match: its manifest was edited and the hashes recomputed",
        )
        return Diagnostic(CODE, message, labels=labels, notes=notes, helps=(_REBUILD,))
    done = "lowered with" if found.defect == "ptx-not-lowered" else "rebuilt with"
    notes = (
        f"{done} {f['how']}: the payload's SHA-256 is {f['recorded']}…, the result's {f['found']}…",
        "the package's hashes match: a payload was replaced and the hashes recomputed",
    )
    if found.defect == "ptx-not-lowered":
        notes += ("the check read this PTX; the link would link other code",)
    return Diagnostic(CODE, message, labels=labels, notes=notes, helps=(_REBUILD,))


@contextmanager
def worded() -> Iterator[None]:
    """Read packages inside: a :class:`~package.integrity.PackageDefect` leaves as an L-INTEGRITY DiagnosticError."""
    try:
        yield
    except PackageDefect as err:
        raise DiagnosticError([defect(err.finding)]) from err
