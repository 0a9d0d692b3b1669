"""The manifest of a stage package: what `kernlink pack` records and loading checks.

Keys (all required; see specs/package-format.md):

``format``    ``"kernlink.stage"``, ``format_version`` 1
``stage``, ``version``, ``target``   the contract's identity
``contract``  the contract in canonical form (the text the checker reads)
``toolkit``   the compiler that made the LTO IR (``nvrtc 13.0``, ``nvcc 13.0``)
``captured``  ``defined``/``needed`` device symbols and ``params`` layouts the
              compiler saw (name, size, align, fields as [name, offset, size]), and
              optionally ``prototypes`` (each symbol's PTX shape)
The shape of every key (types, ranges, sizes) is :data:`package.schema.STAGE_MANIFEST`.
Optional: ``conformance`` (the code facts of package/codefacts, derived from the
``code.ptx`` payload; re-derived on reading, and a record that disagrees with its
payload is L-INTEGRITY).
Payloads: ``lto.ir`` (the LTO IR), ``source.cu`` (the component's source) and, with
``conformance``, ``code.ptx`` (the PTX the facts come from).

``compile.options`` are replayed when the source is rebuilt at link (packing/binding.py), so
they come from an allowlist (:func:`refused_option`): a recorded option that could make the
compiler do anything but compile this source in memory (write a file, read one from the
host) is L-INTEGRITY on reading, before anything runs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from package import codefacts
from package.captured import Captured, CapturedParams, Prototype
from package.integrity import defect
from package.kpkg import Package, read_package
from package.schema import STAGE_MANIFEST, validate

FORMAT = "kernlink.stage"
FORMAT_VERSION = 1
LTO_PAYLOAD = "lto.ir"
SOURCE_PAYLOAD = "source.cu"

#: The compile options a package may record (and a rebuild replays): ``-D``, ``-I`` within the
#: package, ``-std``, ``-arch``, and the code-generation flags kernlink itself passes. Each is one
#: whole option; none names a file the compiler would write or a folder outside the package.
_REPLAYABLE = re.compile(
    r"-arch=(?:sm|compute|lto)_[0-9]{2,3}[a-z]?"
    r"|--?std=c\+\+(?:11|14|17|20)"
    r"|-dlto|-rdc=true|-ltoir|-default-device|-lineinfo"
    r"|-D[A-Za-z_][A-Za-z0-9_]*(?:=[^\x00-\x1f]*)?"
)
_INCLUDE = re.compile(r"(?:-I|--include-path=)([^\x00-\x1f]+)")


@dataclass(frozen=True)
class StagePackage:
    path: str
    stage: str
    version: str
    target: str
    toolkit: str
    contract_text: str
    captured: Captured
    lto_ir: bytes
    manifest: Mapping[str, Any]
    size: int = 0  # the package file's size and SHA-256, from the one read of it
    sha256: str = ""


def manifest_for(
    stage: str, version: str, target: str, contract: str, toolkit: str, captured: Captured
) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "stage": stage,
        "version": version,
        "target": target,
        "contract": contract,
        "toolkit": toolkit,
        "captured": {
            "defined": sorted(captured.defined_symbols),
            "needed": sorted(captured.needed_symbols),
            "params": [
                {"name": p.name, "size": p.size, "align": p.align, "fields": [list(f) for f in p.fields]}
                for p in captured.params_layouts
            ],
        },
    }


def read_stage_package(path: str | Path) -> StagePackage:
    """Read and validate a stage package; a defect raises :class:`package.integrity.PackageDefect` (L-INTEGRITY)."""
    name = str(path)
    pkg = read_package(path)
    return stage_package(pkg, name)


def stage_package(pkg: Package, name: str) -> StagePackage:
    man = pkg.manifest
    problem = validate(dict(man), STAGE_MANIFEST)
    if problem is not None:
        _malformed(name, problem)
    if man["format"] != FORMAT or man["format_version"] != FORMAT_VERSION:
        _malformed(name, f"format `{man['format']}` v{man['format_version']} is not {FORMAT} v{FORMAT_VERSION}")
    if LTO_PAYLOAD not in pkg.payloads:
        _malformed(name, f"no `{LTO_PAYLOAD}` payload")
    refused = refused_option(man.get("compile", {}).get("options", []))
    if refused is not None:
        raise defect(name, "compile-option", option=refused)
    try:
        captured = captured_from_json(man["captured"], toolkit=man["toolkit"], target=man["target"])
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        _malformed(name, f"`captured` is malformed ({exc})")
    captured = dataclasses.replace(captured, ptx=_bound_ptx(pkg, name))
    return StagePackage(
        name,
        man["stage"],
        man["version"],
        man["target"],
        man["toolkit"],
        man["contract"],
        captured,
        pkg.payloads[LTO_PAYLOAD],
        man,
        pkg.size,
        pkg.sha256,
    )


def refused_option(options: object) -> str | None:
    """The first recorded compile option kernlink does not replay (:data:`_REPLAYABLE`), or None.

    A list that is not one of strings is refused whole (its first item stands for it).
    """
    listed = options if isinstance(options, list) else [options]
    for option in listed:
        if not isinstance(option, str) or not (_REPLAYABLE.fullmatch(option) or _within(option)):
            return str(option)
    return None


def _within(option: str) -> bool:
    """``-I`` (``--include-path=``) of a folder inside the package: relative, no ``..``."""
    found = _INCLUDE.fullmatch(option)
    if found is None:
        return False
    folder = found.group(1)
    return not folder.startswith(("/", "\\")) and ".." not in re.split(r"[/\\]", folder) and ":" not in folder


def _bound_ptx(pkg: Package, name: str) -> str | None:
    """The ``code.ptx`` payload, once the manifest's ``conformance`` facts are derived from it again."""
    blob = pkg.payloads.get(codefacts.PTX_PAYLOAD)
    record = pkg.manifest.get(codefacts.MANIFEST_KEY)
    if blob is None:
        if record is not None:
            _malformed(
                name, f"`{codefacts.MANIFEST_KEY}` is recorded but there is no `{codefacts.PTX_PAYLOAD}` payload"
            )
        return None
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        _malformed(name, f"`{codefacts.PTX_PAYLOAD}` is not UTF-8 text")
    if record is None:
        return text
    try:
        facts = codefacts.recorded(record)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        _malformed(name, f"`{codefacts.MANIFEST_KEY}` is malformed ({exc})")
    if facts is None:
        return text  # another facts version: the checker derives them from the payload itself
    derived = codefacts.derive(text)
    if facts.facts != derived.facts:
        raise defect(
            name, "code-facts", payload=codefacts.PTX_PAYLOAD, difference=_first_difference(facts.facts, derived.facts)
        )
    return text


