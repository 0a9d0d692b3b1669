"""Run a linked kernel: load the cubin, build its params block, launch, synchronize.

``kernlink link`` writes ``kernel.cubin`` and ``link.json``; the JSON says everything a
launch needs: the kernel's name, its block size, its dynamic shared memory, the
launch kind, and the params block — each stage's region and each field's offset,
type and source. The launch helper writes the fields bound to a fact from the
owner's value (``source: fact``) and takes every other field from the caller.

Python API (what tests use)::

    with GpuSession() as gpu:
        src, dst = gpu.upload(data), gpu.alloc(nbytes)
        run_linked("out/ring", gpu=gpu, grid=4, values={"src": src, "dst": dst, "tiles": 37})

A value's key is a field name (given to every stage whose params have a field of
that name) or ``stage.field`` (``ring.loader.tiles``) for one stage's field; a
``ptr`` field takes a :class:`~runtime.launch.DeviceBuffer` or an address. The launch
takes its geometry from the link's launch configuration (``link.json`` ``launch``,
linker/launch_config.py), as ``kernel.h`` and ``kernlink.Session`` do: the grid the
pipeline states, else ``grid``, else for a persistent or ``grid resident`` launch the SM
count × ``blocks_per_sm``; the cluster and cooperative attributes it records.

``kernlink run DIR --args ARGS.json`` does the same from the command line, with
device buffers made from files::

    {"grid": 4,
     "values": {"tiles": 37},
     "buffers": {"src": {"input": "tiles.bin"}, "dst": {"bytes": 1184, "output": "sums.bin"}}}

(paths relative to the JSON file). Every problem is a diagnostic: ``E-RUN`` for the
inputs (a directory without a successful link's manifest), ``L-INTEGRITY`` for a
cubin other than the one ``link.json`` records (checked on every load and launch),
``E-CUDA`` naming the failing driver call and its error
(``CUDA_ERROR_ILLEGAL_ADDRESS``, …).
"""

from __future__ import annotations

import functools
import json
import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.symbols import Code
from linker.artifacts import FIELD_FORMATS
from linker.launch_config import Launch, LaunchConfig, LaunchRefused
from linker.outdir import locked, verify_cubin
from linker.watchdog import HostLedger, decode_ledger
from runtime.launch import DeviceBuffer, GpuSession, LoadedCubin

CUBIN = "kernel.cubin"
JSON = "link.json"

Value = int | float | bool | DeviceBuffer


@dataclass(frozen=True)
class LinkedKernel:
    """A link's cubin and map, as ``kernlink link`` wrote them."""

    cubin: bytes
    map: Mapping[str, Any]
    directory: str = "."

    @classmethod
    def load(cls, directory: str | Path) -> LinkedKernel:
        """Read the manifest and the cubin under a shared lock on the directory (a link holds it
        exclusively while it writes); ``L-INTEGRITY`` unless the cubin is the one the manifest records."""
        root = Path(directory)
        with locked(root, exclusive=False):
            try:
                data = json.loads((root / JSON).read_text(encoding="utf-8"))
                if not isinstance(data, dict):
                    raise ValueError("the manifest is not a JSON object")
                if data.get("status") != "linked" or "dispatch" not in data:
                    raise _error(
                        f"the link in `{root}` did not succeed (status `{data.get('status')}`)",
                        f"read `{root / 'link.map'}` for its diagnostics",
                    )
                cubin = (root / CUBIN).read_bytes()
            except (OSError, ValueError) as err:
                raise _error(
                    f"`{root}` holds no linked kernel: {err}",
                    "link the pipeline first: `kernlink link PIPELINE.kp -o DIR`",
                ) from err
        verify_cubin(cubin, data, root)
        return cls(cubin, data, str(root))

    @functools.cached_property
    def launch(self) -> LaunchConfig:
        """The link's launch configuration (``link.json`` ``launch``), the one every launcher takes."""
        try:
            return LaunchConfig.from_json(self.map["launch"])
        except (KeyError, TypeError, ValueError) as err:
            raise _error(
                f"`{Path(self.directory) / JSON}` records no usable launch configuration ({err})",
                "link again with this kernlink: `kernlink link PIPELINE.kp -o DIR`",
            ) from err

    @property
    def kernel(self) -> str:
        return self.launch.kernel

    @property
    def threads(self) -> int:
        return self.launch.threads

    @property
    def dynamic_smem(self) -> int:
        return self.launch.dynamic_smem

    def plan(self, grid: int | None, sms: int) -> Launch:
        """One launch of ``grid`` blocks (None: the link's grid) on ``sms`` SMs; ``E-RUN`` for a grid the link
        does not allow."""
        try:
            return self.launch.plan(grid, sms)
        except LaunchRefused as err:
            raise _error(str(err), err.help) from err


