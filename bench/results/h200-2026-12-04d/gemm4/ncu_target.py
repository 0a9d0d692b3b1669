"""ncu target (gemm4 run1.sh, run2.sh): at M = argv[1], one launch each of the kernels named in argv[2:] (bench
specs, e.g. linked:sk:r16, pp128_c2:dp:r16) and of cuBLAS's GEMM alone X [Wg; Wu]^T, on the same inputs
(no reference, no checks: the only kernels launched are the profiled ones and PyTorch's input fills)."""

import sys
from pathlib import Path

import gemm_swiglu_persistent as h
import torch


class Inputs:
    def __init__(self, m: int) -> None:
        self.m, self.n, self.k = m, 2 * 14336, 4096
        self.x = torch.randn(m, self.k, device="cuda").to(torch.bfloat16)
        self.w = (torch.randn(self.n, self.k, device="cuda") / 64).to(torch.bfloat16)


m = int(sys.argv[1])
prob = Inputs(m)
variants: dict[str, h.Variant] = {}
launches = []
for kern in sys.argv[2:]:
    spec = h.parse_spec(h.resolve(kern, m))
    variants.setdefault(spec.variant, h.Variant(Path("cubins"), spec.variant))
    launches.append(h.Launch(variants[spec.variant], spec.mode, prob, spec.raster or 8, spec))
torch.cuda.synchronize()
for launch in launches:
    launch()
prob.x @ prob.w.T
torch.cuda.synchronize()
print(f"M {m}: {', '.join(sys.argv[2:])}, cuBLAS", flush=True)
