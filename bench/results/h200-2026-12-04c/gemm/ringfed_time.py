"""The ring-fed GEMM + SwiGLU (specs/examples/gemm_swiglu/persistent/ringfed, `kernlink build
gemm_swiglu_ringfed.kp`: 128 x 128 tiles, no cluster, data-parallel, the SwiGLU epilogue in a
warpgroup of its own fed through a ring of two f32 accumulator buffers) against the tuned
call-export persistent kernel (`linked_auto` of gemm_swiglu_persistent.py), in one process:

    python ringfed_time.py RINGFED_OUT_DIR M,M,... OUT.json [CTAS]

Per M: both checked against the float32 reference (gemm_swiglu_persistent.Problem.verdict, guard rows,
a second launch bit-identical), timed with do_bench (median, L2 write flush), then interleaved
(ab_time.py's rounds: ringfed, linked_auto, linked_auto again as the null) for the ratio
ringfed / linked_auto with a 95 % bootstrap interval.

The ring-fed link's params block is packed here at the link map's offsets. Its host provider
(mainloop_host.c) fills tmap_a, tmap_b and a_box_rows; this script writes the same values: the
descriptors of A = X [M, K] (box 64 x a_box_rows) and B = W [N, K] (box 64 x 128), bf16, 128B
swizzle, L2 promotion 256 B, out-of-bounds zero (gemm_swiglu_persistent.tensor_map), a_box_rows =
128, or M rounded up to 8 below 128.
"""

import ctypes
import json
import random
import struct
import sys
from pathlib import Path

import gemm_swiglu_persistent as h
import torch
from cuda.bindings import driver

ROUNDS, REPS, WARMUP = 30, 10, 5


