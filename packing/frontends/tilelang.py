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

A header without a role makes the stage a *callable* (:func:`callable_component`): TileLang's
kernel becomes an exported device function its caller's threads run (thread ``t`` is the
caller's thread in its group of ``T.Kernel(…, threads=N)``), each tensor parameter of a constant
shape a register *fragment* the caller passes (its filling loop copies the caller's registers),
the other parameters the callable's arguments. The derived contract exports it, the signature
from TileLang's parameters, and states each fragment it takes (``import tensor acc into callable
swiglu_regs { elem, tile, demand }``, specs/language.md §10.1): its layout map, from the filling
loop's index, is checked exact here (every register one element, every element of the tile one
register) and written at the head of the component; the link proves it register for register
against the fragment each caller states it passes (:mod:`transfer_model.fragments`).

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
from contract_lang.expr import Expr, evaluate, to_text
from contract_lang.parser import parse_text
from diagnostics import Diagnostic, DiagnosticError, Label
from diagnostics.symbols import Code
from package.abi import sanitize

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


def _error(message: str, *, labels: tuple[Label, ...] = (), helps: tuple[str, ...] = ()) -> DiagnosticError:
    return DiagnosticError([Diagnostic(Code.E_PACK, message, labels=labels, helps=helps)])


def is_callable(header: A.Stage) -> bool:
    """A header without a role: the stage is a device function its caller's threads run."""
    return not header.roles


def driver_arguments(header: A.Stage) -> list[str]:
    """The driver's arguments after the stage and the target: the imports, or the callable's fragments."""
    if is_callable(header):
        return [f"--callable={bridge('{name}')}"]
    return [f"--import={i.name}={bridge(i.name)}" for i in header.items if isinstance(i, A.ImportTensor)]


def lower(source: Path, header: A.Stage, target: str) -> Record:
    """The lowering record of ``source``: TileLang's, or the recorded one for exactly this file."""
    python = os.environ.get("KERNLINK_TILELANG_PYTHON") or (sys.executable if has_tilelang() else None)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if python is not None:
        command = [python, str(DRIVER), str(source), "--arch", target, *driver_arguments(header)]
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
    sanitized = sanitize(header.name)
    return f"kl_{sanitized}", role, f"{sanitized}_{role}_main"


def params_name(header: A.Stage) -> str:
    return "".join(p.capitalize() for p in sanitize(header.name).split("_")) + "Params"


_PRELUDE = (
    "#include <cuda_bf16.h>",
    "#include <cuda_fp16.h>",
    "typedef __nv_bfloat16 bfloat16_t;",
    "typedef __half half_t;",
    "typedef long long int64_t;",
)


def _kernel(record: Record, header: A.Stage) -> tuple[list[str], str]:
    """The generated kernel's argument declarations and its body (after the opening brace)."""
    source = str(record.data["kernel"]["source"])
    kernel = str(record.data["kernel"]["name"])
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
    return args, rest


def _arg_name(arg: str) -> str:
    return arg.split()[-1].lstrip("*")


def component(record: Record, header: A.Stage) -> str:
    """The component source of a lowering record (module docstring, step 2)."""
    if "callable" in record.data:
        return callable_component(record, header)
    data = record.data
    prefix, role, entry = names(header)
    kernel = str(data["kernel"]["name"])
    args, rest = _kernel(record, header)
    struct = params_name(header)
    fields, unpack = [], []
    generated = {_arg_name(a): a for a in args}  # TileLang's kernel lists the scalars by name: match by name
    for param in data["params"]:
        cname = str(param["name"])
        arg = generated[cname]
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
        *_PRELUDE,
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


def callable_symbol(record: Record, header: A.Stage) -> str:
    """The device function a callable stage exports: ``<stage>_<TileLang function>``."""
    return f"{sanitize(header.name)}_{record.data['callable']}"


@dataclass(frozen=True)
class _Arg:
    """A parameter of the callable: its name, contract type and C declaration, and how the body reads it."""

    name: str
    type: str
    decl: str
    unpack: str = ""


def _callable_args(record: Record, header: A.Stage) -> list[_Arg]:
    """The callable's parameters: each fragment, then TileLang's other parameters in the program's order."""
    generated = {_arg_name(a): a for a in _kernel(record, header)[0]}
    out = [_Arg(str(i["param"]), "ptr", f"void* kl_frag_{i['param']}") for i in record.data["imports"]]
    for param in record.data["params"]:
        name = str(param["name"])
        if param["kind"] == "ptr":
            ctype = generated[name][: generated[name].rfind(name)].replace("__restrict__", "").strip()
            out.append(_Arg(name, "ptr", f"void* kl_arg_{name}", f"    {ctype} {name} = ({ctype})kl_arg_{name};"))
        else:
            contract, ctype, _ = _SCALARS[str(param["dtype"])]
            out.append(_Arg(name, contract, f"{ctype} {name}"))
    return out


def signature(record: Record, header: A.Stage) -> A.Signature:
    """The exported callable's signature, from TileLang's parameters."""
    return A.Signature(tuple(a.type for a in _callable_args(record, header)), "void")


def fragment_map(imp: Mapping[str, Any], threads: int) -> A.LayoutMap:
    """A fragment's layout map: thread ``t``, register ``p`` -> the element ``(m, n)`` of its tile."""
    return A.LayoutMap(
        "regs",
        (A.MapParam("t", threads), A.MapParam("p", int(imp["regs"]))),
        ("m", "n"),
        tuple(A.MapAssign(d, _expr(e)) for d, e in zip(("m", "n"), imp["indices"], strict=True)),
    )


