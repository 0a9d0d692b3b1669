"""linked_auto at small M against every path of table_rounds.py replayed from a CUDA graph (no CPU launch cost).

table_rounds.py times each PyTorch path as a Python call: at M <= 128 a path runs in about 70 us of GPU
time, so a torch.compile'd wrapper's guards and launches can set the pace. Here each path (cuBLAS alone,
eager, static, dynamic, max-autotune) is captured once in a CUDA graph and timed as `graph.replay()`
under do_bench (the same L2 write flush), in ROUNDS rotating rounds beside the linked kernel, which
launches with one driver call.

    python graphs_small.py M,M,... OUT.json ROUNDS KERNEL ...   (beside gemm_swiglu_persistent.py,
                                                                 table_rounds.py and cubins/)
"""

import json
import sys
from pathlib import Path

import gemm_swiglu_persistent as h
import torch
from table_rounds import PATHS, baseline_fns
from triton.testing import do_bench


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
        for kern in kernels:
            spec = h.parse_spec(h.resolve(kern, m))
            variants.setdefault(spec.variant, h.Variant(Path("cubins"), spec.variant))
            assert h.run_kernel(variants, kern, prob, False, 8)["ok"]
            fns[kern] = h.Launch(variants[spec.variant], spec.mode, prob, spec.raster or 8, spec)
        for name, fn in baseline_fns(prob).items():
            fns[name + " [graph]"] = graphed(fn)
        names = list(fns)
        times: dict[str, list[float]] = {n: [] for n in names}
        for r in range(rounds):
            for i in range(len(names)):
                name = names[(i + r) % len(names)]
                times[name].append(float(do_bench(fns[name], warmup=25, rep=200, return_mode="median")))
        med = {n: sorted(v)[len(v) // 2] for n, v in times.items()}
        paths = [p + " [graph]" for p in PATHS]
        best = [min(times[p][r] for p in paths) for r in range(rounds)]
        row = {
            "m": m,
            "median_ms": med,
            "best_path": min(paths, key=lambda p: med[p]),
            "best_over_kernel": {
                k: sorted(b / t for b, t in zip(best, times[k], strict=True))[rounds // 2] for k in kernels
            },
            "times": times,
        }
        print(json.dumps({k: row[k] for k in ("m", "median_ms", "best_path", "best_over_kernel")}), flush=True)
        rows.append(row)
    out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
