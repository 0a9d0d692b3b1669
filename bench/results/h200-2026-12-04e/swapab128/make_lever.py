"""Builds a swap-AB lever of x_rows rows of X (16 or 128; 64 ships: gemm_swiglu_persistent_swapab64.kp).

The example's swap-AB pipeline (specs/examples/gemm_swiglu/persistent/gemm_swiglu_persistent_swapab.kp)
with producer_swapab.kc's fact x_rows = X, the mainloop's export and the epilogue's import of wgmma's
m64nXk16 accumulator (tile g 2 m 64 n X, X registers per thread) and both `assumes fact x_rows` edited
to match; the headers regenerated with `kernlink header`; `kernlink build` and `kernlink check --strict`.

    python make_lever.py X OUTDIR     (from the repository root, kernlink on PATH)
"""

import shutil
import subprocess
import sys
from pathlib import Path

FOLDER = Path("specs/examples/gemm_swiglu/persistent")


def edit(path: Path, pairs: list[tuple[str, str]]) -> None:
    text = path.read_text()
    for old, new in pairs:
        if text.count(old) < 1:
            raise SystemExit(f"{path.name}: {old!r} not found")
        text = text.replace(old, new)
    path.write_text(text)


def main() -> None:
    rows, out = int(sys.argv[1]), Path(sys.argv[2]).resolve()
    half = rows // 2
    work = out / "src"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(FOLDER, work, ignore=shutil.ignore_patterns("build"))
    edit(work / "producer_swapab.kc", [("owns fact x_rows: u32 = 32", f"owns fact x_rows: u32 = {rows}")])
    frag = [
        ("tile g 2 m 64 n 32", f"tile g 2 m 64 n {rows}"),
        ("assumes fact x_rows: u32 == 32", f"assumes fact x_rows: u32 == {rows}"),
    ]
    for var in ("r", "p"):
        frag += [
            (f"(t: 128, {var}: 32)", f"(t: 128, {var}: {rows})"),
            (f"g = {var} / 16", f"g = {var} / {half}"),
            (f"n = 8 * (({var} % 16) / 4)", f"n = 8 * (({var} % {half}) / 4)"),
        ]
    for name in ("consumer_swapab.kc", "epilogue_swapab.kc"):
        text = (work / name).read_text()
        edit(work / name, [(o, n) for o, n in frag if o in text])
    headers = {
        "producer_swapab.kc": "kl_gemm_producer_swapab.h",
        "consumer_swapab.kc": "kl_gemm_mainloop_swapab.h",
        "epilogue_swapab.kc": "kl_swiglu_epilogue_swapab.h",
    }
    for kc, header in headers.items():
        peer = ["--peer", str(work / "producer_swapab.kc")] if kc == "consumer_swapab.kc" else []
        subprocess.run(["kernlink", "header", str(work / kc), "-o", str(work / header), *peer], check=True)
    kp = work / "gemm_swiglu_persistent_swapab.kp"
    subprocess.run(["kernlink", "build", str(kp), "-o", str(out / "link"), "--no-server"], check=True)
    subprocess.run(["kernlink", "check", "--strict", str(kp)], check=True, stdout=subprocess.DEVNULL)
    shutil.copy(out / "link" / "kernel.cubin", out / f"gs_linked_swapab{rows}.cubin")
    shutil.copy(out / "link" / "link.json", out / f"gs_linked_swapab{rows}.json")
    print(f"x_rows {rows}: {out / f'gs_linked_swapab{rows}.cubin'}")


if __name__ == "__main__":
    main()
