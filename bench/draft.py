"""`kernlink draft` against every example component: how many of the hand-written contracts' values it drafts.

For each component of the reference examples (hello, ring, moe4, gemm_swiglu and its sm_100a
producer) the source is drafted as `kernlink draft` drafts it, and every value the hand-written
contract states is counted as agreed (the draft states the same), disagreed (the draft states
another) or undecided (the draft leaves it undecided or has no such item); *extra* counts the
values only the draft states. *in scope* restricts the count to what the draft sets out to
decide (target, features, roles, params, claims, rings, barriers, counters, tensors' roles,
callables; not the launch, facts, names, versions and layout maps the composition decides).
Each draft is also checked against its own code (the conformance checks): *conform* counts
the errors, which must be 0.

    python bench/draft.py                 # markdown table
    python bench/draft.py --json          # one JSON object
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COMPONENTS = (
    ("hello/provider", "sm_90a"),
    ("hello/caller", "sm_90a"),
    ("ring/loader", "sm_90a"),
    ("ring/reduce", "sm_90a"),
    ("moe4/interp", "sm_90a"),
    ("moe4/comm", "sm_90a"),
    ("moe4/gemm", "sm_90a"),
    ("moe4/act", "sm_90a"),
    ("gemm_swiglu/mainloop", "sm_90a"),
    ("gemm_swiglu/epilogue", "sm_90a"),
    ("gemm_swiglu/smem_acc", "sm_90a"),
    ("gemm_swiglu/mma_sync", "sm_90a"),
    ("gemm_swiglu/sm100/tcgen05", "sm_100a"),
)
#: Keys (their first word) of what the composition, not the component's code, decides.
OUT_OF_SCOPE = ("stage", "launch", "fact", "requires fact", "phases", "assumesphases", "hostprovider")


def measure(component: str, target: str) -> dict[str, Any]:
    from analysis.draft import tally
    from checker.conformance import check, derive
    from contract_lang.parser import parse_file
    from diagnostics.sources import SourceMap
    from kernlink.cmd_draft import build_draft

    source = ROOT / "specs" / "examples" / f"{component}.cu"
    contract = source.with_suffix(".kc")
    args = argparse.Namespace(
        source=str(source),
        include=[],
        define=[],
        std=None,
        cutlass=False,
        target=target,
        stage=None,
        stage_version=None,
    )
    start = time.perf_counter()
    drafted, ptx = build_draft(args, SourceMap())
    seconds = time.perf_counter() - start
    stage = parse_file(contract, "contract", display=str(contract))[0].stages[0]
    result = tally(stage, drafted)
    scope = [
        k for k in (*result.agreed, *(d[0] for d in result.disagreed), *result.undecided) if k[0] not in OUT_OF_SCOPE
    ]
    scoped_agreed = [k for k in result.agreed if k[0] not in OUT_OF_SCOPE]
    conform = [f for f in check(drafted.stage, derive(ptx)) if f.decided]
    return {
        "component": component,
        "stated": result.stated,
        "agreed": len(result.agreed),
        "disagreed": [[" / ".join(k), hand, said] for k, hand, said in result.disagreed],
        "undecided": len(result.undecided),
        "extra": result.extra,
        "in_scope": len(scope),
        "in_scope_agreed": len(scoped_agreed),
        "conform_errors": len(conform),
        "seconds": round(seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(c, t) for c, t in COMPONENTS]
    total = {
        k: sum(r[k] for r in rows) for k in ("stated", "agreed", "undecided", "extra", "in_scope", "in_scope_agreed")
    }
    total["disagreed"] = sum(len(r["disagreed"]) for r in rows)
    total["conform_errors"] = sum(r["conform_errors"] for r in rows)
    if args.json:
        print(json.dumps({"components": rows, "total": total}, indent=2, sort_keys=True))
        return
    print("| component | stated | agreed | disagreed | undecided | extra | in scope: agreed / stated | conform | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in [*rows, {**total, "component": "**all 13**", "disagreed": [None] * total["disagreed"], "seconds": ""}]:
        scoped = f"{r['in_scope_agreed']} / {r['in_scope']} ({100 * r['in_scope_agreed'] / max(r['in_scope'], 1):.0f}%)"
        agreed = f"{r['agreed']} ({100 * r['agreed'] / r['stated']:.0f}%)"
        print(
            f"| {r['component']} | {r['stated']} | {agreed} | {len(r['disagreed'])} | {r['undecided']} | "
            f"{r['extra']} | {scoped} | {r['conform_errors']} | {r['seconds']} |"
        )
    for r in rows:
        for key, hand, said in r["disagreed"]:
            print(f"\n{r['component']}: `{key}`: the contract says `{hand}`, the draft `{said}`")


if __name__ == "__main__":
    main()
