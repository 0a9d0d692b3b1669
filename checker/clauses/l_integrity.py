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
  `captured` is malformed.

The clause's own check reports nothing: the readers raise each defect as a typed finding
(`package/integrity.py`), the check words it here, and the package's stage is then
resolved as if the package were absent.

The same code refuses a link output directory whose `kernel.cubin` is not the one
its `link.json` records (size and SHA-256), or whose manifest records no hash:
`kernlink run` and every load of a linked kernel check it before a launch
(`linker/outdir.py`). So it does a host provider's C source that is not the one
`link.json` records: `kernlink.Session` compiles a provider only after checking it.

## Why it matters
The checker trusts what a package captured — its symbols, its params layout, its
contract — and the linker links its LTO IR unread. A package changed after it was
packed (a flipped byte, a truncated copy, a hand-edited manifest) would make the
checker vouch for code it never saw, or feed nvJitLink an object that fails in a
way that names neither file nor cause.

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
from diagnostics.model import Diagnostic, DiagnosticError, Label
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


def payload_not_rebuilt(
    payload: str, path: str, source: str, how: str, hashes: tuple[str, str], labels: tuple[Label, ...]
) -> Diagnostic:
    """A package payload its own source does not compile to (the hashes were recomputed over a replaced payload)."""
    return Diagnostic(
        CODE,
        f"the `{payload}` payload of `{path}` is not what its `{source}` compiles to",
        labels=labels,
        notes=(
            f"rebuilt with {how} and the recorded options; the payload's SHA-256 is {hashes[0]}…, the rebuild's "
            f"{hashes[1]}…",
            "the package's hashes match: a payload was replaced and the hashes recomputed",
        ),
        helps=("rebuild the package with `kernlink pack`",),
    )


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


def defect(found: IntegrityFinding, at: Span | None = None) -> Diagnostic:
    """A package that is not intact; ``at`` is the `use` line that names it, when there is one.

    A defect of the stage manifest points into the package itself; a defect of the container
    points at ``at`` (with the fix), or nowhere when the package was named on the command line.
    """
    message = _message(found)
    if found.defect in ("malformed", "code-facts"):
        here = (Label(Span(found.package, 1, 1, 1, 1), "in this package"),)
        if found.defect == "malformed":
            return Diagnostic(CODE, message, labels=here, helps=(_REBUILD,))
        notes = (
            found.fact("difference"),
            "the package's hashes match: its manifest was edited and the hashes recomputed",
        )
        return Diagnostic(CODE, message, labels=here, notes=notes, helps=(_REBUILD,))
    if at is None:
        return Diagnostic(CODE, message)
    return Diagnostic(CODE, message, labels=(Label(at, "package named here"),), helps=(_REBUILD,))


@contextmanager
def worded() -> Iterator[None]:
    """Read packages inside: a :class:`~package.integrity.PackageDefect` leaves as an L-INTEGRITY DiagnosticError."""
    try:
        yield
    except PackageDefect as err:
        raise DiagnosticError([defect(err.finding)]) from err
