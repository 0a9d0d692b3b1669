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

    python bench/draft.py                 # markdown tables: from the code alone, then composed
    python bench/draft.py --code-only     # only from the code alone
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

#: (component, target, the pipeline it is composed into for `--pipeline`)
COMPONENTS = (
    ("hello/provider", "sm_90a", "hello/hello.kp"),
    ("hello/caller", "sm_90a", "hello/hello.kp"),
    ("ring/loader", "sm_90a", "ring/ring.kp"),
    ("ring/reduce", "sm_90a", "ring/ring.kp"),
    ("moe4/interp", "sm_90a", "moe4/moe4.kp"),
    ("moe4/comm", "sm_90a", "moe4/moe4.kp"),
    ("moe4/gemm", "sm_90a", "moe4/moe4.kp"),
    ("moe4/act", "sm_90a", "moe4/moe4.kp"),
    ("gemm_swiglu/mainloop", "sm_90a", "gemm_swiglu/gemm_swiglu.kp"),
    ("gemm_swiglu/epilogue", "sm_90a", "gemm_swiglu/gemm_swiglu.kp"),
    ("gemm_swiglu/smem_acc", "sm_90a", "gemm_swiglu/gemm_swiglu_smem_acc.kp"),
    ("gemm_swiglu/mma_sync", "sm_90a", "gemm_swiglu/gemm_swiglu_mma_sync.kp"),
    ("gemm_swiglu/sm100/tcgen05", "sm_100a", "gemm_swiglu/sm100/gemm_swiglu_tcgen05.kp"),
)
#: Keys (their first word) of what the composition, not the component's code, decides.
OUT_OF_SCOPE = ("stage", "launch", "fact", "requires fact", "phases", "assumesphases", "hostprovider")


def measure(component: str, target: str, pipeline: str | None) -> dict[str, Any]:
    """One component's tally; ``pipeline``: composed into it (`--pipeline`), else from its code alone."""
    from analysis.draft import tally
    from analysis.draft.classify import classify
    from checker.conformance import check, derive
    from contract_lang.parser import parse_file
    from diagnostics.sources import SourceMap
    from kernlink.cmd_draft import build_draft, load_composition

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
        pipeline=str(ROOT / "specs" / "examples" / pipeline) if pipeline else None,
    )
    start = time.perf_counter()
    sources = SourceMap()
    composition = load_composition(Path(args.pipeline), sources) if args.pipeline else None
    drafted, ptx = build_draft(args, sources, composition)
    seconds = time.perf_counter() - start
    stage = parse_file(contract, "contract", display=str(contract))[0].stages[0]
    result = tally(stage, drafted)
    hand = (*result.agreed, *(d[0] for d in result.disagreed), *result.undecided)
    verdicts = classify(hand, drafted, (composition.pipeline, composition.stages) if composition else None)
    choices = [v for v in verdicts if v.choice]
    gaps = [v for v in verdicts if not v.choice and v.key in set(result.undecided)]
    scope = [
        k for k in (*result.agreed, *(d[0] for d in result.disagreed), *result.undecided) if k[0] not in OUT_OF_SCOPE
    ]
    scoped_agreed = [k for k in result.agreed if k[0] not in OUT_OF_SCOPE]
    conform = [f for f in check(drafted.stage, derive(ptx)) if f.decided]
    return {
        "component": component,
        "stated": result.stated,
        "agreed": len(result.agreed),
        "agreed_keys": [" / ".join(k) for k in result.agreed],
        "disagreed": [[" / ".join(k), hand, said] for k, hand, said in result.disagreed],
        "undecided": len(result.undecided),
        "undecided_keys": [" / ".join(k) for k in result.undecided],
        "extra": result.extra,
        "in_scope": len(scope),
        "in_scope_agreed": len(scoped_agreed),
        "determined": len(verdicts) - len(choices),
        "choices": len(choices),
        "choice_keys": [[" / ".join(v.key), v.rule] for v in choices],
        "undrafted_determined": [[" / ".join(v.key), v.rule] for v in gaps],
        "conform_errors": len(conform),
        "seconds": round(seconds, 2),
    }


