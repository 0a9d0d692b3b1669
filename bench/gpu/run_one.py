"""Pack, link and run one reference example once, checking it against its host reference.

    python3 bench/gpu/run_one.py ring --out DIR [--tiles 8 --blocks 2]
    python3 bench/gpu/run_one.py hello --out DIR [--n 1000 --blocks 3]

Small sizes by default, for compute-sanitizer (run_examples.sh runs it under memcheck,
racecheck and synccheck). Exit status: 0 when the result matches bit for bit, 1 when
it does not, 2 when the link or the launch fails; the link output stays in DIR.
"""

from __future__ import annotations

import argparse
import sys
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from diagnostics.model import DiagnosticError  # noqa: E402
from diagnostics.render_text import render_text  # noqa: E402
from kernlink.api import link  # noqa: E402
from runtime.launch import GpuSession  # noqa: E402
from runtime.run import run_linked  # noqa: E402
from tests.link.examples import build_example, floats, hello_reference, ring_reference  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("example", choices=("hello", "ring"))
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--tiles", type=int, default=8)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--blocks", type=int, default=2)
    args = parser.parse_args(argv)
    pipeline = build_example(args.example, args.out / "src")
    result = link([pipeline], args.out / "linked")
    if not result.ok:
        sys.stdout.write(render_text(result.diagnostics, result.sources, color=False))
        return 2
    try:
        got, want = _run(args)
    except DiagnosticError as err:
        sys.stdout.write(render_text(err.diagnostics, result.sources, color=False))
        return 2
    wrong = sum(1 for a, b in zip(got, want, strict=True) if a != b)
    print(f"{args.example}: {len(got)} values, {wrong} differ from the host reference")
    return 1 if wrong else 0


def _run(args: argparse.Namespace) -> tuple[list[float], list[float]]:
    with GpuSession() as gpu:
        if args.example == "ring":
            data = floats(args.tiles * 8192, args.tiles)
            src, dst = gpu.upload(data.tobytes()), gpu.alloc(args.tiles * 8 * 4)
            run_linked(
                args.out / "linked", gpu=gpu, grid=args.blocks, values={"src": src, "dst": dst, "tiles": args.tiles}
            )
            got, want = array("f", gpu.download(dst)).tolist(), ring_reference(data, args.tiles)
        else:
            data = floats(args.n + 7, args.n)
            buf = gpu.upload(data.tobytes())
            run_linked(args.out / "linked", gpu=gpu, grid=args.blocks, values={"data": buf, "n": args.n})
            got, want = array("f", gpu.download(buf)).tolist(), hello_reference(data, args.n)
    return got, want


if __name__ == "__main__":
    raise SystemExit(main())
