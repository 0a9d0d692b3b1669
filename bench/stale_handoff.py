"""The stale-upgrade study on a composition with real components: the counter hand-off.

    python bench/stale_handoff.py --out DIR [--grid 8] [--tiles 4] [--json FILE]   # needs a GPU to run

bench/stale_facts.py runs the same study on moe4's four owners; the hand-off
(`tests/moe/data/handoff`) is the smallest composition with the hazard: `hand.prod` owns the
fact `adds` (what it adds to a tile's counter slot, read through its folded fact handle),
`hand.cons` takes it at launch (`uses fact adds … as param adds`) and waits for
`grid * adds`. Its owner changes the one constant and repacks alone. For each upgrade:

- *kernlink*: relink the pipeline (the new value reaches the consumer's params field and
  the producer's handle);
- *symbol link*: nvJitLink alone links the repacked producer and the unchanged consumer with
  the glue of the old link — every other view of the fact as it was compiled: the consumer
  still receives the old value (the old link.json's params), only the producer's own
  constant is new. This is what a plain device link of separately built objects does.

Both are linked with `--watchdog` (2·10⁷ cycles, about 10 ms) and run with `kernlink run`
in a subprocess (a trap ends its context); each outcome is `correct`, `wrong output`
(how many words differ) or `hang` (the decoded E-HANG). Exit status 1 when a kernlink
relink is not correct.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernlink.api import link  # noqa: E402
from package.manifest import read_stage_package  # noqa: E402
from packing.pack import pack  # noqa: E402
from toolchain.cuda import compile_nvrtc  # noqa: E402
from toolchain.cuda import link as nvjitlink  # noqa: E402

HANDOFF = ROOT / "tests" / "moe" / "data" / "handoff"
FACT_LINE = "owns fact adds: u32 = {}"
PRODUCER_HANDLE = "__device__ unsigned kl_hand_prod_fact_adds() {{ return {}u; }}"
UPGRADES = ((1, 2), (2, 1), (1, 3))
WATCHDOG = 20_000_000


def build(root: Path, adds: int) -> Path:
    """The hand-off with `owns fact adds: u32 = ADDS`, both components packed; its pipeline."""
    shutil.copytree(HANDOFF, root)
    contract = root / "prod.kc"
    contract.write_text(contract.read_text().replace(FACT_LINE.format(1), FACT_LINE.format(adds)))
    for component in ("prod", "cons"):
        source = root / f"{component}.cu"
        pack(source, source.with_suffix(".kc"), root / "build" / f"{component}.kpkg")
    return root / "handoff.kp"


def kernlink_link(pipeline: Path, out: Path) -> Path:
    result = link([pipeline], out, watchdog=WATCHDOG)
    if not result.ok:
        raise SystemExit(f"kernlink link {pipeline} failed: {[d.message for d in result.diagnostics]}")
    return out


def symbol_link(old: Path, new_pipeline: Path, old_adds: int, new_adds: int, out: Path) -> Path:
    """nvJitLink alone: the new producer object, the consumer object, the old glue (the producer's constant new)."""
    source = (old / "generated.cu").read_text()
    before, after = PRODUCER_HANDLE.format(old_adds), PRODUCER_HANDLE.format(new_adds)
    if before not in source:
        raise SystemExit(f"the old glue has no `{before}`")
    glue = compile_nvrtc(source.replace(before, after), "generated.cu", arch="sm_90a")
    build = new_pipeline.parent / "build"
    inputs = [(name, read_stage_package(build / f"{name}.kpkg").lto_ir) for name in ("prod", "cons")]
    result = nvjitlink([*inputs, ("generated", glue.ltoir)], arch="sm_90a", kernels=["kl_dispatch"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "kernel.cubin").write_bytes(result.cubin)
    # the consumer's view: the old params and facts. A plain symbol link has no manifest to
    # disagree with, so the old one is re-stamped with the new cubin's hash (kernlink's loader
    # checks it, and would otherwise refuse the pair as L-INTEGRITY before anything runs).
    record = json.loads((old / "link.json").read_text())
    record["cubin"] = {"sha256": hashlib.sha256(result.cubin).hexdigest(), "size": len(result.cubin)}
    (out / "link.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return out


def expected(tiles: int, grid: int, adds: int) -> list[int]:
    out = [0] * (tiles * grid * 32 + 2 * grid)
    for k in range(tiles):
        for b in range(grid):
            for lane in range(32):
                out[(k * grid + b) * 32 + lane] = 1000 * k + 10 * ((b + 1) % grid) + lane
    for b in range(grid):
        out[tiles * grid * 32 + 2 * b] = grid * adds
    return out


def run(directory: Path, tiles: int, grid: int, adds: int) -> dict[str, object]:
    """`kernlink run` in a subprocess; the outcome against the new value's expected output."""
    args = directory / "args.json"
    words = tiles * grid * 32 + 2 * grid
    args.write_text(
        json.dumps(
            {
                "grid": grid,
                "values": {"tiles": tiles},
                "buffers": {"data": {"bytes": tiles * grid * 128}, "out": {"bytes": 4 * words, "output": "out.bin"}},
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "kernlink", "run", str(directory), "--args", str(args), "--color", "never"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    text = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        hang = next((line for line in text.splitlines() if "E-HANG" in line), None)
        return {"outcome": "hang" if hang else "error", "detail": hang or text[-400:]}
    got = array("I", (directory / "out.bin").read_bytes()).tolist()
    want = expected(tiles, grid, adds)
    wrong = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
    if not wrong:
        return {"outcome": "correct", "detail": ""}
    return {
        "outcome": "wrong output",
        "detail": f"{len(wrong)} of {len(want)} words differ (first at {wrong[0]}: "
        f"{got[wrong[0]]} for {want[wrong[0]]})",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="a scratch folder for the builds and runs")
    parser.add_argument("--grid", type=int, default=8)
    parser.add_argument("--tiles", type=int, default=4)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    rows = []
    for old_adds, new_adds in UPGRADES:
        root = args.out / f"adds_{old_adds}_to_{new_adds}"
        old = kernlink_link(build(root / "old", old_adds), root / "old-out")
        new_pipeline = build(root / "new", new_adds)
        relinked = kernlink_link(new_pipeline, root / "kernlink-out")
        symbol = symbol_link(old, new_pipeline, old_adds, new_adds, root / "symbol-out")
        rows.append(
            {
                "upgrade": f"adds {old_adds} -> {new_adds}",
                "symbol_link": run(symbol, args.tiles, args.grid, new_adds),
                "kernlink": run(relinked, args.tiles, args.grid, new_adds),
            }
        )
    print(f"{'upgrade':<14} {'symbol link (nvJitLink alone)':<32} kernlink relink")
    for row in rows:
        s, k = row["symbol_link"], row["kernlink"]
        assert isinstance(s, dict) and isinstance(k, dict)
        print(f"{row['upgrade']:<14} {s['outcome']:<32} {k['outcome']}")
        for name, r in (("symbol link", s), ("kernlink", k)):
            if r["detail"]:
                print(f"    {name}: {r['detail']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(isinstance(r["kernlink"], dict) and r["kernlink"]["outcome"] == "correct" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
