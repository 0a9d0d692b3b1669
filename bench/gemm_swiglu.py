"""GEMM + SwiGLU on an H200: a linked `gemm_swiglu` kernel against PyTorch, correctness and timing.

    python bench/gemm_swiglu.py LINKDIR [LINKDIR ...] [--shapes 16,128,512,2048,8192] [--k 4096]
                                [--n 28672] [--check-only] [--json FILE]

Each LINKDIR is the output of `kernlink link` for a composition of a GEMM producer with the
SwiGLU epilogue (specs/examples/gemm_swiglu): `kernel.cubin` and `link.json`. The script

- builds the inputs: X [M, K] and the gate and up weights Wg, Wu [N/2, K], bf16, N(0, 1)
  scaled by 1/sqrt(K) (fresh for every shape); the kernel reads W = gate and up rows
  interleaved by 16 (rows 32g .. 32g + 15 are Wg's rows 16g .., the next 16 Wu's);
- fills the kernel's params block from `link.json` (fields by name: `tmap_a`/`tmap_b`, the
  TMA descriptors built with cuTensorMapEncodeTiled and stored in device memory, `a`/`b`
  raw pointers, `k_tiles`, `k`, `n`, `out`, `ldo`, `rows`; fact fields from their owners' values);
  a producer with the field `a_box_rows` (gemm.mainloop >= 2.2) gets A's box sized to M as its
  host provider sizes it, min(128, M rounded up to 8) (``--a-box tile`` keeps 128-row boxes and
  writes 128, for a same-cubin comparison); other producers get 128-row boxes;
- poisons the output (0xFFFF, a bf16 NaN), launches, and checks against a float32 reference
  silu(X Wg^T) * (X Wu^T) (TF32 off): ||out - ref|| / ||ref|| <= 1e-2 (bf16 operands and a
  bf16 output; the usual range for bf16 operands is 1e-3 .. 1e-2), no NaN (every element
  written), max |out - ref| <= 0.05 * max |ref|;
- times (unless --check-only) with triton's do_bench (median, L2 flushed between runs): the
  linked kernel, and cuBLAS (`torch.matmul` of X and [Wg; Wu]^T) followed by a separate
  `silu(gate) * up`, eager and (unless --no-compile) through `torch.compile` (Inductor fuses
  the activation into one kernel after the cuBLAS GEMM; a compile that fails offline is
  reported, not fatal); prints ms and TFLOP/s (2 M N K flops) side by side.

With ``--parity CONTROLDIR`` (one LINKDIR): the issue-14 comparison for a composition whose
arguments `kernlink parity --args` cannot express (TMA descriptors). CONTROLDIR holds the
one-unit control (`kernlink parity`'s control.cubin as kernel.cubin, beside the same
link.json); for every shape the linked kernel, the control and the linked cubin loaded a
second time (the null) must write bit-identical outputs, then ``--rounds`` rounds time each
of them (``--reps`` launches between CUDA events, the order rotating every round) and the
report gives the median ratio linked / control and null / linked with a 95% bootstrap
interval (runtime/parity_timing.py).

Exit status 1 when any check fails.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import struct
import sys
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from cuda.bindings import driver

TOLERANCE = 1e-2
FORMATS = {"u32": "<I", "i32": "<i", "u64": "<Q", "ptr": "<Q", "u16": "<H", "f32": "<f"}


def check(err: Any, what: str) -> None:
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what}: {err}")


class Linked:
    """A linked cubin loaded into PyTorch's context, with its params layout and launch facts."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.meta = json.loads((folder / "link.json").read_text())
        torch.cuda.init()
        torch.empty(1, device="cuda")  # PyTorch makes the primary context current
        err, self.module = driver.cuModuleLoadData((folder / "kernel.cubin").read_bytes())
        check(err, "cuModuleLoadData")
        err, self.function = driver.cuModuleGetFunction(self.module, b"kl_dispatch")
        check(err, "cuModuleGetFunction")
        d = self.meta["dispatch"]
        self.threads = 32 * int(d["block_warps"])
        self.smem = int(d["dynamic_smem"])
        (err,) = driver.cuFuncSetAttribute(
            self.function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.smem
        )
        check(err, "cuFuncSetAttribute")
        self.params = self.meta["params"]
        facts = {f["name"]: f["value"] for f in self.params["fields"] if f["source"] == "fact"}
        self.tile_n = int(facts.get("tile_n", 128))
        self.tile_m = 128
        self.name = self.meta["pipeline"]

    def has_field(self, name: str) -> bool:
        return any(f["name"] == name for f in self.params["fields"])

    def block(self, values: dict[str, int]) -> bytes:
        data = bytearray(int(self.params["size"]))
        for f in self.params["fields"]:
            value = f["value"] if f["source"] == "fact" else values.get(f["name"])
            if value is None:
                raise KeyError(f"params field `{f['name']}` of `{f['stage']}` has no value")
            struct.pack_into(FORMATS[f["type"]], data, int(f["offset"]), int(value))
        return bytes(data)

    def launcher(self, m: int, n: int, values: dict[str, int]) -> Any:
        block = ctypes.create_string_buffer(self.block(values), int(self.params["size"]))
        args = (ctypes.c_void_p * 1)(ctypes.addressof(block))
        grid = (math.ceil(m / self.tile_m), n // self.tile_n, 1)

        def launch() -> None:
            stream = torch.cuda.current_stream().cuda_stream
            (err,) = driver.cuLaunchKernel(
                self.function, *grid, self.threads, 1, 1, self.smem, stream, ctypes.addressof(args), 0
            )
            check(err, "cuLaunchKernel")

        launch.keep = (block, args)  # type: ignore[attr-defined]
        return launch


OOB_FILL = {
    "none": driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    "nan": driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
}
L2_PROMOTION = {
    "none": driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
    "64": driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
    "128": driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
    "256": driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
}
#: A's tensor-map options (``--a-oob-fill``, ``--a-l2-promotion``): the side experiment on the OOB fill's cost.
A_MAP_OPTIONS = {"oob_fill": "none", "l2_promotion": "256"}


def a_box_rows(kern: Linked, m: int, mode: str) -> int:
    """Rows of A's TMA box: sized to M (as mainloop_host.c) where the producer reads `a_box_rows`, else a tile."""
    if mode == "tile" or not kern.has_field("a_box_rows"):
        return kern.tile_m
    return min(kern.tile_m, (m + 7) // 8 * 8)


def tensor_map(
    t: torch.Tensor, box_rows: int, box_cols: int = 64, *, oob_fill: str = "none", l2_promotion: str = "256"
) -> torch.Tensor:
    """A 2-D bf16 TMA descriptor of row-major ``t`` (box ``box_rows`` x 64, 128B swizzle), in device memory."""
    rows, cols = t.shape
    err, tmap = driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        2,
        t.data_ptr(),
        [driver.cuuint64_t(cols), driver.cuuint64_t(rows)],
        [driver.cuuint64_t(cols * t.element_size())],
        [driver.cuuint32_t(box_cols), driver.cuuint32_t(box_rows)],
        [driver.cuuint32_t(1), driver.cuuint32_t(1)],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        L2_PROMOTION[l2_promotion],
        OOB_FILL[oob_fill],
    )
    check(err, "cuTensorMapEncodeTiled")
    raw = ctypes.string_at(tmap.getPtr(), 128)
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).to("cuda")


