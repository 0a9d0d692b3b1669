"""Build the compositions `kernlink parity` times on the GPU, each with its args file.

    python3 bench/gpu/parity_cases.py DIR

Writes DIR/<case>/ (sources, packages, ``args.json`` and its input files) for hello, ring
and the four tensor routes of tests/link/tensor_cases.py, and DIR/cases.tsv: one line per
case, ``name<TAB>pipeline<TAB>args``. Sizes are large enough that a launch takes tens of
microseconds (hello: 2^26 floats scaled in place, ~0.8 ms; ring: 8192 tiles of 32 KiB, ~65 us), so launch
overhead does not hide the kernel; the tensor routes are tiny blocks (one or two warps), so
they run over 270336 blocks (at 1056 blocks a launch takes ~5 us and the ratio is launch noise, ±3 %).
"""

from __future__ import annotations

import json
import sys
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.link.examples import build_example  # noqa: E402
from tests.link.tensor_cases import CASES, build_case  # noqa: E402

HELLO_N = 1 << 26
RING_TILES = 8192
TILE_ELEMS = 8192
SMS = 132  # H200
TENSOR_BLOCKS = 2048 * SMS  # 270336 one- or two-warp blocks, 512 B each: ~0.2 ms, not launch-bound


def random_floats(count: int, seed: int) -> bytes:
    """Normal float32 values (numpy where present; else a deterministic pattern)."""
    try:
        import numpy as np

        return bytes(np.random.default_rng(seed).standard_normal(count, dtype=np.float32).tobytes())
    except ImportError:
        return array("f", (((i * 2654435761 + seed) % 2001) / 1000.0 - 1.0 for i in range(count))).tobytes()


def write_args(folder: Path, spec: dict[str, object]) -> Path:
    path = folder / "args.json"
    path.write_text(json.dumps(spec, indent=2, sort_keys=True) + "\n")
    return path


def main(argv: list[str]) -> int:
    root = Path(argv[0])
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    hello = build_example("hello", root)
    (hello.parent / "data.bin").write_bytes(random_floats(HELLO_N, 1))
    rows.append(
        (
            "hello",
            hello,
            write_args(
                hello.parent,
                {
                    "grid": 2 * SMS,
                    "values": {"n": HELLO_N},
                    "buffers": {"data": {"input": "data.bin", "output": "out.bin"}},
                },
            ),
        )
    )
    ring = build_example("ring", root)
    (ring.parent / "src.bin").write_bytes(random_floats(RING_TILES * TILE_ELEMS, 2))
    rows.append(
        (
            "ring",
            ring,
            write_args(
                ring.parent,
                {
                    "grid": SMS,
                    "values": {"tiles": RING_TILES},
                    "buffers": {
                        "src": {"input": "src.bin"},
                        "dst": {"bytes": 4 * 8 * RING_TILES, "output": "sums.bin"},
                    },
                },
            ),
        )
    )
    for name, case in sorted(CASES.items()):
        pipeline = build_case(case, root / f"tensor-{name}")
        words = len(case.expected(1)) * TENSOR_BLOCKS
        rows.append(
            (
                f"tensor-{name}",
                pipeline,
                write_args(
                    pipeline.parent,
                    {"grid": TENSOR_BLOCKS, "buffers": {"out": {"bytes": 4 * words, "output": "out.bin"}}},
                ),
            )
        )
    (root / "cases.tsv").write_text("".join(f"{n}\t{p}\t{a}\n" for n, p, a in rows))
    for n, p, a in rows:
        print(n, p, a)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