def params_block(link_map: Mapping[str, Any], values: Mapping[str, Value]) -> bytes:
    """The kernel's params block: fact fields from the map, every other field from ``values``."""
    params = link_map["params"]
    data = bytearray(int(params["size"]))
    used: set[str] = set()
    missing = []
    for f in params["fields"]:
        qualified = f"{f['stage']}.{f['name']}"
        key = qualified if qualified in values else f["name"]
        fmt = "<" + FIELD_FORMATS[f["type"]]
        if f["source"] == "fact":
            if key in values:
                raise _error(
                    f"`{qualified}` is the fact `{f['fact']}`, which the link writes ({f['value']})",
                    f"drop `{key}` from the values",
                )
            struct.pack_into(fmt, data, int(f["offset"]), f["value"])
            continue
        if key not in values:
            missing.append(qualified)
            continue
        used.add(key)
        value = values[key]
        raw = value.ptr if isinstance(value, DeviceBuffer) else value
        allowed = f.get("allowed") or []
        if allowed and raw not in allowed:
            whose = f"the owner of fact `{f['fact']}`" if f.get("fact") else "its contract (`in {…}`)"
            raise _error(
                f"`{qualified}` = {raw} is not a value {whose} allows",
                f"give one of {', '.join(str(v) for v in allowed[:8])}",
            )
        try:
            struct.pack_into(fmt, data, int(f["offset"]), raw)
        except struct.error as err:
            raise _error(
                f"`{qualified}` = {raw!r} does not fit a `{f['type']}`: {err}", "give a value of the field's type"
            ) from err
    if missing:
        raise _error(
            f"no value for {', '.join(f'`{m}`' for m in missing)}",
            "give every caller field in `values` (by field name, or `stage.field`)",
        )
    unknown = sorted(set(values) - used)
    if unknown:
        raise _error(
            f"no params field is named {', '.join(f'`{u}`' for u in unknown)}",
            "name fields as the contracts' `params` blocks do (`link.map` lists them)",
        )
    return bytes(data)


def run_linked(
    linked: LinkedKernel | str | Path, *, gpu: GpuSession, values: Mapping[str, Value], grid: int | None = None
) -> None:
    """Launch the linked kernel once with the link's launch configuration (``grid``: None, the link's) and wait."""
    kernel = linked if isinstance(linked, LinkedKernel) else LinkedKernel.load(linked)
    verify_cubin(kernel.cubin, kernel.map, kernel.directory)
    block = params_block(kernel.map, values)
    plan = kernel.plan(grid, gpu.sms)
    module = gpu.load(kernel.cubin)
    loaded = module.kernel(kernel.kernel)
    zero_counters(module, kernel.map)
    ledger = HostLedger(module.module) if kernel.map.get("watchdog") else None
    try:
        gpu.run(loaded, plan, [block] if block else [])
    except DiagnosticError as err:
        hangs = decode_ledger(kernel.map, ledger.read()) if ledger is not None else []
        if hangs:  # a watched wait timed out: the ledger says which; the driver's error is its consequence
            cause = "; ".join(d.message for d in err.diagnostics)
            first = replace(hangs[0], notes=(*hangs[0].notes, f"the trap ended the launch: {cause}"))
            raise DiagnosticError([first, *hangs[1:]]) from err
        raise
    finally:
        if ledger is not None:
            ledger.close()


def zero_counters(module: LoadedCubin, link_map: Mapping[str, Any]) -> None:
    """The reset rule of linker/counters.py: zero the kernel's counter array before a launch."""
    counters = link_map.get("counters")
    if not counters or not counters.get("words"):
        return
    from cuda.bindings import driver

    err, address, size = driver.cuModuleGetGlobal(module.module, str(counters["symbol"]).encode())
    if err != driver.CUresult.CUDA_SUCCESS or int(size) < 4 * int(counters["words"]):
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_CUDA,
                    f"cannot find the counter array `{counters['symbol']}` in the cubin ({err})",
                    helps=("link again: link.json and kernel.cubin come from different links",),
                )
            ]
        )
    (err,) = driver.cuMemsetD32(address, 0, int(counters["words"]))
    if err != driver.CUresult.CUDA_SUCCESS:
        raise DiagnosticError([Diagnostic(Code.E_CUDA, f"cuMemsetD32 of `{counters['symbol']}` failed: {err}")])


# ----------------------------------------------------------------- `kernlink run`


def run_command(directory: Path, args_file: Path) -> None:
    """`kernlink run DIR --args FILE`: launch once with the args file's grid, values and buffers; write the outputs."""
    kernel = LinkedKernel.load(directory)
    try:
        spec = json.loads(args_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise _error(f"cannot read `{args_file}`: {err}", "give a JSON file of `grid`, `values`, `buffers`") from err
    with GpuSession() as gpu:
        values, outputs = make_buffers(gpu, spec, args_file.parent)
        run_linked(kernel, gpu=gpu, values=values, grid=spec.get("grid"))
        for buffer, path in outputs:
            path.write_bytes(gpu.download(buffer))
    sys.stdout.write(
        f"ran `{kernel.kernel}` from {directory}: {kernel.threads} threads per block, "
        f"{kernel.dynamic_smem} B dynamic shared memory; wrote "
        f"{', '.join(str(p) for _, p in outputs) or 'no outputs'}\n"
    )


def make_buffers(
    gpu: GpuSession, spec: Mapping[str, Any], base: Path
) -> tuple[dict[str, Value], list[tuple[DeviceBuffer, Path]]]:
    """The values of an args file (``values`` and fresh ``buffers``; paths relative to ``base``), and its outputs."""
    values: dict[str, Value] = dict(spec.get("values", {}))
    outputs: list[tuple[DeviceBuffer, Path]] = []
    for name, buf in sorted(spec.get("buffers", {}).items()):
        if "input" in buf:
            data = (base / buf["input"]).read_bytes()
            values[name] = gpu.upload(data + bytes(max(0, int(buf.get("bytes", 0)) - len(data))))
        else:
            values[name] = gpu.alloc(int(buf["bytes"]))
        if "output" in buf:
            value = values[name]
            assert isinstance(value, DeviceBuffer)
            outputs.append((value, base / buf["output"]))
    return values, outputs


def _error(message: str, help_text: str) -> DiagnosticError:
    return DiagnosticError([Diagnostic(Code.E_RUN, message, helps=(help_text,))])
