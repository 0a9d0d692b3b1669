"""On the H200: run a sample of the code mutants conformance did not reject.

The CPU campaign (bench/code_mutants.py, `kernlink fuzz --code`) edits the PTX a package
carries; the link reads the package's LTO IR, so a PTX mutant never reaches a GPU. This
script rebuilds a mutant from its CUDA line instead, where one line is the instruction
(an inline `asm` statement that the PTX holds once): `delete`/`drop-fence` removes the
statement, `duplicate` runs it twice, `scope` edits the opcode in its string, and runs the
linked kernel on a reference in a child process killed after 60 s (a component's own
`try_wait` loops are not bounded by the watchdog: a child still running is a hang).

A mutant of an inline `asm` helper called at several lines (moe4's `bar_sync`) is rebuilt at
the call site its PTX line was inlined from (the campaign's "CUDA file:line"), so one call is
deleted or doubled, not every call; an intrinsic statement (`__threadfence();`,
`__syncthreads();`) is one line too.

Runnable pipelines: `ring` (linked with `--watchdog`, so the waits the linker generates
end in E-HANG; checked bit for bit on its host reference at two grids), the three
Hopper gemm_swiglu producers `gemm_swiglu`, `gemm_swiglu_mma_sync`, `gemm_swiglu_smem_acc`
(checked by bench/gemm_swiglu.py --check-only against PyTorch at odd M: relative error,
no NaN left in the poisoned output) and `moe4` (linked with `--watchdog`; bench/stale_facts.py's
inputs and PyTorch reference, run with `kernlink run` at MOE4_GRIDS, each MOE4_REPEATS times,
since the edits it can take are races). Mutants of other pipelines are listed as not run.

Two phases, so that only the runs need the GPU:

    python bench/code_mutants.py --out /tmp/cm                              # the campaign, CPU
    python bench/gpu/code_mutants.py /tmp/cm/code_mutants.json --sample 24 --stage /tmp/st   # CPU: rebuild, link
    python bench/gpu/code_mutants.py --run /tmp/st --out $OUT/code_mutants.json              # GPU: run each

(`--sample N` without `--stage` rebuilds and runs in one go on the GPU machine.) The
unmutated pipelines are staged and run first as controls: a control that does not pass
makes the whole run fail. Each sampled mutant ends as `same` (the run passes the reference
check), `differs`, `hang` (the watchdog fired or the child was killed), `not-rebuilt` (no
single CUDA line is the instruction), `not-built` (the rebuilt mutant does not link:
rejected after all, with the first error) or `not-run`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import re
import shutil
import subprocess
import sys
from array import array
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

EXAMPLES = ROOT / "specs" / "examples"
TIMEOUT = 60
#: pipeline -> (example folder, pipeline file); every other pipeline's mutants are not run
RUNNABLE = {
    "ring": ("ring", "ring.kp"),
    "gemm_swiglu": ("gemm_swiglu", "gemm_swiglu.kp"),
    "gemm_swiglu_mma_sync": ("gemm_swiglu", "gemm_swiglu_mma_sync.kp"),
    "gemm_swiglu_smem_acc": ("gemm_swiglu", "gemm_swiglu_smem_acc.kp"),
    "moe4": ("moe4", "moe4.kp"),
}
#: pipelines linked again with `--watchdog`: the linker's waits end in E-HANG, not a hang
WATCHED = ("ring", "moe4")
#: the shapes of the gemm_swiglu check: odd M (partial tiles), K and N smaller than the bench's
GEMM_CHECK = ("--check-only", "--shapes", "1,77,200", "--k", "1024", "--n", "4096")
RING_GRIDS = ((37, 4), (264, 132))
#: moe4: bench/stale_facts.py's default shape, at 8 blocks and at one block per SM (None), each run repeated
MOE4_GRIDS: tuple[int | None, ...] = (8, None)
MOE4_REPEATS = 2
#: the C spellings of an instruction a one-line statement may be: an intrinsic, or a helper wrapping the asm
INTRINSICS = {"membar.gl": ("__threadfence",), "bar.sync": ("__syncthreads",)}
_STATEMENT = re.compile(r"(\s*)(\w+)\s*\(.*\)\s*;\s*(//.*)?")


def _statement(line: str, kind: str) -> str | None:
    """A one-statement line deleted (`delete`, `drop-fence`) or run twice (`duplicate`); None for other kinds."""
    if kind in ("delete", "drop-fence"):
        return re.sub(r"\w+\s*\(.*\)\s*;", ";", line, count=1)
    if kind == "duplicate":
        return _twice(line)
    return None


def _twice(line: str) -> str:
    """The line's statement run twice, its comment kept after both."""
    code, _, comment = line.partition("//")
    return f"{code.rstrip()} {code.strip()}" + (f"  //{comment}" if comment else "")