def med(v):
    s = sorted(v)
    return s[len(s) // 2]


def ci(v):
    rng = random.Random(0)
    meds = sorted(med([rng.choice(v) for _ in v]) for _ in range(2000))
    return [meds[50], meds[1949]]


class RingFed:
    def __init__(self, folder: Path, ctas: int | None) -> None:
        torch.cuda.init()
        torch.empty(1, device="cuda")
        plan = json.loads((folder / "link.json").read_text())
        self.threads = int(plan["launch"]["threads"])
        self.smem = int(plan["launch"]["dynamic_smem"])
        self.fields = [(f["name"], int(f["offset"]), int(f["size"])) for f in plan["params"]["fields"]]
        err, self.module = driver.cuModuleLoadData((folder / "kernel.cubin").read_bytes())
        h.check(err, "cuModuleLoadData ringfed")
        err, self.function = driver.cuModuleGetFunction(self.module, plan["launch"]["kernel"].encode())
        h.check(err, "cuModuleGetFunction")
        (err,) = driver.cuFuncSetAttribute(
            self.function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.smem
        )
        h.check(err, "cuFuncSetAttribute")
        self.grid = ctas or torch.cuda.get_device_properties(0).multi_processor_count


class RingFedLaunch:
    """One launch of the ring-fed link on one problem (callable), output with 8 guard rows."""

    def __init__(self, rf: RingFed, prob: "h.Problem") -> None:
        m, n, k = prob.m, prob.n, prob.k
        self.rf = rf
        self.out_full = torch.empty(m + 8, n // 2, dtype=torch.bfloat16, device="cuda")
        self.out = self.out_full[:m]
        box = 128 if m >= 128 else (m + 7) // 8 * 8
        maps = h.tensor_map(prob.x, box) + h.tensor_map(prob.w, 128)
        self.maps = torch.frombuffer(bytearray(maps), dtype=torch.uint8).to("cuda")
        base = self.maps.data_ptr()
        values = {
            "tmap_a": base,
            "tmap_b": base + 128,
            "k_tiles": k // 64,
            "tile_n": 128,
            "a": prob.x.data_ptr(),
            "b": prob.w.data_ptr(),
            "rows": m,
            "n": n,
            "a_box_rows": box,
            "out": self.out.data_ptr(),
            "ldo": n // 2,
        }
        size = max(off + width for _, off, width in rf.fields)
        block = bytearray((size + 7) // 8 * 8)
        for name, off, width in rf.fields:
            struct.pack_into("<Q" if width == 8 else "<I", block, off, values[name])
        self.block = ctypes.create_string_buffer(bytes(block), len(block))
        self.args = (ctypes.c_void_p * 1)(ctypes.addressof(self.block))

    def __call__(self) -> None:
        stream = torch.cuda.current_stream().cuda_stream
        (err,) = driver.cuLaunchKernel(
            self.rf.function,
            self.rf.grid,
            1,
            1,
            self.rf.threads,
            1,
            1,
            self.rf.smem,
            stream,
            ctypes.addressof(self.args),
            0,
        )
        h.check(err, "cuLaunchKernel ringfed")


def check_launch(fn, prob):
    fn.out_full.view(torch.int16).fill_(-1)
    fn()
    torch.cuda.synchronize()
    row = prob.verdict(fn.out)
    guard = bool((fn.out_full[prob.m :].view(torch.int16) == -1).all())
    first = fn.out.clone()
    fn()
    torch.cuda.synchronize()
    row["deterministic"] = bool(torch.equal(first.view(torch.int16), fn.out.view(torch.int16)))
    row["guard_ok"] = guard
    row["ok"] = row["ok"] and guard and row["deterministic"]
    return row


def main() -> None:
    from triton.testing import do_bench

    folder, shapes, out = Path(sys.argv[1]), [int(v) for v in sys.argv[2].split(",")], Path(sys.argv[3])
    ctas = int(sys.argv[4]) if len(sys.argv) > 4 else None
    rf = RingFed(folder, ctas)
    variants = {}
    rows = []
    for m in shapes:
        prob = h.Problem(m, 2 * 14336, 4096, seed=1000 + m)
        spec = h.parse_spec(h.resolve("linked_auto", m))
        if spec.variant not in variants:
            variants[spec.variant] = h.Variant(Path("cubins"), spec.variant)
        tuned = h.Launch(variants[spec.variant], spec.mode, prob, spec.raster or 8, spec)
        ring = RingFedLaunch(rf, prob)
        null = h.Launch(variants[spec.variant], spec.mode, prob, spec.raster or 8, spec)
        row = {"m": m, "ringfed_grid": rf.grid, "linked_auto_runs": h.resolve("linked_auto", m)}
        row["ringfed_check"] = check_launch(ring, prob)
        row["linked_auto_check"] = check_launch(tuned, prob)
        row["ringfed_ms"] = float(do_bench(ring, warmup=25, rep=200, return_mode="median"))
        row["linked_auto_ms"] = float(do_bench(tuned, warmup=25, rep=200, return_mode="median"))
        launches = {"ringfed": ring, "tuned": tuned, "null": null}
        for fn in launches.values():
            for _ in range(WARMUP):
                fn()
        names = list(launches)
        orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]
        times = {n: [] for n in names}
        for r in range(ROUNDS):
            for i in orders[r % 6]:
                fn = launches[names[i]]
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                for _ in range(REPS):
                    fn()
                b.record()
                torch.cuda.synchronize()
                times[names[i]].append(a.elapsed_time(b) / REPS)
        ratio = [x / y for x, y in zip(times["ringfed"], times["tuned"], strict=True)]
        nul = [x / y for x, y in zip(times["null"], times["tuned"], strict=True)]
        row.update(
            ab_ringfed_ms=med(times["ringfed"]),
            ab_linked_auto_ms=med(times["tuned"]),
            ratio_ringfed_over_tuned=med(ratio),
            ratio_ci=ci(ratio),
            null=med(nul),
            null_ci=ci(nul),
        )
        print(json.dumps(row), flush=True)
        rows.append(row)
        del prob, tuned, ring, null
        torch.cuda.empty_cache()
    out.write_text(json.dumps(rows, indent=1) + "\n")
    if not all(r["ringfed_check"]["ok"] and r["linked_auto_check"]["ok"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
