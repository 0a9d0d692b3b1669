"""What ncu profiles (run2.sh): at M = 16 the linked swap-AB kernel as the dispatch runs it (x_rows 32,
W's L2 promotion none) and the x_rows 64 lever, then cuBLAS's GEMM alone. Each launched once."""

import gemm_swiglu_persistent as h
import torch

torch.backends.cuda.matmul.allow_tf32 = False
prob = h.Problem(16, 2 * 14336, 4096, seed=1016)
for spec in ("linked_swapab:dp:l2none", "linked_swapab64:dp:l2none"):
    sp = h.parse_spec(spec)
    var = h.Variant(h.Path("cubins"), sp.variant)
    h.Launch(var, sp.mode, prob, 8, sp)()
prob.x @ prob.wcat.T
torch.cuda.synchronize()