def _call_site(lines: list[str], cuda_line: int, site: int, kind: str, opcode: str) -> str | None:
    """The call site ``site`` rebuilt, when it is one statement calling the instruction: an intrinsic of
    ``opcode``, or the helper whose `asm` is line ``cuda_line`` (the function defined just above it)."""
    if not 0 < site <= len(lines):
        return None
    match = _STATEMENT.fullmatch(lines[site - 1])
    if match is None:
        return None
    called = match.group(2)
    helper = next(
        (
            m.group(1)
            for k in range(cuda_line - 1, max(cuda_line - 6, 0), -1)
            if (m := re.search(r"(\w+)\s*\([^;]*\)\s*\{", lines[k - 1]))
        ),
        None,
    )
    if called != helper and called not in INTRINSICS.get(opcode, ()):
        return None
    return _statement(lines[site - 1], kind)


def _edited(line: str, kind: str, opcode: str) -> str | None:
    """The CUDA line rebuilt for a mutation kind, or None when one line cannot express it."""
    match = _STATEMENT.fullmatch(line)
    if match is not None and match.group(2) in INTRINSICS.get(opcode, ()):
        return _statement(line, kind)
    if line.count("asm") != 1 or line.count(";") < 1:
        return None
    if kind in ("delete", "drop-fence"):
        return re.sub(r"asm\s+volatile\s*\(.*\)\s*;", ";", line)
    if kind == "duplicate":
        return _twice(line)
    if kind == "scope":
        for old, new in ((".cta", ".gpu"), (".gpu", ".cta"), (".cluster", ".cta"), (".shared::cta", ".global")):
            if old in opcode:
                return line.replace(old, new, 1)
    return None


def _build(pipeline: str, edit: tuple[str, int, str] | None, work: Path, out: Path) -> str | None:
    """Copy the example, apply ``edit`` (file, line, new text), `kernlink build` it into ``out`` (the ring
    with `--watchdog`); None when it linked, else the first error."""
    from kernlink.cli import main

    folder_name, kp = RUNNABLE[pipeline]
    folder = work / folder_name
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(EXAMPLES / folder_name, folder, ignore=shutil.ignore_patterns("build"))
    if edit is not None:
        source = folder / edit[0]
        lines = source.read_text().split("\n")
        lines[edit[1] - 1] = edit[2]
        source.write_text("\n".join(lines))
    argv = ["build", str(folder / kp), "-o", str(out), "--no-server", "--color", "never"]
    if main(argv) != 0:
        return "does not build"
    if pipeline in WATCHED:  # link again with the watchdog: the linker's waits end in E-HANG, not a hang
        from linker.watchdog import DEFAULT_CYCLES

        watched = ["link", str(folder / kp), "-o", str(out), f"--watchdog={DEFAULT_CYCLES}", "--color", "never"]
        if main(watched) != 0:
            return "does not link with --watchdog"
    return None


