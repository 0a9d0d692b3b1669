"""What ncu profiles (run3.sh): at M = 16 the linked swap-AB kernel as the dispatch runs it (W's L2
promotion none, 112 CTAs of 2 tiles), then cuBLAS's GEMM alone. Each launched once."""

import gemm_swiglu_persistent as h
import torch

torch.backends.cuda.matmul.allow_tf32 = False
prob = h.Problem(16, 2 * 14336, 4096, seed=1016)
sp = h.parse_spec(h.resolve("linked_auto", 16))
h.Launch(h.Variant(h.Path("cubins"), sp.variant), sp.mode, prob, 8, sp)()
prob.x @ prob.wcat.T
torch.cuda.synchronize()