SUMMED = (
    "stated",
    "agreed",
    "undecided",
    "extra",
    "in_scope",
    "in_scope_agreed",
    "determined",
    "choices",
    "conform_errors",
)


def _table(rows: list[dict[str, Any]]) -> None:
    total: dict[str, Any] = {k: sum(r[k] for r in rows) for k in SUMMED}
    total["disagreed"] = [d for r in rows for d in r["disagreed"]]
    print(
        "| component | stated | agreed / stated | choices | agreed / determined | disagreed | undecided | extra "
        "| in scope: agreed / stated | conform | s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in [*rows, {**total, "component": f"**all {len(rows)}**", "seconds": ""}]:
        scoped = f"{r['in_scope_agreed']} / {r['in_scope']} ({_pct(r['in_scope_agreed'], r['in_scope'])})"
        agreed = f"{r['agreed']} ({_pct(r['agreed'], r['stated'])})"
        determined = f"{r['agreed']} / {r['determined']} ({_pct(r['agreed'], r['determined'])})"
        print(
            f"| {r['component']} | {r['stated']} | {agreed} | {r['choices']} | {determined} | {len(r['disagreed'])} "
            f"| {r['undecided']} | {r['extra']} | {scoped} | {r['conform_errors']} | {r['seconds']} |"
        )
    for r in rows:
        for key, hand, said in r["disagreed"]:
            print(f"\n{r['component']}: `{key}`: the contract says `{hand}`, the draft `{said}`")
    stated, choices = total["stated"], total["choices"]
    print(
        f"\nAt most (stated - choices) / stated = ({stated} - {choices}) / {stated} = {stated - choices} / {stated} "
        f"({_pct(stated - choices, stated)}) of the stated values can be drafted; drafted: {total['agreed']}."
    )


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _classes(rows: list[dict[str, Any]]) -> None:
    """The author's choices by kind, with the rule's reason, and the determined values not drafted."""
    from analysis.draft.classify import rule_of

    by_kind: dict[str, int] = {}
    for r in rows:
        for _key, kind in r["choice_keys"]:
            by_kind[kind] = by_kind.get(kind, 0) + 1
    print("| kind | author's choices | why |")
    print("|---|---:|---|")
    for kind, n in sorted(by_kind.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"| {kind} | {n} | {rule_of(kind).choice} |")
    print(f"| **all** | {sum(by_kind.values())} | |")
    print("\nDetermined, not drafted:\n")
    for r in rows:
        for key, kind in r["undrafted_determined"]:
            print(f"- {r['component']}: `{key}` ({kind})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--code-only", action="store_true", help="only the drafts from each component's code (no `--pipeline`)"
    )
    args = parser.parse_args()
    modes = {"code": [measure(c, t, None) for c, t, _ in COMPONENTS]}
    if not args.code_only:
        modes["composed"] = [measure(c, t, p) for c, t, p in COMPONENTS]
    if args.json:
        out = {
            m: {"components": rows, "total": {k: sum(r[k] for r in rows) for k in SUMMED}} for m, rows in modes.items()
        }
        print(json.dumps(out, indent=2, sort_keys=True))
        return
    for mode, rows in modes.items():
        said = "each component's code alone" if mode == "code" else "each component composed into its pipeline"
        print(f"\n### {said}\n")
        _table(rows)
    if "composed" in modes:
        print("\n### the author's choices (composed), by kind (analysis/draft/classify.py, specs/draft.md)\n")
        _classes(modes["composed"])
        print("\n### the values the composition adds (agreed composed, undecided from the code alone)\n")
        for alone, composed in zip(modes["code"], modes["composed"], strict=True):
            added = sorted(set(composed["agreed_keys"]) - set(alone["agreed_keys"]))
            print(f"- {alone['component']} (+{len(added)}): " + ", ".join(f"`{k}`" for k in added))


if __name__ == "__main__":
    main()
