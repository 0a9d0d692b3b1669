"""Triton stages: a kernel compiled by Triton becomes a component whose body is Triton's own PTX.

Triton's LLVM IR cannot become LTO IR (libNVVM 13.0 refuses its textual IR: opaque pointers,
the ``ptx_kernel`` calling convention; specs/frameworks.md), so kernlink takes Triton's PTX, the
code its compiler really produced, and wraps it: the component is a CUDA role entry whose body
is one ``asm volatile`` block holding the kernel's PTX body, its registers renamed apart from the
compiler's, its labels made unique per inlined copy (``%=``), its parameter loads turned into
operands read from the stage's params struct, its ``%tid.x`` the thread's index in the role
(``threadIdx.x - 32 * warp0``), its ``ret`` a branch to the block's end, and a whole-block
``bar.sync 0`` the role's claimed named barrier. NVRTC compiles that to LTO IR like any
component, so the handles fold (they are operands computed outside the block) and the link
leaves no call: the asm block is opaque to the LTO optimiser and compiled by ptxas with the rest.

The stage file defines the ``@triton.jit`` function ``kernel``, ``SIGNATURE``, ``CONSTEXPRS``
and ``NUM_WARPS`` (:mod:`packing.frontends.triton_driver`, which runs where Triton is:
``$KERNLINK_TRITON_PYTHON``, else this interpreter when it imports ``triton``; without Triton the
lowering record ``STAGE.triton.json`` beside the stage is read, for exactly that file).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contract_lang import ast as A
from diagnostics import Diagnostic, DiagnosticError
from diagnostics.symbols import Code
from package.abi import sanitize

RECORD_SUFFIX = ".triton.json"
#: The Triton release the front end is written and tested against.
TRITON_VERSION = "3.8.0"
DRIVER = Path(__file__).with_name("triton_driver.py")
#: Triton scalar types -> (contract type, C type, bytes, inline-asm constraint, PTX move type).
_SCALARS = {
    "i32": ("i32", "int", 4, "r", "b32"),
    "u32": ("u32", "unsigned", 4, "r", "b32"),
    "i64": ("i64", "long long", 8, "l", "b64"),
    "u64": ("u64", "unsigned long long", 8, "l", "b64"),
    "fp32": ("f32", "float", 4, "f", "f32"),
}
_IMPORT = re.compile(r"^\s*(?:import\s+triton\b|from\s+triton\b)", re.M)


def is_stage(source: Path) -> bool:
    """A Python file that imports Triton."""
    try:
        return source.suffix == ".py" and bool(_IMPORT.search(source.read_text()))
    except (OSError, UnicodeDecodeError):
        return False


def _error(message: str, *, helps: tuple[str, ...] = ()) -> DiagnosticError:
    return DiagnosticError([Diagnostic(Code.E_PACK, message, helps=helps)])


def has_triton() -> bool:
    import importlib.util

    return importlib.util.find_spec("triton") is not None


def lower(source: Path, target: str) -> Mapping[str, Any]:
    """The lowering record of ``source``: Triton's, or the recorded one for exactly this file."""
    python = os.environ.get("KERNLINK_TRITON_PYTHON") or (sys.executable if has_triton() else None)
    if python is not None:
        command = [python, str(DRIVER), str(source), "--arch", target]
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
        if done.returncode != 0:
            lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
            raise _error(f"Triton could not compile `{source}`: {lines[-1] if lines else f'exit {done.returncode}'}")
        data: Mapping[str, Any] = json.loads(done.stdout)
        return data
    recorded = source.with_name(source.name[: -len(".py")] + RECORD_SUFFIX)
    if not recorded.is_file():
        raise _error(
            f"`{source}` is a Triton stage, and neither Triton nor a lowering record `{recorded.name}` is here",
            helps=(
                f"install `triton=={TRITON_VERSION}` and set KERNLINK_TRITON_PYTHON to its Python (or run kernlink "
                f"there); or write the record with `python {DRIVER.name} {source.name} > {recorded.name}` there",
            ),
        )
    data = json.loads(recorded.read_text())
    if data.get("source_sha256") != hashlib.sha256(source.read_bytes()).hexdigest():
        raise _error(
            f"the lowering record `{recorded}` is of another version of `{source.name}`",
            helps=("compile the stage again with Triton (the record names the file's SHA-256)",),
        )
    return data


def names(header: A.Stage) -> tuple[str, str, str, str]:
    """(handle prefix, role, entry symbol, params struct name)."""
    role = header.roles[0].name if header.roles else "main"
    sanitized = sanitize(header.name)
    struct = "".join(p.capitalize() for p in sanitized.split("_")) + "Params"
    return f"kl_{sanitized}", role, f"{sanitized}_{role}_main", struct


def _body(ptx: str, kernel: str) -> tuple[str, str]:
    """(the kernel's header, its body between the outer braces)."""
    start = ptx.find(f".entry {kernel}(")
    if start < 0:
        raise _error(f"Triton's PTX has no kernel `{kernel}`")
    open_at = ptx.index("{", start)
    depth, i = 0, open_at
    while i < len(ptx):
        depth += {"{": 1, "}": -1}.get(ptx[i], 0)
        if depth == 0:
            break
        i += 1
    return ptx[start:open_at], ptx[open_at + 1 : i]


