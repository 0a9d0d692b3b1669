"""Host providers at link: each called provider's C source, where it goes, and what it is called with.

A stage's ``host provider "x.c" fn F fills a, b`` (specs/language.md §15) is C code the
launch helpers run before the kernel: ``CUresult F(void* params, CUstream stream)`` on
the stage's params block inside the kernel's. `kernlink pack` carries ``x.c`` in the
package; the link copies it into the link directory as ``provider_<stage>_x.c`` and
records, in stage order, each provider's function, file, fields and the offset of the
block it is given (``link.json`` ``providers``). ``kernel.h`` declares and calls them
(linker/host_header.py); ``kernlink.Session`` builds them into a shared object.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from checker.clauses import l_integrity, l_link
from diagnostics.model import Diagnostic, DiagnosticError
from linker.artifacts import ParamsRegion
from package.kpkg import read_package

if TYPE_CHECKING:
    from analysis.link_inputs import LinkInputs


@dataclass(frozen=True)
class LinkedProvider:
    """One called host provider of a linked pipeline."""

    stage: str
    function: str
    file: str  # its name in the link directory
    fills: tuple[str, ...]
    block: str | None  # the params block it is given (None: the stage has none; it gets NULL)
    offset: int | None  # that block's offset in the kernel's params block
    source: bytes

    def as_json(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "function": self.function,
            "file": self.file,
            "fills": list(self.fills),
            "block": self.block,
            "offset": self.offset,
            "sha256": hashlib.sha256(self.source).hexdigest(),
        }


def file_name(stage: str, payload: str) -> str:
    """``provider_<stage>_<payload>``: one flat name per provider in the link directory."""
    return f"provider_{re.sub(r'[^A-Za-z0-9_]', '_', stage)}_{payload}"


def linked_providers(inputs: LinkInputs, regions: Sequence[ParamsRegion]) -> list[LinkedProvider]:
    """The called providers of every stage, in stage order; L-LINK when a package lacks a provider's source."""
    found: list[LinkedProvider] = []
    problems: list[Diagnostic] = []
    payloads: dict[str, Mapping[str, bytes]] = {}
    for provider in inputs.providers:
        if provider.package is None:
            continue
        if provider.stage not in payloads:
            with l_integrity.worded():
                payloads[provider.stage] = read_package(provider.package).payloads
        region = next((r for r in regions if r.stage == provider.stage), None)
        payload = provider.library.rsplit("/", 1)[-1]
        source = payloads[provider.stage].get(payload)
        if source is None:
            problems.append(l_link.provider_missing(provider.package, provider.stage, provider.library, provider.span))
            continue
        found.append(
            LinkedProvider(
                provider.stage,
                provider.function,
                file_name(provider.stage, payload),
                provider.fills,
                region.block if region else None,
                region.offset if region else None,
                source,
            )
        )
    if problems:
        raise DiagnosticError(problems)
    return found


def announce(providers: Sequence[Mapping[str, Any]], directory: str) -> list[str]:
    """What `kernlink link` and `kernlink build` print about the host code a link carries: one line per
    provider (``link.json`` ``providers``), with its owner and the SHA-256 the launch helpers check."""
    return [
        f"host code: `{x['function']}` of `{x['stage']}` in {directory}/{x['file']} (sha256 {x['sha256']}); "
        "kernel.h and kernlink.Session compile and run it before the kernel"
        for x in providers
    ]
