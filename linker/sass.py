"""SASS of a cubin: find a disassembler, disassemble, normalize, and find calls left in code and PTX.

The disassembler is ``nvdisasm`` (or ``cuobjdump -sass``) on ``PATH``, else the one the
optional PyPI wheel ``nvidia-cuda-nvdisasm`` installs (``pip install 'kernlink[sass]'``;
13.2 is the oldest on PyPI, and a newer disassembler reads the cubins of nvJitLink 13.0).
Without one, SASS is not compared; ``.text`` bytes, relocations and the linked PTX still
are (:mod:`linker.parity`).

Normalized SASS keeps each function's instructions in order, one per line, with what
differs between two builds of the same code taken out: addresses (``/*0040*/``), encodings,
label numbers (``.L_x_12`` → ``L0``, ``L1``, … by first appearance) and symbol names
(renamed ``sym0``, ``sym1``, … by first appearance, so a helper mangled inside the
control's namespace compares equal to the same helper in the linked kernel).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_VERSION = re.compile(r"release (\d+)\.(\d+)")
_NVDISASM_SECTION = re.compile(r"^\s*\.section\s+\.text\.(?P<name>[^,\s]+)")
_CUOBJDUMP_FUNCTION = re.compile(r"^\s*Function\s*:\s*(?P<name>\S+)")
_INSTRUCTION = re.compile(r"^\s*/\*(?P<addr>[0-9a-f]{4,})\*/\s*(?P<text>[^;]*?)\s*;")
_LABEL = re.compile(r"\.L_x_\d+")
_SYMBOL = re.compile(r"`\((?P<name>[^)]+)\)")
_RELOC_SYMBOL = re.compile(r"\b(?:32@lo|32@hi|\d+@\w+)\((?P<name>[^)]+)\)")
_CALL = re.compile(r"^(?:@!?U?P\w+\s+)?(?P<op>CALL|RET)\.(?P<mode>[\w.]+)")
_PTX_CALL = re.compile(r"^\s*(?:@!?%\w+\s+)?call(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?(?P<target>[\w$%]+)", re.M)
_PTX_EXTERN = re.compile(r"^\s*\.extern\s+\.func\s+(?:\([^)]*\)\s*)?(?P<name>[\w$]+)", re.M)
_PTX_FUNC = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.func\s+(?:\([^)]*\)\s*)?(?P<name>[\w$]+)", re.M)


@dataclass(frozen=True)
class Disassembler:
    kind: str  # "nvdisasm" | "cuobjdump"
    path: str
    version: tuple[int, int] | None

    @property
    def label(self) -> str:
        version = f" {self.version[0]}.{self.version[1]}" if self.version else ""
        return f"{self.kind}{version}"


@dataclass(frozen=True)
class Call:
    """A CALL or RET left in a function's SASS, or a ``call`` in PTX."""

    function: str  # the function it is in
    op: str  # CALL, RET (SASS) or call (PTX)
    target: str | None  # the called symbol; None when indirect or a return


def find_disassembler() -> Disassembler | None:
    """``nvdisasm`` on PATH, else the ``nvidia-cuda-nvdisasm`` wheel's, else ``cuobjdump``; None without one."""
    for kind in ("nvdisasm", "cuobjdump"):
        path = shutil.which(kind) or _wheel_tool(kind)
        if path is not None:
            return Disassembler(kind, path, _version(path))
    return None


def _wheel_tool(kind: str) -> str | None:
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        for sub in ("cu13", "cuda_nvdisasm", "cuda_cuobjdump"):
            candidate = Path(root) / sub / "bin" / kind
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def _version(path: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, check=False, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = _VERSION.search(out)
    return (int(found[1]), int(found[2])) if found else None


def disassemble(tool: Disassembler, cubin: bytes) -> str:
    """The disassembler's text for a cubin; raises ``OSError`` when it fails."""
    with tempfile.TemporaryDirectory(prefix="kernlink-sass-") as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        args = [tool.path, "-c", str(path)] if tool.kind == "nvdisasm" else [tool.path, "-sass", str(path)]
        proc = subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)
    if proc.returncode != 0:
        raise OSError(f"{tool.kind} exited with status {proc.returncode}: {proc.stderr.strip()[:500]}")
    return proc.stdout


