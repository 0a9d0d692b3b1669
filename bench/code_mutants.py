"""The full code-mutation campaign (`kernlink fuzz --code`) over every example component.

Packs each example pipeline into a scratch folder (hello, ring, gemm_swiglu with each of its
producers — the wgmma mainloop, mma_sync, smem_acc and the sm_100a tcgen05 producer — and the
epilogue, the persistent gemm_swiglu pipelines — cooperative with and without the cluster, small-M,
swap-AB of x_rows 32 and 64, and ring-fed; the ping-pong one is check-only, without packages — and
moe4's four owners), runs the campaign on each pipeline with no budget (a package two pipelines
share is judged in each), and writes the counts per component and per mutation kind, and
every mutant that was not rejected with the reason it is equivalent or outside the contract:

    python bench/code_mutants.py --out bench/results/cpu-2026-12-04   # code_mutants.{json,md}

`kernlink fuzz PIPELINE.kp --code` runs one pipeline's campaign (CI runs the ring's:
tests/fuzzing/test_code_campaign.py). The GPU check of a sample of the mutants that were not
rejected is bench/gpu/code_mutants.py.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.pipeline import resolve_inputs  # noqa: E402
from fuzzing.code import run_code_campaign  # noqa: E402
from package.loader import load  # noqa: E402
from packing.pack import pack  # noqa: E402

EXAMPLES = ROOT / "specs" / "examples"
# pipeline name -> (example folder, pipeline file in it, (component source, contract) pairs)
PIPELINES: dict[str, tuple[str, str, tuple[tuple[str, str], ...]]] = {
    "hello": ("hello", "hello.kp", (("provider.cu", "provider.kc"), ("caller.cu", "caller.kc"))),
    "ring": ("ring", "ring.kp", (("loader.cu", "loader.kc"), ("reduce.cu", "reduce.kc"))),
    "gemm_swiglu": (
        "gemm_swiglu",
        "gemm_swiglu.kp",
        (("mainloop.cu", "mainloop.kc"), ("epilogue.cu", "epilogue.kc")),
    ),
    "gemm_swiglu_mma_sync": (
        "gemm_swiglu",
        "gemm_swiglu_mma_sync.kp",
        (("mma_sync.cu", "mma_sync.kc"), ("epilogue.cu", "epilogue.kc")),
    ),
    "gemm_swiglu_smem_acc": (
        "gemm_swiglu",
        "gemm_swiglu_smem_acc.kp",
        (("smem_acc.cu", "smem_acc.kc"), ("epilogue.cu", "epilogue.kc")),
    ),
    "gemm_swiglu_tcgen05": (
        "gemm_swiglu",
        "sm100/gemm_swiglu_tcgen05.kp",
        (("sm100/tcgen05.cu", "sm100/tcgen05.kc"), ("epilogue.cu", "sm100/epilogue.kc")),
    ),
    "gemm_swiglu_persistent": (
        "gemm_swiglu",
        "persistent/gemm_swiglu_persistent.kp",
        tuple(
            (f"persistent/{c}.cu", f"persistent/{c}.kc")
            for c in ("scheduler", "producer", "consumer", "fixup", "epilogue")
        ),
    ),
    "gemm_swiglu_persistent_small": (
        "gemm_swiglu",
        "persistent/gemm_swiglu_persistent_small.kp",
        tuple(
            (f"persistent/{c}.cu", f"persistent/{c}.kc")
            for c in ("scheduler_small", "producer_small", "consumer_small", "fixup", "epilogue")
        ),
    ),
    "gemm_swiglu_persistent_swapab": (
        "gemm_swiglu",
        "persistent/gemm_swiglu_persistent_swapab.kp",
        tuple(
            (f"persistent/{c}.cu", f"persistent/{c}.kc")
            for c in ("scheduler_small", "producer_swapab", "consumer_swapab", "epilogue_swapab")
        ),
    ),
    "gemm_swiglu_persistent_swapab64": (
        "gemm_swiglu",
        "persistent/gemm_swiglu_persistent_swapab64.kp",
        tuple(
            (f"persistent/{c}.cu", f"persistent/{c}.kc")
            for c in ("scheduler_small", "producer_swapab64", "consumer_swapab64", "epilogue_swapab64")
        ),
    ),
    "gemm_swiglu_persistent_c1": (
        "gemm_swiglu",
        "persistent/gemm_swiglu_persistent_c1.kp",
        tuple(
            (f"persistent/{c}.cu", f"persistent/{c}.kc")
            for c in ("scheduler", "producer_c1", "consumer_c1", "fixup", "epilogue")
        ),
    ),
    "gemm_swiglu_ringfed": (
        "gemm_swiglu",
        "persistent/ringfed/gemm_swiglu_ringfed.kp",
        tuple((f"persistent/ringfed/{c}.cu", f"persistent/ringfed/{c}.kc") for c in ("mainloop", "epilogue")),
    ),
    "moe4": (
        "moe4",
        "moe4.kp",
        tuple((f"{c}.cu", f"{c}.kc") for c in ("interp", "comm", "gemm", "act")),
    ),
}


def build(name: str, scratch: Path) -> Path:
    """Copy the example and pack its components where its pipeline looks for them; the pipeline file."""
    folder, kp, parts = PIPELINES[name]
    root = scratch / name
    shutil.copytree(EXAMPLES / folder, root, ignore=shutil.ignore_patterns("build"))
    pipeline = root / kp
    for source, contract in parts:
        package = pipeline.parent / "build" / f"{Path(contract).stem}.kpkg"
        pack(root / source, root / contract, package)
    return pipeline


def campaign(names: list[str]) -> dict[str, Any]:
    runs = {}
    with tempfile.TemporaryDirectory(prefix="kernlink-code-mutants-") as tmp:
        for name in names:
            pipeline = build(name, Path(tmp))
            inputs = load([pipeline])
            comp = resolve_inputs(inputs)
            assert comp is not None, name
            result = run_code_campaign(comp, name)
            report = result.to_json()
            # every `cursor` mutant with its verdict and the checks that rejected it (the kind is new: each one shown)
            report["cursor"] = [
                {"mutant": o.mutation.describe(), "verdict": o.verdict, "checks": list(o.checks), "at": o.at}
                for o in result.outcomes
                if o.mutation.kind == "cursor"
            ]
            # a component is named by its package's path in the example ("build/x.kpkg" beside the
            # example's own pipeline, "persistent/build/x.kpkg" beside a pipeline in a subfolder)
            prefix = str(Path(tmp) / name) + "/"
            runs[name] = json.loads(json.dumps(report).replace(prefix, ""))
    return runs


def markdown(runs: dict[str, Any], seconds: float, out: str) -> str:
    verdicts = ("rejected", "equivalent", "outside", "undecided", "accepted")
    out = [
        "# Code-mutation campaign over every example component",
        "",
        f"`python bench/code_mutants.py --out {out}` ({platform.machine()}, "
        f"{seconds:.0f} s). Per pipeline: `kernlink fuzz PIPELINE.kp --code`.",
        "",
        "Verdicts: **rejected** by `kernlink pack --strict` or `kernlink check --strict` (L-CONFORM, or an "
        "undecided site the mutant adds); **equivalent**: accepted, and the edit changes nothing the protocol "
        "observes (reason below); **outside**: accepted, and the edit changes only what no contract line states "
        "(reason below); **undecided**: the component's unmutated code already has an undecided site, which "
        "`--strict` rejects, so the campaign cannot tell; **accepted**: a protocol change conformance missed.",
        "",
    ]
    for title, key in (("component", "by_component"), ("mutation kind", "by_kind")):
        out += [f"| {title} | mutants | " + " | ".join(verdicts) + " |", "|---|" + "---:|" * (len(verdicts) + 1)]
        total = dict.fromkeys(("mutants", *verdicts), 0)
        merged: dict[str, dict[str, int]] = {}
        for run in runs.values():
            for row in run[key]:
                name = row["name"] if key == "by_kind" else row["name"].removeprefix("build/").replace("/build/", "/")
                slot = merged.setdefault(name, dict.fromkeys(("mutants", *verdicts), 0))
                for k in slot:
                    slot[k] += row[k]
        for name, row in sorted(merged.items()):
            out.append(f"| {name} | " + " | ".join(str(row[k]) for k in ("mutants", *verdicts)) + " |")
            for k in total:
                total[k] += row[k]
        out += ["| **total** | " + " | ".join(str(total[k]) for k in ("mutants", *verdicts)) + " |", ""]
    rejected: dict[str, int] = {}
    for run in runs.values():
        for check, n in run["rejected_by"].items():
            rejected[check] = rejected.get(check, 0) + n
    out += ["Rejected by (L-CONFORM checks; a mutant can trip several):", ""]
    out += [f"- `{check}`: {n}" for check, n in sorted(rejected.items(), key=lambda kv: -kv[1])] + [""]
    cursor = [(p, m) for p, run in runs.items() for m in run.get("cursor", [])]
    out += [f"## cursor ({len(cursor)}): a ring position restarted on every pass of the loop around its k-loop", ""]
    for pipeline, m in cursor:
        checks = ", ".join(f"`{c}`" for c in m["checks"])
        out.append(
            f"- {pipeline}: {m['mutant']} — **{m['verdict']}**" + (f" at {m['at']} by {checks}" if checks else "")
        )
    out.append("")
    for verdict in ("accepted", "outside", "equivalent"):
        items = [(p, m) for p, run in runs.items() for m in run.get(verdict, [])]
        out += [f"## {verdict} ({len(items)})", ""]
        for pipeline, m in items:
            if isinstance(m, str):
                out.append(f"- {pipeline}: {m}")
            else:
                out.append(f"- {pipeline}: {m['mutant']} — {m['why']}")
        out.append("")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="write code_mutants.json and code_mutants.md here")
    parser.add_argument("--only", nargs="*", choices=sorted(PIPELINES), help="these pipelines only")
    args = parser.parse_args()
    start = time.monotonic()
    runs = campaign(args.only or list(PIPELINES))
    seconds = time.monotonic() - start
    text = markdown(runs, seconds, str(args.out or "OUT"))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "code_mutants.json").write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n")
        (args.out / "code_mutants.md").write_text(text + "\n")
    print(text)
    return 1 if any(run["accepted"] for run in runs.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
