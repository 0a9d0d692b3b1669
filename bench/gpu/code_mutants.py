"""On the H200: run a sample of the code mutants conformance did not reject, under the watchdog.

The CPU campaign (bench/code_mutants.py, `kernlink fuzz --code`) edits the PTX a package
carries; the link reads the package's LTO IR, so a PTX mutant never reaches a GPU. This
script rebuilds a mutant from its CUDA line instead, where one line is the instruction
(an inline `asm` statement that the PTX holds once): `delete`/`drop-fence` removes the
statement, `duplicate` runs it twice, `scope` edits the opcode in its string. It packs
the edited example, links it with `--watchdog` (the waits the linker generates are bounded:
E-HANG) and runs the ring in a child process killed after 60 s (the ring's own `try_wait`
loops are the component's, which no watchdog bounds: a child still running is a hang) on
its host reference, bit for bit (ring.reduce and
ring.loader are the example whose run this script knows; other pipelines' mutants are
listed as not run).

    python bench/code_mutants.py --only ring --out /tmp/cm          # the campaign, on the CPU
    python bench/gpu/code_mutants.py /tmp/cm/code_mutants.json --sample 12 --out $OUT/code_mutants.json
    python bench/gpu/code_mutants.py /tmp/cm/code_mutants.json --only ring --sample 100   # every ring mutant

Each sampled mutant ends as `same` (the run matches the reference), `differs`, `hang`
(the watchdog fired), `not-rebuilt` (no single CUDA line is the instruction) or `not-run`.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
from array import array
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

EXAMPLES = ROOT / "specs" / "examples"
RUNNABLE = {"ring": ("loader", "reduce")}


def _edited(line: str, kind: str, opcode: str) -> str | None:
    """The CUDA line rebuilt for a mutation kind, or None when one line cannot express it."""
    if line.count("asm") != 1 or line.count(";") < 1:
        return None
    if kind in ("delete", "drop-fence"):
        return re.sub(r"asm\s+volatile\s*\(.*\)\s*;", ";", line)
    if kind == "duplicate":
        return line.rstrip("\n") + " " + line.strip()
    if kind == "scope":
        for old, new in ((".cta", ".gpu"), (".gpu", ".cta"), (".cluster", ".cta"), (".shared::cta", ".global")):
            if old in opcode:
                return line.replace(old, new, 1)
    return None


def _run_ring(folder: Path, tiles: int, blocks: int) -> str:
    from kernlink.api import link
    from packing.pack import pack

    for name in RUNNABLE["ring"]:
        pack(folder / f"{name}.cu", folder / f"{name}.kc", folder / "build" / f"{name}.kpkg")
    from linker.watchdog import DEFAULT_CYCLES

    result = link([folder / "ring.kp"], folder / "out", watchdog=DEFAULT_CYCLES)
    if not result.ok:
        return "not-run: " + "; ".join(d.message for d in result.diagnostics if d.is_error)[:200]
    # the ring's own waits are the component's `try_wait` loops, which the watchdog does not bound: the run
    # is a child process, and a child still running after TIMEOUT seconds is a hang (killing it frees the GPU)
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(str(folder / "out"), tiles, blocks, queue))
    child.start()
    child.join(TIMEOUT)
    if child.is_alive():
        child.kill()
        return "hang"
    return str(queue.get()) if not queue.empty() else f"error: exit {child.exitcode}"


TIMEOUT = 60


def _child(out: str, tiles: int, blocks: int, queue: Any) -> None:
    from runtime.launch import GpuSession
    from runtime.run import run_linked
    from tests.link.examples import floats, ring_reference

    data = floats(tiles * 8192, tiles)
    try:
        with GpuSession() as gpu:
            src, dst = gpu.upload(data.tobytes()), gpu.alloc(tiles * 8 * 4)
            run_linked(Path(out), gpu=gpu, grid=blocks, values={"src": src, "dst": dst, "tiles": tiles})
            got = array("f", gpu.download(dst)).tolist()
    except Exception as exc:  # E-HANG from the watchdog, or a launch error: reported, not raised
        queue.put("hang" if "HANG" in str(exc).upper() else f"error: {exc}"[:200])
        return
    queue.put("same" if got == ring_reference(data, tiles) else "differs")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("campaign", type=Path, help="code_mutants.json of bench/code_mutants.py")
    parser.add_argument("--sample", type=int, default=12, help="mutants to run (default 12)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", help="draw only from these pipelines (e.g. the runnable `ring`)")
    parser.add_argument("--out", type=Path, help="write the results here (JSON)")
    args = parser.parse_args()
    runs: dict[str, Any] = json.loads(args.campaign.read_text())
    pool = [
        (pipeline, verdict, m)
        for pipeline, run in sorted(runs.items())
        if not args.only or pipeline in args.only
        for verdict in ("accepted", "outside", "equivalent")
        for m in (run.get(verdict, []) if verdict != "accepted" else run.get("accepted_cuda", []))
    ]
    sample = random.Random(args.seed).sample(pool, min(args.sample, len(pool)))
    results = []
    for pipeline, verdict, m in sample:
        entry = {"pipeline": pipeline, "verdict": verdict, **m}
        cuda = m.get("cuda")
        if pipeline not in RUNNABLE or not cuda:
            entry["gpu"] = "not-run"
            results.append(entry)
            continue
        with tempfile.TemporaryDirectory(prefix="kernlink-mutant-") as tmp:
            folder = Path(tmp) / pipeline
            shutil.copytree(EXAMPLES / pipeline, folder, ignore=shutil.ignore_patterns("build"))
            source = folder / cuda[0]
            lines = source.read_text().split("\n")
            new = _edited(lines[cuda[1] - 1], m["kind"], m["opcode"]) if 0 < cuda[1] <= len(lines) else None
            if new is None:
                entry["gpu"] = "not-rebuilt"
            else:
                lines[cuda[1] - 1] = new
                source.write_text("\n".join(lines))
                entry["gpu"] = ", ".join(_run_ring(folder, t, b) for t, b in ((37, 4), (264, 132)))
        results.append(entry)
        print(f"{entry['gpu']:>12}  {pipeline}: {m.get('mutant', m)}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    return 1 if any("differs" in r["gpu"] or "hang" in r["gpu"] for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