def functions(listing: str) -> dict[str, list[str]]:
    """Raw instruction texts per function (nvdisasm ``.section .text.F`` or cuobjdump ``Function : F``)."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in listing.splitlines():
        head = _NVDISASM_SECTION.match(line) or _CUOBJDUMP_FUNCTION.match(line)
        if head:
            current = out.setdefault(head["name"], [])
            continue
        found = _INSTRUCTION.match(line)
        if found and current is not None:
            current.append(" ".join(found["text"].split()))
    return out


def normalize(instructions: list[str]) -> list[str]:
    """Labels and symbol names renamed by first appearance (see the module docstring)."""
    labels: dict[str, str] = {}
    symbols: dict[str, str] = {}

    def label(m: re.Match[str]) -> str:
        return labels.setdefault(m.group(0), f"L{len(labels)}")

    def symbol(m: re.Match[str]) -> str:
        name = m["name"]
        if _LABEL.fullmatch(name):
            return f"`({labels.setdefault(name, f'L{len(labels)}')})"
        return "`(" + symbols.setdefault(name, f"sym{len(symbols)}") + ")"

    def reloc(m: re.Match[str]) -> str:
        prefix = m.group(0)[: m.start("name") - m.start(0)]
        return prefix + symbols.setdefault(m["name"], f"sym{len(symbols)}") + ")"

    out = []
    for text in instructions:
        text = _SYMBOL.sub(symbol, text)
        text = _RELOC_SYMBOL.sub(reloc, text)
        out.append(_LABEL.sub(label, text))
    return out


def normalized(listing: str) -> dict[str, list[str]]:
    return {name: normalize(body) for name, body in functions(listing).items()}


def sass_calls(listing: str) -> list[Call]:
    """Every CALL and RET, per function, with the called symbol where the instruction names one."""
    calls = []
    for name, body in functions(listing).items():
        for text in body:
            found = _CALL.match(text)
            if not found:
                continue
            target = _SYMBOL.search(text)
            named = target["name"] if target and not _LABEL.fullmatch(target["name"]) else None
            calls.append(Call(name, found["op"], named if found["op"] == "CALL" else None))
    return calls


def ptx_calls(ptx: str) -> tuple[list[Call], list[str], list[str]]:
    """``call`` instructions (per enclosing function), ``.extern .func`` names and ``.func`` definitions of PTX."""
    calls = []
    spans = [
        (m.start(), m["name"])
        for m in re.finditer(
            r"^\s*(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\s+(?:\([^)]*\)\s*)?(?P<name>[\w$]+)", ptx, re.M
        )
    ]
    for m in _PTX_CALL.finditer(ptx):
        owner = next((name for start, name in reversed(spans) if start < m.start()), "?")
        calls.append(Call(owner, "call", m["target"]))
    externs = [m["name"] for m in _PTX_EXTERN.finditer(ptx)]
    defined = [m["name"] for m in _PTX_FUNC.finditer(ptx) if not m.group(0).lstrip().startswith(".extern")]
    return calls, externs, defined


def unified_diff(
    a: Mapping[str, list[str]], b: Mapping[str, list[str]], *, a_name: str = "linked", b_name: str = "control"
) -> str:
    """A unified diff of two normalized listings, function by function (empty when they are equal)."""
    import difflib

    out: list[str] = []
    for name in sorted(set(a) | set(b)):
        left, right = a.get(name, []), b.get(name, [])
        if left == right:
            continue
        out += difflib.unified_diff(left, right, f"{a_name}/{name}", f"{b_name}/{name}", lineterm="", n=3)
    return "\n".join(out) + ("\n" if out else "")
