"""What ncu profiles (run1.sh): at M = 16 the linked swap-AB kernel (x_rows 32 as shipped, and the
x_rows 16 lever), the linked small-M kernel it replaces there, and cuBLAS's GEMM alone. Each launched
once."""

import gemm_swiglu_persistent as h
import torch

torch.backends.cuda.matmul.allow_tf32 = False
prob = h.Problem(16, 2 * 14336, 4096, seed=1016)
for spec in ("linked_swapab:dp", "linked_swapab16:dp", "linked_small:dp"):
    sp = h.parse_spec(spec)
    var = h.Variant(h.Path("cubins"), sp.variant)
    h.Launch(var, sp.mode, prob, 8, sp)()
prob.x @ prob.wcat.T
torch.cuda.synchronize()
