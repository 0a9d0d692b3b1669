"""Persistent GEMM + SwiGLU (specs/examples/gemm_swiglu/persistent) on an H200: correctness and timing
against the strongest PyTorch paths, all in one process.

    python bench/gemm_swiglu_persistent.py --cubins DIR [--kernels auto,coop256_c2:sk:r16@2048/8192,...]
        [--check-shapes 16,48,200,384,1000] [--shapes 16,128,512,2048,8192] [--k 4096] [--n 28672]
        [--baselines gemm,eager,static,dynamic,autotune,read] [--autotune-shapes 512,2048,8192]
        [--budget-s S] [--clean-flush-shapes 16,128] [--check-only] [--isolate] [--json FILE]
    python bench/gemm_swiglu_persistent.py --merge FILE [FILE ...] [--json FILE]

DIR holds the cubins of `specs/examples/gemm_swiglu/persistent/build.sh` (gs_<variant>.cubin) and the
linked kernels: `linked`, what `kernlink build gemm_swiglu_persistent.kp -o OUT` links from the
same sources as five components (OUT/kernel.cubin and OUT/link.json copied to gs_linked.cubin and
gs_linked.json), coop256_c2's schedule; `linked_small`, the same of
gemm_swiglu_persistent_small.kp (gs_linked_small.cubin/.json), coop128_c1's schedule (128 x 128 tiles,
no cluster); `linked_c1`, the same of gemm_swiglu_persistent_c1.kp (gs_linked_c1.cubin/.json),
coop256_c1's schedule (the cluster link's 128 x 256 tiles without the cluster, so an odd number of
m-tiles computes no padding tile); and `linked_swapab`, the same of gemm_swiglu_persistent_swapab.kp
(gs_linked_swapab.cubin/.json): the swap-AB mainloop for M <= 32 (W the 64-row wgmma operand, X
the 32-row one; 128 W rows = 64 outputs a tile, data-parallel only, 256 threads); and `linked_swapab64`,
the same of gemm_swiglu_persistent_swapab64.kp (gs_linked_swapab64.cubin/.json): the swap-AB mainloop
with X's 64 rows, for 32 < M <= 64. Each runs behind
the link's `kl_dispatch`, with its params block (the stages' blocks at the link map's offsets,
tensor maps by address in global memory) and, where the link has one, its counter array
`kl_counters` (the stream-K flags; zeroed once before the first launch, and every kernel leaves it
zero, which the check verifies after each launch, so the timed launches need no memset). A kernel is
`<variant>:<mode>[:r<raster>][:g<CTAs>|:gb][:p<policy>][:l2none|l2b64|l2b128|l2b256][:pf<k-steps>][@<M>/...]`:
a variant of VARIANTS (a suffix _eN: built with the epilogue arithmetic GS_EPI=N; _e9 is a
diagnostic whose numbers are not SwiGLU), mode `sk` (data-parallel waves, the remainder stream-K),
`sk2` (the hybrid: the last full data-parallel wave is stream-K too, so a unit has at most two
contributors) or `dp` (data-parallel only; the only mode of the ping-pong variants), raster in m-tiles per group
(default --raster), at most that many CTAs (default: every resident one; `gb`, data-parallel: the
fewest that keep the number of waves, so every CTA runs as many units), the policy word (default
3 = W evict_first and X evict_last for one m-tile, else 0), W's tensor-map L2 promotion (default
256 B), W's L2 prefetch distance in k-steps (linked_small only; default 0: none), and the M values
at which it is timed (default: all of --shapes). `auto` is the one-unit dispatch the example ships
(AUTO below), `linked_auto` the dispatch between the five linked cubins (LINKED_AUTO: M <= 32
linked_swapab, M <= 64 linked_swapab64, M <= 128 linked_small, 3 and 5 to 9 m-tiles linked_c1, else
linked; the policy word 3
up to M = 2048), as a user of kernlink ships it.

For every kernel and every M of --check-shapes and --shapes the script
- draws X [M, K] ~ N(0, 1) and Wg, Wu [N/2, K] ~ N(0, 1) / sqrt(K) (bf16, fresh per shape) and the
  kernel's W = Wg and Wu interleaved by 16 rows (rows 32g .. 32g + 15 = Wg's 16g .., the next 16 Wu's);
- poisons the output and 8 guard rows past it (0xFFFF, a bf16 NaN), launches, and checks against the
  float32 reference silu(X Wg^T) * (X Wu^T) (TF32 off): ||out - ref|| / ||ref|| <= 1e-2, no NaN,
  max |out - ref| <= 0.05 max |ref| (bench/gemm_swiglu.py's tolerance), the guard rows untouched,
  the stream-K counters back at zero, and a second launch bit-identical;
- times (unless --check-only) with triton's do_bench (median, L2 flushed between runs) at --shapes.

Baselines at --shapes (same process, same inputs): `gemm` cuBLAS X [Wg; Wu]^T alone (a bound),
`eager` cuBLAS + silu(gate) * up, `static` cuBLAS + the activation torch.compile'd per shape
(dynamic=False), `dynamic` the same with dynamic=True, `autotune` Inductor max-autotune-no-cudagraphs of
the whole up-projection act(X W^T) (run after everything else, per shape from the largest M;
--autotune-shapes limits where, --budget-s stops starting new ones: it compiles for tens of
seconds each), `read` a reference that is no up-projection (a float32 sum over W: W's read rate
under the same flush). The table gives, per M, each time, the fastest baseline and best / ours.
--clean-flush-shapes also times the kernels, cuBLAS alone and `read` with an L2 flush that READS
256 MB (clean_bench), a side experiment on do_bench's write flush. Rows go to FILE.partial.jsonl as
they are measured and to --json at the end.

--isolate runs each kernel (and the baselines) in a child process with --timeout seconds, so a
hang or a fault in one is reported and the others still run. Exit status 1 when any check fails.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from cuda.bindings import driver

TOLERANCE = 1e-2
THREADS = 384
SMEM_LIMIT = 232448

#: variant -> (BN, cluster size, ping-pong, ring KiB, k-blocks per slot) as gemm_swiglu_persistent.cu
#: instantiates them; a variant name may end in _eN (built with the epilogue arithmetic GS_EPI=N).
VARIANTS: dict[str, tuple[int, int, bool, int, int]] = {
    "coop256_c1": (256, 1, False, 192, 1),
    "coop256_c2": (256, 2, False, 192, 1),
    "coop128_c1": (128, 1, False, 208, 1),
    "coop128k2_c1": (128, 1, False, 208, 2),
    "coop128k4r_c1": (128, 1, False, 208, 4),
    "pp128_c1": (128, 1, True, 192, 1),
    "pp128_c2": (128, 2, True, 192, 1),
    "linked": (256, 2, False, 192, 1),
    "linked_small": (128, 1, False, 192, 1),
    "linked_c1": (256, 1, False, 192, 1),
    "linked_swapab": (128, 1, False, 220, 1),
    "linked_swapab16": (128, 1, False, 216, 1),
    "linked_swapab64": (128, 1, False, 216, 1),
    "linked_swapab128": (128, 1, False, 224, 1),
    "linked_swapab128x2": (128, 1, False, 224, 1),
}
#: the linked kernels (kernlink build of gemm_swiglu_persistent.kp and gemm_swiglu_persistent_small.kp):
#: their entry and their counter array
#: the swap-AB links: `linked_swapab` (x_rows 32) and `linked_swapab64` (x_rows 64:
#: gemm_swiglu_persistent_swapab64.kp) as the example ships them, `linked_swapab16` and `linked_swapab128`
#: levers (the x_rows 32 pipeline with producer_swapab.kc's fact x_rows = 16 or 128: slots of 18 or 32 KiB,
#: wgmma N = 16 or 128; bench/results/h200-2026-12-04e/swapab128/make_lever.py)
#: `linked_swapab128x2`: a lever of x_rows 128 with two consumer warpgroups of 64 rows of X each (wgmma
#: m64n64k16, 384 threads; bench/results/h200-2026-12-04e/swapab128x2/make_lever.py)
SWAPAB = {"linked_swapab", "linked_swapab16", "linked_swapab64", "linked_swapab128", "linked_swapab128x2"}
LINKED = {"linked", "linked_small", "linked_c1", *SWAPAB}
#: rows of X the shipped swap-AB links' slots hold (producer_swapab.kc's and producer_swapab64.kc's fact
#: x_rows): the largest M each serves
SWAPAB_ROWS = 32
SWAPAB64_ROWS = 64
SHIPPED_ROWS = {"linked_swapab": SWAPAB_ROWS, "linked_swapab64": SWAPAB64_ROWS}
#: a swap-AB slot: W's 64 gate and 64 up rows of 128 B, then X's x_rows rows
SWAPAB_W_BYTES = 16384
LINKED_KERNEL = "kl_dispatch"
LINKED_COUNTERS = "kl_counters"
#: GS_EPI 9 is a diagnostic (g * u, not SwiGLU): timed, its check not required
DIAGNOSTIC_EPI = "_e9"
#: the dispatch the example ships: (largest M, kernel), first match
#: (H200, 2026-12-03: at M <= 128 every variant streams W at the same rate and data-parallel is
#: level with stream-K or ahead; above, 2 x 1 clusters, stream-K for the last wave, raster 16)
AUTO: list[tuple[int, str]] = [(128, "coop128_c1:dp"), (1 << 30, "coop256_c2:sk:r16")]
#: the same dispatch between the linked cubins, as a user of kernlink ships it (`linked_auto`;
#: H200, 2026-12-04: data-parallel is ahead of stream-K at M = 16 and 128, and W's L2 promotion of
#: 128 B instead of 256 B gains 3 % at M = 16 without a flush, none under do_bench, and loses 1.6 %
#: at M = 128, so linked_small's default stays; the swap-AB kernel with promotion none was 0.5 % /
#: 1.6 % faster at M = 16 / 32 under do_bench and 5 % faster at M = 16 under a read flush, and 112
#: CTAs of 2 tiles each (N = 28672: 224 tiles) 1-2 % faster than 132 CTAs of 1 or 2: `gb`;
#: 2026-12-04c: at M = 512 the cluster link with policy word 3 (W evict_first, X evict_last, the
#: default of one m-tile) beat policy 0 in every one of three rotating do_bench rounds, 0.1900 /
#: 0.1911 / 0.1916 ms against 0.1919 / 0.1978 / 0.1996, and 0.993 [0.987, 0.994] in an interleaved
#: A/B without a flush; so M <= 512 (at most 4 m-tiles, X <= 4 MiB) runs it: only M = 512 was timed;
#: 2026-12-04d (bench/results/h200-2026-12-04d/gemm4, call 2: 4 rotating do_bench rounds, best
#: up-projection / kernel): the cluster link's unit is two m-tiles, so an odd number of m-tiles computes
#: a padding tile; the link without the cluster (linked_c1) does not. By m-tiles (ceil(M / 128)), the
#: fastest linked candidate of the table, each timed at the M in brackets:
#:   3 (M = 320, 384): linked_c1 data-parallel, policy 3: 0.905 / 0.994 (the cluster link 0.724 / 0.837);
#:   4 (448, 512): the cluster link, policy 3: 1.218 / 1.000 (linked_c1 stream-K 1.214 / 0.997);
#:   5, 6 (640, 768): linked_c1 stream-K, policy 3: 1.084 / 1.047 (the cluster link, policy 3: 0.934 /
#:      1.037; policy 0, what ran there before: 0.658 / 1.016);
#:   7, 8, 9 (896, 1024, 1152): linked_c1 data-parallel, policy 3: 1.119 / 1.064 / 1.046 (the cluster
#:      link, policy 0: 0.866 / 1.012 / 0.936; policy 3: 0.969 / 1.030 / 0.959);
#:   16 (2048): the cluster link with policy 3, 1.076 against policy 0's 1.047, ahead in each of 3
#:      rounds (interleaved without a flush: 0.998 of policy 0 at M = 1536, 1.000 at 2048); linked_c1
#:      stream-K policy 3 measured 1.095 but lost one of its 3 rounds, so it is not dispatched;
#:   above: policy 0, level with 3 at M = 4096 and 8192 (interleaved 0.997 and 1.001).
#: 10 to 15 m-tiles were not timed against linked_c1; they run the cluster link with policy 3.
#: 2026-12-04e (bench/results/h200-2026-12-04e/swapab128, graph-replayed rotating rounds beside the
#: W-read floor): at M = 64 the swap-AB link of x_rows 64 (promotion none, `gb`) took 0.0679 ms against
#: linked_small:dp's 0.0709 (call 1; call 2's table in the README); x_rows 128 lost to linked_small:dp at
#: M = 64, 96 and 128 (0.0750 / 0.0747 / 0.0756 against 0.0709 / 0.0710 / 0.0714), so 64 < M <= 128
#: stays linked_small. The x_rows 128 lever with two consumer warpgroups (64 rows of X each: wgmma
#: m64n64k16, `linked_swapab128x2`; bench/results/h200-2026-12-04e/swapab128x2) lost too, in each of 5
#: rounds: 0.0728 / 0.0744 ms (`gb`, the best of three grids) against linked_small:dp's 0.0712 / 0.0728 at
#: M = 96 / 128, per round 1.014-1.025 / 1.015-1.034 of linked_small's time.
LINKED_AUTO: list[tuple[int, str]] = [
    (SWAPAB_ROWS, "linked_swapab:dp:l2none:gb"),
    (SWAPAB64_ROWS, "linked_swapab64:dp:l2none:gb"),
    (128, "linked_small:dp"),
    (256, "linked:sk:r16:p3"),
    (384, "linked_c1:dp:r16:p3"),
    (512, "linked:sk:r16:p3"),
    (768, "linked_c1:sk:r16:p3"),
    (1152, "linked_c1:dp:r16:p3"),
    (2048, "linked:sk:r16:p3"),
    (1 << 30, "linked:sk:r16"),
]
DISPATCH = {"auto": AUTO, "linked_auto": LINKED_AUTO}
#: a kernel spec's `:l2...` option: the L2 promotion of W's tensor map (default 256 B)
PROMOTION = {
    "l2none": driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
    "l2b64": driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
    "l2b128": driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
    "l2b256": driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
}
MAX_DEPTH = 16


def check(err: Any, what: str) -> None:
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what}: {err}")


def base_variant(name: str) -> str:
    """coop256_c2_e1 -> coop256_c2 (the kernel's name in the cubin)."""
    head, _, tail = name.rpartition("_e")
    return head if head and tail.isdigit() else name


def smem_bytes(bn: int, pingpong: bool, ring_kb: int) -> int:
    """gs::Config<...>::SMEM: ring + two epilogue claims + barriers + 1 KiB alignment slack."""
    staging = 2 * 8192 if pingpong else (bn // 128) * 8192
    return ring_kb * 1024 + 2 * staging + 16 * MAX_DEPTH + 1024


def ring_depth(bn: int, ring_kb: int, ksub: int, a_box_rows: int) -> int:
    """Ring::layout: slots of the ring for this A box."""
    a_sub = (a_box_rows * 128 + 1023) // 1024 * 1024
    return min(MAX_DEPTH, ring_kb * 1024 // (ksub * (a_sub + bn * 128)))


def tensor_map(t: torch.Tensor, box_rows: int, box_cols: int = 64, promotion: str = "l2b256") -> bytes:
    """The 128 bytes of a 2-D bf16 TMA descriptor of row-major ``t`` (box box_rows x 64, 128B swizzle,
    L2 promotion PROMOTION[promotion])."""
    rows, cols = t.shape
    err, tmap = driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        2,
        t.data_ptr(),
        [driver.cuuint64_t(cols), driver.cuuint64_t(rows)],
        [driver.cuuint64_t(t.stride(0) * t.element_size())],
        [driver.cuuint32_t(box_cols), driver.cuuint32_t(box_rows)],
        [driver.cuuint32_t(1), driver.cuuint32_t(1)],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        PROMOTION[promotion],
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    check(err, "cuTensorMapEncodeTiled")
    return ctypes.string_at(tmap.getPtr(), 128)


def swapab_w_map(w: torch.Tensor, promotion: str) -> bytes:
    """The 128 bytes of the swap-AB producer's 4-D TMA descriptor of the interleaved W [n, k]: W as
    [n / 32][2][16][k] (groups of 16 gate rows then 16 up rows), box {64, 16, 1, 4}: one box is the
    64 gate (or up) rows of 4 groups, 64 rows of 128 B (128B swizzle)."""
    n, k = w.shape
    row = w.stride(0) * w.element_size()
    err, tmap = driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        4,
        w.data_ptr(),
        [driver.cuuint64_t(k), driver.cuuint64_t(16), driver.cuuint64_t(2), driver.cuuint64_t(n // 32)],
        [driver.cuuint64_t(row), driver.cuuint64_t(16 * row), driver.cuuint64_t(32 * row)],
        [driver.cuuint32_t(64), driver.cuuint32_t(16), driver.cuuint32_t(1), driver.cuuint32_t(4)],
        [driver.cuuint32_t(1)] * 4,
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        PROMOTION[promotion],
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    check(err, "cuTensorMapEncodeTiled (4-D W)")
    return ctypes.string_at(tmap.getPtr(), 128)


class Variant:
    """One cubin of build.sh loaded into PyTorch's context."""

    def __init__(self, folder: Path, name: str) -> None:
        self.name = name
        self.base = base_variant(name)
        self.bn, self.cluster, self.pingpong, self.ring_kb, self.ksub = VARIANTS[self.base]
        torch.cuda.init()
        torch.empty(1, device="cuda")  # PyTorch makes the primary context current
        self.linked = self.base in LINKED
        err, self.module = driver.cuModuleLoadData((folder / f"gs_{name}.cubin").read_bytes())
        check(err, f"cuModuleLoadData gs_{name}.cubin")
        entry = LINKED_KERNEL if self.linked else f"gs_{self.base}"
        err, self.function = driver.cuModuleGetFunction(self.module, entry.encode())
        check(err, "cuModuleGetFunction")
        self.threads = THREADS
        self.counter_words = 0
        if self.linked:  # the link's plan: dynamic shared memory, block, the ring's depth, params
            plan = json.loads((folder / f"gs_{name}.json").read_text())
            self.smem = int(plan["launch"]["dynamic_smem"])
            self.smem_reported = self.smem
            self.threads = int(plan["launch"]["threads"])
            rings = {r["name"]: r for r in plan["placement"]["rings"]}
            self.linked_depth = int(rings["kv"]["depth"])  # the link map's `rings` row
            # a swap-AB slot's rows of X (its bytes past W's, without the slot's two mbarriers)
            self.x_rows = (int(rings["kv"]["slot_bytes"]) - 16 - SWAPAB_W_BYTES) // 128
            if self.base in SHIPPED_ROWS and self.x_rows != SHIPPED_ROWS[self.base]:
                raise RuntimeError(
                    f"{name}: slots of {self.x_rows} rows of X, the dispatch assumes {SHIPPED_ROWS[self.base]}"
                )
            self.params_fields = [(f["name"], int(f["offset"]), int(f["size"])) for f in plan["params"]["fields"]]
            err, self.counters, size = driver.cuModuleGetGlobal(self.module, LINKED_COUNTERS.encode())
            if err == driver.CUresult.CUDA_SUCCESS:  # a link without a counter claim has none
                self.counter_words = int(size) // 4
                (err,) = driver.cuMemsetD32(self.counters, 0, self.counter_words)
                check(err, "cuMemsetD32 kl_counters")
        else:
            self.smem = smem_bytes(self.bn, self.pingpong, self.ring_kb)
            self.smem_reported = self._read_u32(f"gs_smem_bytes_gs_{self.base}")
        if self.smem_reported is not None and self.smem_reported != self.smem:
            raise RuntimeError(f"{name}: shared memory {self.smem_reported} in the cubin, {self.smem} here")
        if self.smem > SMEM_LIMIT:
            raise RuntimeError(f"{name}: {self.smem} bytes of shared memory")
        (err,) = driver.cuFuncSetAttribute(
            self.function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.smem
        )
        check(err, "cuFuncSetAttribute")
        self.sms = torch.cuda.get_device_properties(0).multi_processor_count
        self.resident_clusters = self._resident_clusters()

    def _read_u32(self, symbol: str) -> int | None:
        err, ptr, size = driver.cuModuleGetGlobal(self.module, symbol.encode())
        if err != driver.CUresult.CUDA_SUCCESS or int(size) != 4:
            return None
        host = (ctypes.c_uint32 * 1)()
        (err,) = driver.cuMemcpyDtoH(ctypes.addressof(host), ptr, 4)
        return int(host[0]) if err == driver.CUresult.CUDA_SUCCESS else None

    def _resident_clusters(self) -> int:
        """Clusters that fit on the GPU at once (every CTA of a stream-K grid must be resident)."""
        if self.cluster == 1:
            return self.sms
        try:
            cfg = driver.CUlaunchConfig()
            cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = self.sms // self.cluster * self.cluster, 1, 1
            cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = self.threads, 1, 1
            cfg.sharedMemBytes = self.smem
            cfg.numAttrs = 0
            err, n = driver.cuOccupancyMaxActiveClusters(self.function, cfg)
            check(err, "cuOccupancyMaxActiveClusters")
            return int(n)
        except Exception as e:  # an older binding: assume every SM pair of the GPU
            print(f"# {self.name}: cuOccupancyMaxActiveClusters failed ({e}); assuming {self.sms // 2}", flush=True)
            return self.sms // self.cluster


class Problem:
    """Inputs, reference and the tensors every launch of one shape reads."""

    def __init__(self, m: int, n: int, k: int, seed: int) -> None:
        gen = torch.Generator(device="cuda").manual_seed(seed)
        scale = 1.0 / math.sqrt(k)
        self.m, self.n, self.k = m, n, k
        self.x = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
        wg = (torch.randn(n // 2, k, device="cuda", generator=gen) * scale).to(torch.bfloat16)
        wu = (torch.randn(n // 2, k, device="cuda", generator=gen) * scale).to(torch.bfloat16)
        self.w = interleave(wg, wu).contiguous()
        self.wcat = torch.cat([wg, wu]).contiguous()
        self.ref = F.silu(self.x.float() @ wg.float().T) * (self.x.float() @ wu.float().T)
        self.ref_norm = float(self.ref.norm())
        self.ref_max = float(self.ref.abs().max())

    def verdict(self, got: torch.Tensor) -> dict[str, Any]:
        g = got.float()
        nan = int(torch.isnan(g).sum())
        rel = float((g - self.ref).norm() / self.ref_norm) if nan == 0 else float("nan")
        worst = float((g - self.ref).abs().max()) if nan == 0 else float("nan")
        ok = nan == 0 and rel <= TOLERANCE and worst <= 0.05 * self.ref_max
        return {"rel_err": rel, "max_abs_err": worst, "nan": nan, "ok": ok}


def interleave(wg: torch.Tensor, wu: torch.Tensor) -> torch.Tensor:
    """Rows 32g .. 32g + 15 are wg's rows 16g .. 16g + 15; rows 32g + 16 .. 32g + 31 are wu's."""
    half, k = wg.shape
    return torch.stack([wg.view(half // 16, 16, k), wu.view(half // 16, 16, k)], dim=1).reshape(2 * half, k)


class Launch:
    """One kernel bound to one problem: params block, grid, workspace; call it to launch."""

    def __init__(self, var: Variant, mode: str, prob: Problem, raster: int, spec: Spec | None = None) -> None:
        m, n, k = prob.m, prob.n, prob.k
        if k % (64 * var.ksub) or n % var.bn:
            raise ValueError(f"K = {k} must be a multiple of {64 * var.ksub} and N = {n} of {var.bn}")
        if var.pingpong and mode != "dp":
            raise ValueError("the ping-pong kernels run data-parallel only (mode dp)")
        if var.base in SWAPAB and (m > var.x_rows or mode != "dp"):
            raise ValueError(f"{var.name} runs M <= {var.x_rows}, data-parallel (mode dp)")
        c = var.cluster
        tiles_m = math.ceil(m / 128)
        units = math.ceil(tiles_m / c) * (n // var.bn)
        if mode not in ("dp", "sk", "sk2"):
            raise ValueError(f"mode {mode!r}: dp, sk or sk2")
        stream_k = mode != "dp"
        sk_word = {"dp": 0, "sk": 1, "sk2": 2}[mode]
        clusters = var.resident_clusters if stream_k else min(var.resident_clusters, units)
        if spec is not None and spec.grid:
            clusters = min(clusters, max(1, spec.grid // c))
        if spec is not None and spec.balanced and not stream_k:
            clusters = math.ceil(units / math.ceil(units / clusters))
        self.grid = clusters * c
        self.a_box_rows = 128 if m >= 128 else (m + 7) // 8 * 8
        self.depth = var.linked_depth if var.linked else ring_depth(var.bn, var.ring_kb, var.ksub, self.a_box_rows)
        if self.depth < 2:
            raise ValueError(f"{var.name}: a ring of {self.depth} slot(s) at M = {m}")
        # output with 8 guard rows past M (the descriptor covers M rows only)
        self.out_full = torch.empty(m + 8, n // 2, dtype=torch.bfloat16, device="cuda")
        self.out = self.out_full[:m]
        slot_float4 = 256 * var.bn // 8
        self.ws = torch.empty(self.grid * slot_float4 * 4, dtype=torch.float32, device="cuda")
        self.flags = torch.zeros(self.grid, dtype=torch.int32, device="cuda")
        policy = 3 if tiles_m == 1 else 0  # one m-tile: W streams once (evict_first), X stays (evict_last)
        if spec is not None and spec.policy is not None:
            policy = spec.policy
        promotion = spec.promotion if spec is not None else "l2b256"
        self.var = var
        self.prob = prob
        if var.base in SWAPAB:
            if spec is not None and (spec.policy is not None or spec.prefetch):
                raise ValueError(f"{var.name}: no policy word or prefetch (W evict_first, X evict_last)")
            self._swapab_params(prob, promotion)
            return
        maps = (
            tensor_map(prob.x, self.a_box_rows)
            + tensor_map(prob.w, var.bn // c, promotion=promotion)
            + tensor_map(self.out, 64)
        )
        if var.linked:
            prefetch = spec.prefetch if spec is not None else 0
            if prefetch and var.base != "linked_small":
                raise ValueError(f"{var.name}: no L2 prefetch (only linked_small's producer has one)")
            self._linked_params(maps, m, n, k, max(1, raster // c), sk_word, policy, prefetch)
            return
        tail = struct.pack(
            "<QQIIIIIIII",
            self.ws.data_ptr(),
            self.flags.data_ptr(),
            m,
            n,
            k,
            self.a_box_rows,
            max(1, raster // c),
            sk_word,
            policy,
            0,
        )
        block = maps + tail
        block += bytes(512 - len(block))
        self.block = ctypes.create_string_buffer(block, 512)
        self.args = (ctypes.c_void_p * 1)(ctypes.addressof(self.block))

    def _linked_params(
        self, maps: bytes, m: int, n: int, k: int, raster: int, stream_k: int, policy: int, prefetch: int
    ) -> None:
        """The link's KlParams (link map `params`): the producer's GsLoadParams at 0 (48 B; the last
        word is gemm.producer_small's `prefetch`, gemm.producer's padding), then the mainloop's
        GsMmaParams at 48 (40 B); the three tensor maps live in global memory."""
        self.maps = torch.frombuffer(bytearray(maps), dtype=torch.uint8).to("cuda")  # 128-byte aligned
        base = self.maps.data_ptr()
        load = struct.pack(
            "<QQIIIIIIII", base, base + 128, m, n, k, self.a_box_rows, raster, stream_k, policy, prefetch
        )
        mma = struct.pack("<QQIIIIII", base + 256, self.ws.data_ptr(), m, n, k, self.a_box_rows, raster, stream_k)
        block = load + mma
        self.block = ctypes.create_string_buffer(block, len(block))
        self.args = (ctypes.c_void_p * 1)(ctypes.addressof(self.block))

    def _swapab_params(self, prob: Problem, promotion: str) -> None:
        """linked_swapab's KlParams, each field at the link map's offset: producer_swapab's W map (4-D:
        W as [n / 32][2][16][k], box {64, 16, 1, 4}: 64 gate or 64 up rows) and X map (box {64,
        x_box_rows}), m, n, k, x_box_rows; mainloop_swapab's out pointer (row-major [m, n / 2]), m, n, k."""
        m, n, k = prob.m, prob.n, prob.k
        maps = swapab_w_map(prob.w, promotion) + tensor_map(prob.x, self.a_box_rows)
        self.maps = torch.frombuffer(bytearray(maps), dtype=torch.uint8).to("cuda")  # 128-byte aligned
        base = self.maps.data_ptr()
        values = {
            "tmap_w": base,
            "tmap_x": base + 128,
            "m": m,
            "n": n,
            "k": k,
            "x_box_rows": self.a_box_rows,
            "out": self.out.data_ptr(),
        }
        size = max(off + width for _, off, width in self.var.params_fields)
        block = bytearray((size + 7) // 8 * 8)
        for name, off, width in self.var.params_fields:
            struct.pack_into("<Q" if width == 8 else "<I", block, off, values[name])
        self.block = ctypes.create_string_buffer(bytes(block), len(block))
        self.args = (ctypes.c_void_p * 1)(ctypes.addressof(self.block))

    def flags_sum(self) -> int:
        """The stream-K counters' sum: the kernel leaves them zero."""
        if not self.var.linked:
            return int(self.flags.abs().sum())
        if self.var.counter_words == 0:
            return 0
        words = (ctypes.c_uint32 * self.var.counter_words)()
        (err,) = driver.cuMemcpyDtoH(ctypes.addressof(words), self.var.counters, 4 * self.var.counter_words)
        check(err, "cuMemcpyDtoH kl_counters")
        return sum(words)

    def __call__(self) -> None:
        stream = torch.cuda.current_stream().cuda_stream
        (err,) = driver.cuLaunchKernel(
            self.var.function,
            self.grid,
            1,
            1,
            self.var.threads,
            1,
            1,
            self.var.smem,
            stream,
            ctypes.addressof(self.args),
            0,
        )
        check(err, "cuLaunchKernel")


def resolve(kernel: str, m: int) -> str:
    """A dispatch (`auto`, `linked_auto`) -> the kernel it runs at M; any other spec as given."""
    if kernel not in DISPATCH:
        return kernel
    return next(name for limit, name in DISPATCH[kernel] if m <= limit)


@dataclass(frozen=True)
class Spec:
    """`variant:mode[:rN][:gN|:gb][:pN][:l2...][@m/m/...]`: raster rN, at most N CTAs (gN) or the
    fewest CTAs of as many data-parallel waves (gb: balanced), the policy
    word N (pN; default 3 for one m-tile, else 0), W's L2 promotion (PROMOTION), W's L2 prefetch
    distance in k-steps (pfN, linked_small only: producer_small.kc's `prefetch`), the timed M values."""

    variant: str
    mode: str
    raster: int | None = None
    grid: int | None = None
    balanced: bool = False
    policy: int | None = None
    promotion: str = "l2b256"
    prefetch: int = 0
    shapes: frozenset[int] | None = None


def parse_spec(spec: str) -> Spec:
    shapes: frozenset[int] | None = None
    if "@" in spec:
        spec, _, at = spec.partition("@")
        shapes = frozenset(int(v) for v in at.split("/") if v)
    parts = spec.split(":")
    opts: dict[str, Any] = {}
    for p in parts[2:]:
        if p in PROMOTION:
            opts["promotion"] = p
        elif p == "gb":
            opts["balanced"] = True
        elif p.startswith("pf") and p[2:].isdigit():
            opts["prefetch"] = int(p[2:])
        elif p[:1] in ("r", "g", "p") and p[1:].isdigit():
            opts[{"r": "raster", "g": "grid", "p": "policy"}[p[0]]] = int(p[1:])
        else:
            raise ValueError(f"kernel spec {spec!r}: unknown option {p!r}")
    return Spec(parts[0], parts[1], shapes=shapes, **opts)


def run_kernel(variants: dict[str, Variant], kernel: str, prob: Problem, timing: bool, raster: int) -> dict[str, Any]:
    spec = resolve(kernel, prob.m)
    sp = parse_spec(spec)
    name = sp.variant
    timing = timing and (sp.shapes is None or prob.m in sp.shapes)
    var = variants[name]
    launch = Launch(var, sp.mode, prob, sp.raster or raster, sp)
    launch.out_full.view(torch.int16).fill_(-1)  # 0xFFFF: NaN
    launch()
    torch.cuda.synchronize()
    row: dict[str, Any] = {
        "kernel": kernel,
        "m": prob.m,
        "n": prob.n,
        "k": prob.k,
        "runs": spec,
        "grid": launch.grid,
        "depth": launch.depth,
    }
    row.update(prob.verdict(launch.out))
    guard = bool((launch.out_full[prob.m :].view(torch.int16) == -1).all())
    flags = launch.flags_sum()
    first = launch.out.clone()
    launch()
    torch.cuda.synchronize()
    row["deterministic"] = bool(torch.equal(first.view(torch.int16), launch.out.view(torch.int16)))
    row["guard_ok"] = guard
    row["flags_zero"] = flags == 0 and launch.flags_sum() == 0
    row["ok"] = row["ok"] and guard and row["deterministic"] and row["flags_zero"]
    if DIAGNOSTIC_EPI in name:  # computes g * u on purpose: only the protocol checks apply
        row["diagnostic"] = True
        row["ok"] = guard and row["deterministic"] and row["flags_zero"] and row["nan"] == 0
    if timing:
        from triton.testing import do_bench

        ms = float(do_bench(launch, warmup=25, rep=200, return_mode="median"))
        row.update(ms=ms, **rates(prob, ms))
    return row


def rates(prob: Problem, ms: float) -> dict[str, float]:
    m, n, k = prob.m, prob.n, prob.k
    moved = 2.0 * (n * k + m * k + m * n // 2)  # W, X read once; out written once
    return {"tflops": 2.0 * m * n * k / ms / 1e9, "tbps": moved / ms / 1e9}


def act(gu: torch.Tensor) -> torch.Tensor:
    half = gu.shape[1] // 2
    return F.silu(gu[:, :half]) * gu[:, half:]


def up_projection(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return act(x @ w.T)


_COMPILED: dict[str, Any] = {}


def compiled(kind: str) -> Any:
    if kind not in _COMPILED:
        if kind == "static":
            _COMPILED[kind] = torch.compile(act, dynamic=False)
        elif kind == "dynamic":
            _COMPILED[kind] = torch.compile(act, dynamic=True)
        else:
            _COMPILED[kind] = torch.compile(up_projection, mode="max-autotune-no-cudagraphs", dynamic=False)
    return _COMPILED[kind]


BASELINE_NAMES = {
    "gemm": "cuBLAS GEMM alone",
    "eager": "cuBLAS + eager act",
    "static": "cuBLAS + compiled act (static)",
    "dynamic": "cuBLAS + compiled act (dynamic)",
    "autotune": "Inductor max-autotune (whole)",
    "read": "reference: read W once (sum)",
}
#: baselines that are no PyTorch path for the up-projection (excluded from "best")
REFERENCES = {"read"}


def run_baseline(kind: str, prob: Problem) -> dict[str, Any]:
    from triton.testing import do_bench

    x, wcat = prob.x, prob.wcat
    fn: Callable[[], torch.Tensor]
    if kind == "gemm":

        def fn() -> torch.Tensor:
            return x @ wcat.T

    elif kind == "eager":

        def fn() -> torch.Tensor:
            return act(x @ wcat.T)

    elif kind == "read":
        words = prob.wcat.view(torch.float32)

        def fn() -> torch.Tensor:
            return words.sum()

    elif kind in ("static", "dynamic"):
        act_c = compiled(kind)

        def fn() -> torch.Tensor:
            return act_c(x @ wcat.T)

    else:
        whole = compiled("autotune")

        def fn() -> torch.Tensor:
            return whole(x, wcat)

    row: dict[str, Any] = {"kernel": BASELINE_NAMES[kind], "baseline": kind, "m": prob.m, "n": prob.n, "k": prob.k}
    start = time.time()
    try:
        got = fn()
        torch.cuda.synchronize()
        if kind not in ("gemm", "read"):
            row.update(prob.verdict(got))
        row["compile_s"] = round(time.time() - start, 1)
        ms = float(do_bench(fn, warmup=25, rep=200, return_mode="median"))
        row.update(ms=ms, **rates(prob, ms))
        if kind == "read":
            row["tbps"] = prob.wcat.numel() * 2 / ms / 1e9
        row.setdefault("ok", True)
    except Exception as err:  # a compile that fails is reported, not fatal
        row.update(ok=False, error=f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}")
    return row


_CACHE: list[torch.Tensor] = []


def clean_bench(fn: Callable[[], Any], reps: int = 100) -> float:
    """Median ms of fn like do_bench, but the L2 flush before each run READS 256 MB (a sum), so L2
    holds clean lines and fn's misses owe no write-back of the flush's dirty lines (do_bench
    zeroes its buffer: up to L2's size of dirty lines that the next kernel's misses write back)."""
    if not _CACHE:
        _CACHE.append(torch.ones(64 * 1024 * 1024, dtype=torch.float32, device="cuda"))
    cache = _CACHE[0]
    fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        cache.sum()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(a.elapsed_time(b) for a, b in zip(starts, ends, strict=True))
    return float(times[len(times) // 2])


def clean_rows(variants: dict[str, Variant], kernels: list[str], prob: Problem, raster: int) -> list[dict[str, Any]]:
    """The kernels, cuBLAS alone and the read reference timed with clean_bench (side experiment)."""
    rows = []
    x, wcat = prob.x, prob.wcat
    fns: list[tuple[str, Callable[[], Any], int]] = []
    for kern in kernels:
        sp = parse_spec(resolve(kern, prob.m))
        if sp.shapes is not None and prob.m not in sp.shapes:
            continue
        fns.append((kern, Launch(variants[sp.variant], sp.mode, prob, sp.raster or raster, sp), 0))
    fns.append((BASELINE_NAMES["gemm"], lambda: x @ wcat.T, 0))
    words = wcat.view(torch.float32)
    fns.append((BASELINE_NAMES["read"], lambda: words.sum(), 1))
    for name, fn, read_only in fns:
        ms = clean_bench(fn)
        row: dict[str, Any] = {"kernel": name + " [clean flush]", "flush": "read", "m": prob.m, "ms": ms, "ok": True}
        row.update(rates(prob, ms))
        if read_only:
            row["tbps"] = wcat.numel() * 2 / ms / 1e9
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def run_all(args: argparse.Namespace) -> list[dict[str, Any]]:
    kernels = [s for s in args.kernels.split(",") if s]
    names = sorted({parse_spec(resolve(kern, m)).variant for kern in kernels for m in _all_m(args)})
    variants = {name: Variant(args.cubins, name) for name in names}
    for v in variants.values():
        print(
            f"# {v.name}: smem {v.smem} B (cubin {v.smem_reported}), resident clusters {v.resident_clusters}",
            flush=True,
        )
    baselines = [s for s in args.baselines.split(",") if s]
    autotune_shapes = {int(s) for s in args.autotune_shapes.split(",") if s} if args.autotune_shapes else None
    timed = [int(s) for s in args.shapes.split(",") if s]
    checked = [int(s) for s in args.check_shapes.split(",") if s]
    rows: list[dict[str, Any]] = []
    deadline = time.time() + args.budget_s if args.budget_s else None
    partial = args.json.with_suffix(".partial.jsonl") if args.json else None
    clean = {int(v) for v in args.clean_flush_shapes.split(",") if v}

    def emit(row: dict[str, Any]) -> None:
        print(json.dumps(row), flush=True)
        rows.append(row)
        if partial is not None:
            with partial.open("a") as f:
                f.write(json.dumps(row) + "\n")

    fast = [kind for kind in baselines if kind != "autotune"]
    for m in checked + [m for m in timed if m not in checked]:
        timing = m in timed and not args.check_only
        prob = Problem(m, args.n, args.k, seed=1000 + m)
        for kern in kernels:
            try:
                row = run_kernel(variants, kern, prob, timing, args.raster)
            except ValueError as err:  # the kernel does not apply to this shape (ring depth, K, N)
                row = {"kernel": kern, "m": m, "ok": True, "error": f"skipped: {err}"}
            except Exception as err:
                row = {"kernel": kern, "m": m, "ok": False, "error": f"{type(err).__name__}: {err}"}
            emit(row)
        if timing:
            for kind in fast:
                emit(run_baseline(kind, prob))
            if m in clean and kernels:
                for row in clean_rows(variants, kernels, prob, args.raster):
                    emit(row)
        del prob
        torch.cuda.empty_cache()
    # max-autotune last: it compiles for tens of seconds a shape (bounded by --budget-s)
    if "autotune" in baselines and not args.check_only:
        for m in sorted(timed, reverse=True):
            if autotune_shapes is not None and m not in autotune_shapes:
                continue
            if deadline is not None and time.time() > deadline:
                emit(
                    {
                        "kernel": BASELINE_NAMES["autotune"],
                        "baseline": "autotune",
                        "m": m,
                        "ok": True,
                        "error": "skipped: time budget",
                    }
                )
                continue
            prob = Problem(m, args.n, args.k, seed=1000 + m)
            emit(run_baseline("autotune", prob))
            del prob
            torch.cuda.empty_cache()
    return rows


def _all_m(args: argparse.Namespace) -> list[int]:
    return [int(s) for s in (args.check_shapes + "," + args.shapes).split(",") if s]


def run_isolated(args: argparse.Namespace, argv: list[str]) -> list[dict[str, Any]]:
    """Each kernel, then the baselines, in a child process of its own (a hang or fault stays there)."""
    rows: list[dict[str, Any]] = []
    base = [a for a in argv if a != "--isolate"]
    jobs = [["--kernels", k, "--baselines", ""] for k in args.kernels.split(",") if k]
    if args.baselines and not args.check_only:
        jobs.append(["--kernels", "", "--check-shapes", "", "--baselines", args.baselines])
    for extra in jobs:
        out = Path(tempfile.gettempdir()) / f"gs_child_{os.getpid()}_{len(rows)}.json"
        drop = ("--kernels", "--baselines", "--json", "--check-shapes")
        cmd = [sys.executable, __file__, *strip(base, drop), *extra, "--json", str(out)]
        if "--check-shapes" not in extra:
            cmd += ["--check-shapes", args.check_shapes]
        start = time.time()
        try:
            proc = subprocess.run(cmd, timeout=args.timeout, capture_output=True, text=True)
            sys.stdout.write(proc.stdout)
            sys.stdout.write(proc.stderr[-3000:])
            got = json.loads(out.read_text()) if out.is_file() else []
            if proc.returncode not in (0, 1) or not got:
                got.append(
                    {"kernel": extra[1] or "baselines", "m": 0, "ok": False, "error": f"child exit {proc.returncode}"}
                )
        except subprocess.TimeoutExpired as e:
            partial = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            sys.stdout.write(partial)
            got = [
                {
                    "kernel": extra[1] or "baselines",
                    "m": 0,
                    "ok": False,
                    "error": f"timeout after {args.timeout} s (hang?)",
                }
            ]
        print(f"# child {extra[:2]} {time.time() - start:.0f} s", flush=True)
        rows += got
    return rows


def strip(argv: list[str], options: tuple[str, ...]) -> list[str]:
    """argv without the given options and their values."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in options:
            skip = True
            continue
        if any(a.startswith(o + "=") for o in options):
            continue
        out.append(a)
    return out


def table(rows: list[dict[str, Any]]) -> str:
    lines = []
    lines.append(f"{'kernel':<34} {'M':>6} {'rel err':>9} {'ok':>3} {'ms':>9} {'TFLOP/s':>8} {'TB/s':>6}  note")
    for r in rows:
        rel = f"{r['rel_err']:.2e}" if isinstance(r.get("rel_err"), float) else "-"
        ms = f"{r['ms']:.4f}" if "ms" in r else "-"
        tf = f"{r['tflops']:.1f}" if "tflops" in r else "-"
        tb = f"{r['tbps']:.2f}" if "tbps" in r else "-"
        note = r.get("error", "") or (
            f"runs {r['runs']} grid {r['grid']} depth {r['depth']}" + (" DIAGNOSTIC" if r.get("diagnostic") else "")
            if "runs" in r
            else ""
        )
        lines.append(
            f"{r['kernel']:<34} {r['m']:>6} {rel:>9} {'yes' if r.get('ok') else 'NO':>3} {ms:>9} "
            f"{tf:>8} {tb:>6}  {note}"
        )
    # per M: each kernel against the fastest baseline
    ms_rows = [r for r in rows if "ms" in r]
    for m in sorted({r["m"] for r in ms_rows}):
        base = [r for r in ms_rows if r["m"] == m and r.get("baseline") not in (None, *REFERENCES)]
        ours = [r for r in ms_rows if r["m"] == m and "baseline" not in r and "flush" not in r]
        if not base:
            continue
        best = min(base, key=lambda r: r["ms"])
        lines.append(
            f"M {m:>5}: best PyTorch {best['ms']:.4f} ms ({best['kernel']})"
            + "".join(f"; {r['kernel']} {r['ms']:.4f} ms = {best['ms'] / r['ms']:.3f}x" for r in ours)
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cubins", type=Path, default=Path("."))
    parser.add_argument("--kernels", default="auto")
    parser.add_argument("--check-shapes", default="16,48,200,384,1000")
    parser.add_argument("--shapes", default="16,128,512,2048,8192")
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--n", type=int, default=2 * 14336)
    parser.add_argument("--raster", type=int, default=8, help="m-tiles per raster group")
    parser.add_argument("--baselines", default="gemm,eager,static,dynamic,autotune")
    parser.add_argument("--autotune-shapes", default="", help="M values for the max-autotune baseline (all)")
    parser.add_argument("--budget-s", type=float, default=0.0, help="skip max-autotune past this many seconds")
    parser.add_argument("--check-only", action="store_true")
    parser.add_argument(
        "--clean-flush-shapes", default="", help="M values also timed with a read-only L2 flush (side experiment)"
    )
    parser.add_argument("--isolate", action="store_true")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--merge", type=Path, nargs="+", help="print the table of earlier --json files only")
    args = parser.parse_args(argv)
    if args.merge:
        rows = [row for path in args.merge for row in json.loads(path.read_text())]
        print(table(rows))
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
        return 0 if all(r.get("ok") for r in rows) else 1
    torch.backends.cuda.matmul.allow_tf32 = False
    for limit in ("cache_size_limit", "recompile_limit"):  # one static compile per shape
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, 64)
    rows = run_isolated(args, argv) if args.isolate else run_all(args)
    print()
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r.get("ok") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
