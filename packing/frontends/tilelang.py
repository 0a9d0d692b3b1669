"""TileLang stages: a TileLang program and a contract header become a component and its derived contract.

An owner writes ``STAGE.py`` (one ``T.prim_func``) and ``STAGE.kc``, a contract *header*: the
stage's name, version and target, its role's name and register budget, its imports and exports
(from which export, what it lends, its events) and its facts. `kernlink pack STAGE.py --contract
STAGE.kc` then

1. lowers the program with TileLang's own code generator (:mod:`packing.frontends.tilelang_driver`,
   run by the Python that has TileLang: ``$KERNLINK_TILELANG_PYTHON``, else this interpreter when it
   imports ``tilelang``); without TileLang it reads the *lowering record* ``STAGE.tilelang.json``
   beside the program, which that driver printed, and only when the record is of this very
   program (its SHA-256);
2. makes the kernel a component (:func:`component`): the ``__global__`` kernel becomes the role's
   entry ``(const Params*, unsigned char* smem)``, its arguments fields of the params struct, its
   ``threadIdx.x`` relative to the role's first warp, its dynamic shared memory a claim, its
   ``__syncthreads()`` a claimed named barrier, and each imported tensor's filling loop a call of
   the import handle;
3. derives what the author would otherwise restate (:func:`derived_stage`): the role's entry and
   width, the params layout, shared-memory claims, the named barrier, and each import's element
   type, tile, chunk and demand map (from the loop's index: ``held[p] = acc[t, 32 * c + p]`` is
   ``demand regs(t: 128, p: 32, c: 4) -> (m, n) { m = t  n = 32 * c + p }``).

The rest of `kernlink pack` is the CUDA path's: NVRTC to LTO IR, the PTX and its conformance
check against the derived contract, which the package embeds (`kernlink inspect` prints it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract_lang import ast as A
from contract_lang.expr import Expr
from contract_lang.parser import parse_text
from diagnostics import Diagnostic, DiagnosticError, Label
from diagnostics.symbols import Code

SUFFIX = ".py"
RECORD_SUFFIX = ".tilelang.json"
#: The TileLang release the front end is written and tested against (`kernlink[tilelang]`).
TILELANG_VERSION = "0.1.15"
DRIVER = Path(__file__).with_name("tilelang_driver.py")
#: TileLang scalar types -> (contract type, C type, bytes).
_SCALARS = {
    "int32": ("i32", "int", 4),
    "uint32": ("u32", "unsigned", 4),
    "float32": ("f32", "float", 4),
    "int64": ("i64", "long long", 8),
    "uint64": ("u64", "unsigned long long", 8),
    "float64": ("f64", "double", 8),
}
_ELEMS = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32", "uint32": "u32"}
#: What a TileLang stage may call besides its handles (defined in the component's prelude).
INTRINSICS = {
    "grid_dim_x": "gridDim.x",
    "grid_dim_y": "gridDim.y",
    "grid_dim_z": "gridDim.z",
    "block_idx_x": "blockIdx.x",
    "block_idx_y": "blockIdx.y",
    "block_idx_z": "blockIdx.z",
}


def is_stage(source: Path) -> bool:
    return source.suffix == SUFFIX


@dataclass(frozen=True)
class Record:
    """A lowering record (module docstring of the driver) and where it came from."""

    data: Mapping[str, Any]
    origin: str  # "tilelang" (lowered now) or the record file's path


def bridge(name: str) -> str:
    """The inline function a stage's filling loop of import ``name`` becomes a call of."""
    return f"tl_import_{name}"


def _sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _error(message: str, *, labels: tuple[Label, ...] = (), helps: tuple[str, ...] = ()) -> DiagnosticError:
    return DiagnosticError([Diagnostic(Code.E_PACK, message, labels=labels, helps=helps)])


def lower(source: Path, header: A.Stage, target: str) -> Record:
    """The lowering record of ``source``: TileLang's, or the recorded one for exactly this file."""
    imports = [i.name for i in header.items if isinstance(i, A.ImportTensor)]
    python = os.environ.get("KERNLINK_TILELANG_PYTHON") or (sys.executable if has_tilelang() else None)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if python is not None:
        command = [python, str(DRIVER), str(source), "--arch", target]
        command += [f"--import={name}={bridge(name)}" for name in imports]
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
        if done.returncode != 0:
            lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
            raise _error(
                f"TileLang could not lower `{source}`: {lines[-1] if lines else f'exit {done.returncode}'}",
                helps=("the stage file defines one `T.prim_func` (or names it `kernel`)",),
            )
        return Record(json.loads(done.stdout), "tilelang")
    recorded = source.with_name(source.name[: -len(SUFFIX)] + RECORD_SUFFIX)
    if not recorded.is_file():
        raise _error(
            f"`{source}` is a TileLang stage, and neither TileLang nor a lowering record `{recorded.name}` is here",
            helps=(
                f"install `tilelang=={TILELANG_VERSION}` in an environment of its own (it needs torch and a "
                "z3-solver older than kernlink's) and set KERNLINK_TILELANG_PYTHON to its Python; or write the "
                f"record there with `python {DRIVER.name} {source.name} > {recorded.name}`",
            ),
        )
    data = json.loads(recorded.read_text())
    if data.get("source_sha256") != digest:
        raise _error(
            f"the lowering record `{recorded}` is of another version of `{source.name}`",
            helps=("lower the stage again with TileLang (the record names the file's SHA-256)",),
        )
    return Record(data, str(recorded))


