"""Lower a TileLang stage to CUDA source and the facts kernlink derives its contract from (runs under TileLang).

This file is run *by path* with a Python that has TileLang (``python tilelang_driver.py STAGE.py
--arch sm_90a --import Acc=BRIDGE …``); it imports nothing of kernlink, so it runs in an
environment TileLang's own dependencies decide (TileLang 0.1.15 needs ``torch`` and
``z3-solver<4.15.5``, which kernlink's pinned Z3 excludes from one environment). It prints one
JSON object, the *lowering record*:

- ``source_sha256``: the stage file's hash (a record is only used for the file it was made from);
- ``tilelang``: TileLang's version; ``arch``: the target;
- ``kernel``: the kernel's name and CUDA source, from TileLang's own code generator
  (``tilelang.lower`` with the target given explicitly: no device is queried);
- ``threads``: the block TileLang launches (``T.Kernel(…, threads=N)``);
- ``params``: the kernel's parameters in order, each a pointer (a tensor) or a scalar type;
- ``shared``: each shared-memory allocation (name, scope, bytes);
- ``locals``: each register array (name, element type, shape);
- ``pipelined``: each ``T.Pipelined`` loop's stage count;
- ``imports``: for each tensor parameter the command names (``--import PARAM=BRIDGE``), the
  register array it fills, its register and chunk counts, and the element each register
  holds as an expression of the thread ``t``, the register ``p`` and the chunk ``c``. The
  loop that filled the array from the parameter is replaced by a call ``BRIDGE(&array[0], c)``
  (kernlink defines the bridge over the stage's import handle) and the parameter removed.
  A filling loop outside any chunk loop fills the whole tile at once (one chunk; ``c`` absent).
- ``callable``: with ``--callable``, the function's name: the stage is a device function its
  caller's threads run, and each tensor parameter of a constant shape is a register *fragment*
  the caller passes, read by a filling loop (``imports`` as above, its bridge reading the caller's
  registers); the element each register holds is then the layout map of that fragment.

The stage file defines one ``T.prim_func`` (or names it ``kernel``).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

# Run by path, this file's folder is first on the import path, and kernlink's `tilelang.py` there would
# shadow TileLang itself.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def _load(path: str) -> Any:
    from tvm import tirx as tir

    spec = importlib.util.spec_from_file_location("kl_tilelang_stage", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if isinstance(getattr(module, "kernel", None), tir.PrimFunc):
        return module.kernel
    found = [v for v in vars(module).values() if isinstance(v, tir.PrimFunc)]
    if len(found) != 1:
        raise SystemExit(f"{path} defines {len(found)} T.prim_func; name the stage's `kernel`")
    return found[0]


def _expr(e: Any, names: dict[Any, str]) -> str:
    """A TIR index expression in kernlink's expression syntax (+ - * / %, integers, names)."""
    from tvm import tirx as tir

    if isinstance(e, tir.Var):
        if e not in names:
            raise SystemExit(f"the index uses `{e.name}`, which is neither the thread, the register nor the chunk")
        return names[e]
    if isinstance(e, tir.IntImm):
        return str(int(e.value))
    ops = {tir.Add: "+", tir.Sub: "-", tir.Mul: "*", tir.FloorDiv: "/", tir.FloorMod: "%", tir.Div: "/", tir.Mod: "%"}
    for kind, op in ops.items():
        if isinstance(e, kind):
            return f"({_expr(e.a, names)} {op} {_expr(e.b, names)})"
    if isinstance(e, tir.Cast):
        return _expr(e.value, names)
    raise SystemExit(f"an index kernlink cannot read: {e}")


def _thread_var(func: Any) -> Any:
    from tvm import tirx as tir

    found: list[Any] = []

    def visit(node: Any) -> None:
        launch = (
            isinstance(node, tir.Bind) and isinstance(node.value, tir.Call) and "launch_thread" in str(node.value.op)
        )
        if launch and int(node.value.args[0]) == 0 and not found:
            found.append(node.var)

    tir.stmt_functor.post_order_visit(func.body, visit)
    return found[0] if found else None


def _fragments(func: Any, bridge: str) -> dict[str, str]:
    """A callable stage's fragments: every tensor parameter of a constant shape (``T.Tensor((64, 128), …)``;
    a ``T.ptr`` made a tensor has its run-time shape), each with the bridge its filling loop becomes."""
    from tvm import tirx as tir

    fixed = [b for b in func.buffer_map.values() if all(isinstance(s, tir.IntImm) for s in b.shape)]
    return {buf.name: bridge.format(name=buf.name) for buf in fixed}


