"""Static evidence from a linked attention cubin's SASS (nvdisasm, as kernlink finds it): per consumer loop, how
many MUFU.EX2 (the softmax's exponentials) lie between WARPGROUP.DEPBAR.LE gsb0, 0x1 (S_i retired) and
WARPGROUP.DEPBAR.LE gsb0, 0x0 (PV_{i-1} retired), i.e. run under the PV wgmma; the highest register; spill
instructions (STL / LDL); CALLs; HGMMAs.

    python3 sass_overlap.py CUBIN ...   (from the repository root, with the project's venv)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from linker.sass import find_disassembler


def report(cubin: Path, tool: str) -> str:
    sass = subprocess.run([tool, "-c", str(cubin)], capture_output=True, text=True, check=True).stdout
    lines = sass.splitlines()
    under: list[int] = []
    inside, count = False, 0
    for line in lines:
        if "DEPBAR.LE gsb0, 0x1" in line:
            inside, count = True, 0
        elif inside and "DEPBAR.LE gsb0, 0x0" in line:
            under.append(count)
            inside = False
        elif inside and "MUFU.EX2" in line:
            count += 1
    regs = max(int(r) for r in re.findall(r"\bR(\d+)\b", sass))
    spills = sum(1 for line in lines if re.search(r"\b(STL|LDL)", line))
    calls = sum(1 for line in lines if re.search(r"\bCALL\b", line))
    hgmma = sum("HGMMA" in line for line in lines)
    return (
        f"{cubin}: EX2 under PV per loop {under}, highest register R{regs}, spill instructions {spills}, "
        f"CALL {calls}, HGMMA {hgmma}"
    )


def main() -> None:
    found = find_disassembler()
    if found is None or found.kind != "nvdisasm":
        sys.exit("needs nvdisasm")
    for arg in sys.argv[1:]:
        print(report(Path(arg), found.path))


if __name__ == "__main__":
    main()