def has_tilelang() -> bool:
    import importlib.util

    return importlib.util.find_spec("tilelang") is not None


# ---------------------------------------------------------------------------- the component


def names(header: A.Stage) -> tuple[str, str, str]:
    """(handle prefix ``kl_<stage>``, the role's name, its entry symbol)."""
    role = header.roles[0].name if header.roles else "main"
    sanitized = _sanitize(header.name)
    return f"kl_{sanitized}", role, f"{sanitized}_{role}_main"


def params_name(header: A.Stage) -> str:
    return "".join(p.capitalize() for p in _sanitize(header.name).split("_")) + "Params"


def component(record: Record, header: A.Stage) -> str:
    """The component source of a lowering record (module docstring, step 2)."""
    data = record.data
    prefix, role, entry = names(header)
    source = str(data["kernel"]["source"])
    kernel = str(data["kernel"]["name"])
    if "tl::" in source:
        raise _error(
            f"the kernel TileLang generated for `{header.name}` uses TileLang's C++ templates (`tl::`), "
            "which kernlink does not compile yet",
            helps=("write the stage with TileLang's scalar and register operations (`T.serial`, `T.alloc_local`)",),
        )
    body = source.split('extern "C" __global__ void __launch_bounds__', 1)
    if len(body) != 2:
        raise _error(f"no `__global__` kernel `{kernel}` in what TileLang generated for `{header.name}`")
    signature, rest = body[1].split("{", 1)
    args = [a.strip() for a in signature.split(f"{kernel}(", 1)[-1].rsplit(")", 1)[0].split(",") if a.strip()]
    struct = params_name(header)
    fields, unpack = [], []
    for arg, param in zip(args, data["params"], strict=True):
        cname = arg.split()[-1].lstrip("*")
        ctype = arg[: arg.rfind(cname)].strip()
        if param["kind"] == "ptr":
            fields.append(f"    void* {cname};")
            unpack.append(f"    {ctype} {cname} = ({ctype.replace('__restrict__', '').strip()})kl_params->{cname};")
        else:
            fields.append(f"    {_SCALARS[param['dtype']][1]} {cname};")
            unpack.append(f"    {ctype} {cname} = kl_params->{cname};")
    code = rest.replace("threadIdx.x", "kl_tid")
    shared = re.search(r"extern __shared__ __align__\((\d+)\) (\w+) (\w+)\[\];", code)
    if shared:
        code = code.replace(
            shared.group(0), f"{shared.group(2)}* {shared.group(3)} = kl_smem + {prefix}_shared_smem();"
        )
    if "__syncthreads()" in code:
        code = code.replace(
            "__syncthreads()",
            f'asm volatile("bar.sync %0, %1;" :: "r"({prefix}_{role}_sync_bar_id()), '
            f'"r"({prefix}_{role}_sync_threads()) : "memory")',
        )
    handles = sorted(set(re.findall(rf"\b({prefix}_\w+)\s*\(", code)) - {f"{prefix}_{role}_warp0"})
    declared = [f"__device__ unsigned {prefix}_{role}_warp0();"]
    declared += [f"__device__ unsigned {h}();" for h in handles if not h.endswith("_import")]
    bridges = []
    for imp in data["imports"]:
        symbol = f"{prefix}_{imp['param']}_import"
        declared.append(f"__device__ void {symbol}(const unsigned int* held, unsigned int* dst, int chunk);")
        ctype = _SCALARS.get(str(imp["elem"]), ("", "float", 4))[1]
        bridges.append(
            f"static __device__ __forceinline__ void {bridge(imp['param'])}({ctype}* dst, int chunk) {{\n"
            f"    {symbol}(nullptr, reinterpret_cast<unsigned int*>(dst), chunk);\n}}"
        )
    intrinsics = [
        f"static __device__ __forceinline__ unsigned {n}() {{ return {v}; }}"
        for n, v in INTRINSICS.items()
        if re.search(rf"\b{n}\s*\(", code)
    ]
    lines = [
        f"// {header.name}: generated by `kernlink pack` from the TileLang stage's kernel `{kernel}`",
        f"// (TileLang {data['tilelang']}, its CUDA code generator, {data['arch']}); do not edit.",
        "#include <cuda_bf16.h>",
        "#include <cuda_fp16.h>",
        "typedef __nv_bfloat16 bfloat16_t;",
        "typedef __half half_t;",
        "typedef long long int64_t;",
        'extern "C" {',
        *declared,
        "}",
        *intrinsics,
        *bridges,
        f"struct {struct} {{",
        *fields,
        "};",
        f'extern "C" __device__ void {entry}(const {struct}* kl_params, unsigned char* kl_smem) {{',
        f"    const unsigned kl_tid = threadIdx.x - 32u * {prefix}_{role}_warp0();",
        *unpack,
        code.rstrip(),
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- the derived contract


def derived_stage(record: Record, header: A.Stage) -> A.Stage:
    """The header with what TileLang's IR decides added (module docstring, step 3)."""
    data = record.data
    _, role_name, entry = names(header)
    threads = int(data["threads"])
    role = header.roles[0] if header.roles else A.Role(role_name)
    derived_role = A.Role(role.name, entry, threads // 32, role.regs, role.warpgroup, span=role.span)
    items: list[A.StageItem] = []
    offset, align = 0, 1
    fields = []
    for param in data["params"]:
        ctype, size = (
            ("ptr", 8) if param["kind"] == "ptr" else (_SCALARS[param["dtype"]][0], _SCALARS[param["dtype"]][2])
        )
        offset = -(-offset // size) * size
        fields.append(A.ParamField(param["name"], ctype, offset))
        offset += size
        align = max(align, size)
    params = A.Params(params_name(header), -(-offset // align) * align, align, tuple(fields)) if fields else None
    for item in header.items:
        if isinstance(item, A.Role) and item is role:
            items.append(derived_role)
        elif isinstance(item, A.ImportTensor):
            items.append(_import(item, data, threads))
        else:
            items.append(item)
    if not header.roles:
        items.insert(_after(items, (A.Target, A.Features)), derived_role)
    extra: list[A.StageItem] = []
    if params is not None:
        extra.append(params)
    dyn = sum(int(s["bytes"]) for s in data["shared"] if s["scope"] == "shared.dyn")
    if dyn:
        extra.append(A.SmemClaim("shared", dyn, 1024))
    if "__syncthreads()" in str(data["kernel"]["source"]):
        extra.append(A.BarrierClaim(f"{role.name}_sync", (role.name,)))
    at = _after(items, (A.Target, A.Features, A.Role, A.Launch))
    items[at:at] = extra
    return A.Stage(header.name, header.version, tuple(items), span=header.span)


def _after(items: list[A.StageItem], kinds: tuple[type, ...]) -> int:
    last = 0
    for i, item in enumerate(items):
        if isinstance(item, kinds):
            last = i + 1
    return last


def _import(item: A.ImportTensor, data: Mapping[str, Any], threads: int) -> A.ImportTensor:
    found = next((i for i in data["imports"] if i["param"] == item.name), None)
    if found is None:
        return item
    m, n = (int(s) for s in found["shape"])
    regs, chunks = int(found["regs"]), int(found["chunks"])
    chunk_dim = next(
        (d for d, e in zip(("m", "n"), found["indices"], strict=True) if "c" in re.findall(r"\b\w+\b", e)), None
    )
    chunk: tuple[A.Dim, ...] = ()
    if chunk_dim is not None and chunks > 1:
        extent = (m if chunk_dim == "m" else n) // chunks
        chunk = (A.Dim(chunk_dim, extent),)
    demand = A.LayoutMap(
        "regs",
        (A.MapParam("t", threads), A.MapParam("p", regs), A.MapParam("c", chunks)),
        ("m", "n"),
        tuple(A.MapAssign(d, _expr(e)) for d, e in zip(("m", "n"), found["indices"], strict=True)),
    )
    return dataclasses.replace(
        item,
        elem=item.elem or _ELEMS.get(str(found["dtype"])),
        tile=item.tile or (A.Dim("m", m), A.Dim("n", n)),
        chunk=item.chunk or chunk,
        demand=item.demand or demand,
    )


def _expr(text: str) -> Expr:
    """An index expression the driver wrote (kernlink's expression syntax), parsed."""
    stage = parse_text(f'stage "e" version "0" {{\n    requires fact {text}\n}}\n', "<tilelang index>", "contract")
    item = stage.stages[0].items[0]
    assert isinstance(item, A.RequiresFact)
    return item.expr