def _first_difference(recorded: tuple[codefacts.Fact, ...], derived: tuple[codefacts.Fact, ...]) -> str:
    for i, (a, b) in enumerate(zip(recorded, derived, strict=False)):
        if a != b:
            return (
                f"fact {i}: the manifest says `{a.opcode}` at PTX line {a.line} ({a.kind}); the payload has "
                f"`{b.opcode}` at PTX line {b.line} ({b.kind})"
            )
    return f"the manifest records {len(recorded)} facts; the payload has {len(derived)}"


def captured_from_json(cap: Mapping[str, Any], *, toolkit: str | None = None, target: str | None = None) -> Captured:
    """The ``captured`` object of a manifest as the checker's :class:`Captured`.

    ``prototypes`` is optional (packages that predate it have none). Raises KeyError,
    TypeError or ValueError when the object is malformed.
    """
    protos = cap.get("prototypes", {})
    if not isinstance(protos, Mapping):
        raise TypeError("`prototypes` is not an object")
    return Captured(
        defined_symbols=frozenset(_strings(cap["defined"])),
        needed_symbols=frozenset(_strings(cap["needed"])),
        params_layouts=tuple(
            CapturedParams(
                str(p["name"]),
                int(p["size"]),
                int(p["align"]),
                tuple((str(f[0]), int(f[1]), int(f[2])) for f in p["fields"]),
            )
            for p in cap["params"]
        ),
        toolkit=toolkit,
        target=target,
        prototypes=tuple(sorted((str(k), Prototype.from_json(v)) for k, v in protos.items())),
    )


def _strings(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("expected a list of strings")
    return value


def _malformed(name: str, why: str) -> NoReturn:
    raise defect(name, "malformed", why=why)
