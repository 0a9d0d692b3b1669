"""A first look at the linked swap-AB kernel on small problems (run1.sh): per shape, the error of each
row of X (m) and of each 8-column block of the output against the float32 reference, so that a
wrong fragment, box or store layout shows its pattern in one call."""

import sys

import gemm_swiglu_persistent as h
import torch

torch.backends.cuda.matmul.allow_tf32 = False
var = h.Variant(h.Path("cubins"), sys.argv[1] if len(sys.argv) > 1 else "linked_swapab")
for m, n, k in ((16, 256, 64), (16, 256, 128), (7, 256, 64), (32, 512, 256)):
    prob = h.Problem(m, n, k, seed=7 + m + n + k)
    sp = h.parse_spec(f"{var.name}:dp")
    launch = h.Launch(var, sp.mode, prob, 8, sp)
    launch.out_full.view(torch.int16).fill_(-1)
    launch()
    torch.cuda.synchronize()
    got = launch.out.float()
    err = (got - prob.ref).abs()
    verdict = prob.verdict(launch.out)
    print(f"M {m} N {n} K {k}: {verdict}")
    if not verdict["ok"]:
        scale = float(prob.ref.abs().max())
        print("  per row m, max |err| / max |ref|:", [round(float(v) / scale, 3) for v in err.nan_to_num(9e9).amax(1)])
        blocks = err.nan_to_num(9e9).view(m, n // 2 // 8, 8).amax(2).amax(0) / scale
        print("  per 8-column block:", [round(float(v), 3) for v in blocks])
        print("  got[0, :16]:", [round(float(v), 3) for v in got[0, :16]])
        print("  ref[0, :16]:", [round(float(v), 3) for v in prob.ref[0, :16]])
        print("  got[1, :16]:", [round(float(v), 3) for v in got[1, :16]])
        print("  ref[1, :16]:", [round(float(v), 3) for v in prob.ref[1, :16]])