def fragment(imp: Mapping[str, Any], callable_: str, threads: int) -> A.Fragment:
    """The derived contract's ``import tensor NAME into callable C``: the fragment the callable takes."""
    m, n = (int(x) for x in imp["shape"])
    elem = _ELEMS.get(str(imp["elem"]))
    if elem is None:
        raise _error(
            f"fragment `{imp['param']}` of `{callable_}` holds `{imp['elem']}`, which no contract element names"
        )
    return A.Fragment(
        str(imp["param"]), callable_, "import", elem, (A.Dim("m", m), A.Dim("n", n)), fragment_map(imp, threads)
    )


def check_fragment(imp: Mapping[str, Any], threads: int, header: A.Stage) -> None:
    """A fragment's map is exact: every (thread, register) one element of the tile, every element once."""
    m_extent, n_extent = (int(x) for x in imp["shape"])
    regs = int(imp["regs"])
    what = f"fragment `{imp['param']}` of `{header.name}`"
    if threads * regs != m_extent * n_extent:
        raise _error(f"{what}: {threads} threads x {regs} registers do not hold its {m_extent} x {n_extent} tile once")
    index = [_expr(e) for e in imp["indices"]]
    seen: dict[tuple[int, int], tuple[int, int]] = {}
    for t in range(threads):
        for p in range(regs):
            m, n = (evaluate(e, {"t": t, "p": p}) for e in index)
            if not (0 <= m < m_extent and 0 <= n < n_extent):
                raise _error(f"{what}: thread {t}, register {p} holds ({m}, {n}), outside the tile")
            if (m, n) in seen:
                first = seen[(m, n)]
                raise _error(f"{what}: thread {t}, register {p} holds ({m}, {n}), as thread {first[0]}'s {first[1]}")
            seen[(m, n)] = (t, p)


def callable_component(record: Record, header: A.Stage) -> str:
    """The component of a callable stage (module docstring): an exported device function."""
    data = record.data
    threads = int(data["threads"])
    kernel = str(data["kernel"]["name"])
    code = _kernel(record, header)[1].replace("threadIdx.x", "kl_tid")
    if "__syncthreads()" in code or "extern __shared__" in code:
        raise _error(
            f"the callable stage `{header.name}` synchronises its block or claims shared memory, which a callable "
            "cannot own",
            helps=("keep a callable stage to registers and global memory; give the stage a role otherwise",),
        )
    bridges, maps = [], []
    for imp in data["imports"]:
        check_fragment(imp, threads, header)
        name, ctype = str(imp["param"]), _SCALARS.get(str(imp["elem"]), ("", "float", 4))[1]
        code = code.replace(f"{bridge(name)}(", f"{bridge(name)}(kl_frag_{name}, ")
        bridges.append(
            f"static __device__ __forceinline__ void {bridge(name)}(const void* src, {ctype}* dst, int) {{\n"
            f"#pragma unroll\n    for (int p = 0; p < {int(imp['regs'])}; ++p) {{\n"
            f"        dst[p] = static_cast<const {ctype}*>(src)[p];\n    }}\n}}"
        )
        shape = " x ".join(str(x) for x in imp["shape"])
        maps.append(f"//   `{name}` ({imp['dtype']} {shape}): {print_map(fragment_map(imp, threads))}")
    args = _callable_args(record, header)
    lines = [
        f"// {header.name}: generated by `kernlink pack` from the TileLang stage's kernel `{kernel}`",
        f"// (TileLang {data['tilelang']}, its CUDA code generator, {data['arch']}); do not edit.",
        f"// A device function its caller's threads run in groups of {threads} (t = threadIdx.x % {threads}); each",
        "// fragment is the caller's registers, register p of thread t holding element (m, n):",
        *maps,
        *_PRELUDE,
        *bridges,
        f'extern "C" __device__ void {callable_symbol(record, header)}({", ".join(a.decl for a in args)}) {{',
        f"    const unsigned kl_tid = threadIdx.x % {threads}u;",
        *(a.unpack for a in args if a.unpack),
        code.rstrip(),
        "",
    ]
    return "\n".join(lines)


def print_map(layout: A.LayoutMap) -> str:
    """A layout map on one line, as a contract writes it."""
    params = ", ".join(f"{p.name}: {p.extent}" for p in layout.params)
    body = "  ".join(f"{a.name} = {to_text(a.expr)}" for a in layout.assigns)
    return f"{layout.kind}({params}) -> ({', '.join(layout.outputs)}) {{ {body} }}"


# ---------------------------------------------------------------------------- the derived contract


def derived_stage(record: Record, header: A.Stage) -> A.Stage:
    """The header with what TileLang's IR decides added (module docstring, step 3)."""
    if "callable" in record.data:
        name = str(record.data["callable"])
        export = A.ExportCallable(name, signature(record, header), callable_symbol(record, header))
        threads = int(record.data["threads"])
        taken = tuple(fragment(imp, name, threads) for imp in record.data["imports"])
        at = _after(list(header.items), (A.Target, A.Features, A.Cluster))
        callable_items = (*header.items[:at], export, *taken, *header.items[at:])
        return A.Stage(header.name, header.version, callable_items, span=header.span)
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
