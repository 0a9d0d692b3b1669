"""Pack, link and run one tensor-connection case of tests/link/tensor_cases.py, checking every element.

    python3 bench/gpu/run_tensor.py staging --out DIR [--blocks 2]

Cases: copy, shuffle, staging, staging-chunk. Small by default, for compute-sanitizer
(run_examples.sh runs the staging cases under racecheck and synccheck). Exit status:
0 when every delivered register matches the host's expectation bit for bit, 1 when
one does not, 2 when the link or the launch fails; the link output stays in DIR.
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
from tests.link.tensor_cases import CASES, build_case  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--blocks", type=int, default=2)
    args = parser.parse_args(argv)
    case = CASES[args.case]
    result = link([build_case(case, args.out / "src")], args.out / "linked")
    if not result.ok:
        sys.stdout.write(render_text(result.diagnostics, result.sources, color=False))
        return 2
    want = case.expected(args.blocks)
    try:
        with GpuSession() as gpu:
            out = gpu.alloc(4 * len(want))
            run_linked(args.out / "linked", gpu=gpu, grid=args.blocks, values={"out": out})
            got = array("I", gpu.download(out)).tolist()
    except DiagnosticError as err:
        sys.stdout.write(render_text(err.diagnostics, result.sources, color=False))
        return 2
    wrong = sum(1 for a, b in zip(got, want, strict=True) if a != b)
    print(f"{args.case} ({case.rung}): {len(got)} registers, {wrong} differ from the host expectation")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
