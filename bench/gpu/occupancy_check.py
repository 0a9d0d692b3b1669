"""Cross-check the residency model (hardware/residency.py) against the CUDA occupancy API on a GPU.

    python3 bench/gpu/occupancy_check.py --out DIR [--quick]

1. A matrix of small kernels compiled with NVRTC and linked with nvJitLink for the GPU's
   target: ``__launch_bounds__(T, B)`` for several block sizes and minimum blocks, a
   named barrier of a chosen highest ID, and several dynamic shared-memory sizes. For
   each, the model's blocks per SM (from the cubin's registers and barriers, the
   dynamic bytes and the block size) is compared with
   ``cuOccupancyMaxActiveBlocksPerMultiprocessor``.
2. The ``ring`` example linked with ``blocks_per_sm 2`` (budgets 24 / 96): the blocks per
   SM the placement claims (``placement.adapter.placed_residency``) against the API for
   the linked dispatch kernel with its dynamic shared memory. The claim must equal the
   API's answer and be at least 2.

Writes ``DIR/occupancy.json`` (every case: inputs, model, API) and prints a summary.
Exit status: 0 when every case agrees, 1 when one does not, 2 when something fails to
build or load.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cuda.bindings import driver  # noqa: E402

from hardware import residency as R  # noqa: E402
from runtime.launch import GpuSession  # noqa: E402
from toolchain.cuda import compile_nvrtc, link  # noqa: E402

KERNEL = """
extern "C" __global__ void __launch_bounds__({threads}, {blocks}) k(float* p) {{
    extern __shared__ float s[];
    float v = p[threadIdx.x];
    {barrier}
    s[threadIdx.x % 8] = v;
    p[threadIdx.x] = v * 2.0f + s[(threadIdx.x + 1) % 8];
}}
"""


def occupancy(function: object, threads: int, dynamic: int) -> int:
    if dynamic > 48 * 1024:
        (err,) = driver.cuFuncSetAttribute(
            function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic
        )
        if err != driver.CUresult.CUDA_SUCCESS:
            return -1
    err, blocks = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(function, threads, dynamic)
    return int(blocks) if err == driver.CUresult.CUDA_SUCCESS else -1


def matrix(gpu: GpuSession, quick: bool) -> list[dict[str, object]]:
    assert gpu.spec is not None
    spec = gpu.spec
    cases = []
    sizes = (128, 384, 1024) if quick else (64, 128, 256, 384, 416, 512, 768, 1024)
    for threads in sizes:
        for blocks in (1, 2, 3, 4, 8):
            for barrier_id in (0, 3, 15):
                barrier = f'asm volatile("bar.sync {barrier_id}, {threads};");' if barrier_id else "__syncthreads();"
                src = KERNEL.format(threads=threads, blocks=blocks, barrier=barrier)
                ltoir = compile_nvrtc(src, "occ.cu", arch=spec.name).ltoir
                linked = link([("occ", ltoir)], arch=spec.name, kernels=["k"], verbose=True)
                loaded = gpu.load(linked.cubin)
                kernel = loaded.kernel("k")
                assert kernel.info is not None
                regs, charged = kernel.info.registers, max(kernel.info.barriers, barrier_id + 1)
                for dynamic in (0, 48 * 1024, 115712, 116224, 200 * 1024):
                    if dynamic > spec.smem_per_block_optin:
                        continue
                    model = R.residency(spec, R.Demand(threads // 32, regs, dynamic, charged))
                    api = occupancy(kernel.function, threads, dynamic)
                    cases.append(
                        {
                            "threads": threads,
                            "min_blocks": blocks,
                            "barrier_id": barrier_id,
                            "registers": regs,
                            "barriers": charged,
                            "dynamic_smem": dynamic,
                            "model": model.blocks,
                            "limiting": model.limiting.resource,
                            "api": api,
                            "agree": model.blocks == api,
                        }
                    )
    return cases


def ring_two_blocks(gpu: GpuSession, out: Path) -> dict[str, object]:
    from kernlink.api import link as kl_link
    from placement.adapter import placed_residency
    from tests.link.examples import build_example
    from toolchain.cubin import read_cubin

    edits = {
        "loader.kc": {"threads 384": "threads 384 blocks_per_sm 2", "regs 40": "regs 24"},
        "reduce.kc": {"threads 384": "threads 384 blocks_per_sm 2", "regs 232": "regs 96"},
    }
    pipeline = build_example("ring", out / "src", edits)
    result = kl_link([pipeline], out / "ring2")
    if not result.ok or result.output is None or result.output.cubin is None:
        return {"error": [f"{d.code}: {d.message}" for d in result.diagnostics if d.is_error]}
    record = result.output.record
    assert record.placement is not None and gpu.spec is not None
    claimed = placed_residency(gpu.spec, record.placement).blocks
    data = json.loads((out / "ring2" / "link.json").read_text())
    threads, dynamic = data["dispatch"]["threads"], data["dispatch"]["dynamic_smem"]
    loaded = gpu.load(result.output.cubin)
    kernel = loaded.kernel(data["dispatch"]["kernel"])
    api = occupancy(kernel.function, threads, dynamic)
    regs = read_cubin(result.output.cubin).kernel(data["dispatch"]["kernel"])
    return {
        "threads": threads,
        "dynamic_smem": dynamic,
        "registers": regs.registers if regs else None,
        "placement_claims": claimed,
        "api": api,
        "agree": claimed == api and api >= 2,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--quick", action="store_true", help="fewer block sizes")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        with GpuSession() as gpu:
            cases = matrix(gpu, args.quick)
            ring = ring_two_blocks(gpu, args.out)
            device = gpu.spec.name if gpu.spec is not None else "unknown"
    except Exception as exc:  # report, then fail with the build/load status
        print(f"occupancy check could not run: {exc!r}")
        return 2
    bad = [c for c in cases if not c["agree"]]
    report = {"target": device, "cases": cases, "ring_blocks_per_sm_2": ring, "disagreements": len(bad)}
    (args.out / "occupancy.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"{device}: {len(cases)} kernels × smem sizes, {len(bad)} disagree with the occupancy API")
    for c in bad[:20]:
        print(f"  disagree: {c}")
    print(f"ring blocks_per_sm 2: {ring}")
    return 0 if not bad and ring.get("agree") else 1


if __name__ == "__main__":
    sys.exit(main())