def _run(pipeline: str, linked: Path) -> str:
    """Run one linked kernel in a child process: `same`, `differs`, `hang` or `error: …`."""
    if pipeline == "moe4":
        return _moe4(linked)
    if pipeline == "ring":
        argv = [sys.executable, __file__, "--ring-child", str(linked)]
    else:
        argv = [sys.executable, str(ROOT / "bench" / "gemm_swiglu.py"), str(linked), *GEMM_CHECK]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, check=False, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return "hang"  # killing the child frees the GPU
    text = done.stdout + done.stderr
    if pipeline == "ring":
        return text.strip().splitlines()[-1] if text.strip() else f"error: exit {done.returncode}"
    if "HANG" in text.upper():
        return "hang"
    if done.returncode == 0:
        return "same"
    if done.returncode == 1:  # bench/gemm_swiglu.py: a shape failed its check (error, NaN left, or worst element)
        return "differs"
    return f"error: exit {done.returncode}: {text.strip()[-160:]}"


def _moe4(linked: Path) -> str:
    """moe4 against its PyTorch reference at each grid, MOE4_REPEATS times: `same` when every run is correct;
    else the first other outcome (`hang`: E-HANG decoded or killed; `differs`; `error: …`)."""
    spec = importlib.util.spec_from_file_location("stale_facts", ROOT / "bench" / "stale_facts.py")
    assert spec is not None and spec.loader is not None
    stale_facts = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("stale_facts", stale_facts)  # its dataclasses look their module up
    spec.loader.exec_module(stale_facts)
    inputs = linked.parent / "moe4-inputs"
    if not (inputs / "shape.json").exists():
        stale_facts.write_inputs(inputs, stale_facts.Shape())
    for grid in MOE4_GRIDS:
        for _ in range(MOE4_REPEATS):
            outcome = stale_facts.run(linked, inputs, grid, 128)
            verdict = {"correct": "same", "hang": "hang", "wrong output": "differs"}.get(str(outcome["outcome"]))
            if verdict != "same":
                return verdict or f"error: {str(outcome.get('detail'))[:160]}"
    return "same"


def _ring_child(linked: Path) -> None:
    """The ring on its host reference at each grid of RING_GRIDS, printing one verdict."""
    from runtime.launch import GpuSession
    from runtime.run import run_linked
    from tests.link.examples import floats, ring_reference

    verdicts = []
    for tiles, blocks in RING_GRIDS:
        data = floats(tiles * 8192, tiles)
        try:
            with GpuSession() as gpu:
                src, dst = gpu.upload(data.tobytes()), gpu.alloc(tiles * 8 * 4)
                run_linked(linked, gpu=gpu, grid=blocks, values={"src": src, "dst": dst, "tiles": tiles})
                got = array("f", gpu.download(dst)).tolist()
        except Exception as exc:  # E-HANG from the watchdog, or a launch error: reported, not raised
            verdicts.append("hang" if "HANG" in str(exc).upper() else f"error: {exc}"[:200])
            break
        verdicts.append("same" if got == ring_reference(data, tiles) else "differs")
    print(", ".join(verdicts), flush=True)


def _sample(campaign: Path, count: int, seed: int, only: list[str] | None) -> list[dict[str, Any]]:
    runs: dict[str, Any] = json.loads(campaign.read_text())
    pool = [
        {"pipeline": pipeline, "verdict": verdict, **m}
        for pipeline, run in sorted(runs.items())
        if not only or pipeline in only
        for verdict in ("accepted", "outside", "equivalent")
        for m in (run.get(verdict, []) if verdict != "accepted" else run.get("accepted_cuda", []))
    ]
    return random.Random(seed).sample(pool, min(count, len(pool)))


def _one_line(lines: list[str], cuda: list[Any], m: dict[str, Any]) -> tuple[int, str] | None:
    """(line, new text) of the one-line CUDA edit for mutant ``m``: at the call site its PTX line was
    inlined from when that is one call of the instruction, else at the instruction's own line."""
    site = re.search(rf"\(CUDA {re.escape(cuda[0])}:(\d+)\)", m.get("mutant", ""))
    if site is not None and int(site.group(1)) != cuda[1]:
        new = _call_site(lines, cuda[1], int(site.group(1)), m["kind"], m["opcode"])
        if new is not None:
            return int(site.group(1)), new
    if not 0 < cuda[1] <= len(lines):
        return None
    new = _edited(lines[cuda[1] - 1], m["kind"], m["opcode"])
    return None if new is None else (cuda[1], new)


