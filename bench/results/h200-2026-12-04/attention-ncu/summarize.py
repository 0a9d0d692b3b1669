"""Condenses ncu's exports of run.sh / run2.sh (CALL/ncu_raw.csv, and ncu_source.csv from ncu.tar.xz) into
CALL/ncu_summary.txt: per kernel the duration, tensor-pipe activity, issue stalls per issued instruction,
instructions, branches, L2 hit rate; then, from the source page, each kernel's stall samples by opcode and
the order of the hot loop's synchronisation, wgmma and wait instructions.

    python3 summarize.py CALL [ncu_source.csv]
"""

from __future__ import annotations

import collections
import csv
import re
import sys
from pathlib import Path

METRICS = [
    ("duration ms", "gpu__time_duration.sum"),
    ("tensor pipe active %", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"),
    ("SM throughput %", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("issue active %", "smsp__issue_active.avg.pct_of_peak_sustained_active"),
    ("XU (MUFU) pipe %", "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"),
    ("instructions M", "smsp__inst_executed.sum"),
    ("branch instructions M", "smsp__inst_executed_op_branch.sum"),
    ("L2 hit %", "lts__t_sector_hit_rate.pct"),
    ("registers/thread", "launch__registers_per_thread"),
    ("grid", "launch__grid_size"),
]
STALLS = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
STALL_NAMES = [
    "barrier",
    "long_scoreboard",
    "wait",
    "dispatch_stall",
    "math_pipe_throttle",
    "gmma",
    "not_selected",
    "short_scoreboard",
    "mio_throttle",
    "no_instruction",
    "branch_resolving",
]
SYNC = ("HGMMA", "WARPGROUP", "BAR.", "SYNCS", "TRYWAIT")


def raw(path: Path, labels: list[str]) -> list[str]:
    rows = list(csv.reader(path.open()))
    idx = {h: i for i, h in enumerate(rows[0])}
    data = rows[2:]
    out = ["kernel".ljust(34) + "".join(lab.rjust(12) for lab in labels)]
    for name, key in METRICS + [(f"stall {s}", STALLS.format(s)) for s in STALL_NAMES]:
        if key not in idx:
            continue
        vals = [r[idx[key]].replace(",", "") for r in data]
        nums = [float(v) if v else 0.0 for v in vals]
        if name.endswith(" M"):
            nums = [v / 1e6 for v in nums]
        out.append(name.ljust(34) + "".join(f"{v:12.3f}" if v < 1e4 else f"{v:12.0f}" for v in nums))
    return out


def kernels(path: Path) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    hdr: list[str] | None = None
    for row in csv.reader(path.open()):
        if row and row[0] == "Kernel Name":
            out.append({"name": row[1], "rows": []})
            hdr = None
        elif row and row[0] == "Address":
            hdr = row
        elif hdr and row:
            out[-1]["rows"].append(dict(zip(hdr, row, strict=False)))  # type: ignore[attr-defined]
    return out


def opcode(src: str) -> str:
    s = re.sub(r"^@!?U?P\w+\s+", "", src.strip())
    return s.split()[0].split(".")[0] if s else ""


def source(path: Path, labels: list[str]) -> list[str]:
    out = []
    for label, k in zip(labels, kernels(path), strict=True):
        rows: list[dict[str, str]] = k["rows"]  # type: ignore[assignment]
        samples = collections.Counter()
        for r in rows:
            samples[opcode(r["Source"])] += float(r["Warp Stall Sampling (All Samples)"] or 0)
        total = sum(samples.values()) or 1.0
        out.append(
            f"{label}: {len(rows)} SASS instructions, {total:.0f} stall samples; by opcode: "
            + ", ".join(f"{o} {v / total * 100:.1f}%" for o, v in samples.most_common(10))
        )
        top = max(float(r["Instructions Executed"] or 0) for r in rows)
        hot = [r for r in rows if float(r["Instructions Executed"] or 0) >= 0.5 * top]
        out.append(f"  hot loop ({len(hot)} instructions executed >= half the most executed one), in order:")
        for r in hot:
            if any(t in r["Source"] for t in SYNC) or "MUFU.EX2" in r["Source"]:
                out.append(f"    {r['Source'].strip()[:64]:<64} samples {r['Warp Stall Sampling (All Samples)']:>6}")
    # collapse runs of MUFU.EX2 lines
    squeezed: list[str] = []
    run = 0
    for line in [*out, ""]:
        if "MUFU.EX2" in line:
            run += 1
            continue
        if run:
            squeezed.append(f"    ... {run} x MUFU.EX2")
            run = 0
        squeezed.append(line)
    return squeezed[:-1]


def main() -> None:
    call = Path(sys.argv[1])
    labels = (call / "labels.txt").read_text().split()
    lines = raw(call / "ncu_raw.csv", labels)
    if len(sys.argv) > 2:
        lines += ["", *source(Path(sys.argv[2]), labels)]
    (call / "ncu_summary.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
