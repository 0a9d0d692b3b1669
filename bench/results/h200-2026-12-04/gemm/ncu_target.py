"""What ncu profiles (run1.sh, run2.sh): at M = 16 the linked small-M kernel (data-parallel; default
levers, then with W's L2 promotion 128 B instead of 256 B) and cuBLAS's GEMM alone; at M = 2048 the linked
cluster kernel and its one-unit build (gs_coop256_c2), both stream-K raster 16. Each launched once."""

import sys

import gemm_swiglu_persistent as h
import torch

torch.backends.cuda.matmul.allow_tf32 = False
which = sys.argv[1]
if which == "small":
    prob = h.Problem(16, 2 * 14336, 4096, seed=1016)
    var = h.Variant(h.Path("cubins"), "linked_small")
    for spec in ("linked_small:dp", "linked_small:dp:l2b128"):
        sp = h.parse_spec(spec)
        h.Launch(var, sp.mode, prob, 8, sp)()
    prob.x @ prob.wcat.T
else:
    prob = h.Problem(2048, 2 * 14336, 4096, seed=3048)
    for name in ("linked", "coop256_c2"):
        var = h.Variant(h.Path("cubins"), name)
        sp = h.parse_spec(f"{name}:sk:r16")
        h.Launch(var, sp.mode, prob, 16, sp)()
torch.cuda.synchronize()