def stage(sample: list[dict[str, Any]], into: Path) -> list[dict[str, Any]]:
    """Rebuild and link every sampled mutant (and each pipeline's unmutated control) under ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    work = into / "work"
    entries: list[dict[str, Any]] = []
    for pipeline in sorted({m["pipeline"] for m in sample if m["pipeline"] in RUNNABLE}):
        failed = _build(pipeline, None, work, into / f"control-{pipeline}")
        entries.append({"pipeline": pipeline, "verdict": "control", "linked": f"control-{pipeline}", "gpu": failed})
    for i, m in enumerate(sample):
        entry = dict(m)
        cuda = m.get("cuda")
        if m["pipeline"] not in RUNNABLE or not cuda:
            entry["gpu"] = "not-run"
        else:
            folder_name = RUNNABLE[m["pipeline"]][0]
            lines = (EXAMPLES / folder_name / cuda[0]).read_text().split("\n")
            edit = _one_line(lines, cuda, m)
            if edit is None:
                entry["gpu"] = "not-rebuilt"
            else:
                entry["cuda_edit"] = f"{cuda[0]}:{edit[0]}"
                failed = _build(m["pipeline"], (cuda[0], *edit), work, into / f"m{i:03d}")
                entry["linked"] = f"m{i:03d}"
                entry["gpu"] = f"not-built: {failed}" if failed else None
        entries.append(entry)
    shutil.rmtree(work, ignore_errors=True)
    (into / "sample.json").write_text(json.dumps(entries, indent=1) + "\n")
    return entries


def run(staged: Path) -> list[dict[str, Any]]:
    """Run every staged link that still needs a run; controls first."""
    entries: list[dict[str, Any]] = json.loads((staged / "sample.json").read_text())
    for entry in entries:
        if entry.get("gpu") is None:
            entry["gpu"] = _run(entry["pipeline"], staged / entry["linked"])
        what = "control" if entry["verdict"] == "control" else entry.get("mutant", entry.get("kind"))
        print(f"{entry['gpu']!s:>12}  {entry['pipeline']}: {what}", flush=True)
    return entries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("campaign", type=Path, nargs="?", help="code_mutants.json of bench/code_mutants.py")
    parser.add_argument("--sample", type=int, default=12, help="mutants to draw (default 12)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", help="draw only from these pipelines (e.g. the runnable `ring`)")
    parser.add_argument("--stage", type=Path, metavar="DIR", help="only rebuild and link the sample into DIR")
    parser.add_argument("--run", type=Path, metavar="DIR", help="run the links a --stage call left in DIR")
    parser.add_argument("--out", type=Path, help="write the results here (JSON)")
    parser.add_argument("--ring-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ring_child is not None:
        _ring_child(args.ring_child)
        return 0
    if args.run is not None:
        results = run(args.run)
    elif args.campaign is None:
        parser.error("give the campaign's code_mutants.json, or --run DIR")
    else:
        sample = _sample(args.campaign, args.sample, args.seed, args.only)
        if args.stage is not None:
            staged = stage(sample, args.stage)
            print(f"staged {sum(1 for e in staged if e.get('gpu') is None)} links in {args.stage}")
            return 0
        scratch = Path(args.out or ".").resolve().parent / "code_mutants_stage"
        stage(sample, scratch)
        results = run(scratch)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    bad = [r for r in results if r["verdict"] == "control" and r["gpu"] not in ("same", "same, same")]
    return 1 if bad or any("differs" in str(r["gpu"]) or "hang" in str(r["gpu"]) for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
