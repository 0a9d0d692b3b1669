"""Builds the x_rows 128 swap-AB lever with two consumer warpgroups (not shipped; README.md).

The example folder (specs/examples/gemm_swiglu/persistent) copied to OUT/src with this folder's src/
laid over it: gemm_swiglu_persistent_swapab128.kp, its producer, mainloop and epilogue packages
(producer_swapab128, consumer_swapab128 over consumer_swapab_split.cuh, epilogue_swapab128) and their
generated headers, which it regenerates with `kernlink header` (each must come out as committed);
then `kernlink build`, `kernlink check --strict` and `kernlink parity` (identical, SASS identical), and
OUT/gs_linked_swapab128x2.cubin/.json for bench/gemm_swiglu_persistent.py's `linked_swapab128x2`.

    python bench/results/h200-2026-12-04e/swapab128x2/make_lever.py OUTDIR   (repository root, kernlink on PATH)
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

FOLDER = Path("specs/examples/gemm_swiglu/persistent")
HERE = Path(__file__).resolve().parent / "src"
HEADERS = {
    "producer_swapab128.kc": ("kl_gemm_producer_swapab128.h", []),
    "consumer_swapab128.kc": ("kl_gemm_mainloop_swapab128.h", ["--peer", "producer_swapab128.kc"]),
    "epilogue_swapab128.kc": ("kl_swiglu_epilogue_swapab128.h", []),
}


def main() -> None:
    out = Path(sys.argv[1]).resolve()
    work = out / "src"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(FOLDER, work, ignore=shutil.ignore_patterns("build"))
    for path in sorted(HERE.iterdir()):
        shutil.copy(path, work / path.name)
    for kc, (header, peer) in HEADERS.items():
        fresh = work / f"{header}.fresh"
        subprocess.run(["kernlink", "header", kc, "-o", fresh.name, *peer], check=True, cwd=work)
        if fresh.read_text() != (work / header).read_text():
            raise SystemExit(f"{header}: `kernlink header {kc}` differs from the committed header")
        fresh.unlink()
    kp = work / "gemm_swiglu_persistent_swapab128.kp"
    subprocess.run(["kernlink", "build", str(kp), "-o", str(out / "link"), "--no-server"], check=True)
    subprocess.run(["kernlink", "check", "--strict", str(kp)], check=True, stdout=subprocess.DEVNULL)
    said = subprocess.run(
        ["kernlink", "parity", str(kp), "-o", str(out / "parity"), "-I", str(work), "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
    )
    report = json.loads(said.stdout)["report"]
    if report["verdict"] != "identical" or not report.get("sass", {}).get("identical", False):
        raise SystemExit(f"parity: {report['verdict']}, SASS {report.get('sass')}")
    shutil.copy(out / "link" / "kernel.cubin", out / "gs_linked_swapab128x2.cubin")
    shutil.copy(out / "link" / "link.json", out / "gs_linked_swapab128x2.json")
    print(f"x_rows 128, two warpgroups: {out / 'gs_linked_swapab128x2.cubin'} (check --strict, parity identical)")


if __name__ == "__main__":
    main()
