"""The table in one process with the kernels and every baseline timed in rotating rounds (run2.sh):
per M, each path is checked (kernels: gemm_swiglu_persistent.run_kernel's checks; baselines: the
reference) and compiled once, then timed with triton's do_bench (median, L2 write flush) in ROUNDS
rounds, round r starting at path r of the list (cyclic), so no path always runs first or last (call 1
saw later rows of one M slower by up to 5 %). Per path: the median over rounds; per kernel and round:
best up-projection / kernel, with best = the fastest of eager, static, dynamic and max-autotune in
that round (cuBLAS alone is a bound, not a path).

    python table_rounds.py M,M,... OUT.json ROUNDS KERNEL[@M/M] ...
"""

import json
import sys
from pathlib import Path

import gemm_swiglu_persistent as h
import torch
from triton.testing import do_bench

PATHS = ("eager", "static", "dynamic", "autotune")


def baseline_fns(prob: "h.Problem") -> dict:
    """cuBLAS alone and the four up-projection paths on prob's inputs (gemm_swiglu_persistent's baselines)."""
    x, wcat = prob.x, prob.wcat
    static, dynamic, whole = h.compiled("static"), h.compiled("dynamic"), h.compiled("autotune")
    return {
        "gemm": lambda: x @ wcat.T,
        "eager": lambda: h.act(x @ wcat.T),
        "static": lambda: static(x @ wcat.T),
        "dynamic": lambda: dynamic(x @ wcat.T),
        "autotune": lambda: whole(x, wcat),
    }


def main() -> None:
    shapes = [int(v) for v in sys.argv[1].split(",")]
    out, rounds = Path(sys.argv[2]), int(sys.argv[3])
    kernels = sys.argv[4:]
    torch.backends.cuda.matmul.allow_tf32 = False
    for limit in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, 64)
    variants: dict[str, h.Variant] = {}
    rows = []
    for m in shapes:
        prob = h.Problem(m, 2 * 14336, 4096, seed=1000 + m)
        fns = {}
        checks = {}
        for kern in kernels:
            spec = h.parse_spec(h.resolve(kern, m))
            if spec.shapes is not None and m not in spec.shapes:
                continue
            variants.setdefault(spec.variant, h.Variant(Path("cubins"), spec.variant))
            checks[kern] = h.run_kernel(variants, kern, prob, False, 8)
            fns[kern] = h.Launch(variants[spec.variant], spec.mode, prob, spec.raster or 8, spec)
        fns.update(baseline_fns(prob))
        for kind in PATHS:
            got = fns[kind]()
            torch.cuda.synchronize()
            checks[kind] = prob.verdict(got)
        names = list(fns)
        times: dict[str, list[float]] = {n: [] for n in names}
        for r in range(rounds):
            for i in range(len(names)):
                name = names[(i + r) % len(names)]
                times[name].append(float(do_bench(fns[name], warmup=25, rep=200, return_mode="median")))
        med = {n: sorted(v)[len(v) // 2] for n, v in times.items()}
        best_per_round = [min(times[p][r] for p in PATHS) for r in range(rounds)]
        row = {
            "m": m,
            "runs": {k: h.resolve(k, m) for k in checks if k not in PATHS},
            "checks": checks,
            "ok": all(c["ok"] for c in checks.values()),
            "times": times,
            "median_ms": med,
            "best_path": min(PATHS, key=lambda p: med[p]),
            "best_over_kernel": {
                k: sorted(b / t for b, t in zip(best_per_round, times[k], strict=True))[rounds // 2]
                for k in names
                if k not in PATHS and k != "gemm"
            },
        }
        print(json.dumps({k: row[k] for k in ("m", "median_ms", "best_path", "best_over_kernel", "ok")}), flush=True)
        rows.append(row)
        del prob, fns
        torch.cuda.empty_cache()
    out.write_text(json.dumps(rows, indent=1) + "\n")
    sys.exit(0 if all(r["ok"] for r in rows) else 1)


if __name__ == "__main__":
    main()
