"""ncu target (run1.sh): at each M of argv[1], one launch each of the ring-fed link (argv[2]), the tuned
linked_auto kernel and cuBLAS's GEMM alone, on the same inputs (no reference, no checks: the only
kernels launched are the three profiled ones, plus PyTorch's input fills)."""

import sys
from pathlib import Path

import gemm_swiglu_persistent as h
import ringfed_time as rt
import torch


class Inputs:
    def __init__(self, m: int) -> None:
        self.m, self.n, self.k = m, 2 * 14336, 4096
        self.x = torch.randn(m, self.k, device="cuda").to(torch.bfloat16)
        self.w = (torch.randn(self.n, self.k, device="cuda") / 64).to(torch.bfloat16)


rf = rt.RingFed(Path(sys.argv[2]), None)
variants = {}
for m in [int(v) for v in sys.argv[1].split(",")]:
    prob = Inputs(m)
    spec = h.parse_spec(h.resolve("linked_auto", m))
    variants.setdefault(spec.variant, h.Variant(Path("cubins"), spec.variant))
    tuned = h.Launch(variants[spec.variant], spec.mode, prob, spec.raster or 8, spec)
    ring = rt.RingFedLaunch(rf, prob)
    torch.cuda.synchronize()
    ring()
    tuned()
    prob.x @ prob.w.T
    torch.cuda.synchronize()
    print(f"M {m}: ringfed, {h.resolve('linked_auto', m)}, cuBLAS", flush=True)