def component(record: Mapping[str, Any], header: A.Stage) -> str:
    """The component source (module docstring)."""
    prefix, role, entry, struct = names(header)
    kernel = str(record["kernel"]["name"])
    head, body = _body(str(record["kernel"]["ptx"]), kernel)
    if "%ntid" in body or "global_smem" in body or "%cluster" in body:
        raise _error(
            f"the kernel Triton compiled for `{header.name}` reads the block size, shared memory or the cluster, "
            "which the Triton front end does not map yet",
        )
    lines = []
    for raw in body.split("\n"):
        line = raw.split("//", 1)[0].rstrip()
        if not line.strip() or line.strip().startswith((".loc", ".file", ".pragma")):
            continue
        lines.append(line.strip())
    text = "\n".join(lines)
    classes = sorted(set(re.findall(r"\.reg\s+\.\w+\s+%([A-Za-z_]+)<\d+>", text)), key=len, reverse=True)
    for cls in classes:
        text = re.sub(rf"%{cls}(?=[<\d])", f"%kl{cls}", text)
    text = re.sub(r"(\$[\w$]+)", r"\1_%=", text)  # labels: unique in every inlined copy
    text = text.replace("%", "%%").replace("%%=", "%=")
    operands: list[str] = []
    fields: list[str] = []
    params = list(record["params"])
    slots = re.findall(r"\.param\s+\.(\w+)[^,)]*?\s(" + re.escape(kernel) + r"_param_\d+)", head)
    for index, (_, slot) in enumerate(slots):
        if index < len(params):
            p = params[index]
            if p["kind"] == "ptr":
                fields.append(f"    void* {p['name']};")
                value, constraint, mov = f"kl_params->{p['name']}", "l", "b64"
            else:
                if p["type"] not in _SCALARS:
                    raise _error(
                        f"parameter `{p['name']}` has the Triton type `{p['type']}`, which kernlink does not map"
                    )
                _, ctype, _, constraint, mov = _SCALARS[p["type"]]
                fields.append(f"    {ctype} {p['name']};")
                value = f"kl_params->{p['name']}"
        else:  # Triton's global and profile scratch pointers
            if int(record.get("global_scratch", 0)):
                raise _error(f"the kernel Triton compiled for `{header.name}` needs global scratch memory")
            value, constraint, mov = "0ull", "l", "b64"
        operands.append(f'"{constraint}"({value})')
        n = len(operands) - 1
        text = re.sub(rf"ld\.param\.\w+\s+(%%\w+),\s*\[{slot}\];", rf"mov.{mov} \1, %{n};", text)
    operands.append('"r"(kl_tid)')
    text = text.replace("%%tid.x", f"%{len(operands) - 1}")
    if re.search(r"\b(bar|barrier)(\.sync)?(\.aligned)? 0;", text):
        operands += [f'"r"({prefix}_{role}_sync_bar_id())', f'"r"({prefix}_{role}_sync_threads())']
        bid, threads = len(operands) - 2, len(operands) - 1
        text = re.sub(r"\b(bar|barrier)(\.sync)?(\.aligned)? 0;", f"barrier.sync.aligned %{bid}, %{threads};", text)
    text = text.replace("ret;", "bra.uni $kl_end_%=;") + "\n$kl_end_%=:"
    asm = "\n".join(f'        "{line}\\n"' for line in ["{", *text.split("\n"), "}"])
    handles = [f"__device__ unsigned {prefix}_{role}_warp0();"]
    if f"{prefix}_{role}_sync_bar_id" in "".join(operands):
        handles += [
            f"__device__ unsigned {prefix}_{role}_sync_bar_id();",
            f"__device__ unsigned {prefix}_{role}_sync_threads();",
        ]
    return "\n".join(
        [
            f"// {header.name}: generated by `kernlink pack` from the Triton kernel `{kernel}`",
            f"// (Triton {record['triton']}, its PTX for {record['arch']}); do not edit.",
            'extern "C" {',
            *handles,
            "}",
            f"struct {struct} {{",
            *fields,
            "};",
            f'extern "C" __device__ void {entry}(const {struct}* kl_params, unsigned char* /*kl_smem*/) {{',
            f"    const unsigned kl_tid = threadIdx.x - 32u * {prefix}_{role}_warp0();",
            "    asm volatile(",
            asm,
            "        :",
            "        : " + ", ".join(operands),
            '        : "memory");',
            "}",
            "",
        ]
    )


def derived_stage(record: Mapping[str, Any], header: A.Stage) -> A.Stage:
    """The header with the role's entry and width and the params layout added."""
    _, role_name, entry, struct = names(header)
    role = header.roles[0] if header.roles else A.Role(role_name)
    derived = A.Role(role.name, entry, int(record["warps"]), role.regs, role.warpgroup, span=role.span)
    offset, align, fields = 0, 1, []
    for p in record["params"]:
        ctype, size = ("ptr", 8) if p["kind"] == "ptr" else (_SCALARS[p["type"]][0], _SCALARS[p["type"]][2])
        offset = -(-offset // size) * size
        fields.append(A.ParamField(p["name"], ctype, offset))
        offset += size
        align = max(align, size)
    items: list[A.StageItem] = [derived if isinstance(i, A.Role) and i is role else i for i in header.items]
    at = max((n + 1 for n, i in enumerate(items) if isinstance(i, (A.Target, A.Features, A.Role, A.Launch))), default=0)
    if not header.roles:
        items.insert(at, derived)
        at += 1
    added: list[A.StageItem] = []
    if fields:
        added.append(A.Params(struct, -(-offset // align) * align, align, tuple(fields)))
    if re.search(r"\b(bar|barrier)(\.sync)?(\.aligned)? 0;", str(record["kernel"]["ptx"])):
        added.append(A.BarrierClaim(f"{role.name}_sync", (role.name,)))
    items[at:at] = added
    return A.Stage(header.name, header.version, tuple(items), span=header.span)