def _imports(func: Any, wanted: dict[str, str]) -> tuple[Any, list[dict[str, Any]]]:
    """Replace each imported parameter's filling loop by the bridge call; what each import demands."""
    from tvm import tirx as tir

    tx = _thread_var(func)
    by_name = {buf.name: (param, buf) for param, buf in func.buffer_map.items()}
    records: list[dict[str, Any]] = []
    body = func.body
    for name, bridge in wanted.items():
        if name not in by_name:
            raise SystemExit(f"the stage has no tensor parameter `{name}` to import")
        _, source = by_name[name]
        found: dict[str, Any] = {}

        def fill(
            stmt: Any, chunk: Any, source: Any = source, bridge: str = bridge, found: dict[str, Any] = found
        ) -> Any:
            """``for p: held[p] = source[…]`` in chunk loop ``chunk`` (None: no chunk loop) -> the bridge call."""
            store = stmt.body if isinstance(stmt, tir.For) else None
            if not (
                isinstance(store, tir.BufferStore)
                and isinstance(store.value, tir.BufferLoad)
                and store.value.buffer.same_as(source)
            ):
                return None
            held = store.buffer
            if len(store.indices) != 1 or not store.indices[0].same_as(stmt.loop_var):
                raise SystemExit(f"import `{source.name}`: fill `{held.name}[p]` from it, one register per iteration")
            names = {tx: "t", stmt.loop_var: "p"}
            if chunk is not None:
                names[chunk.loop_var] = "c"
            found.update(
                held=held.name,
                elem=str(held.dtype),
                regs=int(stmt.extent),
                chunks=int(chunk.extent) if chunk is not None else 1,
                indices=[_expr(i, names) for i in store.value.indices],
                shape=[int(x) for x in source.shape],
                dtype=str(source.dtype),
            )
            index = chunk.loop_var if chunk is not None else tir.IntImm("int32", 0)
            call = tir.call_extern("void", bridge, tir.address_of(tir.BufferLoad(held, [0])), index)
            return tir.Evaluate(call)

        def whole(node: Any, fill: Any = fill) -> Any:
            """A filling loop outside any chunk loop: one chunk."""
            if not isinstance(node, tir.SeqStmt):
                return None
            changed = [fill(part, None) if isinstance(part, tir.For) else None for part in node.seq]
            if all(c is None for c in changed):
                return None
            return tir.SeqStmt([c if c is not None else part for c, part in zip(changed, node.seq, strict=True)])

        def rewrite(node: Any, fill: Any = fill) -> Any:
            if not isinstance(node, tir.For):
                return None
            parts = list(node.body.seq) if isinstance(node.body, tir.SeqStmt) else [node.body]
            changed = [fill(part, node) for part in parts]
            if all(c is None for c in changed):
                return None
            new = [c if c is not None else part for c, part in zip(changed, parts, strict=True)]
            body = tir.SeqStmt(new) if len(new) > 1 else new[0]
            return tir.For(node.loop_var, node.min, node.extent, node.kind, body)

        body = tir.stmt_functor.ir_transform(body, None, rewrite, ["tirx.For"])
        if not found:
            body = tir.stmt_functor.ir_transform(body, None, whole, ["tirx.SeqStmt"])
        if not found:
            raise SystemExit(
                f"import `{name}`: no `for p: held[p] = {name}[…]` loop (register p, in a chunk loop c or not) reads it"
            )
        records.append({"param": name, "bridge": bridge, **found})
    params = [p for p in func.params if p not in [by_name[n][0] for n in wanted]]
    buffer_map = {p: b for p, b in func.buffer_map.items() if p in params}
    return tir.PrimFunc(params, body, func.ret_type, buffer_map, func.attrs), records


def _facts(func: Any) -> dict[str, Any]:
    from tvm import tirx as tir

    shared: list[dict[str, Any]] = []
    locals_: list[dict[str, Any]] = []
    pipelined: list[int] = []

    def visit(node: Any) -> None:
        if isinstance(node, tir.For) and "num_stages" in node.annotations:
            pipelined.append(int(node.annotations["num_stages"]))
        buffers = []
        if isinstance(node, tir.SBlock):
            buffers = list(node.alloc_buffers)
        for buf in buffers:
            scope = buf.scope()
            size = 1
            for s in buf.shape:
                size *= int(s)
            entry = {"name": buf.name, "dtype": str(buf.dtype), "shape": [int(s) for s in buf.shape]}
            if scope.startswith("shared"):
                shared.append({**entry, "scope": scope, "bytes": size * buf.dtype.bits // 8})
            elif scope.startswith("local"):
                locals_.append(entry)

    tir.stmt_functor.post_order_visit(func.body, visit)
    threads = 1

    def find_threads(node: Any) -> None:
        nonlocal threads
        if isinstance(node, tir.SBlock) and "tl.launch_threads" in node.annotations:
            dims = [int(d) for d in node.annotations["tl.launch_threads"]]
            threads = dims[0] * dims[1] * dims[2]

    tir.stmt_functor.post_order_visit(func.body, find_threads)
    params = []
    for p in func.params:
        if p in func.buffer_map:
            buf = func.buffer_map[p]
            params.append({"name": buf.name, "kind": "ptr", "dtype": str(buf.dtype)})
        else:
            params.append({"name": p.name, "kind": "scalar", "dtype": str(p.dtype)})
    return {"threads": threads, "params": params, "shared": shared, "locals": locals_, "pipelined": pipelined}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("stage")
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--import", dest="imports", action="append", default=[], metavar="PARAM=BRIDGE")
    parser.add_argument(
        "--callable", metavar="BRIDGE", help="lower as a device function; fragment bridges named BRIDGE.format(name=)"
    )
    args = parser.parse_args()
    import tilelang
    from tvm.target import Target

    with open(args.stage, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    func = _load(args.stage)
    wanted = dict(i.split("=", 1) for i in args.imports)
    if args.callable:
        wanted.update(_fragments(func, args.callable))
    func, imports = _imports(func, wanted)
    facts = _facts(func)
    target = Target({"kind": "cuda", "arch": args.arch})
    with target:
        artifact = tilelang.lower(func, target=target)
    source = artifact.kernel_source
    name = source.split('extern "C" __global__ void', 1)[1].split("(", 1)[0].split()[-1]
    record = {
        "source_sha256": digest,
        "tilelang": tilelang.__version__,
        "arch": args.arch,
        "kernel": {"name": name, "source": source},
        "imports": imports,
        **({"callable": str(func.attrs["global_symbol"])} if args.callable else {}),
        **facts,
    }
    json.dump(record, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
