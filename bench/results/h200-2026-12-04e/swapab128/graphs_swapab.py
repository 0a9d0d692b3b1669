"""Linked kernels at small M against every path replayed from a CUDA graph, and the W-read floor, in one process.

The method of ../../h200-2026-12-04d/small-m/graphs_small.py: each PyTorch path (cuBLAS alone, eager,
static, dynamic, max-autotune: table_rounds.py's baseline_fns) is captured once in a CUDA graph and
timed as `graph.replay()` under triton's do_bench (its L2 write flush), in ROUNDS rotating rounds beside
the linked kernels (one driver call each) and the W-read floor (bench/weight_read_floor.py's best
configuration at K = 4096, N = 2 x 14336: block 4096, 8 warps, 8 programs per SM; it reads the same
W). Per M: every median, the best path, and per kernel the median over rounds of best path / kernel
and kernel / floor.

    python graphs_swapab.py M,M,... OUT.json ROUNDS KERNEL ...   (beside gemm_swiglu_persistent.py,
                                                                  table_rounds.py, weight_read_floor.py
                                                                  and cubins/)
"""

import json
import sys
from pathlib import Path

import gemm_swiglu_persistent as h
import torch
from table_rounds import PATHS, baseline_fns
from triton.testing import do_bench
from weight_read_floor import launcher

FLOOR = "floor [read W]"
FLOOR_CONFIG = (4096, 8, 8)


def graphed(fn):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    return graph.replay


def mid(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def main() -> None:
    shapes = [int(v) for v in sys.argv[1].split(",")]
    out, rounds = Path(sys.argv[2]), int(sys.argv[3])
    kernels = sys.argv[4:]
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    variants: dict[str, h.Variant] = {}
    for m in shapes:
        prob = h.Problem(m, 2 * 14336, 4096, seed=1000 + m)
        fns = {}
        runs = {}
        for kern in kernels:
            runs[kern] = h.resolve(kern, m)
            spec = h.parse_spec(runs[kern])
            variants.setdefault(spec.variant, h.Variant(Path("cubins"), spec.variant))
            assert h.run_kernel(variants, kern, prob, False, 8)["ok"], kern
            fns[kern] = h.Launch(variants[spec.variant], spec.mode, prob, spec.raster or 8, spec)
        for name, fn in baseline_fns(prob).items():
            fns[name + " [graph]"] = graphed(fn)
        fns[FLOOR] = launcher(prob.wcat, *FLOOR_CONFIG)
        names = list(fns)
        times: dict[str, list[float]] = {n: [] for n in names}
        for r in range(rounds):
            for i in range(len(names)):
                name = names[(i + r) % len(names)]
                times[name].append(float(do_bench(fns[name], warmup=25, rep=200, return_mode="median")))
        med = {n: mid(v) for n, v in times.items()}
        paths = [p + " [graph]" for p in PATHS]
        best = [min(times[p][r] for p in paths) for r in range(rounds)]
        row = {
            "m": m,
            "runs": runs,
            "median_ms": med,
            "best_path": min(paths, key=lambda p: med[p]),
            "best_over_kernel": {k: mid([b / t for b, t in zip(best, times[k], strict=True)]) for k in kernels},
            "kernel_over_floor": {
                k: mid([t / f for t, f in zip(times[k], times[FLOOR], strict=True)]) for k in kernels
            },
            "times": times,
        }
        shown = ("m", "median_ms", "best_path", "best_over_kernel", "kernel_over_floor")
        print(json.dumps({k: row[k] for k in shown}), flush=True)
        rows.append(row)
    out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
