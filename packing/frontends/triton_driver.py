"""Compile a Triton stage to PTX for a given target, without a GPU, and print what kernlink needs (runs under Triton).

Run by path with a Python that has Triton (``python triton_driver.py STAGE.py --arch sm_90a``);
it imports nothing of kernlink. The stage file defines the ``@triton.jit`` function ``kernel``,
its ``SIGNATURE`` (Triton's: ``{"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}``), its
``CONSTEXPRS`` and ``NUM_WARPS``. Triton's compiler API compiles it for the target given
explicitly (``GPUTarget("cuda", 90, 32)``: no device is queried; ptxas comes with Triton). One
JSON object is printed, the *lowering record*: the file's SHA-256, Triton's version, the target,
the kernel's name, its PTX, its parameters in order (pointer or scalar, with Triton's type; the
constexprs are folded in), its warps and its shared-memory bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

# Run by path, this file's folder is first on the import path, and kernlink's `triton.py` there would
# shadow Triton itself.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def _load(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("kl_triton_stage", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("kernel", "SIGNATURE"):
        if not hasattr(module, name):
            raise SystemExit(f"{path} defines no `{name}`")
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("stage")
    parser.add_argument("--arch", default="sm_90a")
    args = parser.parse_args()
    # No line information: kernlink's component drops `.loc` anyway, and the `.file` directives and
    # DWARF sections would record this machine's paths (the stage's folder, Triton's install) in a
    # record that is committed beside the stage.
    os.environ["TRITON_DISABLE_LINE_INFO"] = "1"
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    with open(args.stage, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    module = _load(args.stage)
    signature = dict(module.SIGNATURE)
    constexprs = dict(getattr(module, "CONSTEXPRS", {}))
    warps = int(getattr(module, "NUM_WARPS", 4))
    capability = int(args.arch.removeprefix("sm_").rstrip("a"))
    source = ASTSource(fn=module.kernel, signature=signature, constexprs=constexprs)
    compiled = triton.compile(source, target=GPUTarget("cuda", capability, 32), options={"num_warps": warps})
    params = [
        {"name": name, "kind": "ptr" if kind.startswith("*") else "scalar", "type": kind.lstrip("*")}
        for name, kind in signature.items()
        if kind != "constexpr"
    ]
    ptx = compiled.asm["ptx"]
    if ".file" in ptx or ".debug_" in ptx:
        raise SystemExit("Triton emitted line information although TRITON_DISABLE_LINE_INFO is set")
    record = {
        "source_sha256": digest,
        "triton": triton.__version__,
        "arch": args.arch,
        "kernel": {"name": compiled.metadata.name, "ptx": ptx},
        "params": params,
        "warps": int(compiled.metadata.num_warps),
        "shared": int(compiled.metadata.shared),
        "global_scratch": int(compiled.metadata.global_scratch_size),
    }
    json.dump(record, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
