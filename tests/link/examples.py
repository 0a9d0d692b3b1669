"""The reference examples (hello, ring, moe4, gemm_swiglu), packed into a scratch folder, and their host references.

``build_examples`` copies each example's pipeline, contracts and sources into a folder
and packs every component into ``build/`` there, as a user would; ``variant`` makes a
copy whose contracts are edited (a launch line, a register budget). The references
compute on the host what the components' sources document, bit for bit.
"""

from __future__ import annotations

import random
import shutil
from array import array
from collections.abc import Mapping
from pathlib import Path

from packing.pack import pack

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"
COMPONENTS = {
    "hello": ("provider", "caller"),
    "ring": ("loader", "reduce"),
    "moe4": ("interp", "comm", "gemm", "act"),
    "gemm_swiglu": ("mainloop", "epilogue", "mma_sync", "smem_acc"),
}
KERNEL = "kl_dispatch"


def build_example(name: str, root: Path, edits: Mapping[str, Mapping[str, str]] | None = None) -> Path:
    """Copy example ``name`` into ``root/name``, apply ``edits`` ({file: {old: new}}), pack it; its pipeline."""
    folder = root / name
    shutil.copytree(EXAMPLES / name, folder, ignore=shutil.ignore_patterns("build"))
    for file, changes in (edits or {}).items():
        text = (folder / file).read_text()
        for old, new in changes.items():
            assert old in text, f"{old!r} not in {file}"
            text = text.replace(old, new)
        (folder / file).write_text(text)
    for component in COMPONENTS[name]:
        source = folder / f"{component}.cu"
        pack(source, source.with_suffix(".kc"), folder / "build" / f"{component}.kpkg")
    return folder / f"{name}.kp"


def floats(count: int, seed: int) -> array[float]:
    rng = random.Random(seed)
    return array("f", (rng.gauss(0.0, 1.0) for _ in range(count)))


def f32(value: float) -> float:
    """Round to float32; a double sum of two float32 values rounds to the float32 sum exactly."""
    return array("f", [value])[0]


def ring_reference(data: array[float], tiles: int) -> list[float]:
    """reduce.cu's documented order: per thread, strided sums from 0; then an xor butterfly per warp."""
    out = []
    for tile in range(tiles):
        base = tile * 8192
        sums = [0.0] * 256
        for k in range(0, 8192, 256):
            sums = [f32(s + data[base + k + t]) for t, s in enumerate(sums)]
        for w in range(8):
            lanes = sums[32 * w : 32 * w + 32]
            for mask in (16, 8, 4, 2, 1):
                lanes = [f32(lanes[lane] + lanes[lane ^ mask]) for lane in range(32)]
            out.append(lanes[0])
    return out


def hello_reference(data: array[float], n: int, factor: int = 3) -> list[float]:
    """caller.cu: data[i] = scale(data[i]) + factor for i < n, with scale(x) = 3x (hello.provider)."""
    return [f32(f32(x * 3.0) + factor) for x in data[:n]] + data[n:].tolist()
