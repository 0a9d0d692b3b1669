"""FA4 against cuDNN SDPA at one shape (B 4, S 4096, H 16, D 128), after fa4_install.sh put FA4 in /tmp/fa4site."""

import site
import time

import torch
import torch.nn.functional as F
import triton.testing as tt
from torch.nn.attention import SDPBackend, sdpa_kernel

site.addsitedir("/tmp/fa4site")
from flash_attn.cute import flash_attn_func

torch.manual_seed(0)
for causal in (False, True):
    b, s, h, d = 4, 4096, 16, 128
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    t0 = time.time()
    o = flash_attn_func(q, k, v, causal=causal)
    o = o[0] if isinstance(o, tuple) else o
    torch.cuda.synchronize()
    jit = time.time() - t0
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    ref = F.scaled_dot_product_attention(qt.float(), kt.float(), vt.float(), is_causal=causal).transpose(1, 2)
    err = ((o.float() - ref).norm() / ref.norm()).item()

    def fa4(q: torch.Tensor = q, k: torch.Tensor = k, v: torch.Tensor = v, causal: bool = causal) -> object:
        return flash_attn_func(q, k, v, causal=causal)

    def cudnn(qt: torch.Tensor = qt, kt: torch.Tensor = kt, vt: torch.Tensor = vt, causal: bool = causal) -> object:
        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

    ms = tt.do_bench(fa4)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        cud = tt.do_bench(cudnn)
    print(f"fa4 causal={causal} jit {jit:.1f}s rel_err {err:.2e} ms {ms:.4f} cudnn {cud:.4f}", flush=True)
