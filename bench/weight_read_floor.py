"""The fastest read of the up-projection's weights under do_bench's flush: the floor of any M <= 128 kernel.

At M <= 128 the persistent GEMM + SwiGLU reads W (N x K bf16, 235 MB at K = 4096, N = 2 x 14336) once
and little else, so its time under triton's do_bench is bounded below by the fastest kernel that
only reads W. This times such a kernel, a Triton streaming read (every configuration of CONFIGS,
the best kept), under

- do_bench's flush (it zeroes 256 MB before each run, leaving L2 full of dirty lines that the next
  kernel's misses must write back to HBM) — the flush bench/gemm_swiglu_persistent.py times with;
- a flush that reads 256 MB (clean lines: no write-back owed; bench/gemm_swiglu_persistent.py's
  clean_bench).

    python bench/weight_read_floor.py [--k 4096] [--n 28672] [--json FILE]
    python bench/weight_read_floor.py --once zero|read   # one flush and one read: an ncu target

For `--once zero` under `ncu --cache-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum`,
the read kernel's DRAM writes are the flush's dirty lines written back while it runs (it stores
one float per program).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))

#: (elements per program and step, warps, programs per SM)
CONFIGS = tuple((b, w, p) for b in (4096, 8192, 16384) for w in (4, 8) for p in (2, 4, 8))


@triton.jit
def _read_w(w_ptr, out_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(pid * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(w_ptr + offs, mask=offs < n, other=0.0, eviction_policy="evict_first").to(tl.float32)
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


def launcher(w: torch.Tensor, block: int, warps: int, per_sm: int) -> Any:
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    grid = (sms * per_sm,)
    out = torch.empty(grid[0], dtype=torch.float32, device=w.device)
    flat = w.view(-1)

    def run() -> torch.Tensor:
        _read_w[grid](flat, out, flat.numel(), BLOCK=block, num_warps=warps)
        return out

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--n", type=int, default=2 * 14336)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--once", choices=("zero", "read"), help="one flush of this kind, then one read (ncu)")
    args = parser.parse_args()
    from gemm_swiglu_persistent import clean_bench
    from triton.testing import do_bench

    torch.manual_seed(0)
    w = torch.randn(args.n, args.k, dtype=torch.bfloat16, device="cuda")
    nbytes = w.numel() * w.element_size()
    if args.once:
        best = launcher(w, 16384, 8, 4)
        best()
        flush = torch.empty(64 * 1024 * 1024, dtype=torch.float32, device="cuda")
        torch.cuda.synchronize()
        if args.once == "zero":
            flush.zero_()
        else:
            flush.sum()
        best()
        torch.cuda.synchronize()
        return 0
    rows: list[dict[str, Any]] = []
    for block, warps, per_sm in CONFIGS:
        run = launcher(w, block, warps, per_sm)
        ref = w.float().sum() if not rows else None
        got = run().sum()
        if ref is not None:
            assert torch.allclose(got, ref, rtol=1e-3, atol=1e-1), (float(got), float(ref))
        ms = float(do_bench(run, warmup=25, rep=200, return_mode="median"))
        row: dict[str, Any] = {"kernel": f"read W block{block} w{warps} x{per_sm}", "flush": "write", "m": 0, "ms": ms}
        row["config"] = [block, warps, per_sm]
        row["tbps"] = nbytes / ms / 1e9
        print(json.dumps(row), flush=True)
        rows.append(row)
    best_row = min(rows, key=lambda r: r["ms"])
    block, warps, per_sm = best_row["config"]
    clean = clean_bench(launcher(w, block, warps, per_sm))
    clean_row: dict[str, Any] = {"kernel": best_row["kernel"] + " [clean flush]", "flush": "read", "m": 0, "ms": clean}
    clean_row["tbps"] = nbytes / clean / 1e9
    print(json.dumps(clean_row), flush=True)
    rows.append(clean_row)
    print(f"# W: {nbytes / 1e6:.1f} MB")
    best_ms, best_tbps = best_row["ms"], best_row["tbps"]
    print(f"# floor under do_bench's flush: {best_ms:.4f} ms ({best_tbps:.2f} TB/s), {best_row['kernel']}")
    print(f"# the same under a read flush: {clean:.4f} ms ({clean_row['tbps']:.2f} TB/s)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
