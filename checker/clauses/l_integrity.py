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

The clause's own check reports nothing: the loader turns every defect into this
diagnostic, and the package's stage is then resolved as if the package were absent.

The same code refuses a link output directory whose `kernel.cubin` is not the one
its `link.json` records (size and SHA-256), or whose manifest records no hash:
`kernlink run` and every load of a linked kernel check it before a launch
(`linker/outdir.py`).

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

from checker.clause import Clause
from checker.composition import Composition
from diagnostics.model import Diagnostic, Label
from diagnostics.symbols import Code


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
