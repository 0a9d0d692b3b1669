"""The fastest read of the up-projection's weights under do_bench's flush: the floor of any M <= 128 kernel.

At M <= 128 the persistent GEMM + SwiGLU reads W (N x K bf16, 235 MB at K = 4096, N = 2 x 14336) once
and little else, so its time under triton's do_bench is bounded below by the fastest kernel that
only reads W. This times kernels that only read W, under

- do_bench's flush (it zeroes 256 MB before each run, leaving L2 full of dirty lines that the next
  kernel's misses must write back to HBM) — the flush bench/gemm_swiglu_persistent.py times with;
- a flush that reads 256 MB (clean lines: no write-back owed; bench/gemm_swiglu_persistent.py's
  clean_bench).

The read kernels, built independently of each other so that the floor is not one code generator's:

- a Triton streaming read (every configuration of CONFIGS);
- with ``--cuda`` (nvcc on PATH or in $CUDA_HOME/bin), bench/weight_read.cu's CUDA C kernels: 16-byte
  non-coherent loads with 1 to 8 loads in flight per thread (every configuration of LDG_CONFIGS), and one
  thread per CTA streaming cp.async.bulk copies through an mbarrier ring (BULK_CONFIGS), the path the
  linked kernel reads W by. Each checks what it read against PyTorch (an exact sum of W's 32-bit words,
  or of each chunk's first word);
- PyTorch's own reductions of W (``sum``, ``amax``): a vendor's read.

    python bench/weight_read_floor.py [--k 4096] [--n 28672] [--cuda] [--json FILE]
    python bench/weight_read_floor.py --once zero|read   # one flush and one read: an ncu target

For `--once zero` under `ncu --cache-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum`,
the read kernel's DRAM writes are the flush's dirty lines written back while it runs (it stores
one float per program).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))

#: (elements per program and step, warps, programs per SM)
CONFIGS = tuple((b, w, p) for b in (4096, 8192, 16384) for w in (4, 8) for p in (2, 4, 8))
#: bench/weight_read.cu's read_ldg<U>: (loads in flight per thread U, threads per block, blocks per SM)
LDG_CONFIGS = tuple((u, t, b) for u in (1, 2, 4, 8) for t in (256, 512, 1024) for b in (1, 2, 4))
#: read_bulk: (chunk bytes, slots, CTAs per SM, evict-first hint)
BULK_CONFIGS = tuple((c, d, b, e) for c in (16384, 32768) for d in (4, 6) for b in (1, 2) for e in (0, 1))


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


class CudaReads:
    """bench/weight_read.cu built with nvcc and loaded into PyTorch's context."""

    def __init__(self, w: torch.Tensor) -> None:
        from cuda.bindings import driver

        self.driver = driver
        nvcc = shutil.which("nvcc") or str(Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "nvcc")
        source = Path(__file__).resolve().parent / "weight_read.cu"
        with tempfile.TemporaryDirectory() as tmp:
            cubin = Path(tmp) / "weight_read.cubin"
            cmd = [nvcc, "-cubin", "-arch=sm_90a", "-O3", "-std=c++17", "-o", str(cubin), str(source)]
            subprocess.run(cmd, check=True)
            err, self.module = driver.cuModuleLoadData(cubin.read_bytes())
        self._check(err, "cuModuleLoadData")
        self.w = w
        self.sms = torch.cuda.get_device_properties(0).multi_processor_count
        self.out = torch.zeros(1, dtype=torch.int64, device=w.device)
        words = w.view(-1).view(torch.int32)
        self.total = int(words.to(torch.int64).sum())
        self.words = words

    def _check(self, err: Any, what: str) -> None:
        if err != self.driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"{what}: {err}")

    def _launcher(self, name: str, grid: int, threads: int, smem: int, args: list[Any]) -> Callable[[], None]:
        driver = self.driver
        err, fn = driver.cuModuleGetFunction(self.module, name.encode())
        self._check(err, name)
        if smem > 48 * 1024:
            attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            (err,) = driver.cuFuncSetAttribute(fn, attr, smem)
            self._check(err, "cuFuncSetAttribute")
        holders = list(args)
        pointers = (ctypes.c_void_p * len(holders))(*(ctypes.addressof(h) for h in holders))

        def run() -> None:
            stream = torch.cuda.current_stream().cuda_stream
            (err,) = driver.cuLaunchKernel(fn, grid, 1, 1, threads, 1, 1, smem, stream, pointers, 0)
            self._check(err, f"cuLaunchKernel {name}")

        run.holders = (holders, pointers)  # type: ignore[attr-defined]
        return run

    def ldg(self, unroll: int, threads: int, per_sm: int) -> tuple[Callable[[], None], int]:
        """read_ldg<unroll>, and the sum it must produce."""
        n16 = self.w.numel() * self.w.element_size() // 16
        args = [ctypes.c_uint64(self.w.data_ptr()), ctypes.c_uint64(n16), ctypes.c_uint64(self.out.data_ptr())]
        return self._launcher(f"read_ldg{unroll}", self.sms * per_sm, threads, 0, args), self.total

    def bulk(self, chunk: int, depth: int, per_sm: int, evict_first: int) -> tuple[Callable[[], None], int]:
        """read_bulk, and the sum of each chunk's first word it must produce."""
        nbytes = self.w.numel() * self.w.element_size()
        chunks = nbytes // chunk
        assert chunks * chunk == nbytes, "W is a whole number of chunks"
        args = [
            ctypes.c_uint64(self.w.data_ptr()),
            ctypes.c_uint64(chunks),
            ctypes.c_uint32(chunk),
            ctypes.c_uint32(depth),
            ctypes.c_uint32(evict_first),
            ctypes.c_uint64(self.out.data_ptr()),
        ]
        expect = int(self.words[:: chunk // 4].to(torch.int64).sum())
        return self._launcher("read_bulk", self.sms * per_sm, 32, depth * chunk, args), expect

    def verified(self, run: Callable[[], None], expect: int) -> Callable[[], None]:
        self.out.zero_()
        run()
        got = int(self.out.item())
        wrapped = (expect + 2**63) % 2**64 - 2**63  # the kernel's unsigned 64-bit sum, read as int64
        assert got == wrapped, (got, wrapped)
        return run


def _row(kernel: str, ms: float, nbytes: int, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"kernel": kernel, "flush": "write", "m": 0, "ms": ms, "tbps": nbytes / ms / 1e9}
    row.update(extra)
    print(json.dumps(row), flush=True)
    return row


def cuda_rows(w: torch.Tensor, nbytes: int) -> list[dict[str, Any]]:
    """Every configuration of bench/weight_read.cu's kernels and PyTorch's reductions under do_bench."""
    from triton.testing import do_bench

    reads = CudaReads(w)
    rows = []
    for unroll, threads, per_sm in LDG_CONFIGS:
        run = reads.verified(*reads.ldg(unroll, threads, per_sm))
        ms = float(do_bench(run, warmup=25, rep=200, return_mode="median"))
        rows.append(_row(f"ldg.v4 x{unroll} t{threads} b{per_sm}", ms, nbytes, family="cuda ldg"))
    for chunk, depth, per_sm, evict in BULK_CONFIGS:
        run = reads.verified(*reads.bulk(chunk, depth, per_sm, evict))
        ms = float(do_bench(run, warmup=25, rep=200, return_mode="median"))
        hint = " evict_first" if evict else ""
        rows.append(_row(f"bulk {chunk // 1024}KiB x{depth} b{per_sm}{hint}", ms, nbytes, family="cuda bulk"))
    for name, fn in (("torch sum", lambda: w.sum()), ("torch amax", lambda: w.amax())):
        ms = float(do_bench(fn, warmup=25, rep=200, return_mode="median"))
        rows.append(_row(name, ms, nbytes, family="torch"))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--n", type=int, default=2 * 14336)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--once", choices=("zero", "read"), help="one flush of this kind, then one read (ncu)")
    parser.add_argument("--cuda", action="store_true", help="also weight_read.cu and torch reductions")
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
        kernel = f"read W block{block} w{warps} x{per_sm}"
        rows.append(_row(kernel, ms, nbytes, family="triton", config=[block, warps, per_sm]))
    best_row = min(rows, key=lambda r: r["ms"])
    if args.cuda:
        others = cuda_rows(w, nbytes)
        for family in sorted({r["family"] for r in others}):
            top = min((r for r in others if r["family"] == family), key=lambda r: r["ms"])
            print(f"# best {family}: {top['ms']:.4f} ms ({top['tbps']:.2f} TB/s), {top['kernel']}")
        rows.extend(others)
    block, warps, per_sm = best_row["config"]
    clean = clean_bench(launcher(w, block, warps, per_sm))
    clean_row: dict[str, Any] = {"kernel": best_row["kernel"] + " [clean flush]", "flush": "read", "m": 0, "ms": clean}
    clean_row["tbps"] = nbytes / clean / 1e9
    print(json.dumps(clean_row), flush=True)
    rows.append(clean_row)
    print(f"# W: {nbytes / 1e6:.1f} MB")
    best_ms, best_tbps = best_row["ms"], best_row["tbps"]
    print(f"# best triton under do_bench's flush: {best_ms:.4f} ms ({best_tbps:.2f} TB/s), {best_row['kernel']}")
    floor = min((r for r in rows if r["flush"] == "write"), key=lambda r: r["ms"])
    print(f"# floor under do_bench's flush: {floor['ms']:.4f} ms ({floor['tbps']:.2f} TB/s), {floor['kernel']}")
    print(f"# the same under a read flush: {clean:.4f} ms ({clean_row['tbps']:.2f} TB/s)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
