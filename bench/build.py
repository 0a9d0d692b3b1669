"""Separate compilation against one unit: `kernlink build` (full, and after one component changes) vs nvcc.

    python bench/build.py            # a table
    python bench/build.py --json     # the same figures as JSON

On a copy of specs/examples/ring, each as a fresh process, CPU time (user + system of the
children, ``resource.getrusage``), median of ``--repeats``:
  * full: ``kernlink build ring.kp -o out`` with no packages yet (pack both, link), in a fresh
    ``KERNLINK_CACHE`` that holds only the parsed grammar (a `kernlink check` warms it first):
    no binding verdict is cached yet, so the link compiles both packages again;
  * rebuild: the same after one component's source changed (pack it, reuse the other, link;
    the unchanged package's binding verdict comes from the cache the full build filled);
  * resident rebuild: ``kernlink build --watch ring.kp -o out`` started once (its first build
    not counted); then, ``--repeats`` times, one component's source is edited and the CPU time
    of the whole process tree from the edit to the watcher's ``--- build finished`` line is
    taken from /proc: the watcher (with the children it reaped) and every live descendant
    (the native worker that runs NVRTC and nvJitLink) — not only the client. The watcher's
    polling in that interval is included. The native worker's share is reported on its own:
    the NVRTC + nvJitLink work of a rebuild, the floor of any rebuild that compiles and links;
  * resident, both changed: the same with both components' sources edited at once (both packed
    and bound again, then linked): a full build of the ring's code in a process already started
    (its start-up, ~1 s of imports, is paid once per session, not per build);
  * through a build server: ``kernlink serve`` runs (its start-up and first build not counted);
    each one-shot ``kernlink build`` finds it and the server builds. Counted: the client process
    plus the server's whole process tree (server, native worker) from /proc, before and after.
    Rows: one component changed; both changed; and a new folder whose sources and contracts all
    carry an edit (every text-keyed cache misses; the check's verdicts, kept on the contracts'
    meaning, are still the server's);
  * nvcc one unit: ``nvcc -cubin -arch=sm_90a control.cu`` of the same sources built as one
    translation unit (``kernlink parity``'s control.cu, which it writes once beforehand).
Goals (issue 19): full ≤ the nvcc build, rebuild ≤ 0.5 × it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpu(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False, env=env
    )
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def tree_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) of ``pid`` with the children it reaped, and of its live descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    seconds: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()  # state, ppid, … utime(11) stime cutime cstime(14)
        parents[int(entry.name)] = int(fields[1])
        seconds[int(entry.name)] = sum(int(x) for x in fields[11:15]) / tick
    family, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - family
        family |= frontier
    return seconds.get(pid, 0.0), sum(seconds.get(p, 0.0) for p in family)


def _until_built(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("--- build finished"):
            return line
    raise SystemExit("kernlink build --watch ended before its build finished")


def resident(kl: list[str], work: Path, repeats: int, rows: dict[str, list[float]]) -> None:
    """The resident rows (module docstring)."""
    ring = work / "resident"
    shutil.copytree(ROOT / "specs" / "examples" / "ring", ring, ignore=shutil.ignore_patterns("build", "host"))
    env = {**os.environ, "KERNLINK_CACHE": str(work / "cache-resident"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [*kl, "build", "--watch", "ring.kp", "-o", "out", "--color", "never"],
        cwd=ring,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        _until_built(proc)

        def rebuild(names: tuple[str, ...], tag: str) -> tuple[float, float]:
            """Edit ``names`` at once; CPU of the whole tree and of its live children until built."""
            time.sleep(1.0)  # past the watcher's settle time: the edits below are one change
            own, children = tree_cpu(proc.pid)
            for name in names:
                edited = ring / name
                edited.write_text(edited.read_text() + f"\n// resident edit {tag}\n")
            line = _until_built(proc)
            if "(exit 0)" not in line:
                raise SystemExit(f"the resident rebuild failed: {line}")
            own_after, children_after = tree_cpu(proc.pid)
            return own_after - own + children_after - children, children_after - children

        for i in range(repeats):
            whole, native = rebuild(("reduce.cu",), f"{i}")
            rows["kernlink build --watch: rebuild, whole tree"].append(whole)
            rows["  of which the native worker (NVRTC+nvJitLink)"].append(native)
        for i in range(repeats):  # both components changed at once: everything packed again, then linked
            whole, _ = rebuild(("loader.cu", "reduce.cu"), f"of both {i}")
            rows["kernlink build --watch: both changed, whole tree"].append(whole)
    finally:
        proc.terminate()
        proc.wait(30)


def served(kl: list[str], work: Path, repeats: int, rows: dict[str, list[float]]) -> None:
    """The rows of one-shot builds through a running ``kernlink serve`` (module docstring)."""
    runtime = work / "rt"
    runtime.mkdir(mode=0o700)
    env = {**os.environ, "KERNLINK_CACHE": str(work / "cache-served"), "KERNLINK_RUNTIME_DIR": str(runtime)}
    proc = subprocess.Popen(
        [*kl, "serve", "--foreground", "--idle", "600"], cwd="/", stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    if not proc.stdout.readline().startswith("listening on "):
        raise SystemExit("kernlink serve did not start")
    try:

        def fresh(name: str) -> Path:
            folder = work / name
            shutil.copytree(
                ROOT / "specs" / "examples" / "ring", folder, ignore=shutil.ignore_patterns("build", "host")
            )
            return folder

        def one(folder: Path, edits: tuple[str, ...], tag: str) -> float:
            for name in edits:
                mark = "//" if name.endswith(".cu") else "#"
                (folder / name).write_text((folder / name).read_text() + f"\n{mark} edit {tag}\n")
            own, children = tree_cpu(proc.pid)
            spent = cpu([*kl, "build", "ring.kp", "-o", "out"], folder, env)
            own_after, children_after = tree_cpu(proc.pid)
            return spent + own_after - own + children_after - children

        ring = fresh("served")
        one(ring, (), "first")  # the server's first build: not counted
        for i in range(repeats):
            rows["kernlink build via kernlink serve: one changed"].append(one(ring, ("reduce.cu",), f"{i}"))
        for i in range(repeats):
            rows["kernlink build via kernlink serve: both changed"].append(
                one(ring, ("loader.cu", "reduce.cu"), f"both {i}")
            )
        for i in range(repeats):
            everything = ("loader.cu", "reduce.cu", "loader.kc", "reduce.kc", "ring.kp")
            rows["kernlink build via kernlink serve: new folder"].append(one(fresh(f"new{i}"), everything, f"new {i}"))
    finally:
        subprocess.run([*kl, "serve", "--stop"], env=env, stdout=subprocess.DEVNULL, check=False)
        proc.wait(60)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    kl = [sys.executable, "-m", "kernlink"]
    work = Path(tempfile.mkdtemp(prefix="kl-build-"))
    rows: dict[str, list[float]] = {
        "kernlink build (full)": [],
        "kernlink build (one component changed)": [],
        "kernlink build --watch: rebuild, whole tree": [],
        "  of which the native worker (NVRTC+nvJitLink)": [],
        "kernlink build --watch: both changed, whole tree": [],
        "kernlink build via kernlink serve: one changed": [],
        "kernlink build via kernlink serve: both changed": [],
        "kernlink build via kernlink serve: new folder": [],
        "nvcc one unit (control.cu)": [],
    }
    env_root = str(ROOT)
    for i in range(args.repeats):
        ring = work / f"ring{i}"
        shutil.copytree(ROOT / "specs" / "examples" / "ring", ring, ignore=shutil.ignore_patterns("build", "host"))
        env = {**os.environ, "KERNLINK_CACHE": str(work / f"cache{i}")}
        subprocess.run([*kl, "check", "ring.kp"], cwd=ring, stdout=subprocess.DEVNULL, env=env, check=False)
        rows["kernlink build (full)"].append(cpu([*kl, "build", "ring.kp", "-o", "out", "--no-server"], ring, env))
        source = ring / "reduce.cu"
        source.write_text(source.read_text() + f"\n// edit {i}\n")
        rows["kernlink build (one component changed)"].append(
            cpu([*kl, "build", "ring.kp", "-o", "out", "--no-server"], ring, env)
        )
    resident(kl, work, args.repeats, rows)
    served(kl, work, args.repeats, rows)
    control = work / "parity"
    subprocess.run(
        [*kl, "parity", str(work / "ring0" / "ring.kp"), "-o", str(control), "--color", "never"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        check=False,
        env={"PYTHONPATH": env_root, "PATH": "/usr/bin:/bin"},
    )
    nvcc = shutil.which("nvcc")
    if nvcc and (control / "control.cu").exists():
        for _ in range(args.repeats):
            rows["nvcc one unit (control.cu)"].append(
                cpu(
                    [
                        nvcc,
                        "-cubin",
                        "-arch=sm_90a",
                        "-std=c++17",
                        f"-I{work / 'ring0'}",
                        "control.cu",
                        "-o",
                        str(work / "one.cubin"),
                    ],
                    control,
                )
            )
    out = {name: {"median_cpu_s": statistics.median(v), "min_cpu_s": min(v)} for name, v in rows.items() if v}
    base = out.get("nvcc one unit (control.cu)", {}).get("median_cpu_s")
    bytecode = "off (PYTHONDONTWRITEBYTECODE)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "on"
    if args.json:
        print(json.dumps({"repeats": args.repeats, "bytecode_cache": bytecode, "rows": out}, indent=2))
    else:
        print(f"Python bytecode cache: {bytecode}")
        print(f"{'step':48} {'median CPU s':>13} {'min':>7} {'x nvcc':>8}")
        for name, r in out.items():
            ratio = f"{r['median_cpu_s'] / base:8.2f}" if base else "       -"
            print(f"{name:48} {r['median_cpu_s']:13.3f} {r['min_cpu_s']:7.3f} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
