"""What `loops N` costs the code facts: the swap-AB consumer with one k-loop, and with two alternatives.

The consumer of specs/examples/gemm_swiglu/persistent (consumer_swapab.cu) as committed (one
`mainloop<32>` per unit) and edited as tests/conformance/test_loops.py edits it (`mainloop<16>`
when `p->m <= 16`, else `mainloop<32>`): the PTX is compiled once, then the facts are derived
from it ``--repeat`` times, uncached (parse, flow, carry analysis including ``Fact.across``), and
the best time kept. The PTX is the same whatever the contract says, so a commit before `loops N`
measures the same code (``--plain``: its contract states no `loops`).

    python bench/loops_facts.py [--repeat 7] [--plain]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from package.codefacts import facts as F  # noqa: E402
from packing.pack import build  # noqa: E402

PERSISTENT = ROOT / "specs" / "examples" / "gemm_swiglu" / "persistent"
LOOP = "        gs::mainloop<kN, 1, 2, 1, 1>(acc, ring, cur, u.k_end - u.k_begin, 0u, t == 0, 0u);\n"
SMALL = "gs::mainloop<16, 1, 2, 1, 1>(acc16, ring, cur, u.k_end - u.k_begin, 0u, t == 0, 0u);\n"
CHOICE = f"        if (p->m <= 16u) {{\n            {SMALL}        }} else {{\n    {LOOP}        }}\n"
ACC = "    float acc[2][kN / 2];\n"


def _ptx(folder: Path, code: str, loops: bool) -> str:
    shutil.copytree(PERSISTENT, folder, ignore=shutil.ignore_patterns("build"))
    source = folder / "consumer_swapab.cu"
    text = source.read_text().replace(LOOP, code).replace(ACC, ACC + "    float acc16[2][8];\n")
    source.write_text(text)
    contract = folder / "consumer_swapab.kc"
    if loops:
        contract.write_text(contract.read_text().replace("        full wait\n", "        loops 2\n        full wait\n"))
    ptx = build(source, contract).ptx
    assert ptx is not None
    return ptx


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--plain", action="store_true", help="state no `loops` (a commit before it)")
    args = parser.parse_args()
    out: dict[str, object] = {"repeat": args.repeat}
    with tempfile.TemporaryDirectory() as tmp:
        for name, code in (("one_loop", LOOP), ("two_alternatives", CHOICE)):
            ptx = _ptx(Path(tmp) / name, code, loops=code is CHOICE and not args.plain)
            derive = F._derive.__wrapped__
            best = float("inf")
            for _ in range(args.repeat):
                start = time.perf_counter()
                facts = derive(ptx, frozenset())
                best = min(best, time.perf_counter() - start)
            waits = [f for f in facts.facts if f.kind == "wait"]
            out[name] = {
                "ptx_lines": ptx.count("\n"),
                "derive_ms": round(best * 1000, 1),
                "waits": len(waits),
                "waits_with_across": sum(1 for f in waits if getattr(f, "across", ())),
            }
    print(json.dumps(out, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
