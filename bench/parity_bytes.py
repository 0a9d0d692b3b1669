"""The linked cubin against `kernlink parity`'s one-unit control, byte for byte, for each composition.

    python bench/parity_bytes.py specs/examples/attention/*.kp --compiler nvcc [--json FILE]

For each pipeline: a copy of its folder (without build/) is built as a user builds it
(`kernlink build P.kp -o B --no-server --compiler C`), then `kernlink parity P.kp -o P
--front-end C -I FOLDER` builds the one-unit control of the same sources and proves the link
(.text, resources, SASS). When `P/control.cubin` is byte-identical to `B/kernel.cubin`, the
linked kernel *is* the one-unit build: a timed linked ÷ one-unit ratio is 1 by construction, and
no device time is needed to show it. A row per pipeline: the parity verdict, both sha256 and
whether the files are identical; exit 1 when a parity proof fails.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernlink.cli import main as kernlink  # noqa: E402


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else ""


def compare(pipeline: Path, compiler: str, work: Path) -> dict[str, Any]:
    """Build ``pipeline`` and its parity control under ``work``; the row of the table."""
    folder = work / pipeline.parent.name
    if not folder.exists():
        shutil.copytree(pipeline.parent, folder, ignore=shutil.ignore_patterns("build"))
    kp = folder / pipeline.name
    built, control = work / f"B_{pipeline.stem}", work / f"P_{pipeline.stem}"
    row: dict[str, Any] = {"pipeline": pipeline.stem, "compiler": compiler}
    argv = ["build", str(kp), "-o", str(built), "--no-server", "--compiler", compiler, "--color", "never"]
    if kernlink(argv) != 0:
        return {**row, "built": False, "proved": False, "identical": False}
    argv = ["parity", str(kp), "-o", str(control), "--front-end", compiler, "-I", str(folder), "--color", "never"]
    proved = kernlink(argv) == 0
    linked, one_unit = _sha(built / "kernel.cubin"), _sha(control / "control.cubin")
    return {
        **row,
        "built": True,
        "proved": proved,
        "linked_sha256": linked,
        "control_sha256": one_unit,
        "identical": bool(linked) and linked == one_unit,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipelines", nargs="+", type=Path)
    parser.add_argument("--compiler", choices=("nvrtc", "nvcc"), default="nvrtc")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kernlink-parity-bytes-") as tmp:
        rows = [compare(p.resolve(), args.compiler, Path(tmp)) for p in args.pipelines]
    print(f"\n{'pipeline':<20} {'parity':>8} {'linked sha256':>18} {'control sha256':>18}  cubins")
    for r in rows:
        verdict = "proved" if r["proved"] else ("FAILED" if r["built"] else "no build")
        same = "identical" if r["identical"] else "differ"
        print(
            f"{r['pipeline']:<20} {verdict:>8} {r.get('linked_sha256', '')[:16]:>18} "
            f"{r.get('control_sha256', '')[:16]:>18}  {same}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r["proved"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
