"""The attention family (specs/examples/attention, one-unit build) on an H200: correctness against a
float32 PyTorch reference and timing against PyTorch SDPA (cuDNN, flash), FlexAttention and
FlashAttention 4 (`--fa4 SITE`: the variants it offers, checked at 1 x 2 x 1000 and timed beside
ours; bench/fa4.py), all in one process.

    python bench/attention.py --cubins DIR [--control DIR2] [--variants noncausal,causal,...] [--check-only]
        [--seqs 1024,4096,8192,16384] [--flex window@4096,...] [--flex-budget-s S]
        [--fa4 SITE] [--fa4-variants noncausal,causal,window,softcap] [--skip-file FILE] [--json FILE]
        [--rounds N [--extra LABEL=DIR ...]] [--profile variant@seq,...]
    python bench/attention.py --merge FILE [FILE ...]

DIR holds the cubins of `specs/examples/attention/build.sh` (attn_<composition>.cubin). A variant
(VARIANTS below) is a composition (load-mask-score-dD-sS) plus its run-time parameters. A linked
cubin (`kernlink build X.kp -o OUT`: OUT/kernel.cubin) is staged as attn_<composition>.cubin beside
its map, attn_<composition>.link.json (LINKED below names each .kp's composition): its kernel,
dynamic shared memory and ring depth come from the map, whose parameter block must hold the
components' blocks where the one-unit build's does (checked).

Checks (every variant, unless --no-check): B x H x seq = 2 x 3 x 1, 2 x 3 x 77, 1 x 4 x 1000,
1 x 2 x 4097 (head dim of the composition), q, k, v ~ N(0, 1) bf16 drawn fresh per shape; the
output poisoned with 0xFFFF (a bf16 NaN) and one guard head past it; the reference computes
softmax(score_mod(q k^T scale) masked) v and the log-sum-exp in float32 (TF32 off) on the same
bf16 inputs; pass: ||O - ref|| / ||ref|| <= 1e-2, max |O - ref| <= 0.05 max |ref|, no NaN in O,
|lse - ref| <= 1e-2 everywhere, the guard head untouched, a second launch bit-identical.

Timing (unless --check-only): seq in --seqs, batch = 16384 / seq, 16 heads, head dim 128, triton
`do_bench` medians (L2 flushed between runs) of each variant, of SDPA with the cuDNN and flash
backends (non-causal and causal) and of FlexAttention (torch.compile'd flex_attention with the same
mask_mod / score_mod and its block mask; the (variant@seq) pairs of --flex, started while the
process is younger than --flex-budget-s). TFLOP/s counts the kept (q, kv) pairs only: 4 D per pair.
With --control DIR2 (the same compositions built otherwise: a linked build's one-unit control, or
an earlier tree), each timed variant also runs DIR2's cubin on the same inputs, alternating
control, ours, control, ours; the row's vs_control is ours / control of the two medians each, and
control_spread the control's own relative spread (a null interval).

With --rounds N, each timed variant instead runs N rounds of ours, the control, FA4 and cuDNN SDPA (those
that offer it) back to back on the same inputs, and reports per kernel the median over rounds and ours / each as
the median, min and max of per-round ratios (rounds_variant); each --extra LABEL=DIR (the same compositions built
otherwise: levers prototyped in the one-unit build, other links) joins every round after the control, as LABEL.
--profile variant@seq,... launches ours, the
control and FA4 once each inside a cudaProfilerStart / Stop range, for `ncu --profile-from-start off`.

Rows go to FILE.partial.jsonl as they are measured and to --json at the end; a variant whose
kernel faults or does not finish in 10 s is written to --skip-file and the process exits with 3
(run it again: rows already in the partial file are not repeated). Exit status 1 when a check
fails.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import statistics
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fa4
import torch
import torch.nn.functional as F
from cuda.bindings import driver

THREADS = 384
BLOCK = 128
TOKENS = 16384
HEADS = 16
CHECK_SHAPES = [(2, 3, 1), (2, 3, 77), (1, 4, 1000), (1, 2, 4097)]
HANG_S = 10.0


@dataclass(frozen=True)
class Variant:
    """A composition and its run-time parameters (check and timing values where they differ)."""

    composition: str
    mask: str  # none | causal | window | chunked | blocksparse
    score: str = "none"  # none | softcap | alibi
    mask_args: tuple[int, int] = (0, 0)  # window (left, right) / chunked (chunk, 0), for timing
    check_mask_args: tuple[int, int] | None = None
    softcap: float = 5.0
    density: float = 0.0  # blocksparse: fraction of the causal blocks listed
    page_size: int = 0  # paged
    check_page_sizes: tuple[int, ...] = ()
    flags: dict[str, Any] = field(default_factory=dict)

    @property
    def head_dim(self) -> int:
        return int(self.composition.split("-")[3][1:])

    @property
    def load(self) -> str:
        return self.composition.split("-")[0]


VARIANTS: dict[str, Variant] = {
    "noncausal": Variant("dense-none-none-d128-s2", "none"),
    "causal": Variant("dense-causal-none-d128-s2", "causal"),
    "noncausal_s3": Variant("dense-none-none-d128-s3", "none"),
    "causal_s3": Variant("dense-causal-none-d128-s3", "causal"),
    "window": Variant("dense-window-none-d128-s2", "window", mask_args=(1024, 0), check_mask_args=(100, 20)),
    "softcap": Variant("dense-none-softcap-d128-s2", "none", score="softcap"),
    "chunked": Variant("dense-chunked-none-d128-s2", "chunked", mask_args=(1024, 0), check_mask_args=(64, 0)),
    "alibi_causal": Variant("dense-causal-alibi-d128-s2", "causal", score="alibi"),
    "blocksparse10": Variant("blocksparse-causal-none-d128-s2", "blocksparse", density=0.10),
    "blocksparse25": Variant("blocksparse-causal-none-d128-s2", "blocksparse", density=0.25),
    "paged64_causal": Variant("paged-causal-none-d128-s2", "causal", page_size=64, check_page_sizes=(16, 64)),
    "paged16_causal": Variant("paged-causal-none-d128-s2", "causal", page_size=16, check_page_sizes=(32,)),
    # page_size's stated values are 16, 32, 64, 128 (load_paged.kc): the largest, one page per block
    "paged128_causal": Variant("paged-causal-none-d128-s2", "causal", page_size=128, check_page_sizes=(128,)),
    "noncausal_d64": Variant("dense-none-none-d64-s4", "none"),
    "causal_d64": Variant("dense-causal-none-d64-s4", "causal"),
    # diagnostic: V's descriptor with its leading / stride byte offsets exchanged (expected to fail)
    "noncausal_vswap": Variant("dense-none-none-d128-s2-vswap", "none"),
}


def check(err: Any, what: str) -> None:
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what}: {err}")


def tensor_map(ptr: int, dims: list[int], strides: list[int], box: list[int]) -> bytes:
    """128 bytes of a bf16 TMA descriptor: dims innermost first, strides in bytes of dims 1.., 128B swizzle."""
    err, tmap = driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        len(dims),
        ptr,
        [driver.cuuint64_t(d) for d in dims],
        [driver.cuuint64_t(s) for s in strides],
        [driver.cuuint32_t(b) for b in box],
        [driver.cuuint32_t(1)] * len(dims),
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    check(err, "cuTensorMapEncodeTiled")
    return ctypes.string_at(tmap.getPtr(), 128)


def bhsd_map(t: torch.Tensor, box_rows: int) -> bytes:
    """[B, H, S, D] (contiguous) as a 3-D map {D, S, B * H}, box {64, box_rows, 1}."""
    b, h, s, d = t.shape
    return tensor_map(t.data_ptr(), [d, s, b * h], [d * 2, s * d * 2], [64, box_rows, 1])


# The composition each pipeline of specs/examples/attention links (its load, mask and score).
LINKED = {
    "attention": "dense-causal-none-d128-s2",
    "attn_noncausal": "dense-none-none-d128-s2",
    "attn_window": "dense-window-none-d128-s2",
    "attn_softcap": "dense-none-softcap-d128-s2",
    "attn_chunked": "dense-chunked-none-d128-s2",
    "attn_alibi": "dense-causal-alibi-d128-s2",
    "attn_blocksparse": "blocksparse-causal-none-d128-s2",
    "attn_paged": "paged-causal-none-d128-s2",
}
# The one-unit build's parameter block: (offset, bytes) of the load's, epilogue's, core's, mask's and
# score's blocks, 896 bytes in all (Launch below writes it).
BLOCKS = [(0, 512), (512, 256), (768, 32), (800, 16), (816, 16)]


class Cubin:
    """One composition's cubin loaded into PyTorch's context (one-unit, or linked with its map)."""

    def __init__(self, folder: Path, composition: str) -> None:
        torch.cuda.init()
        torch.empty(1, device="cuda")
        err, self.module = driver.cuModuleLoadData((folder / f"attn_{composition}.cubin").read_bytes())
        check(err, f"cuModuleLoadData attn_{composition}.cubin")
        record = folder / f"attn_{composition}.link.json"
        self.linked = record.is_file()
        if self.linked:
            link = json.loads(record.read_text())
            params = link["params"]
            regions = [(r["offset"], r["size"]) for r in params["regions"]]
            if regions != BLOCKS or params["size"] != 896:
                raise ValueError(f"{record.name}: parameter block {regions}, {params['size']} B is not the harness's")
            kernel = link["dispatch"]["kernel"].encode()
            self.smem = int(link["dispatch"]["dynamic_smem"])
            self.stages = int(composition.rsplit("-s", 1)[1])
            self.head_dim = int(composition.split("-")[3].removeprefix("d"))
        err, self.function = driver.cuModuleGetFunction(self.module, kernel if self.linked else b"attn_fwd")
        check(err, "cuModuleGetFunction")
        if not self.linked:
            self.smem = self._u32("attn_smem_bytes")
            self.stages = self._u32("attn_stages")
            self.head_dim = self._u32("attn_head_dim")
        (err,) = driver.cuFuncSetAttribute(
            self.function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.smem
        )
        check(err, "cuFuncSetAttribute")

    def _u32(self, symbol: str) -> int:
        err, ptr, _size = driver.cuModuleGetGlobal(self.module, symbol.encode())
        check(err, f"cuModuleGetGlobal {symbol}")
        host = (ctypes.c_uint32 * 1)()
        (err,) = driver.cuMemcpyDtoH(ctypes.addressof(host), ptr, 4)
        check(err, "cuMemcpyDtoH")
        return int(host[0])


class Problem:
    """Inputs of one shape and one variant: q, k, v, the variant's extra tensors, and its mask/score."""

    def __init__(self, var: Variant, b: int, h: int, s: int, seed: int, timing: bool) -> None:
        gen = torch.Generator(device="cuda").manual_seed(seed)
        d = var.head_dim
        self.var, self.b, self.h, self.s, self.d = var, b, h, s, d
        self.q, self.k, self.v = (
            torch.randn(b, h, s, d, device="cuda", generator=gen).to(torch.bfloat16) for _ in range(3)
        )
        self.scale = 1.0 / math.sqrt(d)
        self.mask_args = var.mask_args if timing or var.check_mask_args is None else var.check_mask_args
        self.m_blocks = (s + BLOCK - 1) // BLOCK
        self.block_sel: torch.Tensor | None = None
        if var.mask == "blocksparse":
            density = var.density if timing else 0.3
            mb = torch.arange(self.m_blocks, device="cuda")
            causal = mb[None, :] <= mb[:, None]  # [m_block, n_block]
            sel = torch.rand(b * h, self.m_blocks, self.m_blocks, device="cuda", generator=gen) < density
            sel = (sel & causal) | torch.eye(self.m_blocks, dtype=torch.bool, device="cuda")
            self.block_sel = sel
            nb = torch.arange(self.m_blocks, device="cuda").expand_as(sel)
            self.block_idx = torch.where(sel, nb, torch.full_like(nb, -1)).sort(dim=-1, descending=True).values
            self.block_idx = self.block_idx.to(torch.int32).contiguous()
            self.block_cnt = sel.sum(-1).to(torch.int32).contiguous()
            self.density = float(sel.sum()) / float(causal.sum() * b * h)

    # ---- the mask and score as tensors (reference) and as FlexAttention mods
    def keep(self, qi: torch.Tensor, ki: torch.Tensor) -> torch.Tensor:
        """Bool [sq, sk] (or [B*H, sq, sk] for block-sparse) for query rows qi, key columns ki."""
        m = self.var.mask
        q, kv = qi[:, None], ki[None, :]
        if m == "none":
            return torch.ones(len(qi), len(ki), dtype=torch.bool, device="cuda")
        if m == "causal":
            return kv <= q
        if m == "window":
            left, right = self.mask_args
            return (kv >= q - left) & (kv <= q + right)
        if m == "chunked":
            chunk = self.mask_args[0]
            return (kv <= q) & (kv // chunk == q // chunk)
        assert self.block_sel is not None
        blocks = self.block_sel[:, qi // BLOCK][:, :, ki // BLOCK]
        return blocks & (kv <= q)[None]

    def score_ref(self, s: torch.Tensor, hi: torch.Tensor, qi: torch.Tensor, ki: torch.Tensor) -> torch.Tensor:
        """s: scaled scores [B, H, sq, sk] (float32)."""
        if self.var.score == "softcap":
            cap = self.var.softcap
            return cap * torch.tanh(s / cap)
        if self.var.score == "alibi":
            slope = torch.exp2(-8.0 * (hi.float() + 1) / self.h)[None, :, None, None]
            return s + slope * (ki[None, :].float() - qi[:, None].float())[None, None]
        return s

    def reference(self) -> tuple[torch.Tensor, torch.Tensor]:
        """O [B, H, S, D] and lse [B, H, S] in float32, in row chunks."""
        outs, lses = [], []
        ki = torch.arange(self.s, device="cuda")
        hi = torch.arange(self.h, device="cuda")
        kf, vf = self.k.float(), self.v.float()
        step = max(1, (1 << 26) // max(1, self.b * self.h * self.s))
        for r0 in range(0, self.s, step):
            qi = torch.arange(r0, min(self.s, r0 + step), device="cuda")
            sc = torch.matmul(self.q[:, :, r0 : r0 + len(qi)].float(), kf.transpose(-1, -2)) * self.scale
            sc = self.score_ref(sc, hi, qi, ki)
            keep = self.keep(qi, ki)
            keep = keep.view(self.b, self.h, len(qi), self.s) if keep.dim() == 3 else keep
            sc = sc.masked_fill(~keep, float("-inf"))
            lse = torch.logsumexp(sc, dim=-1)
            p = torch.exp(sc - lse[..., None]).nan_to_num(0.0)
            outs.append(torch.matmul(p, vf))
            lses.append(lse)
        return torch.cat(outs, dim=2), torch.cat(lses, dim=2)

    def kept_pairs(self) -> float:
        """(q, kv) pairs kept by the mask, over all heads."""
        total = 0.0
        ki = torch.arange(self.s, device="cuda")
        step = max(1, (1 << 24) // self.s)
        for r0 in range(0, self.s, step):
            qi = torch.arange(r0, min(self.s, r0 + step), device="cuda")
            keep = self.keep(qi, ki)
            total += float(keep.sum()) * (1 if keep.dim() == 3 else self.b * self.h)
        return total

    def flex_mods(self) -> tuple[Callable[..., Any] | None, Callable[..., Any] | None]:
        var, m = self.var, self.var.mask
        mask_mod: Callable[..., Any] | None = None
        if m == "causal":

            def mask_mod(b: Any, h: Any, q: Any, kv: Any) -> Any:
                return kv <= q

        elif m == "window":
            left, right = self.mask_args

            def mask_mod(b: Any, h: Any, q: Any, kv: Any) -> Any:
                return (kv >= q - left) & (kv <= q + right)

        elif m == "chunked":
            chunk = self.mask_args[0]

            def mask_mod(b: Any, h: Any, q: Any, kv: Any) -> Any:
                return (kv <= q) & (kv // chunk == q // chunk)

        elif m == "blocksparse":
            assert self.block_sel is not None
            sel = self.block_sel.view(self.b, self.h, self.m_blocks, self.m_blocks)

            def mask_mod(b: Any, h: Any, q: Any, kv: Any) -> Any:
                return sel[b, h, q // BLOCK, kv // BLOCK] & (kv <= q)

        score_mod: Callable[..., Any] | None = None
        if var.score == "softcap":
            cap = var.softcap

            def score_mod(s: Any, b: Any, h: Any, q: Any, kv: Any) -> Any:
                return cap * torch.tanh(s / cap)

        elif var.score == "alibi":
            heads = self.h

            def score_mod(s: Any, b: Any, h: Any, q: Any, kv: Any) -> Any:
                return s + torch.exp2(-8.0 * (h + 1) / heads) * (kv - q)

        return mask_mod, score_mod


class Launch:
    """One kernel bound to one problem: the parameter block and the outputs."""

    def __init__(self, cubin: Cubin, prob: Problem, page_size: int = 0) -> None:
        var, b, h, s, d = prob.var, prob.b, prob.h, prob.s, prob.d
        if cubin.head_dim != d:
            raise ValueError(f"cubin head dim {cubin.head_dim}, problem {d}")
        self.cubin, self.prob = cubin, prob
        # O with one guard head past the last (the map covers B * H heads only)
        self.out_full = torch.empty(b * h + 1, s, d, dtype=torch.bfloat16, device="cuda")
        self.out = self.out_full[: b * h].view(b, h, s, d)
        self.lse = torch.empty(b, h, s, dtype=torch.float32, device="cuda")
        self.keep_alive: list[torch.Tensor] = []
        qmap = bhsd_map(prob.q, 128)
        extra = struct.pack("<ii", s, s)  # the load's seq_q, seq_k (it computes its own tile)
        if var.load == "paged":
            kmap, vmap, extra = self._paged(page_size)
        else:
            kmap, vmap = bhsd_map(prob.k, 128), bhsd_map(prob.v, 128)
            if var.load == "blocksparse":
                self.keep_alive += [prob.block_idx, prob.block_cnt]
                extra = struct.pack(
                    "<QQiiii", prob.block_idx.data_ptr(), prob.block_cnt.data_ptr(), prob.m_blocks, prob.m_blocks, s, s
                )
        omap = tensor_map(self.out_full.data_ptr(), [d, s, b * h], [d * 2, s * d * 2], [64, 64, 1])
        load = qmap + kmap + vmap + extra.ljust(128, b"\0")
        epi = omap + struct.pack("<Q", self.lse.data_ptr()).ljust(128, b"\0")
        core = struct.pack("<iiiiffff", s, s, h, 0, prob.scale, prob.scale * math.log2(math.e), 0.0, 0.0)
        mask = struct.pack("<iiii", *prob.mask_args, 0, 0)
        if var.score == "softcap":
            score = struct.pack("<ffii", prob.scale / var.softcap, var.softcap / prob.scale, 0, 0)
        elif var.score == "alibi":
            score = struct.pack("<ffii", 1.0 / prob.scale, -8.0 / h, 0, 0)
        else:
            score = bytes(16)
        block = load + epi + core + mask + score
        assert len(block) == 832, len(block)
        self.block = ctypes.create_string_buffer(block.ljust(896, b"\0"), 896)
        self.args = (ctypes.c_void_p * 1)(ctypes.addressof(self.block))
        self.grid = (prob.m_blocks, h, b)

    def _paged(self, page_size: int) -> tuple[bytes, bytes, bytes]:
        """K / V scattered into a page cache [pages, page_size, H, D] through a random page table."""
        prob = self.prob
        b, h, s, d = prob.b, prob.h, prob.s, prob.d
        pps = (s + page_size - 1) // page_size
        pages = b * pps + 3  # a few pages nobody uses
        perm = torch.randperm(pages, device="cuda")[: b * pps].view(b, pps).to(torch.int32).contiguous()
        caches = []
        for t in (prob.k, prob.v):
            cache = torch.randn(pages, page_size, h, d, device="cuda").to(torch.bfloat16)  # garbage past seq
            padded = torch.zeros(b, h, pps * page_size, d, dtype=torch.bfloat16, device="cuda")
            padded[:, :, :s] = t
            logical = padded.view(b, h, pps, page_size, d).permute(0, 2, 3, 1, 4)  # b, page, slot, h, d
            full = pps * page_size
            n_full = s // page_size  # whole pages; the last partial page keeps garbage past s
            cache[perm[:, :n_full].reshape(-1).long()] = logical[:, :n_full].reshape(-1, page_size, h, d)
            if full > s:
                last = perm[:, n_full].long()
                cache[last, : s - n_full * page_size] = logical[:, n_full, : s - n_full * page_size]
            caches.append(cache)
        self.keep_alive += [perm, *caches]
        maps = [
            tensor_map(
                c.data_ptr(),
                [d, h, page_size, pages],
                [d * 2, h * d * 2, page_size * h * d * 2],
                [64, 1, page_size, 1],
            )
            for c in caches
        ]
        extra = struct.pack("<Qiiii", perm.data_ptr(), pps, page_size, s, s)  # ..., seq_k, seq_q
        return maps[0], maps[1], extra

    def __call__(self) -> None:
        stream = torch.cuda.current_stream().cuda_stream
        gx, gy, gz = self.grid
        (err,) = driver.cuLaunchKernel(
            self.cubin.function, gx, gy, gz, THREADS, 1, 1, self.cubin.smem, stream, ctypes.addressof(self.args), 0
        )
        check(err, "cuLaunchKernel")


class Hang(Exception):
    pass


def finish(what: str) -> None:
    """Synchronize, but give up (Hang) after HANG_S seconds."""
    ev = torch.cuda.Event()
    ev.record()
    start = time.time()
    while not ev.query():
        if time.time() - start > HANG_S:
            raise Hang(f"{what}: no completion after {HANG_S} s")
        time.sleep(0.001)
    torch.cuda.synchronize()


def context_broken() -> bool:
    """Does the CUDA context still run work (not after a kernel fault)?"""
    try:
        torch.cuda.synchronize()
        return float(torch.ones(4, device="cuda").sum()) != 4.0
    except Exception:
        return True


def describe(err: BaseException) -> str:
    text = str(err).splitlines()[0][:300] if str(err) else ""
    return f"{type(err).__name__}: {text}"


def verdict(launch: Launch, ref_o: torch.Tensor, ref_lse: torch.Tensor) -> dict[str, Any]:
    got = launch.out.float()
    nan = int(torch.isnan(got).sum())
    diff = (got - ref_o).nan_to_num(float("inf"))
    norm = float(ref_o.norm())
    rel = float(diff.norm() / norm) if norm > 0 else float(diff.norm())
    worst = float(diff.abs().max())
    lse_diff = (launch.lse - ref_lse).abs()
    lse_diff = torch.where(torch.isinf(ref_lse) & torch.isinf(launch.lse), torch.zeros_like(lse_diff), lse_diff)
    lse_err = float(lse_diff.nan_to_num(float("inf")).max())
    guard = bool((launch.out_full[-1].view(torch.int16) == -1).all())
    ok = nan == 0 and rel <= 1e-2 and worst <= 0.05 * float(ref_o.abs().max()) + 1e-6 and lse_err <= 1e-2 and guard
    return {"rel_err": rel, "max_abs_err": worst, "lse_err": lse_err, "nan": nan, "guard_ok": guard, "ok": ok}


def check_variant(
    name: str, cubins: dict[str, Cubin], seed: int, shapes: list[tuple[int, int, int]]
) -> list[dict[str, Any]]:
    var = VARIANTS[name]
    rows = []
    for i, (b, h, s) in enumerate(shapes):
        prob = Problem(var, b, h, s, seed + i, timing=False)
        ref_o, ref_lse = prob.reference()
        for ps in var.check_page_sizes or (0,):
            launch = Launch(cubins[var.composition], prob, ps)
            launch.out_full.view(torch.int16).fill_(-1)
            launch.lse.fill_(float("nan"))
            launch()
            finish(f"{name} {b}x{h}x{s}")
            row: dict[str, Any] = {"kernel": "ours", "variant": name, "check": True, "batch": b, "heads": h}
            row.update(seq=s, d=prob.d, composition=var.composition, mask_args=list(prob.mask_args))
            if ps:
                row["page_size"] = ps
            if var.mask == "blocksparse":
                row["density"] = prob.density
            row.update(verdict(launch, ref_o, ref_lse))
            first = launch.out.clone()
            launch()
            finish(f"{name} {b}x{h}x{s} (second)")
            row["deterministic"] = bool(torch.equal(first.view(torch.int16), launch.out.view(torch.int16)))
            row["ok"] = row["ok"] and row["deterministic"]
            rows.append(row)
        del prob, ref_o, ref_lse
    return rows


def bench(fn: Callable[[], Any]) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=20, rep=100, return_mode="median"))


def time_variant(
    name: str, cubins: dict[str, Cubin], seq: int, control: dict[str, Cubin] | None = None
) -> dict[str, Any]:
    """Times one variant; with ``control`` (the same compositions built otherwise: the one-unit build beside a
    linked one, or an earlier tree), also the control on the same inputs: control, ours, control, ours, each a
    do_bench median, and the ratio ours / control of the sums."""
    var = VARIANTS[name]
    b = TOKENS // seq
    prob = Problem(var, b, HEADS, seq, seed=7, timing=True)
    launch = Launch(cubins[var.composition], prob, var.page_size)
    launch()
    finish(f"{name} seq {seq}")
    row: dict[str, Any] = {"kernel": "ours", "variant": name, "seq": seq, "batch": b, "heads": HEADS, "d": prob.d}
    if control is not None:
        other = Launch(control[var.composition], prob, var.page_size)
        other()
        finish(f"{name} seq {seq} (control)")
        c1, m1, c2, m2 = bench(other), bench(launch), bench(other), bench(launch)
        ms = (m1 + m2) / 2
        row.update(control_ms=(c1 + c2) / 2, vs_control=(m1 + m2) / (c1 + c2), control_spread=abs(c1 - c2) / (c1 + c2))
    else:
        ms = bench(launch)
    pairs = prob.kept_pairs()
    row.update(ms=ms, tflops=4.0 * pairs * prob.d / ms / 1e9, composition=var.composition)
    if var.mask == "blocksparse":
        row["density"] = prob.density
    if var.page_size:
        row["page_size"] = var.page_size
    return row


def profile(
    name: str, seq: int, cubins: dict[str, Cubin], control: dict[str, Cubin] | None, flash: Callable[..., Any] | None
) -> None:
    """One launch each of ours, the control's and FA4's kernel for ``name`` at ``seq`` (the timing shape), in that
    order, inside a cudaProfilerStart / Stop range (``ncu --profile-from-start off`` profiles just these), each
    after a warm launch outside it (FA4 compiles on its first call)."""
    var = VARIANTS[name]
    prob = Problem(var, TOKENS // seq, HEADS, seq, seed=7, timing=True)
    runs: list[Callable[[], Any]] = [Launch(cubins[var.composition], prob, var.page_size)]
    if control is not None:
        runs.append(Launch(control[var.composition], prob, var.page_size))
    opts = fa4.options(var.mask, var.score, var.mask_args, var.softcap) if flash is not None else None
    if flash is not None and opts is not None:
        runs.append(fa4.runner(flash, prob, opts))
    for run in runs:
        run()
    finish(f"profile {name} seq {seq} (warm)")
    torch.cuda.profiler.start()
    for run in runs:
        run()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(json.dumps({"profiled": name, "seq": seq, "launches": ["ours", "control", "fa4"][: len(runs)]}), flush=True)


def rounds_variant(
    name: str,
    cubins: dict[str, Cubin],
    seq: int,
    control: dict[str, Cubin] | None,
    flash: Callable[..., Any] | None,
    n: int,
    extras: dict[str, dict[str, Cubin]] | None = None,
) -> dict[str, Any]:
    """``n`` rounds of ours, the control, the extras, FA4 and cuDNN SDPA (those that offer the variant) on the same
    inputs, one ``do_bench`` median each per round, in that order every round: per kernel the median of its rounds and
    the median, min and max over rounds of ours / it (ratios of neighbours in time, so that clock and thermal
    drift between rows cancel)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    var = VARIANTS[name]
    prob = Problem(var, TOKENS // seq, HEADS, seq, seed=7, timing=True)
    kernels: dict[str, Callable[[], Any]] = {"ours": Launch(cubins[var.composition], prob, var.page_size)}
    if control is not None:
        kernels["control"] = Launch(control[var.composition], prob, var.page_size)
    for label, folder in (extras or {}).items():
        kernels[label] = Launch(folder[var.composition], prob, var.page_size)
    opts = fa4.options(var.mask, var.score, var.mask_args, var.softcap) if flash is not None else None
    if flash is not None and opts is not None:
        kernels["fa4"] = fa4.runner(flash, prob, opts)
    if var.mask in ("none", "causal") and var.score == "none" and var.load == "dense":
        causal = var.mask == "causal"

        def cudnn() -> torch.Tensor:
            return F.scaled_dot_product_attention(prob.q, prob.k, prob.v, is_causal=causal)

        kernels["sdpa_cudnn"] = cudnn
    times: dict[str, list[float]] = {k: [] for k in kernels}
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):  # SDPA's only backend here: cuDNN or an error
        for fn in kernels.values():
            fn()
        finish(f"{name} seq {seq} (rounds)")
        for _ in range(n):
            for k, fn in kernels.items():
                times[k].append(bench(fn))
    row: dict[str, Any] = {"kernel": "rounds", "variant": name, "seq": seq, "rounds": n, "ms": {}, "ours_over": {}}
    for k, ts in times.items():
        row["ms"][k] = statistics.median(ts)
        if k != "ours":
            ratios = [a / b for a, b in zip(times["ours"], ts, strict=True)]
            row["ours_over"][k] = {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}
    row["times"] = times
    return row


def sdpa_rows(seq: int) -> list[dict[str, Any]]:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    b = TOKENS // seq
    gen = torch.Generator(device="cuda").manual_seed(7)
    q, k, v = (torch.randn(b, HEADS, seq, 128, device="cuda", generator=gen).to(torch.bfloat16) for _ in range(3))
    rows = []
    for backend, label in ((SDPBackend.CUDNN_ATTENTION, "sdpa_cudnn"), (SDPBackend.FLASH_ATTENTION, "sdpa_flash")):
        for causal in (False, True):
            row: dict[str, Any] = {"kernel": label, "variant": "causal" if causal else "noncausal", "seq": seq}
            try:
                with sdpa_kernel(backend):

                    def fn(causal: bool = causal) -> torch.Tensor:
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                    fn()
                    torch.cuda.synchronize()
                    ms = bench(fn)
                pairs = b * HEADS * (seq * (seq + 1) / 2 if causal else seq * seq)
                row.update(ms=ms, tflops=4.0 * pairs * 128 / ms / 1e9, ok=True)
            except Exception as err:
                row.update(ok=False, error=describe(err))
            rows.append(row)
    return rows


def flex_row(name: str, seq: int, prob: Problem) -> dict[str, Any]:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    row: dict[str, Any] = {"kernel": "flex", "variant": name, "seq": seq}
    start = time.time()
    try:
        mask_mod, score_mod = prob.flex_mods()
        block_mask = (
            create_block_mask(mask_mod, prob.b, prob.h, seq, seq, device="cuda") if mask_mod is not None else None
        )
        compiled = torch.compile(flex_attention, dynamic=False)
        q, k, v = prob.q, prob.k, prob.v

        def fn() -> torch.Tensor:
            return compiled(q, k, v, score_mod=score_mod, block_mask=block_mask)

        got = fn()
        torch.cuda.synchronize()
        row["compile_s"] = round(time.time() - start, 1)
        ms = bench(fn)
        pairs = prob.kept_pairs()
        row.update(ms=ms, tflops=4.0 * pairs * prob.d / ms / 1e9, ok=bool(torch.isfinite(got.float()).all()))
    except Exception as err:
        row.update(ok=False, error=describe(err))
    return row


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["correctness:"]
    lines.append(f"{'variant':<16} {'BxHxS':>12} {'page':>4} {'rel err':>9} {'max abs':>9} {'lse err':>9} ok")
    for r in rows:
        if r.get("check"):
            shape = f"{r['batch']}x{r['heads']}x{r['seq']}"
            lines.append(
                f"{r['variant']:<16} {shape:>12} {r.get('page_size', ''):>4} {r.get('rel_err', float('nan')):>9.2e} "
                f"{r.get('max_abs_err', float('nan')):>9.2e} {r.get('lse_err', float('nan')):>9.2e} "
                f"{'yes' if r.get('ok') else 'NO ' + str(r.get('error', ''))}"
            )
    timed = [r for r in rows if "ms" in r]
    lines.append("timing (ms, TFLOP/s over kept pairs):")
    for seq in sorted({r["seq"] for r in timed}):
        at = [r for r in timed if r["seq"] == seq]
        base = {(r["kernel"], r["variant"]): r for r in at if r["kernel"] != "ours"}
        for r in (r for r in at if r["kernel"] == "ours"):
            var = VARIANTS[r["variant"]]
            ref = "causal" if var.mask in ("causal", "blocksparse") else ("noncausal" if var.mask == "none" else "")
            parts = [f"{r['variant']:<16} seq {seq:>5}: {r['ms']:.4f} ms {r['tflops']:.0f} TF/s"]
            best = [
                base[(k, ref)]
                for k in ("sdpa_cudnn", "sdpa_flash")
                if (k, ref) in base and var.score == "none" and var.load == "dense"
            ]
            for bl in best:
                parts.append(f"{bl['kernel']} {bl['ms']:.4f} ({bl['ms'] / r['ms']:.2f}x)")
            own = next((o for o in at if o["kernel"] == "ours" and o["variant"] == ref), None)
            if own is not None and own is not r and ref:
                parts.append(f"ours {ref} {own['ms']:.4f} ({own['ms'] / r['ms']:.2f}x)")
            fx = base.get(("flex", r["variant"]))
            if fx is not None and "ms" in fx:
                parts.append(f"flex {fx['ms']:.4f} ({fx['ms'] / r['ms']:.2f}x)")
            f4 = base.get(("fa4", r["variant"]))
            if f4 is not None and "ms" in f4:
                parts.append(f"fa4 {f4['ms']:.4f} ({f4['ms'] / r['ms']:.2f}x)")
            lines.append("  ".join(parts))
        for r in (r for r in at if r["kernel"] != "ours"):
            lines.append(f"  {r['kernel']:<10} {r['variant']:<16} {r['ms']:.4f} ms {r['tflops']:.0f} TF/s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cubins", type=Path, default=Path("."))
    parser.add_argument("--control", type=Path, help="a folder of the same compositions to time beside --cubins")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument(
        "--timed",
        default="noncausal,causal,noncausal_s3,causal_s3,window,softcap,chunked,"
        "alibi_causal,blocksparse10,blocksparse25,paged64_causal,paged16_causal",
    )
    parser.add_argument("--seqs", default="1024,4096,8192,16384")
    parser.add_argument("--flex", default="", help="variant@seq pairs for FlexAttention, in order")
    parser.add_argument("--flex-budget-s", type=float, default=120.0)
    parser.add_argument("--sdpa", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--fa4", metavar="SITE", help="time FlashAttention 4 from this site folder (bench/fa4.py)")
    parser.add_argument("--fa4-variants", default="noncausal,causal,window,softcap")
    parser.add_argument("--check-only", action="store_true")
    parser.add_argument("--check-shapes", default="", help="BxHxS,... instead of the default check shapes")
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--skip-file", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--merge", type=Path, nargs="+")
    parser.add_argument(
        "--rounds",
        type=int,
        default=0,
        help="time --timed at --seqs in N rounds of ours, the control, FA4 and cuDNN (rounds_variant) instead",
    )
    parser.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="with --rounds: a folder of the same compositions timed as LABEL in every round (repeatable)",
    )
    parser.add_argument(
        "--profile",
        default="",
        help="variant@seq,...: one launch each of ours, the control and FA4 inside a profiler range (for ncu)",
    )
    args = parser.parse_args(argv)
    if args.merge:
        merged = [row for path in args.merge for row in json.loads(path.read_text())]
        print(table(merged))
        return 0 if all(r.get("ok", True) for r in merged) else 1
    born = time.time()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for limit in ("cache_size_limit", "recompile_limit", "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, 256)
    skip = set(args.skip_file.read_text().split()) if args.skip_file and args.skip_file.is_file() else set()
    partial = args.json.with_suffix(".partial.jsonl") if args.json else None
    done: set[str] = set()
    rows: list[dict[str, Any]] = []
    if partial is not None and partial.is_file():
        rows = [json.loads(line) for line in partial.read_text().splitlines() if line.strip()]
        done = {r["key"] for r in rows if "key" in r}

    def emit(row: dict[str, Any], key: str) -> None:
        row["key"] = key
        print(json.dumps(row), flush=True)
        rows.append(row)
        if partial is not None:
            with partial.open("a") as f:
                f.write(json.dumps(row) + "\n")

    def fatal(name: str, err: BaseException) -> int:
        emit({"kernel": "ours", "variant": name, "ok": False, "error": describe(err)}, f"fatal:{name}")
        if args.skip_file:
            with args.skip_file.open("a") as f:
                f.write(name + "\n")
        return 3

    variants = [v for v in args.variants.split(",") if v and v not in skip]
    given = [tuple(int(v) for v in x.split("x")) for x in args.check_shapes.split(",") if x]
    shapes = [(b, h, s) for b, h, s in given] or CHECK_SHAPES
    cubins = {c: Cubin(args.cubins, c) for c in sorted({VARIANTS[v].composition for v in variants})}
    control = {c: Cubin(args.control, c) for c in cubins} if args.control else None
    extras: dict[str, dict[str, Cubin]] = {}
    for spec in args.extra:
        label, sep, folder = spec.partition("=")
        if not sep or not label or label in ("ours", "control", "fa4", "sdpa_cudnn") or label in extras:
            parser.error(f"--extra {spec!r}: LABEL=DIR with a new label")
        extras[label] = {c: Cubin(Path(folder), c) for c in cubins}
    if args.profile:
        for pair in (p for p in args.profile.split(",") if p):
            name, _, at = pair.partition("@")
            profile(name, int(at), cubins, control, fa4.load(args.fa4) if args.fa4 else None)
        return 0
    if args.rounds:
        flash = fa4.load(args.fa4) if args.fa4 else None
        for seq in (int(x) for x in args.seqs.split(",") if x):
            for name in (v for v in args.timed.split(",") if v in variants):
                emit(rounds_variant(name, cubins, seq, control, flash, args.rounds, extras), f"rounds:{name}@{seq}")
        print()
        for r in rows:
            ms = " ".join(f"{k} {v:.4f}" for k, v in r["ms"].items())
            over = " ".join(
                f"{k} {v['median']:.3f} ({v['min']:.3f}..{v['max']:.3f})" for k, v in r["ours_over"].items()
            )
            print(f"{r['variant']:<12} seq {r['seq']:>5}: ms {ms}; ours / {over}")
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
        return 0
    if not args.no_check:
        for name in variants:
            if f"check:{name}" in done:
                continue
            try:
                for row in check_variant(name, cubins, 100, shapes):
                    emit(row, f"check:{name}")
            except Exception as err:  # a fault or a hang poisons the context: start again without it
                if isinstance(err, Hang) or context_broken():
                    return fatal(name, err)
                emit(
                    {"kernel": "ours", "variant": name, "check": True, "ok": False, "error": describe(err)},
                    f"check:{name}",
                )
    if not args.check_only:
        seqs = [int(s) for s in args.seqs.split(",") if s]
        for seq in seqs:
            for name in (v for v in args.timed.split(",") if v in variants):
                key = f"time:{name}@{seq}"
                if key in done:
                    continue
                try:
                    emit(time_variant(name, cubins, seq, control), key)
                except Exception as err:
                    if isinstance(err, Hang) or context_broken():
                        return fatal(name, err)
                    emit({"kernel": "ours", "variant": name, "seq": seq, "ok": False, "error": describe(err)}, key)
            if args.sdpa and f"sdpa@{seq}" not in done:
                for row in sdpa_rows(seq):
                    emit(row, f"sdpa@{seq}")
            for name in (v for v in args.fa4_variants.split(",") if args.fa4 and v and f"fa4:{v}@{seq}" not in done):
                var = VARIANTS[name]
                opts = fa4.options(var.mask, var.score, var.mask_args, var.softcap)
                if opts is None:
                    continue
                flash = fa4.load(args.fa4)
                if f"fa4-check:{name}" not in done | {r.get("key") for r in rows}:
                    small = Problem(var, 1, 2, 1000, seed=7, timing=False)
                    small_opts = fa4.options(var.mask, var.score, small.mask_args, var.softcap) or opts
                    emit(
                        {
                            "kernel": "fa4",
                            "variant": name,
                            "check": True,
                            "batch": 1,
                            "heads": 2,
                            "seq": 1000,
                            **fa4.check(flash, small, small_opts),
                        },
                        f"fa4-check:{name}",
                    )
                prob = Problem(var, TOKENS // seq, HEADS, seq, seed=7, timing=True)
                emit(fa4.row(flash, name, seq, prob, opts, bench), f"fa4:{name}@{seq}")
                del prob
            torch.cuda.empty_cache()
        for pair in (p for p in args.flex.split(",") if p):
            name, _, at = pair.partition("@")
            key = f"flex:{pair}"
            if key in done:
                continue
            if time.time() - born > args.flex_budget_s:
                emit({"kernel": "flex", "variant": name, "seq": int(at), "ok": True, "error": "skipped: budget"}, key)
                continue
            prob = Problem(VARIANTS[name], TOKENS // int(at), HEADS, int(at), seed=7, timing=True)
            emit(flex_row(name, int(at), prob), key)
            del prob
            torch.cuda.empty_cache()
    print()
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