def params_values(
    kern: Linked, box: int, ta: torch.Tensor, tb: torch.Tensor, a: torch.Tensor, w: torch.Tensor, out: torch.Tensor
) -> dict[str, int]:
    """The params fields the bench fills, by name (a field a producer lacks is not written): M is
    ``out``'s rows (``a`` may be padded past them), N is ``w``'s rows, K ``a``'s columns."""
    m, n, k = out.shape[0], w.shape[0], a.shape[1]
    return {
        "a_box_rows": box,
        "tmap_a": ta.data_ptr(),
        "tmap_b": tb.data_ptr(),
        "a": a.data_ptr(),
        "b": w.data_ptr(),
        "k_tiles": k // 64,
        "k": k,
        "n": n,
        "out": out.data_ptr(),
        "ldo": n // 2,
        "rows": m,
    }


def a_map(t: torch.Tensor, box_rows: int) -> torch.Tensor:
    """A's descriptor, with the side experiment's OOB fill and L2 promotion (A_MAP_OPTIONS)."""
    return tensor_map(t, box_rows, oob_fill=A_MAP_OPTIONS["oob_fill"], l2_promotion=A_MAP_OPTIONS["l2_promotion"])


def interleave(wg: torch.Tensor, wu: torch.Tensor) -> torch.Tensor:
    """Rows 32g .. 32g + 15 are wg's rows 16g .. 16g + 15; rows 32g + 16 .. 32g + 31 are wu's."""
    half, k = wg.shape
    return torch.stack([wg.view(half // 16, 16, k), wu.view(half // 16, 16, k)], dim=1).reshape(2 * half, k)


def run_shape(
    kernels: list[Linked],
    m: int,
    n: int,
    k: int,
    timing: bool,
    seed: int,
    compile_activation: bool = True,
    pad_a: bool = False,
    a_box: str = "auto",
) -> list[dict[str, Any]]:
    gen = torch.Generator(device="cuda").manual_seed(seed)
    scale = 1.0 / math.sqrt(k)
    x = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    wg = (torch.randn(n // 2, k, device="cuda", generator=gen) * scale).to(torch.bfloat16)
    wu = (torch.randn(n // 2, k, device="cuda", generator=gen) * scale).to(torch.bfloat16)
    w = interleave(wg, wu).contiguous()
    wcat = torch.cat([wg, wu]).contiguous()
    ref = F.silu(x.float() @ wg.float().T) * (x.float() @ wu.float().T)
    rows = []
    flops = 2.0 * m * n * k
    for kern in kernels:
        out = torch.full((m, n // 2), -1, dtype=torch.int16, device="cuda").view(torch.bfloat16)  # 0xFFFF: NaN
        xa = x
        if pad_a:  # diagnostic: A's tensor map over whole 128-row tiles (zero rows), no out-of-bounds box
            xa = torch.zeros(math.ceil(m / kern.tile_m) * kern.tile_m, k, dtype=x.dtype, device="cuda")
            xa[:m] = x
        box = a_box_rows(kern, m, a_box)
        ta, tb = a_map(xa, box), tensor_map(w, kern.tile_n)
        values = params_values(kern, box, ta, tb, xa, w, out)
        launch = kern.launcher(m, n, values)
        launch()
        torch.cuda.synchronize()
        got = out.float()
        nan = int(torch.isnan(got).sum())
        rel = float((got - ref).norm() / ref.norm())
        worst = float((got - ref).abs().max()) if nan == 0 else float("nan")
        ok = nan == 0 and rel <= TOLERANCE and worst <= 0.05 * float(ref.abs().max())
        row: dict[str, Any] = {
            "kernel": kern.folder.name,
            "m": m,
            "n": n,
            "k": k,
            "a_box_rows": box,
            "rel_err": rel,
            "max_abs_err": worst,
            "nan": nan,
            "ok": ok,
        }
        second = out.clone()
        launch()
        torch.cuda.synchronize()
        row["deterministic"] = bool(torch.equal(second.view(torch.int16), out.view(torch.int16)))
        if timing:
            from triton.testing import do_bench

            ms = float(do_bench(launch, warmup=25, rep=200, return_mode="median"))
            row["ms"] = ms
            row["tflops"] = flops / ms / 1e9
        rows.append(row)
        del ta, tb, out
    if timing:
        from triton.testing import do_bench

        def eager() -> torch.Tensor:
            gu = x @ wcat.T
            return F.silu(gu[:, : n // 2]) * gu[:, n // 2 :]

        def gemm_only() -> torch.Tensor:
            return x @ wcat.T

        got = eager().float()
        rel = float((got - ref).norm() / ref.norm())
        for name, fn in (("torch.matmul+silu*up (eager)", eager), ("torch.matmul only", gemm_only)):
            ms = float(do_bench(fn, warmup=25, rep=200, return_mode="median"))
            rows.append(
                {
                    "kernel": name,
                    "m": m,
                    "n": n,
                    "k": k,
                    "rel_err": rel if fn is eager else None,
                    "ms": ms,
                    "tflops": flops / ms / 1e9,
                    "ok": True,
                }
            )
        if compile_activation:
            rows.append(_compiled_row(x, wcat, ref, m, n, k, flops))
    return rows


_COMPILED: list[Any] = []


def _compiled_row(
    x: torch.Tensor, wcat: torch.Tensor, ref: torch.Tensor, m: int, n: int, k: int, flops: float
) -> dict[str, Any]:
    """cuBLAS, then silu(gate) * up compiled by torch.compile (one fused Inductor kernel), or why not."""
    from triton.testing import do_bench

    name = "torch.matmul+silu*up (compile)"
    row: dict[str, Any] = {"kernel": name, "m": m, "n": n, "k": k, "rel_err": None, "ok": True}
    try:
        if not _COMPILED:

            def act(gu: torch.Tensor) -> torch.Tensor:
                half = gu.shape[1] // 2
                return F.silu(gu[:, :half]) * gu[:, half:]

            _COMPILED.append(torch.compile(act, dynamic=True))
        act_c = _COMPILED[0]

        def path() -> torch.Tensor:
            return act_c(x @ wcat.T)

        got = path().float()
        row["rel_err"] = float((got - ref).norm() / ref.norm())
        ms = float(do_bench(path, warmup=25, rep=200, return_mode="median"))
        row.update(ms=ms, tflops=flops / ms / 1e9)
    except Exception as err:  # an offline machine may lack a compiler Inductor needs: report it
        row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}"
    return row


def parity_shape(
    linked: Linked,
    control: Linked,
    null: Linked,
    m: int,
    n: int,
    k: int,
    *,
    rounds: int,
    reps: int,
    seed: int,
    a_box: str = "auto",
) -> dict[str, Any]:
    """Bit-identical outputs first, then interleaved timing of linked, control and null (module docstring)."""
    root = str(Path(__file__).resolve().parents[1])
    if sys.path[0] != root:  # run as a script, bench/ comes first and would shadow the `placement` package
        sys.path.insert(0, root)
    from runtime.parity_timing import bootstrap_median, ratios

    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    w = (torch.randn(n, k, device="cuda", generator=gen) / math.sqrt(k)).to(torch.bfloat16)
    box = a_box_rows(linked, m, a_box)
    ta, tb = a_map(x, box), tensor_map(w, linked.tile_n)
    outs, launches = [], []
    for kern in (linked, control, null):
        out = torch.full((m, n // 2), -1, dtype=torch.int16, device="cuda")
        values = params_values(linked, box, ta, tb, x, w, out)
        launches.append(kern.launcher(m, n, values))
        outs.append(out)
    for launch in launches:
        launch()
    torch.cuda.synchronize()
    same = all(torch.equal(outs[0], o) for o in outs[1:])
    row: dict[str, Any] = {"m": m, "n": n, "k": k, "a_box_rows": box, "outputs_identical": same, "ok": same}
    if not same:
        return row  # no ratio between kernels that compute different things
    for _ in range(5):
        for launch in launches:
            launch()
    times: list[list[float]] = []
    for r in range(rounds):
        order = [(r + i) % 3 for i in range(3)]
        got = [0.0, 0.0, 0.0]
        for which in order:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps):
                launches[which]()
            end.record()
            end.synchronize()
            got[which] = start.elapsed_time(end) / reps
        times.append(got)
    ratio, null_ratio = ratios(times)
    row["ms"] = {
        name: float(sorted(t[i] for t in times)[len(times) // 2])
        for i, name in enumerate(("linked", "control", "null"))
    }
    row["ratio"] = vars(bootstrap_median(ratio))
    row["null"] = vars(bootstrap_median(null_ratio, seed=1))
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("links", nargs="+", type=Path)
    parser.add_argument("--shapes", default="16,128,512,2048,8192")
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--n", type=int, default=2 * 14336)
    parser.add_argument("--check-only", action="store_true")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile reference")
    parser.add_argument(
        "--pad-a", action="store_true", help="diagnostic: A's tensor map over rows padded to whole tiles"
    )
    parser.add_argument(
        "--a-box",
        choices=("auto", "tile"),
        default="auto",
        help="A's TMA box rows: sized to M where the producer reads `a_box_rows` (auto), or a whole tile",
    )
    parser.add_argument(
        "--a-oob-fill", choices=sorted(OOB_FILL), default="none", help="side experiment: A's map OOB fill mode"
    )
    parser.add_argument(
        "--a-l2-promotion", choices=sorted(L2_PROMOTION), default="256", help="side experiment: A's map L2 promotion"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--parity", type=Path, metavar="CONTROLDIR")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    A_MAP_OPTIONS.update(oob_fill=args.a_oob_fill, l2_promotion=args.a_l2_promotion)
    if args.parity is not None:
        linked, control, null = Linked(args.links[0]), Linked(args.parity), Linked(args.links[0])
        found = []
        for i, m in enumerate(int(s) for s in args.shapes.split(",")):
            row = parity_shape(
                linked,
                control,
                null,
                m,
                args.n,
                args.k,
                rounds=args.rounds,
                reps=args.reps,
                seed=2000 + i,
                a_box=args.a_box,
            )
            print(json.dumps(row), flush=True)
            found.append(row)
        print(f"\n{args.links[0].name}: linked / one-unit control, {args.rounds} interleaved rounds x {args.reps}")
        for r in found:
            if "ratio" in r:
                print(
                    f"M {r['m']:>5}: ratio {r['ratio']['median']:.5f} [{r['ratio']['low']:.5f}, "
                    f"{r['ratio']['high']:.5f}]  null {r['null']['median']:.5f} [{r['null']['low']:.5f}, "
                    f"{r['null']['high']:.5f}]  linked {r['ms']['linked']:.4f} ms"
                )
            else:
                print(f"M {r['m']:>5}: outputs differ: no ratio")
        if args.json:
            args.json.write_text(json.dumps(found, indent=1) + "\n")
        return 0 if all(r["ok"] for r in found) else 1
    kernels = [Linked(p) for p in args.links]
    rows: list[dict[str, Any]] = []
    for i, m in enumerate(int(s) for s in args.shapes.split(",")):
        got = run_shape(
            kernels,
            m,
            args.n,
            args.k,
            not args.check_only,
            seed=1000 + i,
            compile_activation=not args.no_compile,
            pad_a=args.pad_a,
            a_box=args.a_box,
        )
        for r in got:
            print(json.dumps(r), flush=True)
        rows += got
    print(f"\n{'kernel':<32} {'M':>6} {'N':>6} {'K':>5} {'A box':>5} {'rel err':>9} {'ok':>3} {'ms':>9} {'TFLOP/s':>8}")
    for r in rows:
        rel = f"{r['rel_err']:.2e}" if r.get("rel_err") is not None else "-"
        ms = f"{r['ms']:.4f}" if "ms" in r else "-"
        tf = f"{r['tflops']:.1f}" if "tflops" in r else "-"
        note = f"  ({r['error']})" if "error" in r else ""
        print(
            f"{r['kernel']:<32} {r['m']:>6} {r['n']:>6} {r['k']:>5} {r.get('a_box_rows', '-'):>5} {rel:>9} "
            f"{'yes' if r['ok'] else 'NO':>3} "
            f"{ms:>9} {tf:>8}{note}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
